#pragma once
// The blocks live now, by process and address: the report's only memory that grows with the
// trace (besides the distinct stacks).
#include <cstdint>

#include <boost/unordered/unordered_flat_map.hpp>

namespace memtrack::report {

struct BlockKey {
    int32_t pid = 0;
    uint64_t addr = 0;
    bool operator==(const BlockKey&) const = default;
};

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

using LiveMap = boost::unordered_flat_map<BlockKey, Block, BlockKeyHash>;

}  // namespace memtrack::report
