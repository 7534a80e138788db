#include "report/Diff.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "report/FrameNames.hpp"

namespace memtrack::report {
namespace {

void add(DiffValues& v, const Site& s) {
    v.peak += s.peak_bytes;
    v.leaked += amount(s, Cost::Leaked).bytes;  // runtime-owned and suppressed left out, as in the totals
    v.calls += s.calls;
    v.bytes += s.bytes;
}

int64_t delta(uint64_t was, uint64_t now) { return int64_t(now) - int64_t(was); }

// How large a row's change is, to sort by: the largest of its byte changes.
uint64_t size_of_change(const DiffRow& r) {
    return std::max({uint64_t(std::llabs(delta(r.base.peak, r.now.peak))),
                     uint64_t(std::llabs(delta(r.base.leaked, r.now.leaked))),
                     uint64_t(std::llabs(delta(r.base.bytes, r.now.bytes)))});
}

bool same(const DiffValues& a, const DiffValues& b) {
    return a.peak == b.peak && a.leaked == b.leaked && a.calls == b.calls && a.bytes == b.bytes;
}

}  // namespace

Diff diff(const Analysis& base, const Analysis& now) {
    std::map<std::string, DiffRow> rows;
    for (const Site& s : base.sites) {
        DiffRow& r = rows[folded_stack(s)];
        if (!r.example) r.example = &s;
        add(r.base, s);
    }
    for (const Site& s : now.sites) {
        DiffRow& r = rows[folded_stack(s)];
        if (!r.example || r.now.calls == 0) r.example = &s;
        add(r.now, s);
    }
    Diff d;
    d.base = {base.peak_bytes, base.leaked_bytes, base.calls, base.bytes};
    d.now = {now.peak_bytes, now.leaked_bytes, now.calls, now.bytes};
    for (auto& [stack, row] : rows) {
        row.stack = stack;
        (same(row.base, row.now) ? d.unchanged : d.rows).push_back(std::move(row));
    }
    std::stable_sort(d.rows.begin(), d.rows.end(), [](const DiffRow& x, const DiffRow& y) {
        const uint64_t a = size_of_change(x), b = size_of_change(y);
        if (a != b) return a > b;
        return std::llabs(delta(x.base.calls, x.now.calls)) > std::llabs(delta(y.base.calls, y.now.calls));
    });
    return d;
}

}  // namespace memtrack::report
