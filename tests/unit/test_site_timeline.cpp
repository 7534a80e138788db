// The html page's data (report/SiteTimeline.hpp, HtmlFormat.cpp): per site and process, per
// time bucket, summing to the sites' own figures; buckets merging as time runs on.
#include <doctest/doctest.h>

#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <boost/json/parse.hpp>

#include "HtmlRecording.hpp"
#include "ReportScenario.hpp"
#include "report/Diff.hpp"
#include "report/FrameNames.hpp"
#include "report/Output.hpp"
#include "report/SiteTimeline.hpp"

using namespace memtrack;
using namespace memtrack::report;
using namespace memtrack::unittest;

namespace {

const Site& site_named(const Analysis& a, const std::string& function) {
    for (const Site& s : a.sites)
        if (s.frames && !s.frames->empty() && s.frames->front()->function == function) return s;
    FAIL("no site " << function);
    throw 0;
}

const SiteSeries& series_of(const Analysis& a, const std::string& function) {
    const Site& s = site_named(a, function);
    for (const SiteSeries& x : a.site_timeline.series)
        if (&a.sites.at(x.site) == &s) return x;
    FAIL("no series of " << function);
    throw 0;
}

uint32_t bucket_at(const Analysis& a, uint64_t t) { return uint32_t(t / a.site_timeline.bucket_ns); }

// The page's embedded data.
boost::json::object page_data(const std::string& html) {
    const std::string open = "id=\"memtrack-data\">";
    const size_t from = html.find(open);
    REQUIRE(from != std::string::npos);
    const size_t to = html.find("</script>", from);
    return boost::json::parse(html.substr(from + open.size(), to - from - open.size())).as_object();
}

// A list entry's stack ("s": frame ids root first) as "a;b;c", by the frames' names.
std::string stack_of(const boost::json::object& series, const boost::json::value& entry) {
    std::string out;
    for (const auto& id : entry.at("s").as_array()) {
        if (!out.empty()) out += ';';
        out += series.at("frames").as_array().at(size_t(id.as_int64())).as_array().at(0).as_string();
    }
    return out;
}

}  // namespace

TEST_CASE("site timeline: per process and bucket, summing to every site's figures") {
    StackTable stacks;
    const Analysis a = html_recording(stacks);
    REQUIRE(a.peak_bytes == 26384);
    CHECK(a.peak_time_ns == html_ms(500));
    // 900 ms in at most 128 buckets: 1 us doubled 13 times.
    CHECK(a.site_timeline.bucket_ns == 8'192'000);
    CHECK(a.site_timeline.buckets == bucket_at(a, html_ms(900)) + 1);
    REQUIRE(a.site_timeline.series.size() == 4);
    for (const Site& s : a.sites) {
        SiteBucket sum;
        uint64_t peak = 0;
        for (const SiteSeries& x : a.site_timeline.series) {
            if (&a.sites.at(x.site) != &s) continue;
            peak += x.peak_bytes;
            for (const SiteBucket& b : x.buckets) merge_into(sum, b);
        }
        CAPTURE(s.frames->front()->function);
        CHECK(sum.calls == s.calls);
        CHECK(sum.bytes == s.bytes);
        CHECK(sum.temporary_calls == s.temporary_calls);
        CHECK(sum.temporary_bytes == s.temporary_bytes);
        CHECK(sum.leaked_bytes == s.live_bytes);
        CHECK(sum.leaked_blocks == s.live_blocks);
        CHECK(peak == s.peak_bytes);
    }
    // early_build: made in 0..90 ms, all freed at 150 ms.
    const SiteSeries& early = series_of(a, "early_build");
    CHECK(early.pid == 100);
    CHECK(early.peak_bytes == 0);
    REQUIRE(early.buckets.size() == 10 + 1);  // 10 ms apart: one bucket each, then the frees'
    CHECK(early.buckets.front().bucket == 0);
    CHECK(early.buckets.back().bucket == bucket_at(a, html_ms(150)));
    CHECK(early.buckets.back().released_bytes == 10000);
    CHECK(early.buckets.back().calls == 0);
    // late_build: leaked at alpha's exit (900 ms), told in the buckets its blocks were made in.
    const SiteSeries& late = series_of(a, "late_build");
    CHECK(late.peak_bytes == 10000);
    uint64_t leaked_early = 0;
    for (const SiteBucket& b : late.buckets)
        if (b.bucket <= bucket_at(a, html_ms(295))) leaked_early += b.leaked_bytes;
    CHECK(leaked_early == 10000);
    CHECK(late.buckets.back().bucket == bucket_at(a, html_ms(900)));
    CHECK(late.buckets.back().released_bytes == 10000);
    // temp_loop: 50 temporaries; beta_cache: live at the end, in process 200.
    CHECK(series_of(a, "temp_loop").peak_bytes == 0);
    const SiteSeries& beta = series_of(a, "beta_cache");
    CHECK(beta.pid == 200);
    CHECK(beta.peak_bytes == 16384);
    REQUIRE(beta.buckets.size() == 1);
    CHECK(beta.buckets[0].leaked_bytes == 16384);
    CHECK(beta.buckets[0].released_bytes == 0);
}

TEST_CASE("site timeline: a long gap merges buckets, keeping every sum") {
    SiteTimeline t;
    t.allocated(0, 1, 0x10, 100, 0);
    t.allocated(0, 1, 0x20, 50, 300'000);  // past 128 us: the width doubles twice
    t.released(0, 1, 0x10, 100, 400'000, SiteTimeline::Release::Temporary);
    t.allocated(1, 2, 0x10, 7, 1'000'000'000'000);  // 1000 s later
    const SiteTimelineData d = std::move(t).finish();
    // 1e12 ns in 128 buckets: 1 us doubled 23 times, bucket 119.
    CHECK(d.bucket_ns == uint64_t(1000) << 23);
    CHECK(d.buckets == 1'000'000'000'000 / d.bucket_ns + 1);
    REQUIRE(d.series.size() == 2);
    REQUIRE(d.series[0].buckets.size() == 1);  // all of 0..400 us in bucket 0
    const SiteBucket& b = d.series[0].buckets[0];
    CHECK(b.calls == 2);
    CHECK(b.bytes == 150);
    CHECK(b.released_bytes == 100);
    CHECK(b.temporary_calls == 1);
    CHECK(b.leaked_bytes == 50);  // still live at the end
    CHECK(d.series[1].buckets.at(0).bucket == d.buckets - 1);
    CHECK(d.series[1].pid == 2);
}

TEST_CASE("html: the page embeds the series, its frames with where they are, and the processes") {
    StackTable stacks;
    const Analysis a = html_recording(stacks);
    const std::string html = html_report(a, {});
    CHECK(html.find("<script src") == std::string::npos);
    CHECK(html.find("<link") == std::string::npos);
    CHECK(html.find("https://") == std::string::npos);
    CHECK(html.find("\"series\":{\"bucket_ns\":8192000,\"buckets\":110,\"frames\":[[\"main\",\"app.c:5\"],"
                    "[\"build\",\"app.c:20\"],[\"early_build\",\"app.c:31\"],") != std::string::npos);
    // beta_cache: 4096 B x 4 at 500 ms (bucket 61), live at the peak, leaked at the end.
    CHECK(html.find("{\"s\":[5,6],\"pid\":200,\"p\":16384,\"c\":[61,4,16384,0,0,0,16384,4]}") != std::string::npos);
    CHECK(html.find("{\"pid\":100,\"start_ns\":0,\"end_ns\":900000000,\"command\":\"alpha --run\",\"status\":\"exit 0\"}") !=
          std::string::npos);
}

TEST_CASE("html: the flamegraph names frames as text and folded do (folding, --hide-frames, elided templates)") {
    StackTable stacks;
    Analysis a = html_recording_after(stacks);
    FoldOptions fold;
    fold.hide = std::regex("^early_build$");
    FrameFolder folder(fold);
    fold_sites(a, folder, false);
    const boost::json::object data = page_data(html_report(a, {}));
    const boost::json::object& series = data.at("series").as_object();
    std::set<std::string> page;
    for (const auto& entry : series.at("list").as_array()) page.insert(stack_of(series, entry));
    CHECK(page == std::set<std::string>{"main;build", "main;build;late_build", "main;std::vector<\u2026>::push_back(int const&)"});
    // The same stacks as folded's, frame for frame.
    std::set<std::string> folded;
    std::istringstream lines(folded_report(a, OutputOptions{.cost = Cost::Allocated}));
    for (std::string line; std::getline(lines, line);) folded.insert(line.substr(0, line.rfind(' ')));
    CHECK(page == folded);
    // Where each frame is: the shown frame's file:line.
    CHECK(series.at("frames").as_array().at(0) == boost::json::array{"main", "app.c:5"});
}

TEST_CASE("html --diff: every matched stack with both recordings' amounts") {
    const HtmlDiffPair pair;
    const Diff d = diff(pair.before, pair.after);
    const boost::json::object data = page_data(diff_html(d, OutputOptions{.title = "after", .base_title = "before"}));
    CHECK(data.at("title") == "after");
    const boost::json::object& page = data.at("diff").as_object();
    CHECK(page.at("base_title") == "before");
    // Totals: peak, leaked, allocated, allocations.
    // Leaked: text's total, alpha's leak at its exit (beta's blocks live at the end apart).
    CHECK(page.at("base") == boost::json::array{26384, 10000, 39584, 84});
    CHECK(page.at("now") == boost::json::array{39000, 39000, 49000, 48});
    CHECK(page.at("changed_sites") == 4);
    // One entry per stack of either recording, unchanged ones too (early_build), by folded name.
    std::map<std::string, std::pair<boost::json::value, boost::json::value>> rows;
    for (const auto& entry : page.at("list").as_array())
        rows[stack_of(page, entry)] = {entry.at("b"), entry.at("n")};
    using P = std::pair<boost::json::value, boost::json::value>;
    CHECK(rows.size() == 5);
    CHECK(rows["main;build;early_build"] == P{boost::json::array{0, 0, 10000, 10}, boost::json::array{0, 0, 10000, 10}});
    CHECK(rows["main;build;late_build"] == P{boost::json::array{10000, 10000, 10000, 20}, boost::json::array{15000, 15000, 15000, 30}});
    CHECK(rows["main;temp_loop"] == P{boost::json::array{0, 0, 3200, 50}, boost::json::array{0, 0, 0, 0}});
    CHECK(rows["beta_main;beta_cache"] == P{boost::json::array{16384, 16384, 16384, 4}, boost::json::array{0, 0, 0, 0}});
    CHECK(rows["main;std::vector<\u2026>::push_back(int const&)"] ==
          P{boost::json::array{0, 0, 0, 0}, boost::json::array{24000, 24000, 24000, 8}});
}
