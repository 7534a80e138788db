#pragma once
// For the html page's time ranges and process selector: per site and process (a "series"),
// what was allocated, released, temporary and leaked in each time bucket, and what it had live
// at the heap's peak. The page sums these over any range of buckets and any process, so it can
// redraw its flamegraph and tables for a dragged range without the events.
//
// At most kMaxBuckets buckets whatever the trace's length: when time runs past the last one,
// neighbouring buckets merge pairwise and the width doubles (as Timeline does); a series holds
// only the buckets something happened in. Past kMaxCells of those in all, the width doubles
// too: memory stays under kMaxCells x 64 bytes (but for series of one bucket each). Kept only when asked (Analyzer::record_site_timeline,
// for --format html): it costs a lookup per event and the allocation time of every live block.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>

#include "report/LiveMap.hpp"

namespace memtrack::report {

struct SiteBucket {
    uint32_t bucket = 0;           // time since the first event / bucket_ns
    uint64_t calls = 0;            // allocations made in it
    uint64_t bytes = 0;
    uint64_t released_bytes = 0;   // blocks that left the heap in it: freed, or at an exit or exec
    uint64_t temporary_calls = 0;  // temporary blocks freed in it (the Analyzer's rule)
    uint64_t temporary_bytes = 0;
    uint64_t leaked_bytes = 0;     // blocks made in it that leaked (live at their exit or the end)
    uint64_t leaked_blocks = 0;
};

// Adds `b`'s counts (not its bucket) to `into`: two buckets merged.
inline void merge_into(SiteBucket& into, const SiteBucket& b) {
    into.calls += b.calls;
    into.bytes += b.bytes;
    into.released_bytes += b.released_bytes;
    into.temporary_calls += b.temporary_calls;
    into.temporary_bytes += b.temporary_bytes;
    into.leaked_bytes += b.leaked_bytes;
    into.leaked_blocks += b.leaked_blocks;
}

struct SiteSeries {
    uint32_t site = 0;  // index in Analysis::sites
    int32_t pid = 0;
    uint64_t peak_bytes = 0;          // live at the heap's peak (as PeakTracker tells it for sites)
    std::vector<SiteBucket> buckets;  // by bucket, only those with something in them
};

struct SiteTimelineData {
    uint64_t bucket_ns = 0;
    uint32_t buckets = 0;            // one past the last bucket used
    std::vector<SiteSeries> series;  // in order of first allocation
};

class SiteTimeline {
public:
    // Enough to pick a range to a hundredth of the recording; the memory is series x buckets x
    // 64 bytes at most (docs/BENCHMARKS.md, "HTML page").
    static constexpr uint32_t kMaxBuckets = 128;
    // 128 MiB of buckets; the page keeps far fewer (HtmlFormat.cpp), the most costly.
    static constexpr size_t kMaxCells = size_t(1) << 21;

    enum class Release { Free, Temporary, Exec, Exit };

    // A counted block of `site` was made at `t` (ns since the first event).
    void allocated(uint32_t site, int32_t pid, uint64_t addr, uint64_t size, uint64_t t);
    // A counted block left the heap at `t`, `how`.
    void released(uint32_t site, int32_t pid, uint64_t addr, uint64_t size, uint64_t t, Release how);
    // The heap has just reached a new peak: what each series has live now is its peak share
    // until it next changes.
    void peak() { ++epoch_; }
    // Blocks still live count as leaked, in the bucket they were made in (as Site::live_bytes
    // counts them at the end).
    SiteTimelineData finish() &&;

private:
    struct Series {
        SiteSeries out;
        uint64_t live = 0;
        uint64_t peak_epoch = 0;
    };
    struct Born {
        uint64_t time = 0;
        uint64_t size = 0;
        uint32_t series = 0;
    };
    Series& series(uint32_t site, int32_t pid);
    // Saves the series' live bytes as its peak share if the peak came after its last change.
    void touch(Series& s) const {
        if (s.peak_epoch == epoch_) return;
        s.out.peak_bytes = s.live;
        s.peak_epoch = epoch_;
    }
    SiteBucket& cell(Series& s, uint64_t t);
    void widen();

    uint64_t width_ns_ = 1000;  // 1 us to start with, as Timeline
    uint32_t used_ = 0;
    size_t cells_ = 0;  // buckets held over all series
    size_t cell_limit_ = kMaxCells;
    uint64_t epoch_ = 1;  // series start at 0: the first touch saves their (empty) state
    std::vector<Series> series_;
    boost::unordered_flat_map<uint64_t, uint32_t> index_;  // site << 32 | pid -> series_
    boost::unordered_flat_map<BlockKey, Born, BlockKeyHash> born_;  // the live counted blocks
};

}  // namespace memtrack::report
