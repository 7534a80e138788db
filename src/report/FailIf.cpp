#include "report/FailIf.hpp"

#include <algorithm>
#include <array>
#include <string_view>

#include <fmt/format.h>

#include "report/Units.hpp"

namespace memtrack::report {
namespace {

constexpr std::array<std::string_view, 6> kOps{">=", "<=", "==", "!=", ">", "<"};
constexpr std::array<std::string_view, 7> kWindowMetrics{"peak",     "bytes",  "calls",        "average",
                                                         "rss_peak", "leaked", "leaked_blocks"};
constexpr std::string_view kWindowScope = "window:";

std::string window_key(std::string_view window, std::string_view metric) {
    return fmt::format("{}{} {}", kWindowScope, window, metric);
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    return s;
}

Result<Condition> parse_one(std::string_view text) {
    text = trim(text);
    auto bad = [&](std::string_view why) {
        return Error{"--fail-if", fmt::format("'{}'", text), 0, std::string(why)};
    };
    size_t at = std::string_view::npos;
    std::string_view op;
    for (std::string_view o : kOps) {
        const size_t p = text.find(o);
        if (p != std::string_view::npos && (p < at || (p == at && o.size() > op.size()))) {
            at = p;
            op = o;
        }
    }
    if (at == std::string_view::npos) return bad("expected METRIC OP VALUE, OP one of > >= < <= == !=");
    Condition c;
    c.text = std::string(text);
    c.metric = std::string(trim(text.substr(0, at)));
    if (c.metric.starts_with(kWindowScope)) {
        // "window:NAME METRIC": the name may hold spaces (a mark's), the metric does not.
        const size_t space = c.metric.rfind(' ');
        if (space == std::string::npos || space <= kWindowScope.size())
            return bad("expected window:NAME METRIC OP VALUE");
        c.window = std::string(trim(std::string_view(c.metric).substr(kWindowScope.size(), space - kWindowScope.size())));
        c.metric = c.metric.substr(space + 1);
        if (c.window.empty()) return bad("expected window:NAME METRIC OP VALUE");
    }
    c.op = std::string(op);
    std::string_view value = trim(text.substr(at + op.size()));
    if (c.metric.empty()) return bad("no metric before the operator");
    if (value.ends_with('%')) {
        c.percent = true;
        value.remove_suffix(1);
    }
    const auto v = parse_quantity(value);
    if (!v) return bad(fmt::format("'{}' is not a number (units: B, KiB, MiB, GiB, K, M, G; 1e6; N%)", value));
    if (c.percent && !c.metric.ends_with("_delta")) return bad("a percentage needs a _delta metric (with --diff)");
    c.value = *v;
    return c;
}

bool holds(double lhs, std::string_view op, double rhs) {
    if (op == ">") return lhs > rhs;
    if (op == ">=") return lhs >= rhs;
    if (op == "<") return lhs < rhs;
    if (op == "<=") return lhs <= rhs;
    if (op == "==") return lhs == rhs;
    return lhs != rhs;
}

std::string known(const Metrics& m) {
    std::string names;
    for (auto& [name, v] : m)
        if (!name.starts_with(kWindowScope)) names += (names.empty() ? "" : ", ") + name;
    return names;
}

}  // namespace

Result<std::vector<Condition>> parse_fail_if(const std::string& expr) {
    std::vector<Condition> out;
    std::string_view rest = expr;
    while (true) {
        const size_t comma = rest.find(',');
        auto c = parse_one(rest.substr(0, comma));
        if (!c) return c.error();
        out.push_back(std::move(c).value());
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
    }
    return out;
}

// "5120 B (5.0 KiB)" for a size, the number alone otherwise.
static std::string shown_value(const Metric& m) { return m.bytes ? bytes_and_human(m.value) : fmt::format("{}", m.value); }

Metrics metrics(const Analysis& a, const Analysis* base) {
    Metrics m;
    auto add = [&](const char* name, uint64_t now, std::optional<uint64_t> was) {
        const bool bytes = std::string_view(name) != "leaked_blocks" && std::string_view(name) != "calls" &&
                           std::string_view(name) != "temporary" && std::string_view(name) != "unknown_frees" &&
                           std::string_view(name) != "events";
        m[name] = Metric{double(now), std::nullopt, bytes};
        if (was) m[std::string(name) + "_delta"] = Metric{double(now) - double(*was), double(*was), bytes};
    };
    auto was = [&](uint64_t Analysis::*field) {
        return base ? std::optional<uint64_t>(base->*field) : std::nullopt;
    };
    add("peak", a.peak_bytes, was(&Analysis::peak_bytes));
    add("leaked", a.leaked_bytes, was(&Analysis::leaked_bytes));
    add("leaked_blocks", a.leaked_blocks, was(&Analysis::leaked_blocks));
    add("calls", a.calls, was(&Analysis::calls));
    add("bytes", a.bytes, was(&Analysis::bytes));
    add("temporary", a.temporary_calls, was(&Analysis::temporary_calls));
    add("unknown_frees", a.unknown_frees, std::nullopt);
    add("events", a.events, std::nullopt);
    std::map<std::string, int> named;  // a mark's name -> how many windows it names
    for (const WindowTotals& w : a.windows)
        if (!w.name.empty()) ++named[w.name];
    for (const WindowTotals& w : a.windows) {
        const std::string number = std::to_string(w.number);
        const bool by_name = !w.name.empty() && named[w.name] == 1;
        const std::array<std::pair<std::string_view, double>, 7> values{
            {{"peak", double(w.peak_bytes)},
             {"bytes", double(w.bytes)},
             {"calls", double(w.calls)},
             {"average", w.calls ? double(w.bytes) / double(w.calls) : 0.0},
             {"rss_peak", double(w.rss_peak_bytes)},
             {"leaked", double(w.leaked_bytes)},
             {"leaked_blocks", double(w.leaked_blocks)}}};
        for (const auto& [metric, value] : values) {
            const bool bytes = metric != "calls" && metric != "leaked_blocks";
            m[window_key(number, metric)] = Metric{value, std::nullopt, bytes};
            if (by_name) m[window_key(w.name, metric)] = Metric{value, std::nullopt, bytes};
        }
    }
    if (a.has_timeline) {
        add("rss_peak", a.peak_rss_bytes, base && base->has_timeline ? was(&Analysis::peak_rss_bytes) : std::nullopt);
        add("live_at_end", a.live_at_end_bytes, std::nullopt);
        add("exec_discarded", a.exec_discarded_bytes, std::nullopt);
    }
    return m;
}

Result<void> check_window_metrics(const std::vector<Condition>& conditions) {
    for (const Condition& c : conditions) {
        if (c.window.empty() || std::find(kWindowMetrics.begin(), kWindowMetrics.end(), c.metric) != kWindowMetrics.end())
            continue;
        return Error{"--fail-if", fmt::format("'{}'", c.text), 0,
                     fmt::format("unknown window metric '{}' (known: peak, bytes, calls, average, rss_peak, "
                                 "leaked, leaked_blocks)",
                                 c.metric)};
    }
    return {};
}

Result<std::optional<std::string>> evaluate(const std::vector<Condition>& conditions, const Metrics& m) {
    for (const Condition& c : conditions) {
        if (!c.window.empty()) {
            const std::string key = window_key(c.window, c.metric);
            auto it = m.find(key);
            if (it == m.end())
                return Error{"--fail-if", fmt::format("'{}'", c.text), 0,
                             fmt::format("no window '{}' in this report (a window's number, or a mark's name "
                                         "that names one window; `report --windows` lists them)",
                                         c.window)};
            if (holds(it->second.value, c.op, c.value))
                return std::optional<std::string>(fmt::format("{} holds: {} = {}", c.text, key, shown_value(it->second)));
            continue;
        }
        auto it = m.find(c.metric);
        if (it == m.end())
            return Error{"--fail-if", fmt::format("'{}'", c.text), 0,
                         fmt::format("unknown metric '{}' (known here: {}{})", c.metric, known(m),
                                     c.metric.ends_with("_delta") ? "; the _delta ones need --diff" : "")};
        const Metric& v = it->second;
        double lhs = v.value;
        std::string shown = fmt::format("{} = {}", c.metric, shown_value(v));
        if (c.percent) {
            // A change from nothing is infinitely large unless there is no change.
            lhs = *v.base != 0 ? 100.0 * v.value / *v.base : (v.value == 0 ? 0.0 : 1e300);
            shown = *v.base != 0 ? fmt::format("{} = {} ({:+.2f} % of {})", c.metric, shown_value(v), lhs,
                                               shown_value(Metric{*v.base, std::nullopt, v.bytes}))
                                 : fmt::format("{} = {} (base 0)", c.metric, shown_value(v));
        }
        if (holds(lhs, c.op, c.value)) return std::optional<std::string>(fmt::format("{} holds: {}", c.text, shown));
    }
    return std::optional<std::string>();
}

}  // namespace memtrack::report
