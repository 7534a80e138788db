#pragma once
// What each actor counts. Each struct has one owner, which alone writes it (on its strand, or
// on the thread that runs it before or after the io_context does); the owner's counters()
// returns a copy, from any thread (Counter.hpp says what such a copy holds). StatsReport turns
// the copies into the `--stats` and `stats` object (docs/STATS.md lists every key).
#include <array>
#include <cstdint>

#include "core/Counter.hpp"
#include "core/Histogram.hpp"
#include "probes/AllocatorCatalog.hpp"
#include "process/PauseCounters.hpp"  // ProcessHolds'

namespace memtrack {

// RingConsumer's, of the ring it reads.
struct ConsumerCounters {
    Counter records, bytes, chunks, max_records_per_chunk;
    Counter idle_ns;     // waited on an empty ring, from finding it empty to its next records
    Histogram chunk_ns;  // reading one chunk and queuing it
};

// The Writer's. Records count as written once a flush or the finish put them in the file, and
// as unwritten once a write failed: records read = written + unwritten once the artifact is closed.
struct WriterCounters {
    Counter written, unwritten;
    Counter artifact_events, allocations;  // of the written records: artifact events, allocations
    Counter process_lifetime_ns;           // summed over the tracked processes, to their exit or the end
};

// The Symbolizer's.
struct SymbolizerCounters {
    // Each distinct stack (by hash) once, however often the stacks ring brought it: BPF sends a
    // stack again once another stack took its way in seen_stacks.
    Counter stacks_unique;
    Counter stack_ring_bytes;  // the stacks ring's bytes, every stack it brought (again or not)
    Histogram symbolize_ns;    // per distinct stack: resolving its frames and encoding it
    Counter cache_hits;
    Counter cache_misses;        // new addresses resolved
    Counter modules;             // modules loaded (one per build-id, or per file without one)
    Counter cpu_ns;              // the symbolizer's strand: CPU time of its batches
    Counter module_load_ns;      // modules loaded on the strand, not by the preload thread
    Counter max_queued_batches;  // the most stack batches seen waiting (bound: the queue's size)
    Counter jit_frames;          // frames named by a process's perf map
    // Python frames written unnamed ("?"): their code object could not be read while the stack
    // was fresh (the process gone, or not held and already past it).
    Counter python_frames_unnamed;
    Counter python_trampolines_folded;  // perf trampoline frames folded into their Python frame
    // New stacks with Python frames, and those of them BPF did not hold for their code objects
    // (all read before and unchanged: MT_STACK_PY_KNOWN).
    Counter python_stacks, python_stacks_known;
    // Answers to stacks whose process mapped new code: all of /proc/PID/maps read, or only
    // the objects the loader added (AddedCode); and stragglers found among those added.
    Counter maps_full_reads;
    Counter maps_added_reads;
    // Stacks cut at a return address outside every executable mapping, and the frames cut.
    Counter stacks_cut_outside_code;
    Counter frames_cut_outside_code;
};

// The DrainBarrier's: each drain request, from its arrival to every lane's flush; the close,
// from its start (the shutdown's) to each file closed.
struct DrainCounters {
    Histogram drain_ns;
    Counter artifact_closed_ns, stacks_closed_ns;
};

// ProcessLinks': per-process probes and allocator discovery.
struct LinkCounters {
    Counter processes_probed;  // links of their own attached
    Counter processes_shared;  // served by the shared links
    Counter probe_errors;
    Histogram attach_ns;       // deciding and attaching a process's probes, either kind
    std::array<Counter, kAllocatorKinds> objects_by_kind{};  // objects probed the first time, per kind
    Counter processes_without_allocator;
    // Objects a new-code hold examined (probes looked up, links attached): each object once per
    // process image, whether found in the loader's list or in the process's mappings.
    Counter code_objects_examined;
    Counter code_full_scans;  // new-code holds that read all of a process's mappings
    Counter exit_wakeups_early;  // pidfd waits that completed while the process still ran (ProcessLinks::on_exit)
};

}  // namespace memtrack
