#include "report/Timeline.hpp"

#include <algorithm>

namespace memtrack::report {

void Timeline::add(uint64_t time_ns, uint64_t bytes) {
    // Most events fall in the bucket of the one before: no division for them.
    if (time_ns - last_start_ns_ < width_ns_ && last_ < buckets_.size()) {
        Bucket& b = buckets_[last_];
        b.max = std::max(b.max, bytes);
        b.last = bytes;
        return;
    }
    uint64_t i = time_ns / width_ns_;
    while (i >= kMaxPoints) {
        widen();
        i = time_ns / width_ns_;
    }
    if (i >= buckets_.size()) buckets_.resize(i + 1);
    Bucket& b = buckets_[i];
    b.max = b.used ? std::max(b.max, bytes) : bytes;
    b.last = bytes;
    b.used = true;
    last_ = i;
    last_start_ns_ = i * width_ns_;
}

void Timeline::widen() {
    std::vector<Bucket> merged((buckets_.size() + 1) / 2);
    for (size_t i = 0; i < buckets_.size(); ++i) {
        const Bucket& from = buckets_[i];
        if (!from.used) continue;
        Bucket& to = merged[i / 2];
        to.max = to.used ? std::max(to.max, from.max) : from.max;
        to.last = from.last;  // the later of the two is merged last
        to.used = true;
    }
    buckets_ = std::move(merged);
    width_ns_ *= 2;
    last_ = SIZE_MAX;  // the next add() finds its bucket anew
}

std::vector<TimelinePoint> Timeline::points() const {
    std::vector<TimelinePoint> out;
    out.reserve(buckets_.size());
    uint64_t level = 0;
    for (size_t i = 0; i < buckets_.size(); ++i) {
        const Bucket& b = buckets_[i];
        out.push_back({i * width_ns_, b.used ? b.max : level});
        if (b.used) level = b.last;
    }
    return out;
}

}  // namespace memtrack::report
