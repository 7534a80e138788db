#pragma once
// The report by function, as heaptrack_print's and heaptrack_gui's tables give it
// (docs/REPORT.md, "Functions, callers and callees"): built from the sites' shown stacks
// (FrameFold.hpp), so folded frames never appear and a function is its shown name.
//
//   by_function    sites merged by their allocating function (the innermost shown frame)
//   call_tree      bottom-up (allocating functions, then their callers) or top-down (from the
//                  outermost frames to the allocating ones), merged by name along the path
//   caller_callee  one function: its own figures and those of its callers and callees
//
// Every row carries the same figures (Costs). A function that appears twice in one stack
// (recursion) counts that stack once in its row. These are data for any printer: text and json
// print them (TextFormat.cpp, JsonFormat.cpp); the html writer can call the same functions.
#include <cstdint>
#include <string>
#include <vector>

#include "core/Result.hpp"
#include "report/Analysis.hpp"
#include "report/Ranking.hpp"

namespace memtrack::report {

struct Costs {
    uint64_t calls = 0;            // allocations
    uint64_t bytes = 0;            // allocated
    uint64_t peak_bytes = 0;       // live at the peak (its contribution to the peak)
    uint64_t leaked_bytes = 0;     // leaked (Cost::Leaked: runtime-owned and suppressed left out)
    uint64_t leaked_blocks = 0;
    uint64_t temporary_calls = 0;  // temporary allocations

    void add(const Site& s);
    bool operator==(const Costs&) const = default;
};

// The figure rows are ranked by for --cost `c`: bytes, except counts for Allocations and
// Temporary.
uint64_t cost_of(const Costs& k, Cost c);

struct FunctionRow {
    std::string name;    // the shown name; "[no stack]" / "[stack missing]" for sites without frames
    std::string file;    // of the first site's frame (trimmed); "" when unknown
    uint32_t line = 0;
    std::string module;
    Costs costs;
};

struct FunctionTable {
    std::vector<FunctionRow> rows;  // at most `limit`, by cost_of(c) then name
    size_t other_rows = 0;          // rows left out
    Costs other;
};

// --by function: one row per allocating function. Rows whose every figure is 0 are left out.
FunctionTable by_function(const Analysis& a, Cost c, size_t limit);

struct CallNode {
    std::string name;
    Costs costs;
    std::vector<CallNode> children;  // at most `limit`, by cost_of(c) then name
    size_t other_children = 0;       // children left out
};

// --bottom-up (roots: allocating functions; children: their callers) or --top-down (roots: the
// outermost shown frames; children: their callees), `depth` levels at most.
std::vector<CallNode> call_tree(const Analysis& a, bool bottom_up, Cost c, size_t limit, size_t depth);

struct CallerCallee {
    std::string function;
    Costs self;                       // allocations it made itself (it is the allocating function)
    Costs total;                      // every stack it is in
    // Per caller / callee, with where it is (its frame in the first stack of its row).
    std::vector<FunctionRow> callers;  // per caller: the stacks where it called `function`
    std::vector<FunctionRow> callees;  // per callee: the stacks where `function` called it
};

// --caller-callee FUNCTION: `name` is a shown name, exact, or else a substring of exactly one.
// An error lists what matched when it is none or several.
Result<CallerCallee> caller_callee(const Analysis& a, const std::string& name, Cost c);

}  // namespace memtrack::report
