#pragma once
// `memtrack report ARTIFACT`: where the memory went (docs/REPORT.md). Parsing the options'
// text is done here; the analysis is src/report/Analysis, each format one file in src/report/.
#include <cstdint>
#include <string>
#include <vector>

namespace memtrack {

struct ReportOptions {
    std::string artifact;
    std::string stacks_file;       // --stacks; default: beside the artifact
    std::string format = "text";   // text json folded pprof speedscope html
    std::string output;            // -o; empty: stdout
    std::string cost = "peak";     // folded: peak leaked allocated allocations temporary
    size_t limit = 10;
    uint64_t temporary_threshold = 0;
    std::vector<int32_t> pids;
    std::string command;           // --command REGEX (ECMAScript), matched against the timeline's command lines
    std::string from, to;          // durations since the first event
    bool windows = false;          // --windows: the session's windows section
    std::string window;            // --window N|NAME: every section narrowed to that window
    std::string focus, ignore;     // regular expressions (ECMAScript)
    std::string min_size, max_size;
    std::string diff_base;         // --diff BASE
    std::string by = "site";       // --by site|function
    bool bottom_up = false, top_down = false;
    std::string caller_callee;     // --caller-callee FUNCTION
    std::string hide_frames;       // --hide-frames REGEX
    bool keep_frames = false, full_names = false;
    std::string suppressions;      // --suppressions FILE
    std::vector<std::string> fail_if;
    bool python_only = false;      // --python-only: only the Python frames of stacks that have some
};

// 0: written; 1: an error (one line on stderr, nothing written); 2: bad options;
// 3: a --fail-if condition holds (its verdict on stderr, the report written all the same).
int run_report(const ReportOptions& opt);

}  // namespace memtrack
