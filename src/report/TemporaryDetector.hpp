#pragma once
// Temporary allocations, as heaptrack defines them (src/analyze/accumulatedtracedata.cpp: a
// free is temporary when the line before it in the process's one stream of heap events was
// that block's allocation): a block released with at most `threshold` other heap events of its
// process (allocations or releases, of any thread) in between. A realloc's release of its old
// block counts as a release, as heaptrack records a realloc as a free and a malloc. The default,
// 0, is heaptrack's figure.
#include <cstdint>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>

namespace memtrack::report {

class TemporaryDetector {
public:
    explicit TemporaryDetector(uint64_t threshold) : threshold_(threshold) {}

    struct Stamp {
        uint32_t thread = 0;
        uint64_t seq = 0;
    };
    // Every allocation of process `pid`, filtered or not: they all count as "in between".
    // (`thread` in the stamp is the process's index: heaptrack's stream is per process.)
    Stamp on_allocation(int32_t pid) {
        auto [it, fresh] = threads_.try_emplace(pid, uint32_t(counts_.size()));
        if (fresh) counts_.push_back(0);
        return {it->second, ++counts_[it->second]};
    }
    // Whether a block stamped `s` is temporary if it is released now; then counts the release
    // as an event of its process. Every release of a known block goes through here.
    bool release(const Stamp& s) { return counts_[s.thread]++ - s.seq <= threshold_; }
    // Events so far, per process index: a block stamped (thread, seq) came after this point
    // when its seq is above the process's count (or its process is not in it yet).
    const std::vector<uint64_t>& counts() const { return counts_; }

private:
    uint64_t threshold_;
    boost::unordered_flat_map<int32_t, uint32_t> threads_;  // pid -> its index
    std::vector<uint64_t> counts_;  // heap events so far, per process index
};

}  // namespace memtrack::report
