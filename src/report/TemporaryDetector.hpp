#pragma once
// Temporary allocations: blocks freed with at most `threshold` other allocations of the
// allocating thread in between (0: freed before that thread allocated anything else).
// heaptrack's "temporary" is threshold 0; the report's default is 1.
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
    // Every allocation of (pid, tid), filtered or not: they all count as "in between".
    Stamp on_allocation(int32_t pid, int32_t tid) {
        const uint64_t key = (uint64_t(uint32_t(pid)) << 32) | uint32_t(tid);
        auto [it, fresh] = threads_.try_emplace(key, uint32_t(counts_.size()));
        if (fresh) counts_.push_back(0);
        return {it->second, ++counts_[it->second]};
    }
    // Whether a block stamped `s` is temporary if it is freed now.
    bool is_temporary(const Stamp& s) const { return counts_[s.thread] - s.seq <= threshold_; }
    // Allocations so far, per thread index: a block stamped (thread, seq) came after this point
    // when its seq is above the thread's count (or its thread is not in it yet).
    const std::vector<uint64_t>& counts() const { return counts_; }

private:
    uint64_t threshold_;
    boost::unordered_flat_map<uint64_t, uint32_t> threads_;
    std::vector<uint64_t> counts_;  // allocations so far, per thread index
};

}  // namespace memtrack::report
