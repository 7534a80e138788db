// --format text: a header with the totals, then the top sites of each section.
#include <algorithm>
#include <fmt/format.h>

#include "report/FrameNames.hpp"
#include "report/Functions.hpp"
#include "report/Output.hpp"
#include "report/Owners.hpp"
#include "report/Units.hpp"

namespace memtrack::report {
namespace {

// Frames shown per site; the rest are counted on one line.
constexpr size_t kMaxFrames = 24;

struct Style {
    bool on = false;
    std::string title(std::string_view s) const { return on ? fmt::format("\033[1m{}\033[0m", s) : std::string(s); }
    std::string function(std::string_view s) const { return on ? fmt::format("\033[36m{}\033[0m", s) : std::string(s); }
};

void frames_text(const Site& s, const Style& st, std::string& out) {
    if (!s.frames || s.frames->empty()) {
        out += fmt::format("      {}\n", unknown_stack_name(s));
        return;
    }
    if (ShownStack shown; shown_stack(s, shown)) {
        const auto& frames = shown.frames;
        const size_t n = std::min(frames.size(), kMaxFrames);
        for (size_t i = 0; i < n; ++i) {
            const ShownFrame& f = frames[i];
            out += "      ";
            out += st.function(shown_name_with_run(f));
            if (f.inlined) out += " [inlined]";
            if (!f.file.empty()) out += fmt::format("  {}:{}", f.file, f.line);
            if (!f.module.empty() && f.run == 0) out += fmt::format("  ({})", base_name(f.module));
            out += '\n';
        }
        if (frames.size() > n) out += fmt::format("      ... {} more lines\n", frames.size() - n);
        if (shown.folded)
            out += fmt::format("      ({} start-up, allocator or hidden {} folded)\n", shown.folded,
                               shown.folded == 1 ? "frame" : "frames");
        return;
    }
    const size_t n = std::min(s.frames->size(), kMaxFrames);
    for (size_t i = 0; i < n; ++i) {
        const Frame& f = *(*s.frames)[i];
        out += "      ";
        out += st.function(frame_name(f));
        if (f.inlined) out += " [inlined]";
        if (!f.file.empty()) out += fmt::format("  {}:{}", f.file, f.line);
        if (!f.module.empty() && !f.function.empty()) out += fmt::format("  ({})", base_name(f.module));
        out += '\n';
    }
    if (s.frames->size() > n) out += fmt::format("      ... {} more frames\n", s.frames->size() - n);
}

// "in: 100 (sh -c make), 101 (cc1 x.c)": the processes the site allocated in, by pid, with their
// command lines when the timeline gave them; the first few, then how many more.
void processes_text(const Analysis& a, const Site& s, std::string& out) {
    constexpr size_t kShown = 4;
    constexpr size_t kCommand = 60;  // characters of a command line
    std::string line;
    for (size_t i = 0; i < s.pids.size() && i < kShown; ++i) {
        const int32_t pid = s.pids[i];
        line += i == 0 ? fmt::format("{}", pid) : fmt::format(", {}", pid);
        auto p = std::lower_bound(a.processes.begin(), a.processes.end(), pid,
                                  [](const ProcessTotals& x, int32_t y) { return x.pid < y; });
        if (p == a.processes.end() || p->pid != pid || p->info.command.empty()) continue;
        const std::string& cmd = p->info.command;
        line += fmt::format(" ({}{})", cmd.substr(0, kCommand), cmd.size() > kCommand ? "..." : "");
    }
    if (s.pids.size() > kShown) line += fmt::format(" and {} more", s.pids.size() - kShown);
    if (!line.empty()) out += fmt::format("      in {}: {}\n", s.pids.size() == 1 ? "process" : "processes", line);
}

void section(const Analysis& a, Cost c, std::string_view title, const OutputOptions& o, const Style& st,
             std::string& out) {
    const Ranked r = rank(a.sites, c, o.limit);
    out += '\n';
    out += st.title(fmt::format("== {} ==", title));
    out += '\n';
    if (r.top.empty()) {
        out += "  none\n";
        return;
    }
    const bool counts = c == Cost::Allocations || c == Cost::Allocated;
    size_t i = 0;
    for (const Site* s : r.top) {
        const Amount am = amount(*s, c);
        if (c == Cost::Allocations)
            out += fmt::format("  #{} {} ({} allocated)\n", ++i, blocks(am.blocks, "call", "calls"),
                               bytes_and_human(am.bytes));
        else if (c == Cost::Temporary)
            out += fmt::format("  #{} {} ({})\n", ++i, blocks(am.blocks, "temporary allocation", "temporary allocations"),
                               bytes_and_human(am.bytes));
        else if (counts)
            out += fmt::format("  #{} {} allocated in {}\n", ++i, bytes_and_human(am.bytes),
                               blocks(am.blocks, "call", "calls"));
        else
            out += fmt::format("  #{} {} in {}\n", ++i, bytes_and_human(am.bytes), blocks(am.blocks));
        processes_text(a, *s, out);
        frames_text(*s, st, out);
    }
    if (r.other_sites > 0) {
        const std::string count = blocks(r.other.blocks, counts ? "call" : "block", counts ? "calls" : "blocks");
        const bool by_count = c == Cost::Allocations || c == Cost::Temporary;
        const std::string what = by_count ? count : bytes_and_human(r.other.bytes);
        out += fmt::format("  and {} more from {} other {}{}\n", what, r.other_sites,
                           r.other_sites == 1 ? "place" : "places",
                           by_count ? "" : fmt::format(" ({})", count));
    }
}

std::string rate(uint64_t n, uint64_t ns, bool is_bytes) {
    if (ns == 0) return {};
    const double per_s = double(n) * 1e9 / double(ns);
    return is_bytes ? fmt::format(" ({}/s)", human_bytes(uint64_t(per_s))) : fmt::format(" ({:.0f}/s)", per_s);
}

void header(const Analysis& a, const Style& st, std::string& out) {
    std::string pids;
    for (const ProcessTotals& p : a.processes) {
        if (pids.size() > 60) {
            pids += ", ...";
            break;
        }
        pids += pids.empty() ? fmt::format("{}", p.pid) : fmt::format(", {}", p.pid);
    }
    out += st.title("memtrack report");
    out += '\n';
    out += fmt::format("processes: {}{}\n", a.processes.size(), pids.empty() ? "" : fmt::format(" ({})", pids));
    const uint64_t span = span_ns(a);
    out += fmt::format("duration: {}, {} events{}\n", human_duration(span), a.events,
                       a.from_ns ? fmt::format(" (from {} to {} after the recording's first event)", human_duration(a.from_ns),
                                               human_duration(a.duration_ns))
                                 : "");
    out += fmt::format("{:<14}{:>12}{:>12}{:>14}{:>14}\n", "type", "calls", "calls/s", "bytes", "bytes/s");
    for (size_t i = 0; i < a.kinds.size(); ++i) {
        const KindTotals& k = a.kinds[i];
        if (k.count == 0) continue;
        const EventKind kind = EventKind(size_t(EventKind::Malloc) + i);
        const bool sized = kind != EventKind::Free;
        const double seconds = double(span) / 1e9;
        out += fmt::format("{:<14}{:>12}{:>12}{:>14}{:>14}\n", artifact_name(kind), k.count,
                           span ? fmt::format("{:.0f}", double(k.count) / seconds) : "-",
                           sized ? fmt::format("{}", k.bytes) : "-",
                           sized && span ? human_bytes(uint64_t(double(k.bytes) / seconds)) : "-");
    }
    // The rule of docs/FORMATS.md, said where users compare per-type counts.
    if (a.kinds[0].count || a.kinds[size_t(EventKind::Realloc) - size_t(EventKind::Malloc)].count)
        out += "(realloc(NULL, n) is counted as Malloc, realloc(p, 0) as Free: Realloc is a resize of a block)\n";
    out += fmt::format("heap allocations: {}{}, {} allocated{}, {} frees\n", a.calls, rate(a.calls, span, false),
                       bytes_and_human(a.bytes), rate(a.bytes, span, true), a.frees);
    out += fmt::format("peak live heap: {} in {}, at {}\n", bytes_and_human(a.peak_bytes), blocks(a.peak_blocks),
                       human_duration(a.peak_time_ns));
    if (!a.has_timeline) {
        out += fmt::format("live at end (leaked): {} in {}{}\n", bytes_and_human(a.leaked_bytes), blocks(a.leaked_blocks),
                           leak_exclusions(a, " (below)"));
    } else if (a.window) {
        out += fmt::format("leaked in window {} (made in it, live at its end or at their process's exit): {} in {}{}\n",
                           *a.window, bytes_and_human(a.leaked_bytes), blocks(a.leaked_blocks), leak_exclusions(a, " (below)"));
    } else {
        out += fmt::format("leaked (live at their process's exit): {} in {}{}\n", bytes_and_human(a.leaked_bytes),
                           blocks(a.leaked_blocks), leak_exclusions(a, " (below)"));
    }
    if (a.has_timeline) {
        out += fmt::format("discarded by exec (live when their process exec'd; not leaks): {} in {}\n",
                           bytes_and_human(a.exec_discarded_bytes), blocks(a.exec_discarded_blocks));
        if (!a.window)  // with one, what is live at its end is leaked in it
            out += fmt::format("live at the end of the recording (processes still running): {} in {}\n",
                               bytes_and_human(a.live_at_end_bytes), blocks(a.live_at_end_blocks));
        out += fmt::format("peak RSS (sum over the processes alive; at least the largest process's own): {}\n",
                           bytes_and_human(a.peak_rss_bytes));
        out += fmt::format("heap vs RSS: {} resident beyond the peak live heap (allocator's free memory, code, "
                           "stacks, mappings)\n",
                           bytes_and_human(rss_beyond_heap(a)));
    }
    const double share = a.calls == 0 ? 0.0 : 100.0 * double(a.temporary_calls) / double(a.calls);
    out += fmt::format("temporary: {} of {} allocations ({:.1f} %), {}, released with {} other heap {} of their "
                       "process in between{}\n",
                       a.temporary_calls, a.calls, share, bytes_and_human(a.temporary_bytes),
                       a.temporary_threshold == 0 ? "no" : fmt::format("at most {}", a.temporary_threshold),
                       a.temporary_threshold == 1 ? "event" : "events",
                       a.temporary_threshold == 0 ? " (heaptrack's definition)" : "");
    out += fmt::format("mapped (mmap, apart from the heap): peak {}, at end {}\n", bytes_and_human(a.peak_mapped_bytes),
                       bytes_and_human(a.mapped_bytes));
    out += fmt::format("allocations without a stack: {}; stacks missing from the stacks file: {}\n", a.without_stack,
                       a.stack_missing);
    out += fmt::format("frees of unknown blocks: {}; failed allocations: {}; blocks whose free was missed: {}\n",
                       a.unknown_frees, a.failed_allocations, a.replaced_blocks);
    if (a.filtered_out) out += fmt::format("allocations left out by the filters: {}\n", a.filtered_out);
}

// Times of the timeline relative to the artifact's first event; "-" when unknown.
std::string since_start(const Analysis& a, uint64_t t) {
    if (t == 0) return "-";
    return t >= a.start_ns ? human_duration(t - a.start_ns) : "-" + human_duration(a.start_ns - t);
}

void processes_section(const Analysis& a, const Style& st, std::string& out) {
    out += '\n';
    out += st.title("== processes ==");
    out += '\n';
    out += fmt::format("  {:>7} {:>7} {:>10} {:>10} {:<20} {:>11} {:>11} {:>11} {:>11}  {}\n", "pid", "parent", "start",
                       "end", "status", "heap peak", "leaked", "RSS peak", "allocations", "command");
    for (const ProcessTotals& p : a.processes) {
        const ProcessInfo& i = p.info;
        std::string status = i.status.empty() ? "-" : i.status;
        if (i.attached) status += " (attached)";
        out += fmt::format("  {:>7} {:>7} {:>10} {:>10} {:<20} {:>11} {:>11} {:>11} {:>11}  {}\n", p.pid,
                           i.parent ? std::to_string(i.parent) : "-", since_start(a, i.start_ns),
                           since_start(a, i.end_ns), status, human_bytes(p.peak_bytes),
                           i.status == "running at the end" && !a.window ? "-" : human_bytes(p.leaked_bytes),
                           i.rss_peak ? human_bytes(i.rss_peak) : "-", p.calls, i.command);
    }
}

void windows_section(const Analysis& a, const Style& st, std::string& out) {
    out += '\n';
    out += st.title("== windows ==");
    out += '\n';
    if (a.windows.empty()) {
        out += "  none: the recording has no enable, disable or mark\n";
        return;
    }
    out += fmt::format("  {:>3} {:<16} {:>10} {:>10} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}\n", "#", "name", "start",
                       "end", "heap peak", "allocated", "allocations", "average", "RSS peak", "leaked");
    for (const WindowTotals& w : a.windows) {
        out += fmt::format("  {:>3} {:<16} {:>10} {:>10} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}\n", w.number,
                           w.name.empty() ? "(enabled)" : w.name, w.start_ns ? since_start(a, w.start_ns) : "start",
                           w.end_ns == UINT64_MAX ? "end" : since_start(a, w.end_ns), human_bytes(w.peak_bytes),
                           human_bytes(w.bytes), w.calls, w.calls ? human_bytes(w.bytes / w.calls) : "-",
                           w.rss_peak_bytes ? human_bytes(w.rss_peak_bytes) : "-", human_bytes(w.leaked_bytes));
    }
}

// Runtime-owned and suppressed leaks, by site, with the rule that set each apart.
void owned_section(const Analysis& a, const OutputOptions& o, const Style& st, std::string& out) {
    if (!a.runtime_leaked_blocks && !a.suppressed_leaked_blocks) return;
    out += '\n';
    out += st.title("== not counted as leaks: kept by the runtimes, or suppressed ==");
    out += '\n';
    const std::vector<const Site*> sites = not_leak_sites(a);
    size_t i = 0;
    for (const Site* s : sites) {
        if (i == o.limit) {
            out += fmt::format("  and {} more places\n", sites.size() - i);
            break;
        }
        out += fmt::format("  #{} {} in {}: {}\n", ++i, bytes_and_human(s->live_bytes), blocks(s->live_blocks),
                           s->owner == Site::Owner::Runtime ? s->owner_rule : "suppressed by leak:" + s->owner_rule);
        frames_text(*s, st, out);
    }
}

// Where debug info for the unresolved frames can be had.
void unresolved_section(const Analysis& a, const Style& st, std::string& out) {
    if (a.unresolved.empty()) return;
    out += '\n';
    out += st.title("== unresolved frames ==");
    out += '\n';
    for (const DebugHint& h : a.unresolved) {
        const std::string where =
            h.package.empty()
                ? "debug info: record with `memtrack track --debuginfod`, or build it with -g"
                : fmt::format("debug info: `apt install {}-dbgsym` (it is in {}), or record with `memtrack track "
                              "--debuginfod`",
                              h.package, h.package);
        out += fmt::format("  [{}] {} {} ({}): {}\n", base_name(h.module), h.frames, h.frames == 1 ? "frame" : "frames",
                           h.module, where);
    }
}

std::string costs_row(const Costs& k, std::string_view name) {
    return fmt::format("  {:>11} {:>11} {:>11} {:>11} {:>9}  {}\n", k.calls, human_bytes(k.bytes), human_bytes(k.peak_bytes),
                       human_bytes(k.leaked_bytes), k.temporary_calls, name);
}

std::string costs_head() {
    return fmt::format("  {:>11} {:>11} {:>11} {:>11} {:>9}  {}\n", "allocations", "allocated", "peak", "leaked",
                       "temporary", "function");
}

// A function row's name and where it is: "grow  src/grow.cc:12  (app)".
std::string located_name(const FunctionRow& r, const Style& st) {
    std::string name = st.function(r.name);
    if (!r.file.empty()) name += fmt::format("  {}:{}", r.file, r.line);
    if (!r.module.empty()) name += fmt::format("  ({})", base_name(r.module));
    return name;
}

void functions_view(const Analysis& a, const OutputOptions& o, const Style& st, std::string& out) {
    const FunctionTable t = by_function(a, o.cost, o.limit);
    out += '\n';
    out += st.title(fmt::format("== allocating functions, by {} ==", cost_name(o.cost)));
    out += '\n';
    out += costs_head();
    for (const FunctionRow& r : t.rows) out += costs_row(r.costs, located_name(r, st));
    if (t.other_rows) out += costs_row(t.other, fmt::format("and {} more functions", t.other_rows));
}

void tree_text(const std::vector<CallNode>& nodes, size_t indent, const Style& st, std::string& out) {
    for (const CallNode& n : nodes) {
        out += costs_row(n.costs, std::string(indent * 2, ' ') + st.function(n.name));
        tree_text(n.children, indent + 1, st, out);
        if (n.other_children)
            out += fmt::format("  {:>59}  {}and {} more\n", "", std::string((indent + 1) * 2, ' '), n.other_children);
    }
}

void tree_view(const Analysis& a, const OutputOptions& o, bool bottom_up, const Style& st, std::string& out) {
    out += '\n';
    out += st.title(fmt::format("== {}, by {} ==",
                                bottom_up ? "bottom-up: allocating functions, then their callers"
                                          : "top-down: from the outermost frames to the allocating functions",
                                cost_name(o.cost)));
    out += '\n';
    out += costs_head();
    tree_text(call_tree(a, bottom_up, o.cost, o.limit, o.tree_depth), 0, st, out);
}

void caller_callee_view(const OutputOptions& o, const Style& st, std::string& out) {
    const CallerCallee* cc = o.caller_callee;
    if (!cc) return;  // not worked out (OutputOptions): nothing to print
    out += '\n';
    out += st.title(fmt::format("== {}: callers and callees, by {} ==", cc->function, cost_name(o.cost)));
    out += '\n';
    out += costs_head();
    out += costs_row(cc->total, "in every stack it is in (inclusive)");
    out += costs_row(cc->self, "allocated by it itself (exclusive)");
    out += "  callers:\n";
    for (const FunctionRow& r : cc->callers) out += costs_row(r.costs, "  " + located_name(r, st));
    if (cc->callers.empty()) out += "    none: it is the outermost shown frame\n";
    out += "  callees:\n";
    for (const FunctionRow& r : cc->callees) out += costs_row(r.costs, "  " + located_name(r, st));
    if (cc->callees.empty()) out += "    none: it allocates itself\n";
}

}  // namespace

std::string text_report(const Analysis& a, const OutputOptions& o) {
    const Style st{o.colour};
    std::string out;
    header(a, st, out);
    if (a.has_timeline) processes_section(a, st, out);
    if (o.windows) windows_section(a, st, out);
    using View = OutputOptions::View;
    switch (o.view) {
        case View::Functions: functions_view(a, o, st, out); break;
        case View::BottomUp: tree_view(a, o, true, st, out); break;
        case View::TopDown: tree_view(a, o, false, st, out); break;
        case View::CallerCallee: caller_callee_view(o, st, out); break;
        case View::Sites:
            section(a, Cost::Peak, "sites at the peak", o, st, out);
            section(a, Cost::Leaked,
                    a.window ? fmt::format("leaks in window {} (made in it, live at its end or at their process's exit)",
                                           *a.window)
                    : a.has_timeline ? "leaks (live at their process's exit, or at the end)"
                                     : "leaks (live at exit)",
                    o, st, out);
            owned_section(a, o, st, out);
            section(a, Cost::Allocations, "most calls", o, st, out);
            section(a, Cost::Allocated, "most bytes allocated", o, st, out);
            section(a, Cost::Temporary, "temporary allocations, by count", o, st, out);
            break;
    }
    unresolved_section(a, st, out);
    return out;
}

}  // namespace memtrack::report
