#include "report/Ranking.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace memtrack::report {
namespace {

constexpr std::array<std::pair<Cost, std::string_view>, 5> kNames{{
    {Cost::Peak, "peak"},
    {Cost::Leaked, "leaked"},
    {Cost::Allocated, "allocated"},
    {Cost::Allocations, "allocations"},
    {Cost::Temporary, "temporary"},
}};

}  // namespace

std::optional<Cost> cost_from_name(std::string_view name) {
    for (auto& [c, n] : kNames)
        if (n == name) return c;
    return std::nullopt;
}

std::string_view cost_name(Cost c) {
    for (auto& [k, n] : kNames)
        if (k == c) return n;
    return {};
}

Amount amount(const Site& s, Cost c) {
    switch (c) {
        case Cost::Peak: return {s.peak_bytes, s.peak_blocks};
        // A runtime's one-time block or a suppressed one is not a leak (Owners.hpp).
        case Cost::Leaked: return s.owner == Site::Owner::Program ? Amount{s.live_bytes, s.live_blocks} : Amount{};
        case Cost::Allocated:
        case Cost::Allocations: return {s.bytes, s.calls};
        case Cost::Temporary: return {s.temporary_bytes, s.temporary_calls};
    }
    return {};
}

uint64_t cost_value(const Site& s, Cost c) {
    const Amount a = amount(s, c);
    return c == Cost::Allocations || c == Cost::Temporary ? a.blocks : a.bytes;
}

Ranked rank(const std::vector<Site>& sites, Cost c, size_t limit) {
    std::vector<const Site*> all;
    for (const Site& s : sites)
        if (amount(s, c).blocks != 0) all.push_back(&s);
    // Temporaries by count, as heaptrack ranks them: a loop of 400000 small ones is the thing
    // to fix before one large vector.
    const bool by_count = c == Cost::Allocations || c == Cost::Temporary;
    auto before = [&](const Site* x, const Site* y) {
        const Amount a = amount(*x, c), b = amount(*y, c);
        const auto ka = by_count ? std::pair{a.blocks, a.bytes} : std::pair{a.bytes, a.blocks};
        const auto kb = by_count ? std::pair{b.blocks, b.bytes} : std::pair{b.bytes, b.blocks};
        if (ka != kb) return ka > kb;
        return x->hash < y->hash;
    };
    Ranked r;
    const size_t n = std::min(limit, all.size());
    std::partial_sort(all.begin(), all.begin() + ptrdiff_t(n), all.end(), before);
    r.top.assign(all.begin(), all.begin() + ptrdiff_t(n));
    for (size_t i = n; i < all.size(); ++i) {
        const Amount a = amount(*all[i], c);
        ++r.other_sites;
        r.other.bytes += a.bytes;
        r.other.blocks += a.blocks;
    }
    return r;
}

}  // namespace memtrack::report
