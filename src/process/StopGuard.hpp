#pragma once
// A tiny watchdog process that ends every pause if memtrack dies without doing so itself
// (SIGKILL, a crash): memtrack must never leave a process stopped. It holds only the pause
// protocol's maps (handed over by arm()) and one end of a socket pair; memtrack's exit, however
// it happens, closes the other end and wakes it.
#include <sys/types.h>

#include <cstdint>
#include <utility>

#include "core/Fd.hpp"
#include "core/Result.hpp"

namespace memtrack {

class StopGuard {
public:
    // Fork it first of all: while memtrack is single-threaded (no other thread can hold a lock
    // at the fork) and before any BPF object exists (it holds no link that would keep probes
    // alive). It runs in a session of its own, so a kill of memtrack's process group spares it.
    static Result<StopGuard> start();
    StopGuard(StopGuard&& o) noexcept
        : pid_(std::exchange(o.pid_, -1)), sock_(std::move(o.sock_)), pidfd_(std::move(o.pidfd_)) {}
    StopGuard& operator=(StopGuard&&) = delete;
    // Readable once the guard has exited (memtrack watches it: a dead guard cannot resume
    // anything should memtrack die next).
    int pidfd() const { return pidfd_.get(); }
    pid_t pid() const { return pid_; }
    // Hands the guard the `holds` and `held` maps (src/bpf/hold.h), `words` hold words.
    Result<void> arm(int holds_fd, int held_fd, uint32_t words);
    // Normal exit: memtrack's own final pass is done; the guard's finds nothing, then it is reaped.
    ~StopGuard();

private:
    StopGuard() = default;
    pid_t pid_ = -1;
    Fd sock_;  // memtrack's end: the maps go through it; a byte says "clean exit"
    Fd pidfd_;
};

}  // namespace memtrack
