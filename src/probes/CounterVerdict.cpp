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
    // Processes that ran before their probes existed. How many allocator calls each made
    // meanwhile cannot be counted, so the lines say what is known, counter by counter:
    // - a new process (MT_HOLD_SPAWN, per-process links) runs on the breakpoints it inherited from
    //   its parent, which belong to links naming the parent: uprobe_multi's pid filter drops each
    //   trap before any program runs, and its own links do not exist yet. The kernel code that
    //   sees those traps (handler_chain, uprobe_prog_run) is reachable only by kprobes or fentry,
    //   which these machines refuse (no kprobe PMU; fentry loads fail EPERM), and which would
    //   cost every uprobe trap of the machine;
    // - new code (MT_HOLD_MODULE: an exec's image, a dlopen's objects) not probed yet has no
    //   breakpoint at all: its allocator calls enter no kernel code;
    // - a pause that could not be restored (holds_unrestored) or taken (spawn_unstopped) says
    //   nothing of whether the process got to user code before memtrack ended the pause.
    // Where the process was served by the shared links (a SHARED mark on an object they probe)
    // its calls were recorded all the same: "missing" below is what memtrack cannot vouch for.
    if (const uint64_t escaped = value(MT_COUNTER_HOLDS_ESCAPED); escaped > 0) {
        log::error("{} processes paused for their probes or new code ran user code before memtrack stopped them "
                   "again (another process's SIGCONT ended the pause): allocator calls they made meanwhile are "
                   "missing, and how many cannot be counted (no memtrack program runs for them) "
                   "(stats: holds_escaped)",
                   escaped);
        failed = true;
    }
    if (const uint64_t unrestored = value(MT_COUNTER_HOLDS_UNRESTORED); unrestored > 0) {
        log::error("{} pauses for probes or new code ended by another process's SIGCONT could not be restored: "
                   "their processes may have run user code before their probes existed, allocator calls then "
                   "missing, uncounted (stats: holds_unrestored)",
                   unrestored);
        failed = true;
    }
    if (const uint64_t unstopped = value(MT_COUNTER_SPAWN_UNSTOPPED); unstopped > 0) {
        log::error("{} new processes could not be paused before they first ran: allocator calls they made before "
                   "their probes existed are missing, uncounted (stats: spawn_unstopped)",
                   unstopped);
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
