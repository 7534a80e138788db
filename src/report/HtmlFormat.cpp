// --format html: one self-contained page (HtmlPage.cpp) holding the text report, flamegraphs
// of the peak, the leaks and what was allocated, and the heap over time with the peak marked.
// A few MiB at most whatever the input: the timeline has at most Timeline::kMaxPoints points,
// flamegraph nodes under 0.1 % of their graph's total are folded into "other", the text
// sections hold --limit sites each; past 8000 nodes a flamegraph folds more.
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include "report/FlameTree.hpp"
#include "report/HtmlPage.hpp"
#include "report/Output.hpp"

namespace memtrack::report {
namespace json = boost::json;
namespace {

constexpr double kMinShare = 0.001;
constexpr size_t kMaxDepth = 200;
// Even at 0.1 % a wide tree can keep a thousand nodes per level: past this many, the share
// doubles until the tree fits.
constexpr size_t kMaxNodes = 8000;

json::object flame(const Analysis& a, Cost c) {
    FlameNode root = flame_tree(a, c);
    for (double share = kMinShare; prune(root, share, kMaxDepth) > kMaxNodes; share *= 2) {
    }
    return flame_json("all", root);
}

// JSON inside <script>: "</" would end the element, and U+2028/9 are fine in JSON, so only the
// former needs care.
std::string script_safe(std::string s) {
    for (size_t at = s.find("</"); at != std::string::npos; at = s.find("</", at + 3)) s.replace(at, 2, "<\\/");
    return s;
}

}  // namespace

std::string html_report(const Analysis& a, const OutputOptions& o) {
    OutputOptions plain = o;
    plain.colour = false;
    const std::string text = text_report(a, plain);
    json::object data{{"title", json::string_view(o.title.data(), o.title.size())},
                      {"text", json::string_view(text.data(), text.size())},
                      {"calls", a.calls},
                      {"peak", json::object{{"bytes", a.peak_bytes}, {"time_ns", a.peak_time_ns}}},
                      {"leaked", json::object{{"bytes", a.leaked_bytes}, {"blocks", a.leaked_blocks}}},
                      {"timeline_bucket_ns", a.timeline_bucket_ns}};
    json::array timeline;
    for (const TimelinePoint& p : a.timeline) timeline.push_back(json::object{{"time_ns", p.time_ns}, {"bytes", p.bytes}});
    data["timeline"] = std::move(timeline);
    // RSS beside the heap, windows as bands, process starts and ends: times since the first
    // event, clamped at 0 (a process may start before it); null: open at the end.
    const auto since = [&](uint64_t t) { return json::value(t > a.start_ns ? t - a.start_ns : 0); };
    json::array rss;
    for (const TimelinePoint& p : a.rss_timeline) rss.push_back(json::object{{"time_ns", p.time_ns}, {"bytes", p.bytes}});
    data["rss"] = std::move(rss);
    data["rss_bucket_ns"] = a.rss_timeline_bucket_ns;
    json::array windows;
    for (const WindowTotals& w : a.windows)
        windows.push_back(json::object{{"number", w.number},
                                       {"name", json::string_view(w.name.data(), w.name.size())},
                                       {"start_ns", since(w.start_ns)},
                                       {"end_ns", w.end_ns == UINT64_MAX ? json::value(nullptr) : since(w.end_ns)}});
    data["windows"] = std::move(windows);
    json::array processes;
    for (const ProcessTotals& p : a.processes) {
        if (!a.has_timeline) break;
        processes.push_back(json::object{{"pid", p.pid},
                                         {"start_ns", since(p.info.start_ns)},
                                         {"end_ns", p.info.end_ns ? since(p.info.end_ns) : json::value(nullptr)}});
    }
    data["processes"] = std::move(processes);
    data["flame"] = json::object{{"peak", flame(a, Cost::Peak)},
                                 {"leaked", flame(a, Cost::Leaked)},
                                 {"allocated", flame(a, Cost::Allocated)}};
    std::string out(kHtmlHead);
    out += script_safe(json::serialize(data));
    out += kHtmlTail;
    return out;
}

}  // namespace memtrack::report
