#pragma once
// The live heap over time, in at most kMaxPoints buckets whatever the trace's length: when time
// runs past the last bucket, neighbouring buckets are merged pairwise and the width doubles.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace memtrack::report {

struct TimelinePoint {
    uint64_t time_ns = 0;  // the bucket's start, since the artifact's first event
    uint64_t bytes = 0;    // the most live heap bytes within the bucket
};

class Timeline {
public:
    static constexpr size_t kMaxPoints = 1000;

    // The live heap was `bytes` at `time_ns` (since the first event).
    void add(uint64_t time_ns, uint64_t bytes);
    // One point per bucket from the first to the last one used; a bucket no event fell in
    // carries the level the heap was left at.
    std::vector<TimelinePoint> points() const;
    uint64_t bucket_ns() const { return width_ns_; }

private:
    struct Bucket {
        uint64_t max = 0;
        uint64_t last = 0;
        bool used = false;
    };
    void widen();

    uint64_t width_ns_ = 1000;  // 1 us to start with
    std::vector<Bucket> buckets_;
    size_t last_ = SIZE_MAX;       // the bucket of the latest add(), SIZE_MAX: none
    uint64_t last_start_ns_ = 0;   // where it starts
};

}  // namespace memtrack::report
