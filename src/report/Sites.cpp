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
    auto [it, fresh] = index_.try_emplace(hash, kIgnoredSite);
    if (!fresh) return it->second;
    const std::vector<Frame>* frames = hash != 0 ? stacks_.find(hash) : nullptr;
    if (!filter_.accepts_stack(frames)) return kIgnoredSite;
    auto [same, new_site] = by_frames_.try_emplace(site_key(hash, frames), uint32_t(sites_.size()));
    it->second = same->second;
    if (!new_site) return it->second;
    Site& s = sites_.emplace_back();
    s.hash = hash;
    s.frames = frames;
    return it->second;
}

}  // namespace memtrack::report
