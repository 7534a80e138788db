#pragma once
// Addresses already resolved, per module: a stack's frames mostly repeat other stacks' frames.
// Bounded: past a number of cached addresses everything is dropped (crude, but memory stays
// bounded on a long trace, and a refill costs only index lookups).
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "format/StacksFile.hpp"  // Frame

namespace memtrack {

class Module;

class AddressCache {
public:
    explicit AddressCache(size_t max_addresses = size_t(1) << 18) : max_(max_addresses) {}

    // Frames cached for `addr` in `module` (an empty vector: "nothing known here"), or nullptr;
    // counted as a hit or a miss.
    const std::vector<Frame>* find(const Module* module, uint64_t addr);
    void insert(const Module* module, uint64_t addr, std::vector<Frame> frames);

    uint64_t hits() const { return hits_; }
    uint64_t misses() const { return misses_; }

private:
    struct Key {
        const Module* module;
        uint64_t addr;
        bool operator==(const Key&) const = default;
    };
    struct KeyHash {
        size_t operator()(const Key& k) const {
            return std::hash<uint64_t>()(k.addr * 0x9e3779b97f4a7c15ull ^ reinterpret_cast<uintptr_t>(k.module));
        }
    };
    size_t max_;
    std::unordered_map<Key, std::vector<Frame>, KeyHash> frames_;
    uint64_t hits_ = 0;
    uint64_t misses_ = 0;
};

}  // namespace memtrack
