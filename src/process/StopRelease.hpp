#pragma once
// Resuming processes BPF paused. BPF signals first and then publishes the pid in a stop map;
// user space marks the entry `resuming` first and then sends SIGCONT, so a producer it resumes is
// never left running with an entry that stops BPF from pausing it again (that window, under load,
// let producers run through a full ring), and the entry outlives memtrack for the stop guard.
// A process held in several maps (ring pressure, a mappings snapshot, a new process awaiting its
// probes) is resumed only by whichever releases it last.
#include <cstdint>
#include <vector>

#include "core/Fd.hpp"
#include "core/Result.hpp"

namespace memtrack {

// SIGCONT to `pid` only if it is still the process that was stopped (same start time), through
// a pidfd so the pid cannot be reused between the check and the signal. false: gone or reused.
Result<bool> resume_if_same_process(int32_t pid, uint64_t start_boottime_ns);

// A pidfd for pid if it is still the process that started at start_boottime_ns (task->
// start_boottime, as BPF reads it); an invalid Fd when it is gone or the pid was reused.
Result<Fd> open_same_process(int32_t pid, uint64_t start_boottime_ns);

struct Released {
    bool removed = false;  // this call removed the entry
    bool resumed = false;  // SIGCONT sent
    uint64_t stop_ns = 0;  // when BPF stopped it
};

// Every map BPF publishes its pauses in (`map_fd` arguments below are among them).
using StopMaps = std::vector<int>;

// Marks pid's entry in `map_fd` as resuming, then resumes it unless another of `maps` still
// holds it unmarked. Marking instead of removing first keeps the entry for the stop guard should
// memtrack die before the SIGCONT. An entry gone or already marked is not an error: removed
// (here: marked) = false.
Result<Released> release_stop(int map_fd, const StopMaps& maps, uint32_t pid);

std::vector<uint32_t> stopped_pids(int map_fd);

// Resumes every unmarked entry of `map_fd` (and marked ones marked at or after marked_since_ns)
// unless another of `maps` still holds it unmarked, and removes them all. Passing over each of
// `maps` in turn resumes everything: an entry skipped because a later map holds it is resumed
// by that map's pass (the final pass and the stop guard). Returns how many were resumed.
inline constexpr uint64_t kNoMarked = ~0ull;
size_t resume_every_stopped(int map_fd, const StopMaps& maps, uint64_t marked_since_ns = kNoMarked);
// resume_every_stopped over each of `maps`; returns how many were resumed.
size_t resume_all_maps(const StopMaps& maps, uint64_t marked_since_ns = kNoMarked);

// Processes still paused in `map_fd` (entries not marked resuming).
size_t count_stopped(int map_fd);

}  // namespace memtrack
