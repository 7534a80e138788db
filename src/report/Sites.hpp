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
#include "report/OpenTable.hpp"
#include "report/StackTable.hpp"

namespace memtrack::report {

class FrameFolder;  // FrameFold.hpp

// The site of blocks the filter dropped: kept in the live map so their frees are not taken for
// frees of unknown blocks, counted nowhere.
inline constexpr uint32_t kIgnoredSite = UINT32_MAX;

// A site as the printers read it, made by SiteTable::sites() at the end.
struct Site {
    uint64_t live_bytes = 0;   // live now; at the end: leaked (live at the end, or at its process's exit)
    uint64_t live_blocks = 0;
    uint64_t peak_bytes = 0;   // live at the moment of the peak (PeakTracker)
    uint64_t peak_blocks = 0;
    uint64_t calls = 0;        // allocations made here
    uint64_t bytes = 0;        // their sizes, summed
    uint64_t temporary_calls = 0;  // blocks freed soon after they were made (TemporaryDetector)
    uint64_t temporary_bytes = 0;
    uint64_t hash = 0;                           // the first stack_hash seen of it; 0: without a stack
    std::vector<int32_t> pids;                   // the processes that allocated here, by pid
    const StackFrames* frames = nullptr;  // innermost first; null when the stacks file lacks it
    // Of live_*: what was live at its process's exit (with a timeline; the rest was live at
    // the end of the recording).
    uint64_t exited_bytes = 0;
    uint64_t exited_blocks = 0;
    // Set after the analysis (fold_sites, FrameNames.hpp): what shows its frames as people read
    // them (shown_stack); null: they are shown raw (json's sites, pprof, speedscope).
    const FrameFolder* folder = nullptr;
    // Set after the analysis (classify_owners, Owners.hpp): a leak that is not the program's
    // own: a runtime's one-time block or a suppressed one. Its leaked amount counts apart.
    enum class Owner : uint8_t { Program, Runtime, Suppressed } owner = Owner::Program;
    std::string owner_rule;  // the runtime rule's name or the suppression's pattern
};

// Everything an event reads or writes of its site, in one cache line: with many sites the site
// is a cache miss of most events, and one line is what a prefetch fetches (SiteTable::prefetch).
struct alignas(64) SiteCounters {
    uint64_t live_bytes = 0;
    uint64_t live_blocks = 0;
    uint64_t peak_epoch = 0;  // PeakTracker's bookkeeping
    uint64_t calls = 0;
    uint64_t bytes = 0;
    uint64_t temporary_calls = 0;
    uint64_t temporary_bytes = 0;
    bool no_frames = false;  // Site::frames is null
    int32_t last_pid = 0;    // the process of its latest allocation (SiteTable::ran_in), in the padding
};
static_assert(sizeof(SiteCounters) == 64);

// What the site had live at the latest peak (PeakTracker), apart: written only by the first
// change to the site after each new peak.
struct SitePeak {
    uint64_t bytes = 0;
    uint64_t blocks = 0;
};

class SiteTable {
public:
    SiteTable(const StackTable& stacks, const Filter& filter) : stacks_(stacks), filter_(filter) {}

    // The site of `hash`, made on first sight, or kIgnoredSite when the filter drops its stack.
    uint32_t site_for(uint64_t hash);
    // Hints ahead of site_for(hash), in this order with some events in between: the index
    // slot of `hash`, then (that slot being in the cache by then) the counters of its site if
    // it has one yet.
    void prefetch_index(uint64_t hash) const {
        if (hash != 0) index_.prefetch(hash);
    }
    void prefetch(uint64_t hash) {
        const uint32_t* site = hash != 0 ? index_.find(hash) : &no_stack_;
        if (site) prefetch_site(*site);
    }
    void prefetch_site(uint32_t index) const {
        if (index < counters_.size()) __builtin_prefetch(&counters_[index]);
    }
    SiteCounters& counters(uint32_t index) { return counters_[index]; }
    SitePeak& peak(uint32_t index) { return peaks_[index]; }
    // What the site had live when its process exited (leaked), apart from what is live now.
    SitePeak& exited(uint32_t index) { return exited_[index]; }
    // Site `index` (its counters `c`) allocated in process `pid`. Runs of one process are the
    // rule: only a change of process looks at the site's list.
    void ran_in(uint32_t index, SiteCounters& c, int32_t pid) {
        if (c.last_pid == pid) return;
        c.last_pid = pid;
        add_pid(index, pid);
    }

    size_t size() const { return counters_.size(); }
    // Every site, in order of first allocation.
    std::vector<Site> sites() const;

private:
    struct StackHashTraits {
        static bool empty(uint64_t hash) { return hash == 0; }  // hash 0 is no_stack_
        static uint64_t none() { return 0; }
        // splitmix64's finalizer: stack hashes need not be random in their top bits (a
        // multiply alone left the benchmark's hashes, multiples of one constant, in long runs).
        static uint64_t hash(uint64_t h) {
            h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
            h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
            return h ^ (h >> 31);
        }
    };
    struct Info {
        uint64_t hash = 0;
        const StackFrames* frames = nullptr;
    };

    const StackTable& stacks_;
    const Filter& filter_;
    OpenTable<uint64_t, uint32_t, StackHashTraits> index_;  // by hash, except hash 0
    uint32_t no_stack_ = kIgnoredSite;  // the site of allocations without a stack, once seen
    bool no_stack_seen_ = false;
    boost::unordered_flat_map<uint64_t, uint32_t> by_frames_;  // by site_key (Sites.cpp)
    // On huge pages: events reach sites at random (HugePageAllocator.hpp).
    std::vector<SiteCounters, HugePageAllocator<SiteCounters>> counters_;
    std::vector<SitePeak> peaks_;
    std::vector<SitePeak> exited_;
    std::vector<Info> info_;
    std::vector<std::vector<int32_t>> pids_;  // per site, sorted
    void add_pid(uint32_t index, int32_t pid);
};

}  // namespace memtrack::report
