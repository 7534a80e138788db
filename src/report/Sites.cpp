#include "report/Sites.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace memtrack::report {
namespace {

// What makes two stacks one site (Sites.hpp): their symbolic id (StackTable::symbolic_id).
uint64_t site_key(const StackTable& stacks, uint64_t hash, const StackFrames* frames) {
    if (hash == 0) return UINT64_MAX;
    if (!frames) return UINT64_MAX - 1;
    return stacks.symbolic_id(frames);
}

}  // namespace

uint32_t SiteTable::site_for(uint64_t hash) {
    uint32_t* site = &no_stack_;
    if (hash == 0) {
        if (no_stack_seen_) return no_stack_;
        no_stack_seen_ = true;
    } else {
        auto [it, fresh] = index_.try_emplace(hash);
        site = it;
        if (!fresh) return *site;
    }
    // First sight of `hash`; `site` stays valid: nothing is inserted into index_ before it is set.
    *site = kIgnoredSite;
    const StackFrames* frames = hash != 0 ? stacks_.find(hash) : nullptr;
    if (!filter_.accepts_stack(frames)) return kIgnoredSite;
    auto [same, new_site] = by_frames_.try_emplace(site_key(stacks_, hash, frames), uint32_t(counters_.size()));
    *site = same->second;
    if (!new_site) return *site;
    counters_.emplace_back().no_frames = frames == nullptr;
    peaks_.emplace_back();
    exited_.emplace_back();
    info_.push_back({hash, frames});
    pids_.emplace_back();
    return *site;
}

void SiteTable::add_pid(uint32_t index, int32_t pid) {
    std::vector<int32_t>& pids = pids_[index];
    auto at = std::lower_bound(pids.begin(), pids.end(), pid);
    if (at == pids.end() || *at != pid) pids.insert(at, pid);
}

std::vector<Site> SiteTable::sites() const {
    std::vector<Site> out;
    out.reserve(counters_.size());
    for (size_t i = 0; i < counters_.size(); ++i) {
        const SiteCounters& c = counters_[i];
        Site& s = out.emplace_back();
        s.live_bytes = c.live_bytes + exited_[i].bytes;
        s.live_blocks = c.live_blocks + exited_[i].blocks;
        s.peak_bytes = peaks_[i].bytes;
        s.peak_blocks = peaks_[i].blocks;
        s.calls = c.calls;
        s.bytes = c.bytes;
        s.temporary_calls = c.temporary_calls;
        s.temporary_bytes = c.temporary_bytes;
        s.hash = info_[i].hash;
        s.pids = pids_[i];
        s.frames = info_[i].frames;
        s.exited_bytes = exited_[i].bytes;
        s.exited_blocks = exited_[i].blocks;
    }
    return out;
}

}  // namespace memtrack::report
