#pragma once
// The run's statistics, written by every actor and read by --stats and the socket's `stats`.
// Actors report per chunk or per event batch, never per record, so one mutex is cheap enough.
#include <array>
#include <cstdint>
#include <map>
#include <vector>
#include <mutex>

#include <boost/json/object.hpp>

#include "actors/Histogram.hpp"
#include "actors/SymbolizerCounters.hpp"
#include "unwind/UnwindCounters.hpp"
#include "probes/AllocatorCatalog.hpp"

namespace memtrack {

struct HoldCounts;

class Stats {
public:
    Stats();

    void on_chunk(uint64_t records, uint64_t bytes, uint64_t duration_ns);
    // Records now in the artifact (flushed), and records read from the ring that never reached it
    // (a write failed): records = written + unwritten once the artifact is closed.
    void on_written(uint64_t records, uint64_t artifact_events, uint64_t allocations);
    void on_unwritten(uint64_t records);
    void on_stack(uint64_t ring_bytes, uint64_t symbolize_ns);
    void set_symbolizer(const SymbolizerCounters& c);
    void set_unwind(const UnwindCounters& c);  // the CFI walk: tables and how walks went
    // At shutdown: a file (the artifact, or the stacks file) closed `ns` after the shutdown began.
    void on_shutdown_file_closed(bool stacks, uint64_t ns);
    void set_stack_counters(uint64_t captured, uint64_t sent, uint64_t errors, uint64_t dropped);
    void on_resume(int32_t pid, uint64_t stop_to_resume_ns);
    void on_drain(uint64_t duration_ns);
    void on_consumer_idle(uint64_t ns);  // the events consumer waited this long on an empty ring
    void add_process_lifetime(uint64_t ns);
    // stale_frames: allocator calls whose return never came (an exception, a longjmp), found
    // when the thread's next call replaced them; self_traps: memtrack's own allocator calls
    // that trapped on a shared probe (must stay 0).
    void set_kernel_counters(uint64_t dropped, uint64_t nested, uint64_t stale_frames, uint64_t self_traps);
    // The pause counters, as their owner (ProcessHolds) counts them.
    void set_pauses(const HoldCounts& counts);
    // The highest fills BPF saw (bytes) and the events ring's size and stop mark.
    void set_max_fill(uint64_t events_bytes, uint64_t stacks_bytes, uint64_t ring_bytes, uint64_t stop_bytes);
    void set_stopped_at_exit(uint64_t n);
    // Per-process probes: a process's links attached (and how long that took), a failure, a new
    // process resumed once its probes existed (how long it was held), the kernel's spawn counters.
    void on_process_probes(uint64_t attach_ns);
    void on_shared_probes(uint64_t attach_ns);  // a process served by the shared links
    void on_process_probe_error();
    void on_spawn_held(uint64_t held_ns);
    // Allocator discovery: an object probed for the first time (its allocator kinds), new code
    // held until probed (how long), a process found with no allocator memtrack knows.
    void on_object_probed(const std::vector<AllocatorKind>& kinds);
    void on_new_code_held(uint64_t held_ns);
    void on_process_without_allocator();
    void set_spawn_counters(uint64_t unstopped, uint64_t notices_dropped);
    uint64_t records_written() const;

    boost::json::object to_json() const;

private:
    mutable std::mutex mu_;
    uint64_t start_ns_;
    uint64_t records_ = 0, bytes_ = 0, chunks_ = 0, max_records_per_chunk_ = 0;
    uint64_t max_fill_bytes_ = 0, stack_max_fill_bytes_ = 0, ring_bytes_ = 0, stop_bytes_ = 0;
    uint64_t written_ = 0, unwritten_ = 0, artifact_events_ = 0, allocations_ = 0;
    uint64_t stacks_unique_ = 0, stack_ring_bytes_ = 0;
    SymbolizerCounters symbolizer_;
    UnwindCounters unwind_;
    uint64_t shutdown_artifact_ns_ = 0, shutdown_stacks_ns_ = 0;
    uint64_t stacks_captured_ = 0, stacks_sent_ = 0, stack_errors_ = 0, stacks_dropped_ = 0;
    uint64_t dropped_ = 0, nested_ = 0, stale_frames_ = 0, self_traps_ = 0, stopped_at_exit_ = 0;
    boost::json::object pauses_;  // set_pauses: the keys it writes go into to_json as they are
    uint64_t paused_ns_ = 0, lifetime_ns_ = 0, consumer_idle_ns_ = 0;
    uint64_t processes_probed_ = 0, processes_shared_ = 0, probe_errors_ = 0, spawn_unstopped_ = 0, spawns_dropped_ = 0;
    Histogram chunk_ns_, stop_to_resume_ns_, drain_ns_, symbolize_ns_, probe_attach_ns_, spawn_held_ns_, new_code_held_ns_;
    std::array<uint64_t, kAllocatorKinds> objects_by_kind_{};
    uint64_t processes_without_allocator_ = 0;
    // Pressure resumes per process, for tests and people asking "was every writer paused?".
    // Bounded: past kMaxPids processes only the totals grow.
    static constexpr size_t kMaxPids = 1024;
    std::map<int32_t, uint64_t> resumes_by_pid_;
};

}  // namespace memtrack
