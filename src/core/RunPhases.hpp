#pragma once
// Owns: the phase boundaries of one `memtrack track` run, on the monotonic clock: its start (the
// first step after the command line is read), the command's release (let go to exec, its probes
// attached), the shutdown's start (the command's exit seen, a signal, a client's request, a
// failed exec) and the teardown's end (the exit stats taken: the output files closed, every
// process resumed, the io threads joined). TrackRun marks each once, at the one step that reaches
// it; the stats' `startup_ms`, `run_ms` and `teardown_ms` (docs/STATS.md) and the -v timings are
// read from here, so the three add up to the time from the start to the exit stats.
// Thread-safe: marked on the io threads, read by the socket's `stats` on any thread.
#include <atomic>
#include <cstdint>

namespace memtrack {

struct PhaseDurations {
    uint64_t startup_ns = 0;   // the start to the command's release
    uint64_t run_ns = 0;       // the release to the shutdown's start
    uint64_t teardown_ns = 0;  // the shutdown's start to the exit stats
};

class RunPhases {
public:
    explicit RunPhases(uint64_t started_ns) : started_ns_(started_ns) {}

    // Each boundary keeps its first mark.
    void mark_released(uint64_t ns) { mark(released_ns_, ns); }
    void mark_shutdown(uint64_t ns) { mark(shutdown_ns_, ns); }
    void mark_finished(uint64_t ns) { mark(finished_ns_, ns); }

    uint64_t started_ns() const { return started_ns_; }
    uint64_t released_ns() const { return released_ns_.load(std::memory_order_acquire); }

    // As of `now`: a phase not begun reads 0, one under way its time so far.
    PhaseDurations durations(uint64_t now) const {
        const uint64_t released = released_ns(), shutdown = shutdown_ns_.load(std::memory_order_acquire),
                       finished = finished_ns_.load(std::memory_order_acquire);
        PhaseDurations d;
        d.startup_ns = since(started_ns_, released ? released : now);
        if (released) d.run_ns = since(released, shutdown ? shutdown : now);
        if (shutdown) d.teardown_ns = since(shutdown, finished ? finished : now);
        return d;
    }

private:
    static void mark(std::atomic<uint64_t>& at, uint64_t ns) {
        uint64_t unset = 0;
        at.compare_exchange_strong(unset, ns, std::memory_order_acq_rel);
    }
    static uint64_t since(uint64_t from, uint64_t to) { return to > from ? to - from : 0; }

    const uint64_t started_ns_;
    std::atomic<uint64_t> released_ns_{0}, shutdown_ns_{0}, finished_ns_{0};
};

}  // namespace memtrack
