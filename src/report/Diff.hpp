#pragma once
// --diff BASE: per-site changes between two recordings. Sites are matched by their folded
// stacks (function names, root first), since stack hashes are addresses and differ from run to run.
#include <cstdint>
#include <string>
#include <vector>

#include "report/Analysis.hpp"
#include "report/Output.hpp"

namespace memtrack::report {

struct DiffValues {
    uint64_t peak = 0;    // bytes live at the peak
    uint64_t leaked = 0;  // bytes live at the end
    uint64_t calls = 0;
    uint64_t bytes = 0;   // allocated
};

struct DiffRow {
    std::string stack;                           // folded, root first
    const Site* example = nullptr;               // one site of it, for its frames (from ARTIFACT if it has one)
    DiffValues base, now;
};

struct Diff {
    DiffValues base, now;  // the totals
    std::vector<DiffRow> rows;  // the sites that changed, largest change first
    std::vector<DiffRow> unchanged;  // the others, by stack: the html page's flamegraph sums them too
};

Diff diff(const Analysis& base, const Analysis& now);

// Text and json list the `limit` largest changes; folded has every stack, with two counts
// ("main;a;b BASE NEW", what difffolded.pl writes) for the cost `o.cost`.
std::string diff_text(const Diff& d, const OutputOptions& o);
std::string diff_json(const Diff& d, const OutputOptions& o);
std::string diff_folded(const Analysis& base, const Analysis& now, const OutputOptions& o);
// One page (HtmlFormat.cpp): a differential flamegraph of every matched stack, widths by ARTIFACT
// (or BASE), coloured by the change, and the sites that changed in a table. `o.title` names
// ARTIFACT, `o.base_title` BASE.
std::string diff_html(const Diff& d, const OutputOptions& o);

}  // namespace memtrack::report
