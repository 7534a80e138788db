#pragma once
// The report's model (Analysis: live blocks keyed by process and address) over an artifact
// alone, without its stacks or timeline, and `memtrack dump --summary`'s view of it: what the
// file itself says, read up to any damage. One live-heap model: `dump --summary` and `memtrack
// report` cannot disagree on what is live, even when two processes of a tree use the same
// address; `track`'s closing lines are the report's own (TrackSummary.hpp).
#include <cstdint>
#include <string>

#include "core/Result.hpp"
#include "report/Analysis.hpp"

namespace memtrack::report {

struct ArtifactTotals {
    Analysis analysis;     // of every event read, up to the damage when the file is damaged
    Result<uint64_t> read; // read_artifact's answer: the events read, or why the read stopped
};

// Reads `artifact` once, every event through the report's Analyzer (no filter).
ArtifactTotals analyze_artifact(const std::string& artifact);

// `dump --summary`: one line per artifact kind (count, bytes; '-' for Free, which has none),
// then the peak and the end of the heap, the mapped bytes, and the processes.
std::string dump_summary(const Analysis& a);

}  // namespace memtrack::report
