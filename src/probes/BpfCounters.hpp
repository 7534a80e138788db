#pragma once
// Reads BPF's per-CPU `counters` map (record.h's mt_counter), summed over CPUs. A read that
// fails is an error value, never a 0: a run cannot say "nothing dropped" from a counter it
// could not read. Each failure is also counted (read_errors(), the stats' counter_read_errors),
// so that figures shown as 0 for an unreadable counter are never silent, and TrackRun fails the
// run when there was any.
#include <atomic>
#include <cstdint>

#include "core/Result.hpp"

namespace memtrack {

class BpfCounters {
public:
    // map_fd: the counters map (not owned; BpfSession's skeleton owns it).
    explicit BpfCounters(int map_fd);

    Result<uint64_t> read(uint32_t index) const;
    // For figures that are only shown (the stats): read(index), or 0 when it failed (counted).
    uint64_t shown(uint32_t index) const;
    uint64_t read_errors() const { return read_errors_.load(std::memory_order_relaxed); }

private:
    int fd_;
    unsigned cpus_;
    mutable std::atomic<uint64_t> read_errors_{0};
};

}  // namespace memtrack
