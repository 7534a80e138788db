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

FoldedLines folded_costs(const Analysis& a, Cost c) {
    constexpr size_t kChunk = size_t(1) << 20;
    FoldedLines f;
    for (const Site& s : a.sites) {
        const uint64_t v = cost_value(s, c);
        if (v == 0) continue;
        const std::string stack = folded_stack(s);
        if (f.chunks_.empty() || f.chunks_.back().capacity() - f.chunks_.back().size() < stack.size())
            f.chunks_.emplace_back().reserve(std::max(kChunk, stack.size()));
        std::string& chunk = f.chunks_.back();
        f.lines_.push_back({uint32_t(f.chunks_.size() - 1), uint32_t(stack.size()), chunk.size(), v});
        chunk += stack;
    }
    // Sorted by stack, then sites with the same stack summed into one line.
    std::sort(f.lines_.begin(), f.lines_.end(),
              [&](const FoldedLines::Line& x, const FoldedLines::Line& y) { return f.stack(x) < f.stack(y); });
    size_t kept = 0;
    for (size_t i = 0; i < f.lines_.size(); ++i) {
        if (kept > 0 && f.stack(f.lines_[kept - 1]) == f.stack(f.lines_[i]))
            f.lines_[kept - 1].value += f.lines_[i].value;
        else
            f.lines_[kept++] = f.lines_[i];
    }
    f.lines_.resize(kept);
    return f;
}

}  // namespace memtrack::report
