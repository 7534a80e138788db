#include "probes/CounterVerdict.hpp"

#include <fmt/core.h>

#include "bpf/record.h"
#include "core/Log.hpp"

namespace memtrack {

int counters_exit_status(int status, const CounterRead& read, uint64_t earlier_read_errors) {
    bool failed = false;
    uint64_t read_errors = earlier_read_errors;
    // A failed read is counted, and then taken as 0 only for the sums below: the run fails for it.
    auto value = [&](uint32_t index) -> uint64_t {
        auto v = read(index);
        if (v) return v.value();
        log::error("cannot read BPF counter {}: {}", index, v.error().message());
        ++read_errors;
        return 0;
    };
    if (auto dropped = read(MT_COUNTER_DROPPED); !dropped) {
        log::error("cannot tell whether records were dropped: {}", dropped.error().message());
        ++read_errors;
    } else if (dropped.value() > 0) {
        fmt::print(stderr, "dropped: {}\n", dropped.value());
        failed = true;
    }
    uint64_t unheld = 0;
    for (uint32_t c : {MT_COUNTER_SPAWN_UNSTOPPED, MT_COUNTER_HOLDS_UNRESTORED, MT_COUNTER_HOLDS_ESCAPED})
        unheld += value(c);
    if (unheld > 0) {
        log::error("{} processes ran before their probes existed (another process's SIGCONT ended their pause, or "
                   "a SIGSTOP was refused): their allocations may be missing (stats: spawn_unstopped, "
                   "holds_unrestored, holds_escaped)",
                   unheld);
        failed = true;
    }
    // Exec'd images the loader's hook never held and whose allocator no probe served (BPF counts
    // none whose allocator calls were recorded): their allocations are missing.
    if (const uint64_t missed = value(MT_COUNTER_LOADER_HOOKS_MISSED); missed > 0) {
        log::error("{} exec'd processes ran without their allocator probed (the loader's hook never held "
                   "them): their allocations are missing (stats: loader_hooks_missed)",
                   missed);
        failed = true;
    }
    if (read_errors > 0) {
        log::error("{} reads of BPF's counters failed (stats: counter_read_errors)", read_errors);
        failed = true;
    }
    return status == 0 && failed ? 1 : status;
}

}  // namespace memtrack
