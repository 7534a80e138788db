#include "symbols/AddressCache.hpp"

namespace memtrack {

const std::vector<Frame>* AddressCache::find(const Module* module, uint64_t addr) {
    const auto it = frames_.find(Key{module, addr});
    if (it == frames_.end()) {
        ++misses_;
        return nullptr;
    }
    ++hits_;
    return &it->second;
}

void AddressCache::insert(const Module* module, uint64_t addr, std::vector<Frame> frames) {
    if (frames_.size() >= max_) frames_.clear();
    frames_.insert_or_assign(Key{module, addr}, std::move(frames));
}

}  // namespace memtrack
