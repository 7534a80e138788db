#pragma once
// How a frame and a whole stack are named in flamegraphs, pprof, speedscope and --diff: by
// function, never by address, so the same code has the same name from one run to the next.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "format/StacksFile.hpp"
#include "report/Analysis.hpp"
#include "report/FrameFold.hpp"
#include "report/Ranking.hpp"
#include "report/Sites.hpp"

namespace memtrack::report {

// The last path component: "/usr/lib/libc.so.6" -> "libc.so.6".
std::string_view base_name(std::string_view path);

// The function; "[libfoo.so]" when only the module is known; "[unknown]" otherwise.
std::string frame_name(const Frame& f);

// The name of a site whose stack is not known: "[no stack]" (none captured) or "[stack missing]"
// (the stacks file lacks it).
std::string_view unknown_stack_name(const Site& s);

// One frame of a site as every view that names functions names it.
struct NamedFrame {
    std::string name;         // the shown frame's (a run of unresolved frames: "[module]"), else frame_name()
    std::string_view file;    // the shown frame's (build path trimmed), else the raw frame's
    uint32_t line = 0;
    std::string_view module;
};

// A site's stack as shown (fold_sites: default folding, --hide-frames, elided templates), into
// `out`; false, `out` untouched, for a site without frames or not folded (Site::folder). Made
// each time it is asked for, never kept (FrameFold.hpp).
bool shown_stack(const Site& s, ShownStack& out);

// A site's frames, innermost first: its shown stack's or, unfolded, its raw frames'. Empty for a
// site without frames (it is named unknown_stack_name()). The one rule folded, the function views
// and the html page name frames by.
std::vector<NamedFrame> named_frames(const Site& s);

// Brendan Gregg's collapsed form: frame names root first, joined by ';' (a ';' inside a name
// becomes ':'). A site without frames is one frame, unknown_stack_name(). With its shown stack
// (fold_sites) the names are those, a run of unresolved frames one "[module]".
std::string folded_stack(const Site& s);

// Shows every site's stack through `folder` (Site::folder), which must then outlive `a`, and lists
// the modules with unresolved frames in what is shown (Analysis::unresolved), by module; with
// `packages`, each with the Debian package that holds it (debian_package_of). Without `keep`,
// only the list: sites keep their raw frames (json's sites), and `folder` may go once it
// returns (its frames' names were 10 MiB of the benchmark's report).
void fold_sites(Analysis& a, FrameFolder& folder, bool packages, bool keep = true);

// Per folded stack, the sum of cost_value() over its sites, leaving out zeros; sorted by stack.
// The stacks' text is held in a few large chunks, not a string each: a map of strings and its
// nodes were 6 MiB of a folded report on the benchmark's 20000 stacks (docs/BENCHMARKS.md,
// "Report"), beside the output, which holds them once more.
class FoldedLines {
public:
    struct Line {
        uint32_t chunk = 0;
        uint32_t size = 0;
        size_t at = 0;
        uint64_t value = 0;
    };
    std::string_view stack(const Line& l) const { return std::string_view(chunks_[l.chunk]).substr(l.at, l.size); }
    const std::vector<Line>& lines() const { return lines_; }

private:
    friend FoldedLines folded_costs(const Analysis& a, Cost c);
    std::vector<std::string> chunks_;  // each filled up to its reserved size, never grown
    std::vector<Line> lines_;
};
FoldedLines folded_costs(const Analysis& a, Cost c);

}  // namespace memtrack::report
