#include "report/Sites.hpp"

#include <fmt/format.h>

namespace memtrack::report {
namespace {

// What makes two stacks one site (Sites.hpp).
std::string site_key(uint64_t hash, const std::vector<Frame>* frames) {
    if (hash == 0) return "\x01no stack";
    if (!frames) return "\x01missing";
    std::string key;
    for (const Frame& f : *frames) {
        fmt::format_to(std::back_inserter(key), "{}\t{}\t{}\t{}\t{:d}\t{:x}\n", f.function, f.file, f.line, f.module,
                       f.inlined, f.function.empty() ? f.ip : 0);
    }
    return key;
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
    const std::vector<Frame>* frames = hash != 0 ? stacks_.find(hash) : nullptr;
    if (!filter_.accepts_stack(frames)) return kIgnoredSite;
    auto [same, new_site] = by_frames_.try_emplace(site_key(hash, frames), uint32_t(counters_.size()));
    *site = same->second;
    if (!new_site) return *site;
    counters_.emplace_back().no_frames = frames == nullptr;
    peaks_.emplace_back();
    exited_.emplace_back();
    info_.push_back({hash, frames});
    return *site;
}

std::vector<Site> SiteTable::sites() const {
    std::vector<Site> out;
    out.reserve(counters_.size());
    for (size_t i = 0; i < counters_.size(); ++i) {
        const SiteCounters& c = counters_[i];
        out.push_back(Site{c.live_bytes + exited_[i].bytes, c.live_blocks + exited_[i].blocks, peaks_[i].bytes, peaks_[i].blocks, c.calls, c.bytes,
                           c.temporary_calls, c.temporary_bytes, info_[i].hash, info_[i].frames});
    }
    return out;
}

}  // namespace memtrack::report
