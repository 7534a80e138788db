// --format folded: Brendan Gregg's collapsed stacks, one line per distinct stack, root first,
// "main;a;b;c 8638". Sites whose stacks name the same functions are one line.
#include <fmt/format.h>

#include "report/FrameNames.hpp"
#include "report/Output.hpp"

namespace memtrack::report {

std::string folded_report(const Analysis& a, const OutputOptions& o) {
    std::string out;
    for (const auto& [stack, value] : folded_costs(a, o.cost)) out += fmt::format("{} {}\n", stack, value);
    return out;
}

}  // namespace memtrack::report
