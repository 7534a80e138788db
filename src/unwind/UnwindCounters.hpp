#pragma once
// What UnwindTables did (user space's side of the CFI walk), for the stats.
#include <cstdint>

namespace memtrack {

struct UnwindCounters {
    uint64_t objects = 0;          // objects whose tables were loaded (built or from the cache)
    uint64_t objects_without_cfi = 0;  // built with no rows (walked by frame pointer)
    uint64_t objects_failed = 0;   // could not be read or compiled (walked by frame pointer)
    uint64_t objects_shared = 0;   // another file with a build-id already loaded
    uint64_t objects_cached = 0;   // tables read from the cache folder instead of built
    uint64_t objects_stored = 0;   // tables built and kept in the cache folder
    uint64_t cache_errors = 0;     // cache entries unreadable or damaged, and stores that failed
    uint64_t rows = 0;             // rows in the BPF array
    uint64_t rows_capacity = 0;
    uint64_t tables_full = 0;      // objects left out because the array was full
    uint64_t build_ns = 0;         // building and loading tables
    uint64_t processes = 0;        // process descriptions written
    uint64_t describe_errors = 0;  // descriptions that failed (the process is walked by frame pointer)
    uint64_t mappings_left_out = 0;  // executable mappings past MT_UNWIND_MAPPINGS
    // The BPF walker's (record.h's MT_COUNTER_UNWIND_*).
    uint64_t cfi_frames = 0;
    uint64_t fp_frames = 0;
    uint64_t walks_without_tables = 0;
    uint64_t walks_complete = 0;
    uint64_t walks_truncated = 0;
    uint64_t walks_unsupported = 0;
    uint64_t walks_read_failed = 0;
    uint64_t walks_bad_frame = 0;
    uint64_t walks_matched = 0;  // answered by the thread's previous walk (chain_cache.h)
    uint64_t walks_changed = 0;  // started as the previous walk, but a word it read had changed
    uint64_t row_cache_misses = 0;  // frames whose row was searched for: the row cache missed
    uint64_t walks_spliced = 0;     // walks that took the rest of their frames from a kept walk
    uint64_t spliced_frames = 0;    // the frames they took
    uint64_t walks_known = 0;       // matched walks whose stack user space had (no seen_stacks lookup)
};

}  // namespace memtrack
