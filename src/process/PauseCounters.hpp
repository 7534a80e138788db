#pragma once
// ProcessHolds' counters (actors/ActorCounters.hpp lists every actor's; this one lives beside
// its owner, below the actors).
#include <cstddef>
#include <cstdint>
#include <map>

#include "core/Counter.hpp"
#include "core/Histogram.hpp"

namespace memtrack {

// ProcessHolds': how long the pauses it ended lasted. Copied under ProcessHolds' lock, since
// the per-process map cannot be read while it grows; a resume is a signal's worth of work
// already, so the lock is not felt.
struct PauseCounters {
    Counter paused_ns;            // pressure pauses, summed
    Histogram stop_to_resume_ns;  // pressure
    Histogram spawn_held_ns;
    Histogram new_code_held_ns;
    // Pressure resumes per process. Bounded: past kMaxPids processes only the totals grow.
    static constexpr size_t kMaxPids = 1024;
    std::map<int32_t, uint64_t> pressure_resumes_by_pid;
};

}  // namespace memtrack
