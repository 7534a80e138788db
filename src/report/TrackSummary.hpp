#pragma once
// What `memtrack track` prints when the command is done: three lines (events, peak, leaked)
// and the `memtrack report` command to run next.
#include <string>

#include "report/Analysis.hpp"

namespace memtrack::report {

// The four lines, each ending in '\n', for an analysis of `artifact`.
std::string track_summary(const Analysis& a, const std::string& artifact);

// Reads `artifact` (without its stacks: only totals are needed) and prints track_summary() on
// stderr; on a read error, one line saying why instead.
void print_track_summary(const std::string& artifact);

}  // namespace memtrack::report
