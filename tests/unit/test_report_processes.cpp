// The report with a timeline (report/Processes.hpp): a process's heap ends at its exit (leaked)
// or its exec (discarded), the tree's peak is over the processes alive, and what processes still
// running hold is live at the end. Every figure worked out below.
#include <doctest/doctest.h>

#include <vector>

#include <boost/json.hpp>

#include "TestFiles.hpp"
#include "core/OutputFiles.hpp"
#include "format/ArtifactEncoder.hpp"
#include "report/Analysis.hpp"
#include "report/ArtifactTotals.hpp"
#include "report/FailIf.hpp"
#include "report/Load.hpp"
#include "report/Output.hpp"
#include "report/Processes.hpp"
#include "report/StackTable.hpp"
#include "report/TrackSummary.hpp"

using namespace memtrack;
using namespace memtrack::report;
using Type = TimelineEvent::Type;

namespace {

constexpr uint64_t kT = 1'000'000'000;  // the session's first event
constexpr uint64_t ms(uint64_t n) { return kT + n * 1'000'000; }

Event alloc(int32_t pid, uint64_t t, uint64_t addr, uint64_t size) {
    Event e;
    e.pid = e.tid = pid;
    e.timestamp = t;
    e.kind = EventKind::Malloc;
    e.addr = addr;
    e.size = size;
    return e;
}

Event free_of(int32_t pid, uint64_t t, uint64_t addr) {
    Event e;
    e.pid = e.tid = pid;
    e.timestamp = t;
    e.kind = EventKind::Free;
    e.addr = addr;
    return e;
}

TimelineEvent tl(Type type, uint64_t t, int32_t pid, int32_t parent = 0) {
    TimelineEvent e;
    e.type = type;
    e.time = t;
    e.pid = pid;
    e.parent = parent;
    return e;
}

TimelineEvent exited(uint64_t t, int32_t pid, int32_t code) {
    TimelineEvent e = tl(Type::Exit, t, pid);
    e.code = code;
    return e;
}

// Root 100 keeps 1000 B to the end (still running: detached). Child 101 exits holding 5000 B.
// Child 102 holds 7000 B when it execs, then its new image allocates and frees 300 B and exits.
// Child 103, forked after 101 and 102 ended, exits holding 2000 B.
//   at 3 ms: 100 + 101 = 6000 B; at 6 ms: 101 is gone, 100 + 102 = 8000 B (the peak);
//   at 8 ms: 102's old heap is gone, 1000 + 300 B; at 12 ms: 1000 + 2000 B.
// Without the processes, blocks of ended processes stay live: 13000 B at 6 ms (the peak), and
// 102's new image allocating at its old block's address looks like a free that was missed.
const std::vector<Event> kEvents = {
    alloc(100, ms(0), 0x1000, 1000), alloc(101, ms(3), 0x2000, 5000), alloc(102, ms(6), 0x3000, 7000),
    alloc(102, ms(8), 0x3000, 300),  free_of(102, ms(9), 0x3000),     alloc(103, ms(12), 0x4000, 2000),
    alloc(100, ms(14), 0x1100, 1),   free_of(100, ms(15), 0x1100),
};

std::vector<TimelineEvent> timeline() {
    TimelineEvent exec = tl(Type::Exec, ms(7), 102);
    exec.argv = {"true", "x"};
    TimelineEvent root_exec = tl(Type::Exec, ms(0) - 1, 100);
    root_exec.argv = {"sh", "-c", "tree"};
    TimelineEvent rss = tl(Type::Rss, ms(2), 100);
    rss.anon = 4096;
    rss.file = 8192;
    TimelineEvent rss101 = tl(Type::Rss, ms(3), 101);
    rss101.anon = 100000;
    TimelineEvent peak101 = tl(Type::RssPeak, ms(4), 101);
    peak101.peak = 200000;
    // In the order the writer may deliver them: not time order.
    return {exited(ms(13), 103, 0), tl(Type::Start, ms(0) - 10, 100), root_exec, rss,
            tl(Type::Fork, ms(1), 101, 100), rss101, peak101, exited(ms(4), 101, 1),
            tl(Type::Fork, ms(5), 102, 100), exec, exited(ms(10), 102, 0), tl(Type::Fork, ms(11), 103, 100),
            tl(Type::Detach, ms(16), 100)};
}

Analysis analyse(bool with_timeline, FilterOptions filter = {}) {
    StackTable stacks;
    Analyzer a(stacks, std::move(filter), 1);
    if (with_timeline) a.set_processes(build_process_model(timeline()));
    for (const Event& e : kEvents) a.add(e);
    return std::move(a).finish();
}

const ProcessTotals& of(const Analysis& a, int32_t pid) {
    for (const auto& p : a.processes)
        if (p.pid == pid) return p;
    FAIL("no process ", pid);
    return a.processes.front();
}

}  // namespace

TEST_CASE("report with a timeline: exits leak, execs discard, the peak is over the processes alive") {
    const Analysis a = analyse(true);
    CHECK(a.has_timeline);
    CHECK(a.peak_bytes == 8000);
    CHECK(a.peak_blocks == 2);
    CHECK(a.peak_time_ns == 6'000'000);
    CHECK(a.leaked_bytes == 7000);  // 101's 5000 and 103's 2000
    CHECK(a.leaked_blocks == 2);
    CHECK(a.exec_discarded_bytes == 7000);
    CHECK(a.exec_discarded_blocks == 1);
    CHECK(a.live_at_end_bytes == 1000);  // 100, still running
    CHECK(a.live_at_end_blocks == 1);
    // Samples: 100's 12288 + 101's 100000 = 112288 at 3 ms; 101's own mark at its exit is higher.
    CHECK(a.peak_rss_bytes == 200000);
    CHECK(a.replaced_blocks == 0);  // 102's new image reuses its old block's address: no missed free

    REQUIRE(a.processes.size() == 4);
    const ProcessTotals& root = of(a, 100);
    CHECK(root.info.command == "sh -c tree");
    CHECK(root.info.status == "running at the end");
    CHECK(root.live_bytes == 1000);
    CHECK(root.leaked_bytes == 0);
    CHECK(root.peak_bytes == 1001);
    CHECK(root.calls == 2);
    const ProcessTotals& c101 = of(a, 101);
    CHECK(c101.info.parent == 100);
    CHECK(c101.info.command == "sh -c tree");  // forked, never exec'd
    CHECK(c101.info.status == "exit 1");
    CHECK(c101.info.start_ns == ms(1));
    CHECK(c101.info.end_ns == ms(4));
    CHECK(c101.leaked_bytes == 5000);
    CHECK(c101.peak_bytes == 5000);
    CHECK(c101.info.rss_peak == 200000);
    const ProcessTotals& c102 = of(a, 102);
    CHECK(c102.info.command == "true x");
    CHECK(c102.exec_discarded_bytes == 7000);
    CHECK(c102.leaked_bytes == 0);
    CHECK(c102.peak_bytes == 7000);
    CHECK(c102.calls == 2);
    CHECK(of(a, 103).leaked_bytes == 2000);

    // Each site's leak is what its blocks held at their process's exit or at the end: the
    // sites here have no stack, so they are one site.
    REQUIRE(a.sites.size() == 1);
    CHECK(a.sites[0].live_bytes == 8000);  // 5000 + 2000 leaked, 1000 live at the end
}

TEST_CASE("report without a timeline: every block live at the end is leaked, as before") {
    const Analysis a = analyse(false);
    CHECK_FALSE(a.has_timeline);
    CHECK(a.peak_bytes == 13000);
    CHECK(a.peak_time_ns == 6'000'000);
    CHECK(a.leaked_bytes == 8000);  // 1000 + 5000 + 2000
    CHECK(a.leaked_blocks == 3);
    CHECK(a.replaced_blocks == 1);
    CHECK(of(a, 101).leaked_bytes == 5000);
    CHECK(of(a, 102).leaked_bytes == 0);
}

TEST_CASE("report with a timeline and --pid: only that process, its peak alone") {
    FilterOptions f;
    f.pids = {102};
    const Analysis a = analyse(true, f);
    CHECK(a.peak_bytes == 7000);
    CHECK(a.exec_discarded_bytes == 7000);
    CHECK(a.leaked_bytes == 0);
    REQUIRE(a.processes.size() == 1);
    CHECK(a.processes[0].pid == 102);
}

TEST_CASE("report with a timeline and --command: the processes whose command line matches") {
    FilterOptions f;
    f.command = std::regex("tree");  // 100 and its children that never exec'd: 101, 103
    const Analysis a = analyse(true, f);
    REQUIRE(a.processes.size() == 3);
    CHECK(a.processes[0].pid == 100);
    CHECK(a.processes[1].pid == 101);
    CHECK(a.processes[2].pid == 103);
    CHECK(a.peak_bytes == 6000);  // 100 and 101 at 3 ms
    CHECK(a.leaked_bytes == 7000);
    CHECK(a.exec_discarded_bytes == 0);
    CHECK(a.live_at_end_bytes == 1000);

    FilterOptions g;
    g.command = std::regex("^true ");  // 102 after its exec only; its old image ran "sh -c tree"
    const Analysis b = analyse(true, g);
    REQUIRE(b.processes.size() == 1);
    CHECK(b.processes[0].pid == 102);
}

TEST_CASE("report with a timeline: --fail-if rss_peak, live_at_end, exec_discarded") {
    const Analysis a = analyse(true);
    CHECK(a.peak_rss_bytes == 200000);  // 101's own mark, above the samples' 112288
    const Metrics m = metrics(a, nullptr);
    CHECK(m.at("rss_peak").value == 200000);
    CHECK(m.at("live_at_end").value == 1000);
    CHECK(m.at("exec_discarded").value == 7000);
    auto holds = evaluate(parse_fail_if("rss_peak>190KiB").value(), m);
    REQUIRE(holds);
    CHECK(holds.value() == "rss_peak>190KiB holds: rss_peak = 200000 B (195.3 KiB)");
    CHECK_FALSE(evaluate(parse_fail_if("rss_peak>200KiB").value(), m).value());
    CHECK_FALSE(metrics(analyse(false), nullptr).contains("rss_peak"));
}

// `memtrack track`'s closing lines and `memtrack report` read the same recording the same way:
// the tree's peak is over the processes alive (8000 B at 6 ms: 100's 1000 and 102's 7000, 101's
// 5000 gone at its exit), not 13000 B (every heap ever made, which the summary gave when it read
// the artifact alone); the leaks are those at each process's exit, and 100's 1000 B, still
// running at the end, are live at the end.
TEST_CASE("report with a timeline: track's summary gives the report's peak and leaks") {
    unittest::TempDir dir;
    const std::string artifact = dir / artifact_name(100);
    std::string raw;
    for (const Event& e : kEvents) encode_event(e, raw);
    unittest::write_zstd_file(artifact, raw);
    raw.clear();
    for (const TimelineEvent& e : timeline()) encode_timeline_event(e, raw);
    unittest::write_zstd_file(timeline_path_for(artifact), raw);

    auto summary = track_summary_of(artifact);
    REQUIRE_MESSAGE(summary, summary.error().message());
    CHECK(*summary == "memtrack: 8 events from 4 processes in 15.0 ms\n"
                      "memtrack: peak heap 7.8 KiB (8000 B) in 2 blocks at 6.0 ms\n"
                      "memtrack: leaked 6.8 KiB (7000 B) in 2 blocks\n"
                      "memtrack: live at the end of the recording (processes still running) 1000 B (1000 B) in 1 block\n"
                      "memtrack: next: memtrack report " + artifact + "\n");
    auto report = load(artifact, LoadOptions{});
    REQUIRE(report);
    CHECK(report->analysis.peak_bytes == 8000);
    CHECK(report->analysis.peak_blocks == 2);
    CHECK(report->analysis.leaked_bytes == 7000);
    // The artifact alone (`dump --summary`, and the summary before it read the timeline).
    CHECK(analyze_artifact(artifact).analysis.peak_bytes == 13000);
}

namespace {

TimelineEvent session(Type type, uint64_t t, std::string name = {}) {
    TimelineEvent e = tl(type, t, 0);
    e.name = std::move(name);
    return e;
}

// The scenario above cut into windows: a disable before any enable (window 1, on from the
// start), an enable (window 2) with a second enable inside it that changes nothing, a mark
// inside it (window 3, to the disable), and a mark never closed (window 4, to the end).
Analysis analyse_windows(std::optional<size_t> window) {
    std::vector<TimelineEvent> events = timeline();
    for (TimelineEvent e : {session(Type::Disable, ms(5)), session(Type::Enable, ms(5) + 1),
                            session(Type::Mark, ms(7) + 1, "m"), session(Type::Enable, ms(10)),
                            session(Type::Disable, ms(11)), session(Type::Mark, ms(12), "tail")})
        events.push_back(e);
    StackTable stacks;
    Analyzer a(stacks, {}, 1);
    a.set_processes(build_process_model(events), window);
    for (const Event& e : kEvents) a.add(e);
    return std::move(a).finish();
}

}  // namespace

TEST_CASE("report with a timeline: windows from enable, disable and mark, each with its own heap") {
    const Analysis a = analyse_windows(std::nullopt);
    REQUIRE(a.windows.size() == 4);
    const WindowTotals& w1 = a.windows[0];
    CHECK(w1.start_ns == 0);
    CHECK(w1.end_ns == ms(5));
    CHECK(w1.calls == 2);
    CHECK(w1.bytes == 6000);
    CHECK(w1.peak_bytes == 6000);
    CHECK(w1.leaked_bytes == 6000);  // 101 exited holding 5000; 100 still holds 1000
    CHECK(w1.leaked_blocks == 2);
    CHECK(w1.rss_peak_bytes == 12288 + 100000);
    const WindowTotals& w2 = a.windows[1];
    CHECK(w2.name.empty());
    CHECK(w2.start_ns == ms(5) + 1);
    CHECK(w2.end_ns == ms(11));  // the second enable did not start another window
    CHECK(w2.calls == 2);
    CHECK(w2.bytes == 7300);
    CHECK(w2.peak_bytes == 7000);
    CHECK(w2.leaked_bytes == 0);  // 7000 dropped by the exec, 300 freed
    CHECK(w2.rss_peak_bytes == 12288);
    const WindowTotals& w3 = a.windows[2];
    CHECK(w3.name == "m");
    CHECK(w3.end_ns == ms(11));
    CHECK(w3.calls == 1);
    CHECK(w3.peak_bytes == 300);
    CHECK(w3.leaked_bytes == 0);
    const WindowTotals& w4 = a.windows[3];
    CHECK(w4.name == "tail");
    CHECK(w4.end_ns == UINT64_MAX);
    CHECK(w4.calls == 2);
    CHECK(w4.bytes == 2001);
    CHECK(w4.peak_bytes == 2000);  // 103's block left at its exit before 100's byte came
    CHECK(w4.leaked_bytes == 2000);
    CHECK(w4.leaked_blocks == 1);

    const Metrics m = metrics(a, nullptr);
    CHECK(m.at("window:m peak").value == 300);
    CHECK(m.at("window:3 peak").value == 300);
    CHECK(m.at("window:2 average").value == 3650);
    auto c = parse_fail_if("window:tail leaked_blocks>=1,window:2 bytes>1");
    REQUIRE(c);
    CHECK((*c)[0].window == "tail");
    CHECK((*c)[0].metric == "leaked_blocks");
    auto v = evaluate(*c, m);
    REQUIRE(v);
    CHECK(**v == "window:tail leaked_blocks>=1 holds: window:tail leaked_blocks = 1");
    const auto unknown_window = parse_fail_if("window:x peak>1");
    CHECK_FALSE(evaluate(unknown_window.value(), m));
    const auto unknown_metric = parse_fail_if("window:m size>1");
    CHECK_FALSE(check_window_metrics(unknown_metric.value()));
    CHECK_FALSE(parse_fail_if("window:peak>1"));

    // The html page's chart data: RSS beside the heap, the windows as bands, process starts and ends.
    const std::string html = html_report(a, OutputOptions{});
    const size_t rss_at = html.find("\"rss\":[{\"time_ns\":");  // in buckets, as the heap's timeline
    REQUIRE(rss_at != std::string::npos);
    const std::string rss = html.substr(rss_at, html.find(']', rss_at) - rss_at);
    CHECK(rss.find("\"bytes\":12288}") != std::string::npos);
    CHECK(rss.find("\"bytes\":112288}") != std::string::npos);  // 100's and 101's at 3 ms
    CHECK(html.find("\"windows\":[{\"number\":1,\"name\":\"\",\"start_ns\":0,\"end_ns\":5000000},") != std::string::npos);
    CHECK(html.find("{\"number\":4,\"name\":\"tail\",\"start_ns\":12000000,\"end_ns\":null}]") != std::string::npos);
    CHECK(html.find("{\"pid\":101,\"start_ns\":1000000,\"end_ns\":4000000,") != std::string::npos);
    CHECK(html.find("{\"pid\":100,\"start_ns\":0,\"end_ns\":16000000,") != std::string::npos);
    const auto windows = windows_of(build_process_model(timeline()).session);
    CHECK(windows.empty());
    CHECK(find_window(a.windows, "m").value() == 2);
    CHECK(find_window(a.windows, "4").value() == 3);
    CHECK_FALSE(find_window(a.windows, "5"));
    CHECK_FALSE(find_window(a.windows, "nope"));
}

TEST_CASE("report with a timeline and --window: every figure is that window's") {
    const Analysis a = analyse_windows(2);  // "m": ms(7)+1 .. ms(11)
    CHECK(a.calls == 1);
    CHECK(a.bytes == 300);
    CHECK(a.peak_bytes == 300);
    CHECK(a.unknown_frees == 0);
    REQUIRE(a.windows.size() == 1);
    CHECK(a.windows[0].number == 3);
    CHECK(a.peak_rss_bytes == 12288);  // the window's, not 101's mark from before it
    std::vector<int32_t> pids;
    for (const auto& p : a.processes) pids.push_back(p.pid);
    CHECK(pids == std::vector<int32_t>{100, 102});  // 101 ended before, 103 started at its end
    // The header's duration is the window's own: from its start (7 ms + 1 ns after the first
    // event) to its last event (102's free at 9 ms), not the recording's 15 ms.
    CHECK(a.from_ns == 7'000'001);
    CHECK(span_ns(a) == 1'999'999);
    const std::string text = text_report(a, OutputOptions{});
    CHECK(text.find("\nduration: 2.0 ms, 2 events (from 7.0 ms to 9.0 ms after the recording's first event)\n") !=
          std::string::npos);
    const boost::json::value j = boost::json::parse(json_report(a, OutputOptions{}));
    CHECK(j.at("totals").at("span_ns").to_number<uint64_t>() == 1'999'999);
    CHECK(j.at("totals").at("from_ns").to_number<uint64_t>() == 7'000'001);
}

// A window from 102's allocation to just before its exec: its 7000 B are live at the window's end,
// leaked in it, though the exec after it discards them (--to's figure: nothing leaked). Window 1
// (from the start to 5 ms) has 101's 5000 B, left at its exit inside it, and 100's 1000 B, live
// at the window's end while 100 runs on to the end of the recording.
TEST_CASE("report with a timeline and --window: the leaks are the window's leaked-in-window") {
    const auto analyse_in = [](std::vector<TimelineEvent> session, size_t window) {
        std::vector<TimelineEvent> events = timeline();
        events.insert(events.end(), session.begin(), session.end());
        StackTable stacks;
        Analyzer a(stacks, {}, 1);
        a.set_processes(build_process_model(events), window);
        for (const Event& e : kEvents) a.add(e);
        return std::move(a).finish();
    };
    const Analysis pre_exec = analyse_in({session(Type::Enable, ms(5) + 1), session(Type::Disable, ms(6) + 1)}, 0);
    REQUIRE(pre_exec.windows.size() == 1);
    CHECK(pre_exec.window == 1u);
    CHECK(pre_exec.windows[0].leaked_bytes == 7000);
    CHECK(pre_exec.leaked_bytes == 7000);
    CHECK(pre_exec.leaked_blocks == 1);
    CHECK(pre_exec.exec_discarded_bytes == 0);  // the exec came after the window
    CHECK(pre_exec.live_at_end_bytes == 0);
    REQUIRE(pre_exec.sites.size() == 1);
    CHECK(pre_exec.sites[0].live_bytes == 7000);  // the leaks section's figure
    CHECK(pre_exec.sites[0].live_blocks == 1);
    CHECK(of(pre_exec, 102).leaked_bytes == 7000);
    CHECK(of(pre_exec, 100).leaked_bytes == 0);
    const std::string text = text_report(pre_exec, OutputOptions{});
    CHECK(text.find("leaked in window 1 (made in it, live at its end or at their process's exit): 7000 B") !=
          std::string::npos);
    CHECK(text.find("leaks in window 1 (made in it, live at its end or at their process's exit)") != std::string::npos);
    CHECK(text.find("live at the end of the recording") == std::string::npos);

    const Analysis first = analyse_in({session(Type::Disable, ms(5))}, 0);
    REQUIRE(first.windows.size() == 1);
    CHECK(first.windows[0].leaked_bytes == 6000);
    CHECK(first.leaked_bytes == 6000);  // 101's 5000 at its exit, 100's 1000 at the window's end
    CHECK(first.leaked_blocks == 2);
    CHECK(first.live_at_end_bytes == 0);
    REQUIRE(first.sites.size() == 1);
    CHECK(first.sites[0].live_bytes == 6000);
    CHECK(of(first, 100).leaked_bytes == 1000);
    CHECK(of(first, 101).leaked_bytes == 5000);
    // 100's 1000 B are leaked in the window, not live at the end, in the analysis as in json.
    CHECK(of(first, 100).live_bytes == 0);
    CHECK(of(first, 100).live_blocks == 0);
    const boost::json::value j = boost::json::parse(json_report(first, OutputOptions{}));
    for (const boost::json::value& p : j.at("processes").as_array()) {
        const int64_t pid = p.at("pid").to_number<int64_t>();
        CAPTURE(pid);
        CHECK(p.at("live_at_end_bytes").to_number<uint64_t>() == 0);
    }
}

TEST_CASE("report with a timeline: every site names the processes it allocated in, with their command lines") {
    const Analysis a = analyse(true);
    REQUIRE(a.sites.size() == 1);  // no stacks: one site
    CHECK(a.sites[0].pids == std::vector<int32_t>{100, 101, 102, 103});
    const std::string text = text_report(a, OutputOptions{});
    CHECK(text.find("      in processes: 100 (sh -c tree), 101 (sh -c tree), 102 (true x), 103 (sh -c tree)\n") !=
          std::string::npos);
    FilterOptions f;
    f.pids = {102};
    const Analysis one = analyse(true, f);
    REQUIRE(one.sites.size() == 1);
    CHECK(one.sites[0].pids == std::vector<int32_t>{102});
    CHECK(text_report(one, OutputOptions{}).find("      in process: 102 (true x)\n") != std::string::npos);
}
