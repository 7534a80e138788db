#include "report/LiveMap.hpp"

#include <cassert>

namespace memtrack::report {

std::pair<Block*, bool> LiveMap::try_emplace(const BlockKey& key) {
    assert(key.addr != 0);
    if ((size_ + 1) * 10 > slots_.size() * 7) grow();
    size_t i = home(key);
    for (;; i = (i + 1) & mask()) {
        Slot& s = slots_[i];
        if (s.key.addr == 0) break;
        if (s.key == key) return {&s.block, false};
    }
    slots_[i] = Slot{key, Block{}};
    ++size_;
    return {&slots_[i].block, true};
}

void LiveMap::erase(Block* b) {
    // Slot is standard-layout with key first: the block's slot is found from its address.
    size_t hole = size_t(reinterpret_cast<Slot*>(reinterpret_cast<char*>(b) - offsetof(Slot, block)) - slots_.data());
    // Backward shift: move later members of the run into the hole when their home allows, so
    // every lookup still finds its key before the first empty slot.
    for (size_t j = (hole + 1) & mask();; j = (j + 1) & mask()) {
        Slot& s = slots_[j];
        if (s.key.addr == 0) break;
        const size_t h = home(s.key);
        // s may move to `hole` unless its home lies cyclically in (hole, j].
        const bool stays = hole <= j ? (h > hole && h <= j) : (h > hole || h <= j);
        if (stays) continue;
        slots_[hole] = s;
        hole = j;
    }
    slots_[hole].key.addr = 0;
    --size_;
}

void LiveMap::grow() {
    decltype(slots_) old(slots_.size() * 2);
    old.swap(slots_);
    --shift_;
    for (const Slot& s : old) {
        if (s.key.addr == 0) continue;
        size_t i = home(s.key);
        while (slots_[i].key.addr != 0) i = (i + 1) & mask();
        slots_[i] = s;
    }
}

}  // namespace memtrack::report
