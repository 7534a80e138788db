// --format json (docs/REPORT.md has the schema).
#include "report/JsonFormat.hpp"

#include <algorithm>

#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>

#include "report/Functions.hpp"
#include "report/Owners.hpp"

namespace memtrack::report {
namespace json = boost::json;
namespace {

json::string_view js(std::string_view s) { return json::string_view(s.data(), s.size()); }

json::object site_json(const Site& s, Cost c) {
    const Amount a = amount(s, c);
    json::object o;
    o["bytes"] = a.bytes;
    o["blocks"] = a.blocks;
    o["stack_hash"] = s.hash;
    o["pids"] = json::array(s.pids.begin(), s.pids.end());
    o["frames"] = frames_json(s);
    return o;
}

json::array sites_json(const Ranked& r, Cost c) {
    json::array list;
    for (const Site* s : r.top) list.push_back(site_json(*s, c));
    return list;
}

// A section with totals: {"bytes", "blocks", "sites", "other_sites", "other_bytes", "other_blocks"}.
json::object section_json(const Analysis& a, Cost c, size_t limit, uint64_t bytes, uint64_t blocks) {
    const Ranked r = rank(a.sites, c, limit);
    json::object o;
    o["bytes"] = bytes;
    o["blocks"] = blocks;
    o["sites"] = sites_json(r, c);
    o["other_sites"] = r.other_sites;
    o["other_bytes"] = r.other.bytes;
    o["other_blocks"] = r.other.blocks;
    return o;
}

json::object costs_json(const Costs& k) {
    return json::object{{"calls", k.calls},           {"bytes", k.bytes},
                        {"peak_bytes", k.peak_bytes}, {"leaked_bytes", k.leaked_bytes},
                        {"leaked_blocks", k.leaked_blocks}, {"temporary_calls", k.temporary_calls}};
}

json::object row_json(const FunctionRow& r) {
    json::object o = costs_json(r.costs);
    o["function"] = js(r.name);
    o["file"] = js(r.file);
    o["line"] = r.line;
    o["module"] = js(r.module);
    return o;
}

json::array tree_json(const std::vector<CallNode>& nodes, const char* children) {
    json::array list;
    for (const CallNode& n : nodes) {
        json::object o = costs_json(n.costs);
        o["function"] = js(n.name);
        o[children] = tree_json(n.children, children);
        o["other_" + std::string(children)] = n.other_children;
        list.push_back(std::move(o));
    }
    return list;
}

// The view of --by function, --bottom-up, --top-down or --caller-callee, under its own key.
void view_json(const Analysis& a, const OutputOptions& o, json::object& out) {
    using View = OutputOptions::View;
    switch (o.view) {
        case View::Sites: return;
        case View::Functions: {
            const FunctionTable t = by_function(a, o.cost, o.limit);
            json::array rows;
            for (const FunctionRow& r : t.rows) rows.push_back(row_json(r));
            out["functions"] = json::object{{"cost", js(cost_name(o.cost))},
                                            {"rows", std::move(rows)},
                                            {"other_rows", t.other_rows},
                                            {"other", costs_json(t.other)}};
            return;
        }
        case View::BottomUp:
            out["bottom_up"] = tree_json(call_tree(a, true, o.cost, o.limit, o.tree_depth), "callers");
            return;
        case View::TopDown:
            out["top_down"] = tree_json(call_tree(a, false, o.cost, o.limit, o.tree_depth), "callees");
            return;
        case View::CallerCallee: {
            const CallerCallee* cc = o.caller_callee;
            if (!cc) return;  // not worked out (OutputOptions): nothing to print
            json::array callers, callees;
            for (const FunctionRow& r : cc->callers) callers.push_back(row_json(r));
            for (const FunctionRow& r : cc->callees) callees.push_back(row_json(r));
            out["caller_callee"] = json::object{{"function", js(cc->function)},
                                                {"self", costs_json(cc->self)},
                                                {"total", costs_json(cc->total)},
                                                {"callers", std::move(callers)},
                                                {"callees", std::move(callees)}};
            return;
        }
    }
}

json::object not_leaks_json(const Analysis& a, size_t limit) {
    const std::vector<const Site*> sites = not_leak_sites(a);
    json::array list;
    for (size_t i = 0; i < sites.size() && i < limit; ++i) {
        const Site& s = *sites[i];
        list.push_back(json::object{{"bytes", s.live_bytes},
                                    {"blocks", s.live_blocks},
                                    {"owner", s.owner == Site::Owner::Runtime ? "runtime" : "suppressed"},
                                    {"rule", js(s.owner_rule)},
                                    {"stack_hash", s.hash},
                                    {"frames", frames_json(s)}});
    }
    return json::object{{"runtime_bytes", a.runtime_leaked_bytes},
                        {"runtime_blocks", a.runtime_leaked_blocks},
                        {"suppressed_bytes", a.suppressed_leaked_bytes},
                        {"suppressed_blocks", a.suppressed_leaked_blocks},
                        {"sites", std::move(list)},
                        {"other_sites", sites.size() > limit ? sites.size() - limit : 0}};
}

double per_second(uint64_t n, uint64_t ns) { return ns == 0 ? 0.0 : double(n) * 1e9 / double(ns); }

json::object totals_json(const Analysis& a) {
    json::object types;
    for (size_t i = 0; i < a.kinds.size(); ++i) {
        const EventKind kind = EventKind(size_t(EventKind::Malloc) + i);
        json::object t;
        t["count"] = a.kinds[i].count;
        if (kind != EventKind::Free) t["bytes"] = a.kinds[i].bytes;
        types[js(artifact_name(kind))] = std::move(t);
    }
    json::object o;
    o["events"] = a.events;
    o["start_ns"] = a.start_ns;
    o["duration_ns"] = a.duration_ns;
    o["calls"] = a.calls;
    o["bytes"] = a.bytes;
    o["frees"] = a.frees;
    o["from_ns"] = a.from_ns;
    o["span_ns"] = span_ns(a);
    o["calls_per_s"] = per_second(a.calls, span_ns(a));
    o["bytes_per_s"] = per_second(a.bytes, span_ns(a));
    o["types"] = std::move(types);
    o["live_bytes"] = a.leaked_bytes;
    o["live_blocks"] = a.leaked_blocks;
    o["mapped_bytes"] = a.mapped_bytes;
    o["peak_mapped_bytes"] = a.peak_mapped_bytes;
    o["without_stack"] = a.without_stack;
    o["stack_missing"] = a.stack_missing;
    o["unknown_frees"] = a.unknown_frees;
    o["failed_allocations"] = a.failed_allocations;
    o["replaced_blocks"] = a.replaced_blocks;
    o["filtered_out"] = a.filtered_out;
    if (a.has_timeline) {
        // live_bytes above is then what was live at each process's exit; with --window, what
        // was made in the window and live at its end or its process's exit before (the window's
        // leaked-in-window).
        if (a.window) o["window"] = *a.window;
        o["live_at_end_bytes"] = a.live_at_end_bytes;
        o["live_at_end_blocks"] = a.live_at_end_blocks;
        o["exec_discarded_bytes"] = a.exec_discarded_bytes;
        o["exec_discarded_blocks"] = a.exec_discarded_blocks;
        o["peak_rss_bytes"] = a.peak_rss_bytes;
        o["rss_beyond_heap_bytes"] = rss_beyond_heap(a);
    }
    return o;
}

}  // namespace

json::array frames_json(const Site& s) {
    json::array list;
    if (!s.frames) return list;
    for (const Frame* frame : *s.frames) {
        const Frame& f = *frame;
        json::object o;
        o["function"] = js(f.function);
        o["file"] = js(f.file);
        o["line"] = f.line;
        o["module"] = js(f.module);
        o["inlined"] = f.inlined;
        list.push_back(std::move(o));
    }
    return list;
}

json::object json_model(const Analysis& a, const OutputOptions& o) {
    json::array processes;
    for (const ProcessTotals& p : a.processes) {
        json::object po{{"pid", p.pid},
                        {"events", p.events},
                        {"calls", p.calls},
                        {"bytes", p.bytes},
                        {"leaked_bytes", p.leaked_bytes},
                        {"leaked_blocks", p.leaked_blocks}};
        if (a.has_timeline) {
            po["parent"] = p.info.parent;
            po["attached"] = p.info.attached;
            po["command"] = js(p.info.command);
            po["start_ns"] = p.info.start_ns;
            po["end_ns"] = p.info.end_ns;
            po["status"] = js(p.info.status);
            po["heap_peak_bytes"] = p.peak_bytes;
            po["live_at_end_bytes"] = p.live_bytes;
            po["exec_discarded_bytes"] = p.exec_discarded_bytes;
            po["rss_peak_bytes"] = p.info.rss_peak;
        }
        processes.push_back(std::move(po));
    }
    json::object peak = section_json(a, Cost::Peak, o.limit, a.peak_bytes, a.peak_blocks);
    peak["time_ns"] = a.peak_time_ns;

    json::object temporary = section_json(a, Cost::Temporary, o.limit, a.temporary_bytes, a.temporary_calls);
    temporary["threshold"] = a.temporary_threshold;
    temporary["share"] = a.calls == 0 ? 0.0 : double(a.temporary_calls) / double(a.calls);

    json::array histogram;
    for (const SizeBucket& b : a.histogram)
        histogram.push_back(json::object{{"min", b.min}, {"max", b.max}, {"calls", b.calls}, {"bytes", b.bytes}});
    json::array timeline;
    for (const TimelinePoint& p : a.timeline)
        timeline.push_back(json::object{{"time_ns", p.time_ns}, {"bytes", p.bytes}});

    json::object out;
    out["schema_version"] = 1;
    out["processes"] = std::move(processes);
    out["totals"] = totals_json(a);
    out["peak"] = std::move(peak);
    out["leaks"] = section_json(a, Cost::Leaked, o.limit, a.leaked_bytes, a.leaked_blocks);
    out["not_leaks"] = not_leaks_json(a, o.limit);
    out["calls"] = sites_json(rank(a.sites, Cost::Allocations, o.limit), Cost::Allocations);
    out["allocated"] = sites_json(rank(a.sites, Cost::Allocated, o.limit), Cost::Allocated);
    out["temporary"] = std::move(temporary);
    out["histogram"] = std::move(histogram);
    out["timeline_bucket_ns"] = a.timeline_bucket_ns;
    out["timeline"] = std::move(timeline);
    json::array unresolved;
    for (const DebugHint& h : a.unresolved)
        unresolved.push_back(json::object{{"module", js(h.module)}, {"frames", h.frames}, {"package", js(h.package)}});
    out["unresolved"] = std::move(unresolved);
    view_json(a, o, out);
    if (o.windows) {
        json::array windows;
        for (const WindowTotals& w : a.windows)
            windows.push_back(json::object{{"number", w.number},
                                           {"name", js(w.name)},
                                           {"start_ns", w.start_ns},
                                           {"end_ns", w.end_ns == UINT64_MAX ? json::value(nullptr) : json::value(w.end_ns)},
                                           {"peak_bytes", w.peak_bytes},
                                           {"bytes", w.bytes},
                                           {"calls", w.calls},
                                           {"average_bytes", w.calls ? w.bytes / w.calls : 0},
                                           {"rss_peak_bytes", w.rss_peak_bytes},
                                           {"leaked_bytes", w.leaked_bytes},
                                           {"leaked_blocks", w.leaked_blocks}});
        out["windows"] = std::move(windows);
    }
    return out;
}

std::string json_report(const Analysis& a, const OutputOptions& o) {
    std::string s = json::serialize(json_model(a, o));
    s += '\n';
    return s;
}

}  // namespace memtrack::report
