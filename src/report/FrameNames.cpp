#include "report/FrameNames.hpp"

#include <algorithm>

#include <boost/unordered/unordered_flat_map.hpp>

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

bool shown_stack(const Site& s, ShownStack& out) {
    if (!s.folder || !s.frames || s.frames->empty()) return false;
    s.folder->fold_into(*s.frames, out);
    return true;
}

std::vector<NamedFrame> named_frames(const Site& s) {
    std::vector<NamedFrame> out;
    if (ShownStack shown; shown_stack(s, shown)) {
        for (const ShownFrame& f : shown.frames) out.push_back({std::string(f.name), f.file, f.line, f.module});
    } else if (s.frames) {
        for (const Frame* f : *s.frames) out.push_back({frame_name(*f), f->file, f->line, f->module});
    }
    return out;
}

std::string folded_stack(const Site& s) {
    const std::vector<NamedFrame> frames = named_frames(s);
    if (frames.empty()) return std::string(unknown_stack_name(s));
    std::string out;
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
        if (!out.empty()) out += ';';
        const size_t at = out.size();
        out += it->name;
        std::replace(out.begin() + ptrdiff_t(at), out.end(), ';', ':');
    }
    return out;
}

void fold_sites(Analysis& a, FrameFolder& folder, bool packages, bool keep) {
    std::map<std::string, uint64_t> unresolved;
    // Distinct sequences of frames have distinct shown stacks (FrameFolder::fold).
    boost::unordered_flat_map<const StackFrames*, bool> seen;
    ShownStack scratch;
    for (Site& s : a.sites) {
        if (!s.frames || s.frames->empty()) continue;
        if (keep) s.folder = &folder;
        if (!seen.try_emplace(s.frames, true).second) continue;
        folder.fold_into(*s.frames, scratch);
        for (const ShownFrame& f : scratch.frames)
            if (f.run > 0 && !f.module.empty()) unresolved[std::string(f.module)] += f.run;
    }
    a.unresolved.clear();
    for (const auto& [module, frames] : unresolved)
        a.unresolved.push_back(DebugHint{module, frames, packages ? debian_package_of(module) : std::string()});
}

std::map<std::string, uint64_t> folded_costs(const Analysis& a, Cost c) {
    std::map<std::string, uint64_t> lines;
    for (const Site& s : a.sites)
        if (const uint64_t v = cost_value(s, c)) lines[folded_stack(s)] += v;
    return lines;
}

}  // namespace memtrack::report
