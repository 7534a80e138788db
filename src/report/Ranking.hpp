#pragma once
// What each report section ranks sites by, and the top N of them with what was left out.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "report/Sites.hpp"

namespace memtrack::report {

// --cost, and the sections: live at the peak, live at the end, bytes allocated, number of
// allocations, temporary allocations.
enum class Cost { Peak, Leaked, Allocated, Allocations, Temporary };

std::optional<Cost> cost_from_name(std::string_view name);
std::string_view cost_name(Cost c);

struct Amount {
    uint64_t bytes = 0;
    uint64_t blocks = 0;  // for Allocated and Allocations: the number of allocations
};
Amount amount(const Site& s, Cost c);
// The single number a flamegraph shows: bytes, except counts for Allocations and Temporary.
uint64_t cost_value(const Site& s, Cost c);

struct Ranked {
    std::vector<const Site*> top;  // at most `limit`, largest first
    uint64_t other_sites = 0;      // sites with a non-zero amount left out
    Amount other;
};

// Sites with a non-zero amount, by bytes (by count for Allocations and Temporary), then blocks
// (bytes), then hash. Leaked leaves out runtime-owned and suppressed sites (Owners.hpp).
Ranked rank(const std::vector<Site>& sites, Cost c, size_t limit);

}  // namespace memtrack::report
