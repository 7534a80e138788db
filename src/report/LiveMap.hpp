#pragma once
// The blocks live now, by process and address: the report's only memory that grows with the
// trace (besides the distinct stacks).
//
// An open-addressing table of its own (linear probing, deletion by backward shift, no
// tombstones) rather than a library map, for one thing a library map does not offer: prefetch()
// of the slot an event will look at, issued a few events ahead. With 100000 blocks live and
// frees of random blocks the slot is a cache miss for almost every event; the reader
// (report/Load.cpp) overlaps those misses instead of waiting on each in turn.
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "report/HugePageAllocator.hpp"

namespace memtrack::report {

struct BlockKey {
    int32_t pid = 0;
    uint64_t addr = 0;
    bool operator==(const BlockKey&) const = default;
};

// For the library maps keyed by block (the Analyzer's mapped ranges); LiveMap hashes by itself.
struct BlockKeyHash {
    size_t operator()(const BlockKey& k) const {
        // One multiply-xorshift round over both fields; boost's flat map mixes the result again.
        uint64_t h = k.addr ^ (uint64_t(uint32_t(k.pid)) << 47);
        h *= 0x9e3779b97f4a7c15ull;
        return size_t(h ^ (h >> 29));
    }
};

struct Block {
    uint64_t size = 0;
    uint32_t site = 0;    // index in the SiteTable, or kIgnoredSite
    uint32_t thread = 0;  // index in the TemporaryDetector's threads
    uint64_t seq = 0;     // that thread's allocation number, for the TemporaryDetector
};

class LiveMap {
public:
    LiveMap() : slots_(kMinSlots) {}

    // The block at `key`, or nullptr. Pointers stay valid until the next try_emplace or erase.
    Block* find(const BlockKey& key) {
        for (size_t i = home(key);; i = (i + 1) & mask()) {
            Slot& s = slots_[i];
            if (s.key.addr == 0) return nullptr;
            if (s.key == key) return &s.block;
        }
    }
    // The block at `key` and true if it was made now (zeroed), or the one already there.
    // `key.addr` is never 0: address 0 is a failed allocation, never live (and marks empty slots).
    std::pair<Block*, bool> try_emplace(const BlockKey& key);
    // Removes the block `b` points to (from find or try_emplace).
    void erase(Block* b);
    // A hint: the slot `key` would be found at, loaded into the cache ahead of its use.
    void prefetch(const BlockKey& key) const { __builtin_prefetch(&slots_[home(key)]); }

    size_t size() const { return size_; }
    template <typename F>
    void for_each(F&& f) const {
        for (const Slot& s : slots_)
            if (s.key.addr != 0) f(s.key, s.block);
    }

private:
    struct Slot {
        BlockKey key;  // addr 0: empty
        Block block;
    };
    static constexpr size_t kMinSlots = 1024;

    size_t mask() const { return slots_.size() - 1; }
    // Fibonacci hashing: the top bits of one multiply spread the 16-byte-aligned addresses
    // malloc returns over the table.
    size_t home(const BlockKey& key) const {
        const uint64_t h = (key.addr ^ (uint64_t(uint32_t(key.pid)) << 47)) * 0x9e3779b97f4a7c15ull;
        return size_t(h >> shift_);
    }
    void grow();

    std::vector<Slot, HugePageAllocator<Slot>> slots_;  // a power of two of them, at most 70 % used
    unsigned shift_ = 64 - 10;  // 64 - log2(slots_.size())
    size_t size_ = 0;
};

}  // namespace memtrack::report
