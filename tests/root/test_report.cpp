// memtrack report on a real recording: report_known (tests/progs/report_known.c) makes leaks
// through a known chain, a peak of known blocks and known temporary allocations; every format
// must give exactly those bytes, blocks and stacks. pprof is read back by `go tool pprof`; the
// html page is rendered by headless Chromium, and driven by it over the DevTools protocol (a
// click to zoom, a search), when they are installed (otherwise a SKIP line says so).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "DevTools.hpp"
#include "ReportPage.hpp"
#include "Harness.hpp"
#include "report_sizes.h"

using namespace memtrack::roottest;

namespace {

namespace json = boost::json;

constexpr uint64_t kLeakBytes = RPT_LEAK_N * RPT_LEAK_SIZE;
constexpr uint64_t kPeakSiteBytes = RPT_PEAK_N * RPT_PEAK_SIZE;

// One recording shared by the cases below (tracking is the slow part).
struct Recording {
    TempDir dir;
    TrackResult result;
    Recording() : result(track(dir, {fixture("report_known")})) {}
};

// `memtrack report ARTIFACT --min-size .. --max-size .. [args]`: only report_known's own sizes.
RunResult report(const std::string& artifact, std::vector<std::string> args) {
    std::vector<std::string> argv{memtrack_bin(), "report", artifact, "--min-size", std::to_string(RPT_MIN),
                                  "--max-size", std::to_string(RPT_MAX)};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, std::chrono::seconds(120));
}

std::vector<std::string> functions(const json::value& site, size_t n) {
    std::vector<std::string> out;
    const json::array& frames = site.at("frames").as_array();
    for (size_t i = 0; i < n && i < frames.size(); ++i) out.emplace_back(frames[i].at("function").as_string());
    return out;
}

std::string base_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// The frames a site of report_known must start with, all in report_known.c of report_known.
void check_own_frames(const json::value& site, const std::vector<std::string>& chain) {
    CHECK(functions(site, chain.size()) == chain);
    const json::array& frames = site.at("frames").as_array();
    REQUIRE(frames.size() > chain.size());  // then libc's start-up frames
    for (size_t i = 0; i < chain.size(); ++i) {
        CAPTURE(i);
        CHECK(base_name(std::string(frames[i].at("file").as_string())) == "report_known.c");
        CHECK(base_name(std::string(frames[i].at("module").as_string())) == "report_known");
        CHECK(frames[i].at("line").as_int64() > 0);
        CHECK(frames[i].at("inlined") == false);
    }
}

std::string find_program(const std::string& name) {
    const char* path = std::getenv("PATH");
    std::stringstream dirs(path ? path : "/usr/bin:/bin");
    for (std::string d; std::getline(dirs, d, ':');) {
        const std::string candidate = d + "/" + name;
        if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    return {};
}

// The path of `name`, or empty after a SKIP line saying what is not checked without it.
std::string optional_program(const std::string& name, const std::string& package, const std::string& unchecked) {
    const std::string path = find_program(name);
    if (path.empty()) MESSAGE("SKIP: " << name << " is not installed (apt-get install " << package << "): " << unchecked);
    return path;
}

// `memtrack report --format FORMAT -o PATH`, which must succeed.
void write_report(const std::string& artifact, const std::string& format, const std::string& path) {
    RunResult r = report(artifact, {"--format", format, "-o", path});
    REQUIRE_MESSAGE(r.status == 0, r.describe());
}

uint64_t file_size(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
}


// The flamegraph's boxes, top row first and left to right within a row.
std::vector<FlameBox> shown_frames(DevTools& browser) {
    std::vector<FlameBox> boxes = flame_boxes(browser);
    std::stable_sort(boxes.begin(), boxes.end(),
                     [](const FlameBox& a, const FlameBox& b) { return a.top != b.top ? a.top < b.top : a.left < b.left; });
    return boxes;
}

void click_frame(DevTools& browser, const std::string& name) { browser.click_element(flame_box_expr(name)); }

}  // namespace

TEST_CASE("report: a recording with known leaks, peak and temporaries, in every format") {
    ROOT_SUITE_GUARD();
    Recording rec;
    REQUIRE_MESSAGE(rec.result.run.status == 0, rec.result.run.describe());
    const std::string& artifact = rec.result.artifact;

    SUBCASE("track ends with the summary and the report command") {
        const std::string& err = rec.result.run.err;
        CHECK_MESSAGE(err.find("memtrack: next: memtrack report " + artifact + "\n") != std::string::npos, err);
        CHECK_MESSAGE(std::regex_search(err, std::regex("memtrack: [0-9]+ events from 1 process in ")), err);
        CHECK_MESSAGE(err.find("memtrack: peak heap ") != std::string::npos, err);
        CHECK_MESSAGE(err.find("memtrack: leaked ") != std::string::npos, err);
    }

    SUBCASE("json: exact peak, leaks, calls and temporaries, with their stacks") {
        RunResult r = report(artifact, {"--format", "json"});
        REQUIRE_MESSAGE(r.status == 0, r.describe());
        CHECK(r.err == "");
        const json::value v = json::parse(r.out);
        CHECK(v.at("schema_version") == 1);
        const json::value& totals = v.at("totals");
        CHECK(totals.at("calls") == RPT_LEAK_N + RPT_PEAK_N + RPT_TEMP_N);
        CHECK(totals.at("bytes") == kLeakBytes + kPeakSiteBytes + RPT_TEMP_N * RPT_TEMP_SIZE);
        CHECK(totals.at("frees") == RPT_PEAK_N + RPT_TEMP_N);
        CHECK(totals.at("unknown_frees") == 0);
        CHECK(totals.at("without_stack") == 0);
        CHECK(totals.at("stack_missing") == 0);

        const json::value& peak = v.at("peak");
        CHECK(peak.at("bytes") == kLeakBytes + kPeakSiteBytes);
        CHECK(peak.at("blocks") == RPT_LEAK_N + RPT_PEAK_N);
        const json::array& peak_sites = peak.at("sites").as_array();
        REQUIRE(peak_sites.size() == 2);
        CHECK(peak_sites[0].at("bytes") == kPeakSiteBytes);
        CHECK(peak_sites[0].at("blocks") == RPT_PEAK_N);
        check_own_frames(peak_sites[0], {"peak_build", "main"});
        CHECK(peak_sites[1].at("bytes") == kLeakBytes);
        CHECK(peak_sites[1].at("blocks") == RPT_LEAK_N);
        check_own_frames(peak_sites[1], {"leak_inner", "leak_outer", "main"});

        const json::value& leaks = v.at("leaks");
        CHECK(leaks.at("bytes") == kLeakBytes);
        CHECK(leaks.at("blocks") == RPT_LEAK_N);
        const json::array& leak_sites = leaks.at("sites").as_array();
        REQUIRE(leak_sites.size() == 1);
        CHECK(leak_sites[0].at("bytes") == kLeakBytes);
        CHECK(leak_sites[0].at("blocks") == RPT_LEAK_N);
        check_own_frames(leak_sites[0], {"leak_inner", "leak_outer", "main"});

        const json::array& calls = v.at("calls").as_array();
        REQUIRE(calls.size() == 3);
        CHECK(calls[0].at("blocks") == RPT_TEMP_N);
        CHECK(calls[0].at("bytes") == RPT_TEMP_N * RPT_TEMP_SIZE);
        check_own_frames(calls[0], {"temp_loop", "main"});

        // Temporary (heaptrack's definition, the default): temp_loop's blocks, each freed right
        // after its allocation. peak_build's have 3 other heap events of the process between
        // allocation and free (allocations of the later ones, frees of the earlier ones).
        const json::value& temporary = v.at("temporary");
        CHECK(temporary.at("threshold") == 0);
        CHECK(temporary.at("blocks") == RPT_TEMP_N);
        CHECK(temporary.at("bytes") == RPT_TEMP_N * RPT_TEMP_SIZE);
        const json::array& temp_sites = temporary.at("sites").as_array();
        REQUIRE(temp_sites.size() == 1);
        CHECK(temp_sites[0].at("blocks") == RPT_TEMP_N);
        check_own_frames(temp_sites[0], {"temp_loop", "main"});

        const json::array& processes = v.at("processes").as_array();
        REQUIRE(processes.size() == 1);
        CHECK(processes[0].at("pid") == rec.result.root_pid);
        CHECK(processes[0].at("leaked_bytes") == kLeakBytes);
    }

    SUBCASE("--temporary-threshold 3: peak_build's blocks too, 3 heap events in between each") {
        static_assert(RPT_PEAK_N == 4, "3 events between each of peak_build's allocations and its free");
        RunResult r = report(artifact, {"--format", "json", "--temporary-threshold", "3"});
        REQUIRE_MESSAGE(r.status == 0, r.describe());
        const json::value v = json::parse(r.out);
        CHECK(v.at("temporary").at("blocks") == RPT_TEMP_N + RPT_PEAK_N);
        CHECK(v.at("temporary").at("bytes") == RPT_TEMP_N * RPT_TEMP_SIZE + RPT_PEAK_N * RPT_PEAK_SIZE);
    }

    SUBCASE("text: the sections show the sites and their stacks") {
        RunResult r = report(artifact, {"--limit", "1"});
        REQUIRE_MESSAGE(r.status == 0, r.describe());
        const std::string& t = r.out;
        CHECK_MESSAGE(t.find("peak live heap: 84437 B (82.5 KiB) in 7 blocks, at ") != std::string::npos, t);
        // The recording has its timeline: leaks are what each process left live at its exit.
        CHECK_MESSAGE(t.find("leaked (live at their process's exit): 36033 B (35.2 KiB) in 3 blocks\n") != std::string::npos, t);
        // Each site names the process it allocated in, with its command line (cut at 60 characters).
        const std::string cmd = fixture("report_known");
        const std::string in = "      in process: " + std::to_string(rec.result.root_pid) + " (" +
                               (cmd.size() > 60 ? cmd.substr(0, 60) + "..." : cmd) + ")\n";
        CHECK_MESSAGE(t.find("== leaks (live at their process's exit, or at the end) ==\n  #1 36033 B (35.2 KiB) in 3 blocks\n" +
                             in + "      leak_inner  ") != std::string::npos,
                      t);
        CHECK_MESSAGE(t.find("== sites at the peak ==\n  #1 48404 B (47.3 KiB) in 4 blocks\n" + in + "      peak_build  ") !=
                          std::string::npos,
                      t);
        CHECK_MESSAGE(t.find("  and 36033 B (35.2 KiB) more from 1 other place (3 blocks)\n") != std::string::npos, t);
        CHECK(t.find("\033[") == std::string::npos);  // no colour off a terminal
    }

    SUBCASE("folded: one line per stack, root first, for each cost") {
        RunResult r = report(artifact, {"--format", "folded", "--cost", "leaked"});
        REQUIRE_MESSAGE(r.status == 0, r.describe());
        // The start-up frames under main are folded (docs/REPORT.md, "Folding").
        CHECK_MESSAGE(r.out == "main;leak_outer;leak_inner 36033\n", r.out);
        r = report(artifact, {"--format", "folded", "--cost", "allocations"});
        CHECK_MESSAGE(r.out == "main;leak_outer;leak_inner 3\nmain;peak_build 4\nmain;temp_loop 10\n", r.out);
    }

    SUBCASE("--fail-if exits 3 with one line") {
        RunResult r = report(artifact, {"--format", "json", "-o", rec.dir / "r.json", "--fail-if", "leaked>0"});
        CHECK_MESSAGE(r.status == 3, r.describe());
        CHECK(r.err == "memtrack: report: fail-if: leaked>0 holds: leaked = 36033 B (35.2 KiB)\n");
        r = report(artifact, {"--format", "json", "-o", rec.dir / "r.json", "--fail-if", "leaked>36033"});
        CHECK_MESSAGE(r.status == 0, r.describe());
    }

    SUBCASE("pprof, read back by go tool pprof") {
        const std::string profile = rec.dir / "heap.pb.gz";
        write_report(artifact, "pprof", profile);
        const std::string go = optional_program("go", "golang-go", "pprof not read back");
        if (go.empty()) return;
        RunResult raw = run({go, "tool", "pprof", "-raw", "-symbolize=none", profile}, std::chrono::seconds(300));
        REQUIRE_MESSAGE(raw.status == 0, raw.describe());
        CHECK_MESSAGE(raw.out.find("alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes") !=
                          std::string::npos,
                      raw.out);
        // Samples: objects and bytes allocated, then live at exit.
        CHECK_MESSAGE(std::regex_search(raw.out, std::regex("\n +3 +36033 +3 +36033: ")), raw.out);
        CHECK_MESSAGE(std::regex_search(raw.out, std::regex("\n +4 +48404 +0 +0: ")), raw.out);
        CHECK_MESSAGE(std::regex_search(raw.out, std::regex("\n +10 +122030 +0 +0: ")), raw.out);
        CHECK_MESSAGE(std::regex_search(raw.out, std::regex("M=[0-9]+ leak_inner [^ ]*report_known\\.c:[0-9]+")), raw.out);

        RunResult top = run({go, "tool", "pprof", "-top", "-sample_index=inuse_space", "-symbolize=none", profile},
                            std::chrono::seconds(300));
        REQUIRE_MESSAGE(top.status == 0, top.describe());
        CHECK_MESSAGE(std::regex_search(top.out, std::regex("35\\.19kB +100% +100% +35\\.19kB +100% +leak_inner")),
                      top.out);
    }

    SUBCASE("html, rendered by headless Chromium: not blank, shows the leak site") {
        const std::string page = rec.dir / "report.html";
        write_report(artifact, "html", page);
        const std::string chromium = optional_program("chromium", "chromium", "html not rendered");
        if (chromium.empty()) return;
        TempDir profile;
        const std::vector<std::string> base{chromium, "--headless", "--no-sandbox", "--disable-gpu",
                                            "--disable-background-networking", "--disable-component-update",
                                            "--disable-sync", "--no-first-run", "--user-data-dir=" + profile.path(),
                                            "--window-size=1200,900"};
        std::vector<std::string> dump = base;
        dump.insert(dump.end(), {"--dump-dom", "file://" + page});
        RunResult dom = run(dump, std::chrono::seconds(300));
        REQUIRE_MESSAGE(dom.status == 0, dom.describe());
        CHECK_MESSAGE(dom.out.find("data-rendered=\"yes\"") != std::string::npos, "the page's script did not finish");
        // The flamegraph drew the leak site, and the sites table names it with its file and line,
        // 3 calls, its process.
        CHECK(std::regex_search(dom.out, std::regex("class=\"fg\"[^>]*>leak_inner</div>")));
        CHECK_MESSAGE(std::regex_search(dom.out, std::regex("<td>35\\.2 KiB</td><td>42\\.67 %</td><td>3</td><td>35\\.2 KiB</td><td>" +
                                                            std::to_string(rec.result.root_pid) +
                                                            "</td><td class=\"name\" title=\"[^\"]*\">leak_inner</td>"
                                                            "<td class=\"where\">[^<]*report_known\\.c:[0-9]+</td>")),
                      dom.out);
        // RSS beside the heap, process starts marked (the tracked command's).
        CHECK(dom.out.find("class=\"rss\"") != std::string::npos);
        CHECK(dom.out.find("class=\"pstart\"") != std::string::npos);
        CHECK(dom.out.find("class=\"pend\"") != std::string::npos);
        CHECK(dom.out.find("class=\"peak\"") != std::string::npos);

        std::vector<std::string> shot = base;
        const std::string png = rec.dir / "report.png";
        shot.insert(shot.end(), {"--screenshot=" + png, "file://" + page});
        RunResult s = run(shot, std::chrono::seconds(300));
        REQUIRE_MESSAGE(s.status == 0, s.describe());
        // A blank 1200x900 page compresses to a few KiB; this one has a flamegraph, a chart and text.
        CHECK_MESSAGE(file_size(png) > 30'000, "screenshot of ", file_size(png), " bytes");
    }

    SUBCASE("html in headless Chromium: a click zooms the flamegraph, a search highlights and sums the matches") {
        const std::string page = rec.dir / "zoom.html";
        write_report(artifact, "html", page);
        const std::string chromium = optional_program("chromium", "chromium", "zoom and search not exercised");
        if (chromium.empty()) return;
        DevTools browser(chromium, "file://" + page);
        browser.wait_for("document.readyState === 'complete' && document.body.getAttribute('data-rendered') === 'yes'");
        const double width = browser.eval("document.getElementById('flame').clientWidth").to_number<double>();
        REQUIRE(width > 500);
        // The peak's flamegraph (the page's first): main holds leak_outer (36033 B) and
        // peak_build (48404 B) of the 84437 B at the peak.
        const double leak_share = double(kLeakBytes) / double(kLeakBytes + kPeakSiteBytes);
        std::vector<FlameBox> before = shown_frames(browser);
        const FlameBox* outer = flame_box(before, "leak_outer");
        REQUIRE(outer);
        CHECK(outer->width == doctest::Approx(width * leak_share).epsilon(1e-6));
        REQUIRE(flame_box(before, "peak_build"));
        CHECK(!outer->dim);

        // A click on leak_outer: it and its callee take the whole width, its sibling is gone,
        // the frames above it stay as dimmed full-width bars.
        click_frame(browser, "leak_outer");
        std::vector<FlameBox> zoomed = shown_frames(browser);
        std::vector<std::string> lit;
        for (const FlameBox& f : zoomed) {
            CAPTURE(f.name);
            CHECK(f.left == 0);
            CHECK(f.width == doctest::Approx(width));
            if (!f.dim) lit.push_back(f.name);
        }
        CHECK(lit == std::vector<std::string>{"leak_outer", "leak_inner"});
        CHECK(!flame_box(zoomed, "peak_build"));
        CHECK(zoomed.size() == before.size() - 1);  // all of before but peak_build, which is a leaf
        REQUIRE(flame_box(zoomed, "main"));
        CHECK(flame_box(zoomed, "main")->dim);

        // "reset zoom" brings the whole graph back.
        browser.click_element("document.getElementById('reset')");
        CHECK(shown_frames(browser).size() == before.size());

        // A search: the frames it matches are highlighted, and their share of the peak shown.
        browser.click_element("document.getElementById('search')");
        browser.type("leak_");
        std::vector<std::string> matched;
        for (const FlameBox& f : shown_frames(browser))
            if (f.match) matched.push_back(f.name);
        CHECK(matched == std::vector<std::string>{"leak_outer", "leak_inner"});
        CHECK(browser.eval("document.getElementById('status').textContent") == "matched 35.2 KiB (42.67 %)");
    }
}

// A real C++ program's one-time runtime block (docs/REPORT.md, "Runtime-owned blocks"): the
// cxx_ops fixture frees everything it makes, and libstdc++ makes its emergency exception pool at
// start-up (72704 bytes in Debian 12's libstdc++.so.6.0.30, GCC 12), which lives until exit.
// The report must count it apart from the leaks, by its rule, and say so beside the leak total.
TEST_CASE("report: libstdc++'s emergency pool of a real C++ program is the runtime's, not a leak") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    const TrackResult rec = track(dir, {fixture("cxx_ops"), "1"});
    REQUIRE_MESSAGE(rec.run.status == 0, rec.run.describe());
    RunResult r = run({memtrack_bin(), "report", rec.artifact, "--format", "json"}, std::chrono::seconds(120));
    REQUIRE_MESSAGE(r.status == 0, r.describe());
    const json::value v = json::parse(r.out);
    CHECK(v.at("leaks").at("bytes") == 0);
    CHECK(v.at("leaks").at("blocks") == 0);
    const json::value& not_leaks = v.at("not_leaks");
    CHECK(not_leaks.at("runtime_bytes") == 72704);
    CHECK(not_leaks.at("runtime_blocks") == 1);
    CHECK(not_leaks.at("suppressed_blocks") == 0);
    const json::array& sites = not_leaks.at("sites").as_array();
    REQUIRE(sites.size() == 1);
    CHECK(sites[0].at("rule") == "libstdc++ emergency exception pool");
    CHECK(sites[0].at("owner") == "runtime");
    CHECK(sites[0].at("bytes") == 72704);
    r = run({memtrack_bin(), "report", rec.artifact}, std::chrono::seconds(120));
    REQUIRE_MESSAGE(r.status == 0, r.describe());
    CHECK_MESSAGE(r.out.find("leaked (live at their process's exit): 0 B in 0 blocks; not counted: 72704 B (71.0 KiB) "
                             "in 1 block the runtimes keep (below)\n") != std::string::npos,
                  r.out);
    CHECK_MESSAGE(r.out.find("  #1 72704 B (71.0 KiB) in 1 block: libstdc++ emergency exception pool\n") != std::string::npos,
                  r.out);
}
