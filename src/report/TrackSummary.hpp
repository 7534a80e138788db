#pragma once
// What `memtrack track` prints when the command is done: the events, the peak and the leaks, and
// the `memtrack report` command to run next.
//
// The figures are the report's own: the summary reads the recording through load() (Load.hpp),
// as `memtrack report` does, timeline and stacks included. So a process's heap ends at its exit
// or exec there too (a tree's peak is over the processes alive, not the sum of every heap ever
// made), and the leaks leave out the runtimes' one-time blocks as the report's total does.
#include <string>

#include "core/Result.hpp"
#include "report/Analysis.hpp"

namespace memtrack::report {

// The lines, each ending in '\n', for an analysis of `artifact`.
std::string track_summary(const Analysis& a, const std::string& artifact);

// Loads `artifact` as `memtrack report` does (no filter, the report's defaults) and gives
// track_summary() of it; why not, when the recording cannot be read.
Result<std::string> track_summary_of(const std::string& artifact);

// track_summary_of() on stderr; on an error, one line saying why instead.
void print_track_summary(const std::string& artifact);

}  // namespace memtrack::report
