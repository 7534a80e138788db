#include "report/Sites.hpp"

namespace memtrack::report {

uint32_t SiteTable::site_for(uint64_t hash) {
    auto [it, fresh] = index_.try_emplace(hash, kIgnoredSite);
    if (!fresh) return it->second;
    const std::vector<Frame>* frames = hash != 0 ? stacks_.find(hash) : nullptr;
    if (!filter_.accepts_stack(frames)) return kIgnoredSite;
    it->second = uint32_t(sites_.size());
    Site& s = sites_.emplace_back();
    s.hash = hash;
    s.frames = frames;
    return it->second;
}

}  // namespace memtrack::report
