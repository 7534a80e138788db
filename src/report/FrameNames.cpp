#include "report/FrameNames.hpp"

#include <algorithm>

namespace memtrack::report {

std::string_view base_name(std::string_view path) {
    const size_t slash = path.rfind('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string frame_name(const Frame& f) {
    if (!f.function.empty()) return f.function;
    if (!f.module.empty()) return "[" + std::string(base_name(f.module)) + "]";
    return "[unknown]";
}

std::string_view unknown_stack_name(const Site& s) { return s.hash == 0 ? "[no stack]" : "[stack missing]"; }

std::string folded_stack(const Site& s) {
    if (!s.frames || s.frames->empty()) return std::string(unknown_stack_name(s));
    std::string out;
    for (auto it = s.frames->rbegin(); it != s.frames->rend(); ++it) {
        if (!out.empty()) out += ';';
        std::string name = frame_name(**it);
        std::replace(name.begin(), name.end(), ';', ':');
        out += name;
    }
    return out;
}

std::map<std::string, uint64_t> folded_costs(const Analysis& a, Cost c) {
    std::map<std::string, uint64_t> lines;
    for (const Site& s : a.sites)
        if (const uint64_t v = cost_value(s, c)) lines[folded_stack(s)] += v;
    return lines;
}

}  // namespace memtrack::report
