#pragma once
// What every output format takes besides the Analysis, and the formats themselves: one file
// each (TextFormat.cpp, JsonFormat.cpp, ...). Each returns the whole output: it is bounded by
// the distinct stacks (and, for html, capped), never by the number of events.
#include <cstddef>
#include <string>

#include "report/Analysis.hpp"
#include "report/Functions.hpp"
#include "report/Ranking.hpp"

namespace memtrack::report {

struct OutputOptions {
    size_t limit = 10;        // sites per section
    bool colour = false;      // text: ANSI colours (only on a terminal)
    Cost cost = Cost::Peak;   // folded
    std::string title{};      // html, speedscope: what was profiled (the artifact's name)
    std::string base_title{};  // html --diff: BASE's name
    bool windows = false;     // text, json: the windows section (--windows)
    // text, json: one view instead of the site sections (Functions.hpp). The first set wins;
    // the command line allows one.
    enum class View { Sites, Functions, BottomUp, TopDown, CallerCallee } view = View::Sites;
    // View::CallerCallee's rows: caller_callee() (Functions.hpp), worked out once by the caller,
    // which refuses a name that is no function's before anything is printed.
    const CallerCallee* caller_callee = nullptr;
    size_t tree_depth = 32;     // call trees: levels at most
};

std::string text_report(const Analysis& a, const OutputOptions& o);
std::string json_report(const Analysis& a, const OutputOptions& o);
std::string folded_report(const Analysis& a, const OutputOptions& o);
std::string pprof_report(const Analysis& a, const OutputOptions& o);  // gzipped profile.proto
std::string speedscope_report(const Analysis& a, const OutputOptions& o);
std::string html_report(const Analysis& a, const OutputOptions& o);

}  // namespace memtrack::report
