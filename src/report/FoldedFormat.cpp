// --format folded: Brendan Gregg's collapsed stacks, one line per distinct stack, root first,
// "main;a;b;c 8638". Sites whose stacks name the same functions are one line.
#include <iterator>

#include <fmt/format.h>

#include "report/FrameNames.hpp"
#include "report/Output.hpp"

namespace memtrack::report {

std::string folded_report(const Analysis& a, const OutputOptions& o) {
    const FoldedLines f = folded_costs(a, o.cost);
    // Sized first: grown by doubling, the output was once more its size while it was copied.
    size_t size = 0;
    for (const FoldedLines::Line& l : f.lines()) size += l.size + fmt::formatted_size(" {}\n", l.value);
    std::string out;
    out.reserve(size);
    for (const FoldedLines::Line& l : f.lines()) fmt::format_to(std::back_inserter(out), "{} {}\n", f.stack(l), l.value);
    return out;
}

}  // namespace memtrack::report
