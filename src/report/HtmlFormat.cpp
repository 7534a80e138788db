// --format html: one self-contained page (HtmlPage.cpp) that draws its flamegraphs and tables
// itself from the series of Analysis::site_timeline (per site and process, per time bucket),
// so a range dragged on its heap chart and a process picked in it redraw them with no server.
// Bounded whatever the input: the chart has at most Timeline::kMaxPoints points, each series at
// most SiteTimeline::kMaxBuckets buckets, and past kMaxNumbers numbers in all the least costly
// series of each process are summed into one "[other sites]" series.
// With --diff the same page draws two recordings' sites matched by stack (diff_html), one row
// per distinct folded stack of either: bounded by their stacks files.
#include <algorithm>
#include <array>
#include <map>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include "report/Diff.hpp"
#include "report/FrameNames.hpp"
#include "report/HtmlPage.hpp"
#include "report/Output.hpp"

namespace memtrack::report {
namespace json = boost::json;
namespace {

// Numbers in the series kept whole (8 per bucket, one per frame): at a few characters each,
// a page of a few MiB.
constexpr size_t kMaxNumbers = 400'000;
constexpr size_t kMaxName = 400;  // template-heavy C++ names run to kilobytes: the page shows the start
constexpr std::string_view kOtherSites = "[other sites]";

// JSON inside <script>: "</" would end the element, and U+2028/9 are fine in JSON, so only the
// former needs care.
std::string script_safe(std::string s) {
    for (size_t at = s.find("</"); at != std::string::npos; at = s.find("</", at + 3)) s.replace(at, 2, "<\\/");
    return s;
}

std::string shown(std::string name) {
    if (name.size() > kMaxName) name = name.substr(0, kMaxName) + "...";
    return name;
}

// Where a frame is: "file:line", else its module's name.
std::string where(std::string_view file, uint32_t line, std::string_view module) {
    if (!file.empty()) return std::string(file) + (line ? ":" + std::to_string(line) : std::string());
    return std::string(base_name(module));
}

// Distinct (name, where) pairs, each once, by index.
class FrameIds {
public:
    uint32_t id(const std::string& name, const std::string& at) {
        auto [it, fresh] = ids_.try_emplace({name, at}, uint32_t(list_.size()));
        if (fresh) list_.push_back(json::array{json::string(name), json::string(at)});
        return it->second;
    }
    json::array take() { return std::move(list_); }

    // A site's frames, root first, named as every format names them (named_frames: a run of
    // unresolved frames is one "[module]", as in folded).
    json::array stack(const Site& site) {
        json::array out;
        std::vector<NamedFrame> frames = named_frames(site);
        if (frames.empty()) out.push_back(id(std::string(unknown_stack_name(site)), ""));
        for (auto it = frames.rbegin(); it != frames.rend(); ++it)
            out.push_back(id(shown(std::move(it->name)), where(it->file, it->line, it->module)));
        return out;
    }

private:
    std::map<std::pair<std::string, std::string>, uint32_t> ids_;
    json::array list_;
};

// The series kept whole: in turn the next most costly by each of the page's views, while they
// fit in kMaxNumbers.
std::vector<bool> kept_series(const Analysis& a) {
    const SiteTimelineData& t = a.site_timeline;
    const size_t n = t.series.size();
    std::array<std::vector<uint64_t>, 5> cost;
    for (auto& c : cost) c.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
        const SiteSeries& s = t.series[i];
        cost[0][i] = s.peak_bytes;
        for (const SiteBucket& b : s.buckets) {
            cost[1][i] += b.leaked_bytes;
            cost[2][i] += b.bytes;
            cost[3][i] += b.calls;
            cost[4][i] += b.temporary_calls;
        }
    }
    std::array<std::vector<uint32_t>, 5> order;
    for (size_t c = 0; c < cost.size(); ++c) {
        for (uint32_t i = 0; i < n; ++i)
            if (cost[c][i]) order[c].push_back(i);
        std::stable_sort(order[c].begin(), order[c].end(),
                         [&](uint32_t x, uint32_t y) { return cost[c][x] > cost[c][y]; });
    }
    std::vector<bool> keep(n, false);
    size_t numbers = 0;
    for (size_t rank = 0;; ++rank) {
        bool more = false;
        for (const auto& o : order) {
            if (rank >= o.size()) continue;
            more = true;
            const uint32_t i = o[rank];
            if (keep[i]) continue;
            const StackFrames* frames = a.sites.at(t.series[i].site).frames;
            numbers += 8 * t.series[i].buckets.size() + (frames ? frames->size() : 1) + 3;
            if (numbers > kMaxNumbers) return keep;
            keep[i] = true;
        }
        if (!more) return keep;
    }
}

void append_cells(json::array& out, const std::vector<SiteBucket>& buckets) {
    for (const SiteBucket& b : buckets)
        for (uint64_t v : {uint64_t(b.bucket), b.calls, b.bytes, b.released_bytes, b.temporary_calls,
                           b.temporary_bytes, b.leaked_bytes, b.leaked_blocks})
            out.push_back(v);
}

// {"bucket_ns", "buckets", "frames": [[name, where]], "list": [{"s": frame ids root first,
// "pid", "p": live at the peak, "c": 8 numbers per bucket (bucket, calls, bytes, released
// bytes, temporary calls and bytes, leaked bytes and blocks)}]}
json::object series_json(const Analysis& a) {
    const SiteTimelineData& t = a.site_timeline;
    FrameIds frames;
    json::array list;
    const std::vector<bool> keep = kept_series(a);
    struct Other {
        uint64_t peak = 0;
        std::map<uint32_t, SiteBucket> buckets;
    };
    std::map<int32_t, Other> other;  // by pid
    for (size_t i = 0; i < t.series.size(); ++i) {
        const SiteSeries& s = t.series[i];
        if (!keep[i]) {
            Other& o = other[s.pid];
            o.peak += s.peak_bytes;
            for (const SiteBucket& b : s.buckets) {
                SiteBucket& m = o.buckets[b.bucket];
                m.bucket = b.bucket;
                merge_into(m, b);
            }
            continue;
        }
        json::array cells;
        append_cells(cells, s.buckets);
        list.push_back(json::object{
            {"s", frames.stack(a.sites.at(s.site))}, {"pid", s.pid}, {"p", s.peak_bytes}, {"c", std::move(cells)}});
    }
    for (auto& [pid, o] : other) {
        std::vector<SiteBucket> buckets;
        for (auto& [b, cell] : o.buckets) buckets.push_back(cell);
        json::array cells;
        append_cells(cells, buckets);
        list.push_back(json::object{{"s", json::array{frames.id(std::string(kOtherSites), "")}},
                                    {"pid", pid},
                                    {"p", o.peak},
                                    {"c", std::move(cells)}});
    }
    return json::object{{"bucket_ns", t.bucket_ns},
                        {"buckets", t.buckets},
                        {"frames", frames.take()},
                        {"list", std::move(list)}};
}

// A diff's values in the page's order: peak, leaked, allocated (bytes), allocations (calls).
json::array diff_values(const DiffValues& v) { return json::array{v.peak, v.leaked, v.bytes, v.calls}; }

}  // namespace

std::string diff_html(const Diff& d, const OutputOptions& o) {
    FrameIds frames;
    json::array list;
    for (const auto* rows : {&d.rows, &d.unchanged})
        for (const DiffRow& r : *rows)
            list.push_back(json::object{{"s", frames.stack(*r.example)}, {"b", diff_values(r.base)}, {"n", diff_values(r.now)}});
    json::object data{{"title", json::string_view(o.title.data(), o.title.size())},
                      {"diff", json::object{{"base_title", json::string_view(o.base_title.data(), o.base_title.size())},
                                            {"base", diff_values(d.base)},
                                            {"now", diff_values(d.now)},
                                            {"changed_sites", d.rows.size()},
                                            {"frames", frames.take()},
                                            {"list", std::move(list)}}}};
    std::string out(kHtmlHead);
    out += script_safe(json::serialize(data));
    out += kHtmlTail;
    return out;
}

std::string html_report(const Analysis& a, const OutputOptions& o) {
    json::object data{{"title", json::string_view(o.title.data(), o.title.size())},
                      {"events", a.events},
                      {"duration_ns", a.duration_ns},
                      {"calls", a.calls},
                      {"bytes", a.bytes},
                      {"peak", json::object{{"bytes", a.peak_bytes}, {"blocks", a.peak_blocks}, {"time_ns", a.peak_time_ns}}},
                      {"leaked", json::object{{"bytes", a.leaked_bytes}, {"blocks", a.leaked_blocks}}},
                      {"temporary", json::object{{"calls", a.temporary_calls}, {"bytes", a.temporary_bytes}}},
                      {"peak_rss_bytes", a.peak_rss_bytes},
                      {"timeline_bucket_ns", a.timeline_bucket_ns}};
    json::array timeline;
    for (const TimelinePoint& p : a.timeline) timeline.push_back(json::object{{"time_ns", p.time_ns}, {"bytes", p.bytes}});
    data["timeline"] = std::move(timeline);
    // RSS beside the heap, windows as bands, process starts and ends: times since the first
    // event, clamped at 0 (a process may start before it); null: open at the end, or unknown
    // (no timeline).
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
        const bool timed = a.has_timeline && p.info.start_ns;
        processes.push_back(json::object{{"pid", p.pid},
                                         {"start_ns", timed ? since(p.info.start_ns) : json::value(nullptr)},
                                         {"end_ns", timed && p.info.end_ns ? since(p.info.end_ns) : json::value(nullptr)},
                                         {"command", json::string_view(p.info.command.data(), p.info.command.size())},
                                         {"status", json::string_view(p.info.status.data(), p.info.status.size())}});
    }
    data["processes"] = std::move(processes);
    data["series"] = series_json(a);
    std::string out(kHtmlHead);
    out += script_safe(json::serialize(data));
    out += kHtmlTail;
    return out;
}

}  // namespace memtrack::report
