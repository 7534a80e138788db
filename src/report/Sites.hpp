#pragma once
// Allocation sites: one per distinct call stack, with what was allocated there, what is live
// now, what was live at the peak and how much of it was temporary.
//
// Distinct as symbolized: stacks whose frames all name the same function, file, line, module
// and inlining are one site even when their addresses differ (a call the compiler copied, as
// when it unrolls a loop). Frames without a function are told apart by address. Stacks the
// stacks file lacks are one site, "[stack missing]"; allocations without a stack another.
#include <cstdint>
#include <string>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>

#include "format/StacksFile.hpp"
#include "report/Filter.hpp"
#include "report/HugePageAllocator.hpp"
#include "report/StackTable.hpp"

namespace memtrack::report {

// The site of blocks the filter dropped: kept in the live map so their frees are not taken for
// frees of unknown blocks, counted nowhere.
inline constexpr uint32_t kIgnoredSite = UINT32_MAX;

// The fields every event touches come first, in one cache line: with many sites, the site is
// the second cache miss of most events (after the live map's).
struct alignas(64) Site {
    uint64_t live_bytes = 0;   // live now (at the end: leaked)
    uint64_t live_blocks = 0;
    uint64_t peak_epoch = 0;   // PeakTracker's bookkeeping
    uint64_t peak_bytes = 0;   // live at the moment of the peak (PeakTracker)
    uint64_t peak_blocks = 0;
    uint64_t calls = 0;        // allocations made here
    uint64_t bytes = 0;        // their sizes, summed
    uint64_t temporary_calls = 0;  // blocks freed soon after they were made (TemporaryDetector)
    uint64_t temporary_bytes = 0;
    uint64_t hash = 0;                           // the first stack_hash seen of it; 0: without a stack
    const std::vector<Frame>* frames = nullptr;  // innermost first; null when the stacks file lacks it
};

class SiteTable {
public:
    SiteTable(const StackTable& stacks, const Filter& filter) : stacks_(stacks), filter_(filter) {}

    // The site of `hash`, made on first sight, or kIgnoredSite when the filter drops its stack.
    uint32_t site_for(uint64_t hash);
    // A hint: loads the site of `hash`, if it has one yet, into the cache ahead of its use.
    void prefetch(uint64_t hash) const {
        if (auto it = index_.find(hash); it != index_.end()) prefetch_site(it->second);
    }
    void prefetch_site(uint32_t index) const {
        if (index != kIgnoredSite) __builtin_prefetch(&sites_[index]);
    }
    Site& operator[](uint32_t index) { return sites_[index]; }
    // On huge pages: events reach sites at random (HugePageAllocator.hpp).
    using Sites = std::vector<Site, HugePageAllocator<Site>>;
    const Sites& all() const { return sites_; }
    Sites& all() { return sites_; }

private:
    const StackTable& stacks_;
    const Filter& filter_;
    boost::unordered_flat_map<uint64_t, uint32_t> index_;  // by hash
    boost::unordered_flat_map<std::string, uint32_t> by_frames_;
    Sites sites_;
};

}  // namespace memtrack::report
