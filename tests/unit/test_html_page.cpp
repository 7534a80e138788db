// The html report as a person uses it, in Debian's headless Chromium driven over the DevTools
// protocol (tests/root/DevTools.hpp): the page of HtmlRecording.hpp's recording (no root, no
// BPF) is loaded, hovered, a time range dragged on its chart, its flamegraph zoomed, searched,
// inverted, its views and processes switched, each time checking what it then shows.
//
// Its own executable (suite unit): without chromium it exits 77 (meson's SKIP), unless
// MEMTRACK_REQUIRE_BPF=1 (CI), which makes that a failure; scripts/deps.sh installs chromium.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "../root/DevTools.hpp"
#include "../root/ReportPage.hpp"
#include "HtmlRecording.hpp"
#include "report/Diff.hpp"
#include "report/FrameNames.hpp"
#include "report/Output.hpp"

using namespace memtrack;
using namespace memtrack::report;
using namespace memtrack::unittest;
using memtrack::roottest::DevTools;
using memtrack::roottest::flame_box;
using memtrack::roottest::flame_box_expr;
using memtrack::roottest::flame_boxes;
using memtrack::roottest::FlameBox;
using memtrack::testsupport::TempDir;

namespace {

namespace json = boost::json;

std::string chromium_path() {
    const char* path = std::getenv("PATH");
    std::stringstream dirs(path ? path : "/usr/bin:/bin");
    for (std::string d; std::getline(dirs, d, ':');)
        if (const std::string c = d + "/chromium"; ::access(c.c_str(), X_OK) == 0) return c;
    return {};
}

std::string text(DevTools& b, const std::string& id) {
    return std::string(b.eval("document.getElementById('" + id + "').textContent").as_string());
}

std::vector<std::string> names(const std::vector<FlameBox>& all) {
    std::vector<std::string> out;
    for (const FlameBox& b : all) out.push_back(b.name);
    return out;
}
bool has(const std::vector<FlameBox>& all, const std::string& name) { return flame_box(all, name) != nullptr; }

// A table's body cells, row by row.
std::vector<std::vector<std::string>> rows(DevTools& b, const std::string& id) {
    const json::value v = b.eval("Array.from(document.querySelectorAll('#" + id +
                                 " tbody tr')).map((r) => Array.from(r.cells).map((c) => c.textContent))");
    std::vector<std::vector<std::string>> out;
    for (const json::value& r : v.as_array()) {
        out.emplace_back();
        for (const json::value& c : r.as_array()) out.back().emplace_back(c.as_string());
    }
    return out;
}

// The viewport x of time `t_ns` on the heap chart, and its middle's y (after scrolling it into view).
std::pair<double, double> chart_point(DevTools& b, uint64_t t_ns) {
    const json::value r = b.eval(
        "(() => { const s = document.getElementById('chart'); s.scrollIntoView({block: 'center'}); "
        "const r = s.getBoundingClientRect(); const tmax = Number(s.getAttribute('data-tmax')); "
        "return [r.left + (60 + 930 * " + std::to_string(t_ns) + " / tmax) * r.width / 1000, r.top + r.height / 2]; })()");
    return {r.at(0).to_number<double>(), r.at(1).to_number<double>()};
}

}  // namespace

TEST_CASE("html page in headless Chromium: hover, a dragged range, views, inverted, zoom, search, processes") {
    StackTable stacks;
    const Analysis a = html_recording(stacks);
    TempDir dir;
    const std::string page = dir / "report.html";
    std::ofstream(page) << html_report(a, OutputOptions{.title = "two processes"});
    DevTools b(chromium_path(), "file://" + page);
    b.wait_for("document.readyState === 'complete' && document.body.getAttribute('data-rendered') === 'yes'");
    const double width = b.eval("document.getElementById('flame').clientWidth").to_number<double>();
    REQUIRE(width > 500);

    // Loaded: live at the peak (500 ms), late_build's 10000 B and beta_cache's 16384 B.
    std::vector<FlameBox> peak = flame_boxes(b);
    REQUIRE(has(peak, "beta_cache"));
    REQUIRE(has(peak, "late_build"));
    CHECK_FALSE(has(peak, "early_build"));
    CHECK_FALSE(has(peak, "temp_loop"));
    CHECK(flame_box(peak, "beta_cache")->width == doctest::Approx(width * 16384 / 26384).epsilon(1e-6));
    CHECK(flame_box(peak, "all")->width == doctest::Approx(width));
    CHECK(text(b, "scope") == "all processes, the whole recording: live at the peak, 0.500 s");
    // The tables: the sites ranked, with where they are and their calls.
    auto sites = rows(b, "sites");
    REQUIRE(sites.size() == 2);
    CHECK(sites[0] == std::vector<std::string>{"1", "16.0 KiB", "62.10 %", "4", "16.0 KiB", "200", "beta_cache", "beta.c:9"});
    CHECK(sites[1] == std::vector<std::string>{"2", "9.8 KiB", "37.90 %", "20", "9.8 KiB", "100", "late_build", "app.c:42"});
    auto totals = rows(b, "totals");
    CHECK(totals[0] == std::vector<std::string>{"live at the peak", "25.8 KiB", ""});
    CHECK(rows(b, "processes").size() == 2);
    CHECK(b.eval("document.querySelectorAll('pre').length") == 0);

    // A tooltip: the function, where it is, its share, its calls.
    {
        const auto [x, y] = b.centre(flame_box_expr("late_build"));
        b.move(x, y);
        CHECK(b.eval("getComputedStyle(document.getElementById('tip')).display") == "block");
        CHECK(text(b, "tip") == "late_buildat app.c:42peak: 9.8 KiB (37.90 % of 25.8 KiB)"
                                "calls: 20, allocated 9.8 KiB in the range");
    }

    // Hover on the chart: the time and the heap and RSS there.
    {
        const auto [x, y] = chart_point(b, html_ms(120));
        b.move(x, y);
        const std::string readout = text(b, "readout");
        CHECK_MESSAGE(readout.rfind("0.1", 0) == 0, readout);
        CHECK_MESSAGE(readout.find(": heap 9.8 KiB, RSS 3.0 MiB") != std::string::npos, readout);
        const auto [x2, y2] = chart_point(b, html_ms(170));
        b.move(x2, y2);
        CHECK_MESSAGE(text(b, "readout").find(": heap 0 B, RSS 3.0 MiB") != std::string::npos, text(b, "readout"));
    }

    // Drag 5..140 ms: the range's live heap was early_build's alone; allocated there: early_build.
    {
        const auto [x0, y] = chart_point(b, html_ms(5));
        const auto [x1, y1] = chart_point(b, html_ms(140));
        b.drag(x0, y, x1, y1);
        CHECK_MESSAGE(text(b, "range").rfind("range 0.00", 0) == 0, text(b, "range"));
        std::vector<FlameBox> ranged = flame_boxes(b);
        CHECK(names(ranged) == std::vector<std::string>{"all", "main", "build", "early_build"});
        CHECK_MESSAGE(text(b, "scope").find("all processes, 0.00") == 0, text(b, "scope"));
        CHECK_MESSAGE(text(b, "scope").find("end of the range's fullest bucket") != std::string::npos, text(b, "scope"));
        sites = rows(b, "sites");
        REQUIRE(sites.size() == 1);
        CHECK(sites[0][1] == "9.8 KiB");
        CHECK(sites[0][3] == "10");
        b.click_element("document.querySelector('button[data-view=allocations]')");
        CHECK(names(flame_boxes(b)) == std::vector<std::string>{"all", "main", "build", "early_build"});
        CHECK(rows(b, "totals")[2] == std::vector<std::string>{"allocated", "9.8 KiB", "10"});
        // Back to the whole recording: 84 allocations, temp_loop's 50 the most.
        b.click_element("document.getElementById('clear-range')");
        CHECK(text(b, "range") == "whole recording");
        sites = rows(b, "sites");
        REQUIRE(sites.size() == 4);
        CHECK(sites[0][1] == "50 calls");
        CHECK(sites[0][6] == "temp_loop");
        CHECK(rows(b, "totals")[2] == std::vector<std::string>{"allocated", "38.7 KiB", "84"});
    }

    // The temporary and leaked views.
    b.click_element("document.querySelector('button[data-view=temporary]')");
    // temp_loop's 50, and early_build's last blocks (as the Analyzer's rule counts them: what
    // the page shows is its figures, summed).
    uint64_t early_temporary = 0;
    for (const Site& s : a.sites)
        if (s.frames->front()->function == "early_build") early_temporary = s.temporary_calls;
    REQUIRE(early_temporary > 0);
    CHECK(names(flame_boxes(b)) == std::vector<std::string>{"all", "main", "temp_loop", "build", "early_build"});
    CHECK(rows(b, "sites").at(0).at(1) == "50 calls");
    CHECK(rows(b, "sites").at(1).at(1) == std::to_string(early_temporary) + " calls");
    CHECK(rows(b, "totals")[3][2] == std::to_string(a.temporary_calls));
    CHECK(a.temporary_calls == 50 + early_temporary);
    b.click_element("document.querySelector('button[data-view=leaked]')");
    std::vector<FlameBox> leaked = flame_boxes(b);
    CHECK(has(leaked, "late_build"));
    CHECK(has(leaked, "beta_cache"));
    CHECK_FALSE(has(leaked, "early_build"));
    CHECK(rows(b, "totals")[1] == std::vector<std::string>{"leaked", "25.8 KiB", "24"});

    // Inverted: the allocating functions right under "all", their callers below.
    b.click_element("document.getElementById('inverted')");
    std::vector<FlameBox> inverted = flame_boxes(b);
    REQUIRE(has(inverted, "late_build"));
    REQUIRE(has(inverted, "main"));
    CHECK(flame_box(inverted, "late_build")->top == flame_box(inverted, "all")->top + 17);
    CHECK(flame_box(inverted, "main")->top == flame_box(inverted, "all")->top + 3 * 17);
    b.click_element("document.getElementById('inverted')");

    // Zoom on build: it takes the whole width; its callers stay above, dimmed; beta is gone.
    b.click_element(flame_box_expr("build"));
    std::vector<FlameBox> zoomed = flame_boxes(b);
    CHECK(flame_box(zoomed, "build")->width == doctest::Approx(width));
    CHECK(flame_box(zoomed, "main")->dim);
    CHECK(flame_box(zoomed, "late_build")->width == doctest::Approx(width));
    CHECK_FALSE(has(zoomed, "beta_cache"));
    b.click_element("document.getElementById('reset')");
    CHECK(has(flame_boxes(b), "beta_cache"));

    // A search: matches highlighted and summed.
    b.click_element("document.getElementById('search')");
    b.type("cache|late");
    std::vector<std::string> lit;
    for (const FlameBox& x : flame_boxes(b))
        if (x.match) lit.push_back(x.name);
    std::sort(lit.begin(), lit.end());
    CHECK(lit == std::vector<std::string>{"beta_cache", "late_build"});
    CHECK(text(b, "status") == "matched 25.8 KiB (100.00 %)");

    // Process 200 alone: beta's site only, in every table.
    b.eval("(() => { const s = document.getElementById('process'); s.value = '200'; "
           "s.dispatchEvent(new Event('change')); })()");
    CHECK(names(flame_boxes(b)) == std::vector<std::string>{"all", "beta_main", "beta_cache"});
    sites = rows(b, "sites");
    REQUIRE(sites.size() == 1);
    CHECK(sites[0][5] == "200");
    CHECK_MESSAGE(text(b, "scope").rfind("process 200, the whole recording", 0) == 0, text(b, "scope"));
    auto fns = rows(b, "functions");
    REQUIRE(fns.size() == 2);
    CHECK(fns[0] == std::vector<std::string>{"beta_cache", "16.0 KiB", "100.00 %", "16.0 KiB", "4"});
    CHECK(fns[1] == std::vector<std::string>{"beta_main", "16.0 KiB", "100.00 %", "0 B", "4"});
}

TEST_CASE("html page of --diff in headless Chromium: the differential flamegraph, its colours, the changes") {
    const HtmlDiffPair pair;
    TempDir dir;
    const std::string page = dir / "diff.html";
    std::ofstream(page) << diff_html(diff(pair.before, pair.after), OutputOptions{.title = "after", .base_title = "before"});
    DevTools b(chromium_path(), "file://" + page);
    b.wait_for("document.readyState === 'complete' && document.body.getAttribute('data-rendered') === 'yes'");
    const double width = b.eval("document.getElementById('flame').clientWidth").to_number<double>();
    REQUIRE(width > 500);
    const std::string vector_shown = "std::vector<\u2026>::push_back(int const&)";  // elided, as text shows it

    CHECK(text(b, "title") == "memtrack report --diff: before -> after");
    // The totals are text's: before's leak is alpha's at its exit, beta's blocks live at the end apart.
    CHECK(text(b, "summary") == "peak 25.8 KiB -> 38.1 KiB (+12.3 KiB (+47.82 %)), leaked 9.8 KiB -> 38.1 KiB "
                                "(+28.3 KiB (+290.00 %)), 84 -> 48 allocations, 4 sites changed");
    // No time with --diff: no chart, no processes.
    CHECK(b.eval("document.getElementById('time').hidden") == true);
    CHECK(b.eval("document.getElementById('process').hidden") == true);

    // Live at the peak, widths by the new recording: push_back's 24000 B and late_build's 15000.
    std::vector<FlameBox> peak = flame_boxes(b);
    CHECK(names(peak) == std::vector<std::string>{"all", "main", vector_shown, "build", "late_build"});
    REQUIRE(has(peak, vector_shown));
    CHECK(flame_box(peak, vector_shown)->width == doctest::Approx(width * 24000 / 39000).epsilon(1e-6));
    CHECK(flame_box(peak, "all")->width == doctest::Approx(width));
    const auto classes = [&](const std::string& name) {
        return std::string(b.eval(flame_box_expr(name) + ".className").as_string());
    };
    CHECK(classes("late_build") == "fg grew");
    CHECK(classes(vector_shown) == "fg grew");
    CHECK(classes("main") == "fg grew");
    CHECK(rows(b, "totals") == std::vector<std::vector<std::string>>{
                                   {"live at the peak", "25.8 KiB", "38.1 KiB", "+12.3 KiB (+47.82 %)"},
                                   {"leaked", "9.8 KiB", "38.1 KiB", "+28.3 KiB (+290.00 %)"},
                                   {"allocated", "38.7 KiB", "47.9 KiB", "+9.2 KiB (+23.79 %)"},
                                   {"allocations", "84 calls", "48 calls", "-36 calls (-42.86 %)"}});
    CHECK(rows(b, "sites") == std::vector<std::vector<std::string>>{
                                  {"1", "0 B", "23.4 KiB", "+23.4 KiB", vector_shown, "vec.cc:12"},
                                  {"2", "16.0 KiB", "0 B", "-16.0 KiB (-100.00 %)", "beta_cache", "beta.c:9"},
                                  {"3", "9.8 KiB", "14.6 KiB", "+4.9 KiB (+50.00 %)", "late_build", "app.c:42"}});
    {
        const auto [x, y] = b.centre(flame_box_expr("late_build"));
        b.move(x, y);
        CHECK(text(b, "tip") == "late_buildat app.c:42peak: 9.8 KiB -> 14.6 KiB (+4.9 KiB (+50.00 %))"
                                "calls: 30, allocated 14.6 KiB in after");
    }

    // Widths by base: beta's site, gone since, drawn and blue; push_back (new) not drawn.
    b.click_element("document.getElementById('width-base')");
    std::vector<FlameBox> by_base = flame_boxes(b);
    CHECK(names(by_base) == std::vector<std::string>{"all", "beta_main", "beta_cache", "main", "build", "late_build"});
    REQUIRE(has(by_base, "beta_cache"));
    CHECK(flame_box(by_base, "beta_cache")->width == doctest::Approx(width * 16384 / 26384).epsilon(1e-6));
    CHECK(classes("beta_cache") == "fg shrank");
    CHECK_MESSAGE(text(b, "scope") == "before -> after: widths by base, red grew, blue shrank", text(b, "scope"));

    // Allocations: temp_loop's 50 calls gone; early_build's 10 the same (grey, in no row).
    b.click_element("document.querySelector('button[data-view=allocations]')");
    CHECK(classes("temp_loop") == "fg shrank");
    CHECK(classes("early_build") == "fg same");
    const auto sites = rows(b, "sites");
    REQUIRE(sites.size() == 4);
    CHECK(sites[0] == std::vector<std::string>{"1", "50 calls", "0 calls", "-50 calls (-100.00 %)", "temp_loop", "app.c:50"});
    CHECK(sites[1] == std::vector<std::string>{"2", "20 calls", "30 calls", "+10 calls (+50.00 %)", "late_build", "app.c:42"});
}

int main(int argc, char** argv) {
    if (chromium_path().empty()) {
        const char* require = std::getenv("MEMTRACK_REQUIRE_BPF");
        std::puts("SKIP: chromium is not installed (apt-get install chromium; scripts/deps.sh does)");
        return require && std::string(require) == "1" ? 1 : 77;
    }
    std::signal(SIGPIPE, SIG_IGN);
    doctest::Context context;
    context.applyCommandLine(argc, argv);
    return context.run();
}
