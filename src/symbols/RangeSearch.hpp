#pragma once
// The search both DWARF indexes use: ranges sorted by `lo` (stable, so equal starts keep their
// DIE order), and the first of them in DIE order that contains pc. dwarf_getscopes answered with
// the first DIE containing pc in DIE order, which matters where several DIEs start at one
// address (the assembler's one subprogram per alias: fchownat before __GI_fchownat).
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

namespace memtrack {

// Range: has `lo` and `hi` (exclusive). Returns `end` when no range contains pc.
template <typename It>
It first_containing(It begin, It end, uint64_t pc) {
    It it = std::upper_bound(begin, end, pc, [](uint64_t v, const auto& r) { return v < r.lo; });
    if (it == begin) return end;
    const uint64_t lo = std::prev(it)->lo;
    It first = std::prev(it);
    while (first != begin && std::prev(first)->lo == lo) --first;
    for (It k = first; k != it; ++k)
        if (pc < k->hi) return k;
    return end;
}

template <typename Range>
void sort_by_start(std::vector<Range>& ranges) {
    std::stable_sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
}

}  // namespace memtrack
