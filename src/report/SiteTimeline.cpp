#include "report/SiteTimeline.hpp"

#include <algorithm>
#include <iterator>

namespace memtrack::report {

SiteTimeline::Series& SiteTimeline::series(uint32_t site, int32_t pid) {
    const uint64_t key = uint64_t(site) << 32 | uint32_t(pid);
    auto [it, fresh] = index_.try_emplace(key, uint32_t(series_.size()));
    if (fresh) {
        series_.emplace_back();
        series_.back().out.site = site;
        series_.back().out.pid = pid;
    }
    return series_[it->second];
}

SiteBucket& SiteTimeline::cell(Series& s, uint64_t t) {
    while (t / width_ns_ >= kMaxBuckets) widen();
    while (cells_ >= cell_limit_ && used_ > 1) {
        const size_t before = cells_;
        widen();
        // Series of one bucket each merge no further: let them grow by kMaxCells first.
        if (cells_ == before) cell_limit_ = cells_ + kMaxCells;
    }
    const auto b = uint32_t(t / width_ns_);
    used_ = std::max(used_, b + 1);
    std::vector<SiteBucket>& v = s.out.buckets;
    // Events come in time order but for a little disorder across CPUs, and leaks are told at
    // the exit for the bucket the block was made in: look from the back.
    auto it = v.end();
    while (it != v.begin() && std::prev(it)->bucket > b) --it;
    if (it != v.begin() && std::prev(it)->bucket == b) return *std::prev(it);
    ++cells_;
    return *v.insert(it, SiteBucket{.bucket = b});
}

void SiteTimeline::widen() {
    width_ns_ *= 2;
    used_ = (used_ + 1) / 2;
    cells_ = 0;
    for (Series& s : series_) {
        std::vector<SiteBucket>& v = s.out.buckets;
        size_t kept = 0;
        for (size_t i = 0; i < v.size(); ++i) {
            SiteBucket c = v[i];
            c.bucket /= 2;
            if (kept > 0 && v[kept - 1].bucket == c.bucket) {
                merge_into(v[kept - 1], c);
            } else {
                v[kept++] = c;
            }
        }
        v.resize(kept);
        cells_ += kept;
    }
}

void SiteTimeline::allocated(uint32_t site, int32_t pid, uint64_t addr, uint64_t size, uint64_t t) {
    Series& s = series(site, pid);
    touch(s);
    s.live += size;
    SiteBucket& c = cell(s, t);
    ++c.calls;
    c.bytes += size;
    born_.insert_or_assign(BlockKey{pid, addr}, Born{t, size, uint32_t(&s - series_.data())});
}

void SiteTimeline::released(uint32_t site, int32_t pid, uint64_t addr, uint64_t size, uint64_t t, Release how) {
    Series& s = series(site, pid);
    touch(s);
    s.live -= size;
    SiteBucket& c = cell(s, t);
    c.released_bytes += size;
    if (how == Release::Temporary) {
        ++c.temporary_calls;
        c.temporary_bytes += size;
    }
    auto it = born_.find(BlockKey{pid, addr});
    if (it == born_.end()) return;
    if (how == Release::Exit) {
        SiteBucket& made = cell(s, it->second.time);
        made.leaked_bytes += size;
        ++made.leaked_blocks;
    }
    born_.erase(it);
}

SiteTimelineData SiteTimeline::finish() && {
    for (const auto& [key, born] : born_) {
        SiteBucket& made = cell(series_[born.series], born.time);
        made.leaked_bytes += born.size;
        ++made.leaked_blocks;
    }
    SiteTimelineData out;
    out.bucket_ns = width_ns_;
    out.buckets = used_;
    for (Series& s : series_) {
        if (s.peak_epoch != epoch_) s.out.peak_bytes = s.live;
        out.series.push_back(std::move(s.out));
    }
    return out;
}

}  // namespace memtrack::report
