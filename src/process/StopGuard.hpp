#pragma once
// A tiny watchdog process that resumes every pressure-stopped process if memtrack dies
// without doing so itself (SIGKILL, a crash): memtrack must never leave a process stopped.
// It holds only the maps of stopped processes and a pipe; memtrack's exit, however it happens,
// closes the pipe's other end and wakes it.
#include <sys/types.h>

#include <utility>
#include <vector>

#include "core/Fd.hpp"
#include "core/Result.hpp"

namespace memtrack {

class StopGuard {
public:
    // Fork it while memtrack is still single-threaded and before any probe is attached, so it
    // holds no link that would keep probes alive.
    // stopped_maps: the BPF maps of processes memtrack paused (pressure, mappings snapshot, new
    // processes awaiting their probes).
    // recording: the BPF recording flag in the mmapped .bss, which the guard inherits: turned
    // off first, so that no producer is paused again while the dead memtrack's probes detach.
    static Result<StopGuard> start(std::vector<int> stopped_maps, uint32_t* recording);
    StopGuard(StopGuard&& o) noexcept : pid_(std::exchange(o.pid_, -1)), alive_(std::move(o.alive_)) {}
    StopGuard& operator=(StopGuard&&) = delete;
    // Normal exit: lets the guard do its (then empty) pass and reaps it.
    ~StopGuard();

private:
    StopGuard() = default;
    pid_t pid_ = -1;
    Fd alive_;  // write end; never written, only closed
};

}  // namespace memtrack
