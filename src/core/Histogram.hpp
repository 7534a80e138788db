#pragma once
// A fixed-size log-linear histogram of durations (ns): constant memory however long the run,
// percentiles within ~6 %, exact maximum. Its cells are Counters: one writer adds, any thread
// may copy it (Counter.hpp); a copy taken while the writer adds may be a sample short here or there.
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "core/Counter.hpp"

namespace memtrack {

class Histogram {
public:
    void add(uint64_t v) {
        buckets_[index(v)].add();
        count_.add();
        max_.raise_to(v);
        sum_.add(v);
    }
    uint64_t count() const { return count_; }
    uint64_t max() const { return max_; }
    uint64_t sum() const { return sum_; }
    // The value below which a fraction q of the samples fall (upper edge of its bucket, capped
    // at the maximum seen). 0 when empty.
    uint64_t percentile(double q) const {
        const uint64_t count = count_, max = max_;
        if (count == 0) return 0;
        uint64_t rank = uint64_t(q * double(count));
        if (rank >= count) rank = count - 1;
        uint64_t seen = 0;
        for (size_t i = 0; i < buckets_.size(); ++i) {
            seen += buckets_[i];
            if (seen > rank) {
                const uint64_t upper = upper_edge(i);
                return upper < max ? upper : max;
            }
        }
        return max;
    }

    static constexpr unsigned kSubBits = 4;  // 16 linear steps per power of two
    static size_t index(uint64_t v) {
        if (v < (1u << kSubBits)) return size_t(v);
        const unsigned exp = 63u - unsigned(std::countl_zero(v));  // >= kSubBits
        const uint64_t sub = (v >> (exp - kSubBits)) & ((1u << kSubBits) - 1);
        return size_t((exp - kSubBits + 1) << kSubBits) + size_t(sub);
    }
    static uint64_t upper_edge(size_t i) {
        if (i < (1u << kSubBits)) return uint64_t(i);
        const unsigned exp = unsigned(i >> kSubBits) + kSubBits - 1;
        const uint64_t sub = i & ((1u << kSubBits) - 1);
        const uint64_t lower = (uint64_t(1) << exp) + (sub << (exp - kSubBits));
        return lower + (uint64_t(1) << (exp - kSubBits)) - 1;
    }

private:
    std::array<Counter, (64 - kSubBits + 1) << kSubBits> buckets_{};
    Counter count_, max_, sum_;
};

}  // namespace memtrack
