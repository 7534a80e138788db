#pragma once
// The report's open-addressing hash table (linear probing, deletion by backward shift, no
// tombstones), for the two lookups every event makes: the live block at an address
// (LiveMap.hpp) and the site of a stack hash (Sites.hpp).
//
// Its own rather than a library map for one thing a library map does not offer: prefetch() of
// the slot a key will be found at, issued a few events ahead. Both tables are far larger than
// the caches and reached at random, so a lookup is a cache miss for almost every event; the
// reader (report/Load.cpp) overlaps those misses instead of waiting on each in turn.
//
// Traits give: `static bool empty(const Key&)` (an empty slot's key, which no real key equals),
// `static Key none()` (that key) and `static uint64_t hash(const Key&)`, whose top bits pick
// the slot.
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "report/HugePageAllocator.hpp"

namespace memtrack::report {

template <typename Key, typename Value, typename Traits>
class OpenTable {
public:
    OpenTable() : slots_(kMinSlots) {}

    // The value at `key`, or nullptr. Pointers stay valid until the next try_emplace or erase.
    Value* find(const Key& key) {
        for (size_t i = home(key);; i = (i + 1) & mask()) {
            Slot& s = slots_[i];
            if (Traits::empty(s.key)) return nullptr;
            if (s.key == key) return &s.value;
        }
    }
    // The value at `key` and true if it was made now (value-initialized), or the one already
    // there. `key` is never the empty key.
    std::pair<Value*, bool> try_emplace(const Key& key) {
        assert(!Traits::empty(key));
        if ((size_ + 1) * 10 > slots_.size() * 7) grow();
        size_t i = home(key);
        for (;; i = (i + 1) & mask()) {
            Slot& s = slots_[i];
            if (Traits::empty(s.key)) break;
            if (s.key == key) return {&s.value, false};
        }
        slots_[i] = Slot{key, Value{}};
        ++size_;
        return {&slots_[i].value, true};
    }
    // Removes the value `v` points to (from find or try_emplace).
    void erase(Value* v) {
        // Slot is standard-layout with the key first: the value's slot is found from its address.
        size_t hole = size_t(reinterpret_cast<Slot*>(reinterpret_cast<char*>(v) - offsetof(Slot, value)) - slots_.data());
        // Backward shift: move later members of the run into the hole when their home allows,
        // so every lookup still finds its key before the first empty slot.
        for (size_t j = (hole + 1) & mask();; j = (j + 1) & mask()) {
            Slot& s = slots_[j];
            if (Traits::empty(s.key)) break;
            const size_t h = home(s.key);
            // s may move to `hole` unless its home lies cyclically in (hole, j].
            const bool stays = hole <= j ? (h > hole && h <= j) : (h > hole || h <= j);
            if (stays) continue;
            slots_[hole] = s;
            hole = j;
        }
        slots_[hole].key = Traits::none();
        --size_;
    }
    // A hint: the slot `key` would be found at, loaded into the cache ahead of its use.
    void prefetch(const Key& key) const { __builtin_prefetch(&slots_[home(key)]); }

    size_t size() const { return size_; }
    template <typename F>
    void for_each(F&& f) const {
        for (const Slot& s : slots_)
            if (!Traits::empty(s.key)) f(s.key, s.value);
    }

private:
    struct Slot {
        Key key = Traits::none();
        Value value{};
    };
    static constexpr size_t kMinSlots = 1024;

    size_t mask() const { return slots_.size() - 1; }
    size_t home(const Key& key) const { return size_t(Traits::hash(key) >> shift_); }
    void grow() {
        decltype(slots_) old(slots_.size() * 2);
        old.swap(slots_);
        --shift_;
        for (const Slot& s : old) {
            if (Traits::empty(s.key)) continue;
            size_t i = home(s.key);
            while (!Traits::empty(slots_[i].key)) i = (i + 1) & mask();
            slots_[i] = s;
        }
    }

    // On huge pages: events reach the slots at random (HugePageAllocator.hpp).
    std::vector<Slot, HugePageAllocator<Slot>> slots_;  // a power of two of them, at most 70 % used
    unsigned shift_ = 64 - 10;  // 64 - log2(slots_.size())
    size_t size_ = 0;
};

}  // namespace memtrack::report
