#pragma once
// A small recorded session whose every figure is known (worked out in test_report.cpp): the
// input of the report's unit tests and of its golden files (tests/golden/report/).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "format/Record.hpp"
#include "format/StacksFile.hpp"

namespace memtrack::unittest {

struct ScenarioStack {
    uint64_t hash = 0;
    int32_t pid = 0;
    std::vector<Frame> frames;
};

struct Scenario {
    std::vector<Event> events;
    std::vector<ScenarioStack> stacks;  // the stacks file; it lacks kHashMissing on purpose
};

inline constexpr uint64_t kStart = 1'000'000'000;  // the first event's timestamp
inline constexpr uint64_t kHashLeak = 0x1111, kHashPeak = 0x2222, kHashScratch = 0x3333, kHashMissing = 0x4444,
                          kHashChild = 0x5555;

// An event as the artifact holds it: no size on a Free, no stack_hash off the allocations.
Event make_event(EventKind kind, int32_t pid, int32_t tid, uint64_t timestamp, uint64_t addr, uint64_t size,
                 uint64_t hash = 0, std::optional<uint64_t> old_addr = std::nullopt);

Scenario report_scenario();
// The same session before its last two events (the 20000 B block): --diff's BASE.
Scenario report_scenario_base();

// The scenario as its two files, byte for byte what test_report.cpp expects in tests/golden/report/.
std::string scenario_artifact_bytes(const Scenario& s);  // uncompressed MessagePack
std::string scenario_stacks_bytes(const Scenario& s);

}  // namespace memtrack::unittest
