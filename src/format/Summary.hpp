#pragma once
// Totals over a stream of artifact events: what `memtrack dump --summary` prints.
#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <boost/json/object.hpp>

#include "format/Record.hpp"

namespace memtrack {

class Summary {
public:
    // Events are taken in the order given. Within one ring that is the order they happened in;
    // across rings it is only close to it, so the peaks are approximate for multi-CPU traces.
    // Non-artifact kinds (Fork, Exec, Exit) are ignored.
    void add(const Event& e);

    // Per artifact kind: events seen, and the sum of their sizes (0 for Free, which has none).
    uint64_t count(EventKind kind) const;
    uint64_t bytes(EventKind kind) const;

    uint64_t live_heap_bytes() const { return live_bytes_; }
    uint64_t live_heap_blocks() const { return live_.size(); }
    uint64_t peak_live_heap_bytes() const { return peak_live_bytes_; }
    uint64_t mapped_bytes() const { return mapped_bytes_; }
    uint64_t peak_mapped_bytes() const { return peak_mapped_bytes_; }
    uint64_t processes() const { return pids_.size(); }

    // A short table for people: one line per kind, then the heap and process totals.
    std::string text() const;
    boost::json::object to_json() const;

private:
    struct PerKind {
        uint64_t count = 0;
        uint64_t bytes = 0;
    };
    static constexpr size_t kKinds = 8;  // the artifact kinds, Malloc .. Brk

    void allocate(uint64_t addr, uint64_t size);
    void release(uint64_t addr);

    std::array<PerKind, kKinds> kinds_{};
    std::unordered_set<int32_t> pids_;
    std::unordered_map<uint64_t, uint64_t> live_;    // heap block address -> size
    std::unordered_map<uint64_t, uint64_t> mapped_;  // mmap address -> length
    uint64_t live_bytes_ = 0;
    uint64_t peak_live_bytes_ = 0;
    uint64_t mapped_bytes_ = 0;
    uint64_t peak_mapped_bytes_ = 0;
};

}  // namespace memtrack
