#pragma once
// The run's statistics, `--stats` at exit and the socket's `stats`: one object assembled from the
// owners' copies of their counters (ActorCounters.hpp) and the kernel's. docs/STATS.md lists
// every key and who counts it.
#include <cstdint>
#include <vector>

#include <boost/json/object.hpp>

#include "actors/ActorCounters.hpp"
#include "core/RunPhases.hpp"
#include "probes/BpfSession.hpp"
#include "process/ProcessHolds.hpp"
#include "symbols/ObjectFiles.hpp"
#include "unwind/UnwindCounters.hpp"

namespace memtrack {

class UnwindTables;

// --time-bpf-parts: the allocation return program's parts, nanoseconds summed over the events timed.
struct PartTimes {
    uint64_t events = 0, walk_ns = 0, hash_ns = 0, stack_record_ns = 0, event_record_ns = 0;
};

// What BPF counts (record.h's mt_counter, summed over CPUs) and the rings' highest fills.
struct KernelCounters {
    uint64_t dropped = 0, nested = 0, self_traps = 0;
    // Allocator calls whose return never came (an exception, a longjmp), found when the thread's
    // next call replaced them.
    uint64_t stale_frames = 0;
    uint64_t stacks_captured = 0, stacks_sent = 0, stack_errors = 0, stacks_dropped = 0,
             stacks_unclaimed = 0;
    uint64_t spawn_unstopped = 0, spawn_notices_dropped = 0;
    // Someone else's SIGCONTs that ended a pause; those stopped again; those that could not be;
    // processes held before they ran that ran all the same; RESTOPs sent from the held process's
    // own context; the senders of SIGCONTs that ended a pressure pause, paused for pressure;
    // processes held before they ran that stopped themselves before their first instruction.
    uint64_t holds_broken = 0, holds_restopped = 0, holds_unrestored = 0, holds_escaped = 0, holds_restopped_self = 0,
             continuers_paused = 0, holds_caught_at_start = 0;
    // Exec'd images whose loader hook never held them, and why (record.h).
    uint64_t loader_hooks_missed = 0, loader_missed_untrapped = 0, loader_missed_rejected = 0, loader_missed_unheld = 0,
             loader_missed_no_hook = 0;
    uint64_t events_max_fill_bytes = 0, stacks_max_fill_bytes = 0;
    uint64_t stop_bytes = 0;  // the events ring's stop mark
    uint64_t counter_read_errors = 0;  // BpfCounters reads that failed (their figures show 0)
    std::vector<ProgramRunStats> programs;  // run counts and times with kernel.bpf_stats_enabled
    PartTimes parts;
};

// The run's shutdown sequence's: the processes a pause was still in flight for when memtrack
// let them go.
struct ShutdownCounters {
    Counter stopped_at_exit;  // written once the io_context has stopped
    // A signal (SIGINT, SIGTERM, SIGHUP) ended the recording before the command ended: its
    // number, and 1 when the command ignored it and still ran as memtrack exited.
    Counter cut_short_by_signal;
    Counter command_running_at_exit;
};

// Every source of the report, as copied at one moment.
struct RunCounters {
    uint64_t duration_ns = 0;  // since the run began
    PhaseDurations phases;     // start-up, the command's run, teardown (RunPhases)
    uint64_t ring_bytes = 0;   // the events ring's size
    ConsumerCounters events;   // the event ring's consumer
    WriterCounters writer;
    SymbolizerCounters symbolizer;  // zeros without stacks
    DrainCounters drains;
    LinkCounters links;
    HoldCounts holds;
    PauseCounters pauses;
    KernelCounters kernel;
    UnwindCounters unwind;  // user space's and BPF's; zeros without CFI tables
    ObjectFileCounters objects;  // BpfSession's ObjectFiles: every stage's reading of object files
    ShutdownCounters shutdown;
};

KernelCounters read_kernel_counters(const BpfSession& bpf);
// UnwindTables' counters with the BPF walker's; zeros without tables.
UnwindCounters read_unwind_counters(const UnwindTables* tables, const BpfSession& bpf);

boost::json::object stats_json(const RunCounters& c);

}  // namespace memtrack
