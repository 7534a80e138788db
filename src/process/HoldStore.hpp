#pragma once
// The seam of the pause protocol (src/bpf/hold.h): where the hold words and the `held` index
// live, and how a process is signalled. HoldMaps and PidfdSignals are the real ones; the unit
// test gives plain memory and a model of the kernel's signal rules.
#include <cstdint>
#include <optional>
#include <vector>

#include "bpf/hold.h"
#include "core/Result.hpp"

namespace memtrack {

class HoldStore {
public:
    virtual ~HoldStore() = default;
    // capacity() words, one per tgid, changed only by compare-and-swap (std::atomic_ref).
    virtual uint32_t* words() = 0;
    virtual uint32_t capacity() const = 0;
    // The pids of the held index, and one entry (start time, when each reason was taken).
    virtual std::vector<uint32_t> indexed() const = 0;
    virtual std::optional<mt_held> entry(uint32_t pid) const = 0;
    // BPF's pauses-under-way counters, one per reason index; null when there are none (the guard).
    virtual uint64_t* outstanding() = 0;
};

class HoldSignals {
public:
    virtual ~HoldSignals() = default;
    // `sig` to pid if it is still the process that started at start_boottime; false: gone.
    virtual Result<bool> send(uint32_t pid, uint64_t start_boottime, int sig) = 0;
};

}  // namespace memtrack
