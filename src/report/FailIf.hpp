#pragma once
// --fail-if EXPR: a condition on the report's figures for CI, e.g. "leaked>0", "peak>256MiB",
// "calls>1e6", "peak_delta>5%" (with --diff). Several conditions joined by ',' fail when any holds.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/Result.hpp"
#include "report/Analysis.hpp"

namespace memtrack::report {

struct Condition {
    std::string window;  // "window:NAME METRIC...": the window's number or mark name; empty: the whole report
    std::string metric;
    std::string op;  // > >= < <= == !=
    double value = 0;
    bool percent = false;  // value is a percentage of the base (the _delta metrics only)
    std::string text;      // as written
};

// Parse errors say what is wrong with which condition, in one line.
Result<std::vector<Condition>> parse_fail_if(const std::string& expr);

struct Metric {
    double value = 0;
    std::optional<double> base;  // for a _delta metric: the base value a percentage is of
    bool bytes = false;          // a size: verdicts give it in human units as well
};
using Metrics = std::map<std::string, Metric>;

// peak, leaked, leaked_blocks, calls, bytes, temporary, unknown_frees, events; with `base`
// (--diff) also peak_delta, leaked_delta, calls_delta, bytes_delta (ARTIFACT minus BASE). With a
// timeline also rss_peak, live_at_end, exec_discarded (and rss_peak_delta when BASE has one too).
//
// Per window (Analysis::windows): "window:N peak", "bytes", "calls", "average", "rss_peak",
// "leaked", "leaked_blocks", for its number N and, when a mark names only it, for that name.
Metrics metrics(const Analysis& a, const Analysis* base);

// Refuses a window condition whose metric no window has, before anything is read.
Result<void> check_window_metrics(const std::vector<Condition>& conditions);

// The first condition that holds, as a one-line verdict ("leaked>0 holds: leaked = 5120 B
// (5.0 KiB)": sizes in bytes and in human units);
// nothing when none holds. An unknown metric is an error naming the known ones.
Result<std::optional<std::string>> evaluate(const std::vector<Condition>& conditions, const Metrics& m);

}  // namespace memtrack::report
