#pragma once
// The blocks live now, by process and address: the report's only memory that grows with the
// trace (besides the distinct stacks).
//
// An OpenTable (OpenTable.hpp), whose slot for an event's block can be prefetched: with 100000
// blocks live and frees of random blocks it is a cache miss for almost every event.
#include <cstddef>
#include <cstdint>

#include "report/OpenTable.hpp"

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
    uint32_t thread = 0;  // index in the TemporaryDetector's processes (its stream)
    uint64_t seq = 0;     // that stream's event number at its allocation, for the TemporaryDetector
};

// Address 0 is a failed allocation, never live: it marks the empty slots.
struct BlockKeyTraits {
    static bool empty(const BlockKey& k) { return k.addr == 0; }
    static BlockKey none() { return {}; }
    // Fibonacci hashing: the top bits of one multiply spread the 16-byte-aligned addresses
    // malloc returns over the table.
    static uint64_t hash(const BlockKey& k) { return (k.addr ^ (uint64_t(uint32_t(k.pid)) << 47)) * 0x9e3779b97f4a7c15ull; }
};

using LiveMap = OpenTable<BlockKey, Block, BlockKeyTraits>;

}  // namespace memtrack::report
