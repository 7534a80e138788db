#pragma once
// What the Symbolizer counts, owned by it and handed to Stats as a snapshot after each batch.
#include <cstdint>

namespace memtrack {

struct SymbolizerCounters {
    uint64_t cache_hits = 0;
    uint64_t cache_misses = 0;        // new addresses resolved
    uint64_t modules = 0;             // modules loaded (one per build-id, or per file without one)
    uint64_t cpu_ns = 0;              // the symbolizer's strand: CPU time of its batches
    uint64_t module_load_ns = 0;      // modules loaded on the strand, not by the preload thread
    uint64_t max_queued_batches = 0;  // the most stack batches seen waiting (bound: the queue's size)
    uint64_t jit_frames = 0;          // frames named by a process's perf map
    // Stacks cut at a return address outside every executable mapping, and the frames cut.
    uint64_t stacks_cut_outside_code = 0;
    uint64_t frames_cut_outside_code = 0;
};

}  // namespace memtrack
