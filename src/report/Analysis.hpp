#pragma once
// The report's model: one pass over the artifact's events gives totals, per-process figures,
// the peak, the leaks, the sites, the temporary allocations, the heap over time and a size
// histogram. Every printer (text, json, folded, pprof, speedscope, html) reads only this.
//
// Heap blocks are those of Malloc, Calloc, Realloc and AlignedAlloc, released by Free (and by
// Realloc, which frees `old_addr` and then allocates `addr`). Mmap/Munmap are counted apart as
// mapped bytes. Addresses are per process.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>

#include "format/Record.hpp"
#include "report/Filter.hpp"
#include "report/FrameFold.hpp"
#include "report/LiveMap.hpp"
#include "report/PeakTracker.hpp"
#include "report/Processes.hpp"
#include "report/SiteTimeline.hpp"
#include "report/Sites.hpp"
#include "report/StackTable.hpp"
#include "report/TemporaryDetector.hpp"
#include "report/Timeline.hpp"
#include "report/Windows.hpp"

namespace memtrack::report {

struct KindTotals {
    uint64_t count = 0;
    uint64_t bytes = 0;  // sizes summed; 0 for Free, which has none
};

struct ProcessTotals {
    int32_t pid = 0;
    uint64_t events = 0;
    uint64_t calls = 0;  // heap allocations counted by the report
    uint64_t bytes = 0;
    uint64_t leaked_bytes = 0;  // live at its exit, or at the end without a timeline
    uint64_t leaked_blocks = 0;
    // With a timeline (Processes.hpp):
    uint64_t live_bytes = 0;  // live now; at the end: live at the end of the recording (--window: 0)
    uint64_t live_blocks = 0;
    uint64_t peak_bytes = 0;  // its own heap's highest
    uint64_t exec_discarded_bytes = 0;  // live when it exec'd: thrown away, not leaked
    uint64_t exec_discarded_blocks = 0;
    ProcessInfo info;  // pid only, without a timeline
};

struct SizeBucket {
    uint64_t min = 0;  // sizes in [min, max]
    uint64_t max = 0;
    uint64_t calls = 0;
    uint64_t bytes = 0;
};

struct Analysis {
    uint64_t events = 0;       // events in the report (after --pid and the time window)
    uint64_t start_ns = 0;     // the artifact's first event, CLOCK_MONOTONIC
    uint64_t duration_ns = 0;  // from it to the latest event in the report
    uint64_t from_ns = 0;      // since start_ns: the start of --from or --window's span (0: none)
    std::array<KindTotals, 8> kinds{};  // by artifact kind, Malloc .. Brk (record.h's order)

    uint64_t calls = 0;  // heap allocations the report counts (after every filter)
    uint64_t bytes = 0;
    uint64_t frees = 0;  // frees of counted blocks (Free, and Realloc's release of old_addr)
    uint64_t peak_bytes = 0;
    uint64_t peak_blocks = 0;
    uint64_t peak_time_ns = 0;  // since start_ns
    uint64_t leaked_bytes = 0;  // live at the end
    uint64_t leaked_blocks = 0;
    uint64_t temporary_threshold = 0;
    uint64_t temporary_calls = 0;
    uint64_t temporary_bytes = 0;
    uint64_t mapped_bytes = 0;  // Mmap minus Munmap, at the end
    uint64_t peak_mapped_bytes = 0;

    uint64_t without_stack = 0;  // counted allocations that carry no stack_hash
    uint64_t stack_missing = 0;  // ... whose stack_hash the stacks file lacks
    uint64_t unknown_frees = 0;  // frees (and reallocs) of addresses no earlier event allocated
    uint64_t failed_allocations = 0;  // addr 0
    uint64_t replaced_blocks = 0;     // allocations at an address still live: its free was missed
    uint64_t filtered_out = 0;        // allocations dropped by --min-size/--max-size/--focus/--ignore

    // With a timeline: processes end (Processes.hpp). leaked_* above is then what was live at
    // each process's exit; what processes still running at the end held is live_at_end_*, and
    // what execs threw away exec_discarded_*. The peak is the highest sum over live processes.
    bool has_timeline = false;
    uint64_t live_at_end_bytes = 0;
    uint64_t live_at_end_blocks = 0;
    uint64_t exec_discarded_bytes = 0;
    uint64_t exec_discarded_blocks = 0;
    // The highest sum of the live processes' RSS samples, and at least each process's exact
    // high-water mark.
    uint64_t peak_rss_bytes = 0;
    // The session's windows (Windows.hpp), by start; with --window only that one, and
    // peak_rss_bytes is then its RSS peak.
    std::vector<WindowTotals> windows;
    // --window: its number. Every figure is then the window's own: leaked_* (and each process's
    // and site's leak) is what was made in it and neither freed nor discarded by exec by its end,
    // its leaked-in-window, and nothing is live_at_end_*.
    std::optional<uint32_t> window;
    std::vector<ProcessTotals> processes;  // by pid
    std::vector<Site> sites;               // in order of first allocation
    std::vector<TimelinePoint> timeline;
    uint64_t timeline_bucket_ns = 0;
    // With a timeline: the sum of the processes' RSS samples over time, the same way.
    std::vector<TimelinePoint> rss_timeline;
    uint64_t rss_timeline_bucket_ns = 0;
    std::vector<SizeBucket> histogram;  // power-of-two buckets with at least one allocation
    // Per site and process over time, for the html page; empty unless the Analyzer was asked
    // (Analyzer::record_site_timeline).
    SiteTimelineData site_timeline;

    // Set after the analysis (fold_sites, FrameNames.hpp): modules with unresolved frames in the
    // shown stacks, by path.
    std::vector<DebugHint> unresolved;
    // Set after the analysis (classify_owners, Owners.hpp): leaked blocks left out of
    // leaked_* (which no longer counts them): runtimes' one-time blocks, and suppressed ones.
    uint64_t runtime_leaked_bytes = 0;
    uint64_t runtime_leaked_blocks = 0;
    uint64_t suppressed_leaked_bytes = 0;
    uint64_t suppressed_leaked_blocks = 0;
};

// How long the report's span lasted: from --from or its window's start (else the first event)
// to the latest event in it. What the header and the rates give.
inline uint64_t span_ns(const Analysis& a) { return a.duration_ns > a.from_ns ? a.duration_ns - a.from_ns : 0; }

// Peak RSS minus peak live heap (0 when the heap is the larger): what the processes held
// resident beyond their live blocks (the allocator's free memory, code, stacks, mappings).
inline uint64_t rss_beyond_heap(const Analysis& a) {
    return a.peak_rss_bytes > a.peak_bytes ? a.peak_rss_bytes - a.peak_bytes : 0;
}

class Analyzer {
public:
    Analyzer(const StackTable& stacks, FilterOptions filter, uint64_t temporary_threshold);

    // Hints ahead of add(e), in this order with some events in between: prefetch() loads the
    // live-map slots add(e) will look at, prefetch_sites() (by then those slots are in the
    // cache) the sites of the blocks it frees and of the block it makes.
    void prefetch(const Event& e) const;
    void prefetch_sites(const Event& e);
    void add(const Event& e);
    // The session's processes, before the first add(): each heap then ends at its exit or exec.
    // `window`: an index in windows_of(model.session) that every figure is narrowed to
    // (--window): events outside it are left out as --from/--to would, processes that did not
    // live in it are not listed.
    void set_processes(ProcessModel model, std::optional<size_t> window = std::nullopt);
    bool has_processes() const { return model_.has_value(); }
    // Before the first add(): also keep Analysis::site_timeline (for --format html).
    void record_site_timeline() { site_timeline_.emplace(); }
    Analysis finish() &&;

private:
    void allocate(const Event& e, uint64_t t);
    // Takes a live block out of the heap (`b` gets it) and out of its site's live counts; null
    // for a block of an ignored site, which counts nowhere.
    SiteCounters* take_live(Block* live, Block& b);
    // Releases the block at (pid, addr); `temporary_candidate`: a Free or a Realloc, not the
    // replacement of a block whose free was missed.
    void release(int32_t pid, uint64_t addr, bool temporary_candidate, uint64_t t);
    void map(const Event& e);
    void unmap(const Event& e);
    ProcessTotals& process(int32_t pid);
    // Applies the heap ends (and RSS samples) up to `time` (CLOCK_MONOTONIC).
    void end_processes_until(uint64_t time);
    void end_heap(const HeapEnd& end);

    Filter filter_;
    SiteTable sites_;
    TemporaryDetector temporary_;
    PeakTracker peak_;
    Timeline timeline_;
    Timeline rss_timeline_;
    LiveMap live_;
    boost::unordered_flat_map<BlockKey, uint64_t, BlockKeyHash> mapped_;  // mmap address -> length
    boost::unordered_flat_map<int32_t, ProcessTotals> processes_;
    ProcessTotals* last_process_ = nullptr;  // process()'s last answer
    std::array<SizeBucket, 65> sizes_{};
    bool started_ = false;
    uint64_t heap_bytes_ = 0, heap_blocks_ = 0;  // live now, over the processes alive
    std::optional<ProcessModel> model_;
    size_t next_end_ = 0, next_rss_ = 0;
    std::map<int32_t, uint64_t> rss_now_;  // pid -> its latest RSS sample
    uint64_t rss_sum_ = 0;
    std::optional<WindowTracker> windows_;
    std::optional<WindowTotals> selected_;  // --window's bounds
    std::optional<SiteTimeline> site_timeline_;
    Analysis a_;
};

}  // namespace memtrack::report
