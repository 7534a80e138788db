#pragma once
// `memtrack track`'s options, and the one place they are checked.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "probes/BpfSession.hpp"

namespace memtrack {

struct TrackOptions {
    std::string output_dir = ".";
    bool start_disabled = false;
    std::string stats_file;  // also MEMTRACK_STATS
    std::string socket;
    double control_idle_timeout = 60;  // seconds a control client may stay idle; 0: forever
    std::vector<std::string> command;
    uint64_t ring_size = 64ull << 20;
    size_t chunk_records = 1024;
    double stop_fill = 0.75;
    double resume_fill = 0.25;
    double wakeup_fill = 1.0 / 64;  // records below this fill do not wake the consumer
    uint64_t consumer_delay_us = 0;
    uint64_t symbolize_delay_us = 0;
    std::string libc_path;
    std::string libstdcxx_path;
    unsigned threads = 2;
    bool no_stacks = false;
    bool probe_at_entry = false;  // disable ProbePlacement (benchmarks compare)
    bool system_wide_probes = false;  // probes trap in every process, not only the tracked ones
    bool debuginfod = false;  // let libdw ask DEBUGINFOD_URLS' servers for missing debug info
    uint32_t max_frames = 64;
    // The timeline's RSS records: one when a counter moves by max(this, 1/64 of it); 0: every
    // change. --no-rss: none.
    uint64_t rss_granularity = 1ull << 20;
    bool no_rss = false;
    bool no_python_frames = false;  // stacks without CPython's frames (bpf/python_walk.h)
    bool time_bpf_parts = false;  // the return program times its parts (stats bpf_parts)
    std::string unwind = "cfi";      // how stacks are walked: cfi (the objects' CFI) or fp (frame pointers)
    uint32_t unwind_rows = 1u << 22;  // room for every object's unwind rows
    // Where built unwind tables are kept between runs (CfiTableCache); empty: its default
    // folder, which is skipped with a warning when unusable. --no-cache: none.
    std::string cache_dir;
    bool no_cache = false;
    uint64_t stack_ring_size = 16ull << 20;
    // At the end, the three-line summary and the report command (re-reads the artifact once);
    // off with --no-summary or MEMTRACK_NO_SUMMARY=1.
    bool summary = true;
};

// The options a run uses: `opt` with what the environment sets (MEMTRACK_STATS,
// MEMTRACK_NO_SUMMARY), every value checked before anything is created (no socket, no child,
// no file). Throws FatalError, one line, for the first bad one.
TrackOptions resolve_track_options(TrackOptions opt);

// The BPF session's configuration from the options: the one route, so BpfSession has the
// options' defaults (`memtrack doctor` loads with TrackOptions{}'s).
BpfConfig bpf_config(const TrackOptions& opt);

}  // namespace memtrack
