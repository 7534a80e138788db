#pragma once
// `memtrack dump FILE`: prints an artifact as JSON lines, or a summary of it; `--stacks` prints a
// stacks file, `--resolve` prints the artifact's events with their symbolized stacks.
#include <string>
#include <utility>

namespace memtrack {

struct DumpOptions {
    DumpOptions() = default;
    // The artifact-only form callers used before --stacks/--resolve existed; a braced list that
    // leaves the newer fields out would trip -Wmissing-field-initializers.
    DumpOptions(std::string file_, bool summary_) : file(std::move(file_)), summary(summary_) {}

    std::string file;      // the artifact; unused by --stacks alone
    bool summary = false;  // totals only, no line per event
    // --stacks FILE: alone, print this stacks file, one JSON object per stack, instead of an
    // artifact. With resolve: the stacks file to resolve with, instead of the one beside `file`.
    std::string stacks_file;
    // --resolve: print the events of `file` as plain dump does, each with a "frames" array from
    // the stacks file beside it (<prefix>.MemtrackStacks.msgpack for <prefix>.MemtrackArtifact.msgpack).
    bool resolve = false;
    // --timeline FILE: alone, print this timeline file, one JSON object per event.
    std::string timeline_file;
};

// Returns the process exit code: 0 when every file read decoded whole, 1 otherwise. On an error
// what was decoded before it is still printed (or summarised), then one line per failed file goes
// to stderr. With resolve, a missing or damaged stacks file is such an error: the events still
// print, those whose stack was not read with "frames": []. `summary` combined with `resolve` or
// `stacks_file` is refused (exit code 1).
int run_dump(const DumpOptions& opts);

}  // namespace memtrack
