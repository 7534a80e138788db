// --diff's outputs: text, json and folded with two counts.
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/format.h>

#include "report/Diff.hpp"
#include "report/FrameNames.hpp"
#include "report/JsonFormat.hpp"
#include "report/Units.hpp"

namespace memtrack::report {
namespace json = boost::json;
namespace {

int64_t delta(uint64_t was, uint64_t now) { return int64_t(now) - int64_t(was); }

std::string change(uint64_t was, uint64_t now) {
    const int64_t d = delta(was, now);
    if (was == 0) return fmt::format("{:+}", d);
    return fmt::format("{:+} ({:+.1f} %)", d, 100.0 * double(d) / double(was));
}

json::object values_json(const DiffValues& v) {
    return json::object{{"peak", v.peak}, {"leaked", v.leaked}, {"calls", v.calls}, {"bytes", v.bytes}};
}

json::object deltas_json(const DiffValues& b, const DiffValues& n) {
    return json::object{{"peak", delta(b.peak, n.peak)},
                        {"leaked", delta(b.leaked, n.leaked)},
                        {"calls", delta(b.calls, n.calls)},
                        {"bytes", delta(b.bytes, n.bytes)}};
}

}  // namespace

std::string diff_text(const Diff& d, const OutputOptions& o) {
    std::string out = "memtrack report --diff: BASE -> ARTIFACT\n";
    out += fmt::format("{:<8}{:>16}{:>16}  {}\n", "", "base", "new", "change");
    auto line = [&](const char* name, uint64_t was, uint64_t now) {
        out += fmt::format("{:<8}{:>16}{:>16}  {}\n", name, was, now, change(was, now));
    };
    line("peak", d.base.peak, d.now.peak);
    line("leaked", d.base.leaked, d.now.leaked);
    line("calls", d.base.calls, d.now.calls);
    line("bytes", d.base.bytes, d.now.bytes);
    out += fmt::format("\n== sites that changed ({}) ==\n", d.rows.size());
    if (d.rows.empty()) out += "  none\n";
    size_t i = 0;
    for (const DiffRow& r : d.rows) {
        if (i == o.limit) {
            out += fmt::format("  and {} more\n", d.rows.size() - i);
            break;
        }
        out += fmt::format("  #{} peak {}, leaked {}, calls {}, bytes {}\n", ++i, change(r.base.peak, r.now.peak),
                           change(r.base.leaked, r.now.leaked), change(r.base.calls, r.now.calls),
                           change(r.base.bytes, r.now.bytes));
        out += fmt::format("      {}\n", r.stack);
    }
    return out;
}

std::string diff_json(const Diff& d, const OutputOptions& o) {
    json::array sites;
    for (size_t i = 0; i < d.rows.size() && i < o.limit; ++i) {
        const DiffRow& r = d.rows[i];
        sites.push_back(json::object{{"stack", json::string_view(r.stack.data(), r.stack.size())},
                                     {"frames", frames_json(*r.example)},
                                     {"base", values_json(r.base)},
                                     {"new", values_json(r.now)},
                                     {"delta", deltas_json(r.base, r.now)}});
    }
    json::object diff{{"base", values_json(d.base)},
                      {"new", values_json(d.now)},
                      {"delta", deltas_json(d.base, d.now)},
                      {"changed_sites", d.rows.size()},
                      {"sites", std::move(sites)}};
    std::string s = json::serialize(json::object{{"schema_version", 1}, {"diff", std::move(diff)}});
    s += '\n';
    return s;
}

std::string diff_folded(const Analysis& base, const Analysis& now, const OutputOptions& o) {
    const FoldedLines was = folded_costs(base, o.cost), is = folded_costs(now, o.cost);
    std::map<std::string_view, std::pair<uint64_t, uint64_t>> lines;
    for (const FoldedLines::Line& l : was.lines()) lines[was.stack(l)].first = l.value;
    for (const FoldedLines::Line& l : is.lines()) lines[is.stack(l)].second = l.value;
    std::string out;
    for (const auto& [stack, v] : lines) out += fmt::format("{} {} {}\n", stack, v.first, v.second);
    return out;
}

}  // namespace memtrack::report
