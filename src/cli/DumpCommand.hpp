#pragma once
// `memtrack dump FILE`: prints an artifact as JSON lines, or a summary of it.
#include <string>

namespace memtrack {

struct DumpOptions {
    std::string file;
    bool summary = false;  // totals only, no line per event
    // Planned: --stacks (print the interned stacks) and --resolve (symbolize them); each will add
    // one field here and one stage in DumpCommand.cpp.
};

// Returns the process exit code: 0 when the whole file decoded, 1 otherwise. On an error the
// events decoded before it are still printed (or summarised), then one line goes to stderr.
int run_dump(const DumpOptions& opts);

}  // namespace memtrack
