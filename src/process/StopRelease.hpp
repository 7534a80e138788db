#pragma once
// Resuming processes BPF paused. BPF signals first and then publishes the pid in a stop map;
// user space removes the entry first and then sends SIGCONT, so a producer it resumes is never
// left running with a stale entry that would stop BPF from pausing it again (that window, under
// load, let producers run through a full ring). A process held in two maps (ring pressure and a
// mappings snapshot) is resumed only by whichever releases it last.
#include <cstdint>
#include <vector>

#include "core/Result.hpp"

namespace memtrack {

// SIGCONT to `pid` only if it is still the process that was stopped (same start time), through
// a pidfd so the pid cannot be reused between the check and the signal. false: gone or reused.
Result<bool> resume_if_same_process(int32_t pid, uint64_t start_boottime_ns);

struct Released {
    bool removed = false;  // this call removed the entry
    bool resumed = false;  // SIGCONT sent
    uint64_t stop_ns = 0;  // when BPF stopped it
};

// Removes pid from `map_fd`; resumes it unless `other_map_fd` (-1: none) still holds it.
// An entry already gone (the process died, BPF removed it) is not an error: resumed = false.
Result<Released> release_stop(int map_fd, int other_map_fd, uint32_t pid);

std::vector<uint32_t> stopped_pids(int map_fd);

// Releases every entry of `map_fd`; returns how many processes were resumed.
size_t resume_every_stopped(int map_fd, int other_map_fd);

}  // namespace memtrack
