// memtrack report: the analysis (src/report/Analysis) on a session whose every figure is known
// (ReportScenario.cpp), each output format, the options, and the golden files of
// tests/golden/report/ (MEMTRACK_UPDATE_GOLDEN=1 rewrites them from the current output).
#include <doctest/doctest.h>

#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "ReportScenario.hpp"
#include "TestFiles.hpp"
#include "cli/ReportCommand.hpp"
#include "format/ArtifactReader.hpp"
#include "profile.pb.h"
#include "report/Analysis.hpp"
#include "report/Diff.hpp"
#include "report/FailIf.hpp"
#include "report/FrameNames.hpp"
#include "report/Output.hpp"
#include "report/Timeline.hpp"
#include "report/TrackSummary.hpp"
#include "report/Units.hpp"

using namespace memtrack;
using namespace memtrack::report;
using namespace memtrack::unittest;

namespace {

namespace json = boost::json;

struct Fixture {
    Scenario scenario = report_scenario();
    StackTable stacks;
    Fixture() {
        for (const ScenarioStack& s : scenario.stacks) stacks.add(s.hash, s.frames);
    }
    Analysis analyse(FilterOptions filter = {}, uint64_t threshold = 0) const {
        Analyzer a(stacks, std::move(filter), threshold);
        a.record_site_timeline();  // for the html page
        for (const Event& e : scenario.events) a.add(e);
        return std::move(a).finish();
    }
};

const Site& site(const Analysis& a, uint64_t hash) {
    for (const Site& s : a.sites)
        if (s.hash == hash) return s;
    FAIL("no site with hash " << hash);
    throw 0;
}

std::vector<std::string> functions(const Site& s) {
    std::vector<std::string> out;
    if (s.frames)
        for (const Frame* f : *s.frames) out.push_back(f->function);
    return out;
}

// One event of process 1, thread 1.
Event event(EventKind kind, uint64_t t_ns, uint64_t addr, uint64_t size, uint64_t hash = 0,
            std::optional<uint64_t> old_addr = std::nullopt) {
    return make_event(kind, 1, 1, t_ns, addr, size, hash, old_addr);
}

std::string golden_dir() { return REPORT_GOLDEN_DIR; }

// Writes the scenario's artifact and stacks file into `dir`, named like memtrack names them.
std::string write_scenario(const TempDir& dir, const Scenario& s, const std::string& prefix = "100") {
    const std::string artifact = dir / (prefix + ".MemtrackArtifact.msgpack");
    write_zstd_file(artifact, scenario_artifact_bytes(s));
    write_zstd_file(dir / (prefix + ".MemtrackStacks.msgpack"), scenario_stacks_bytes(s));
    return artifact;
}

Captured run_captured(const TempDir& dir, ReportOptions opt) {
    return capture_output(dir, [&] { return run_report(opt); });
}

std::string gunzip(const std::string& gz) {
    z_stream z{};
    REQUIRE(inflateInit2(&z, 15 + 16) == Z_OK);
    std::string out(1 << 20, '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
    z.avail_in = uInt(gz.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = uInt(out.size());
    REQUIRE(inflate(&z, Z_FINISH) == Z_STREAM_END);
    out.resize(z.total_out);
    inflateEnd(&z);
    return out;
}

}  // namespace

TEST_CASE("report: the scenario's totals are exact") {
    const Fixture f;
    const Analysis a = f.analyse();
    CHECK(a.events == 27);
    CHECK(a.start_ns == kStart);
    CHECK(a.duration_ns == 26'000);
    CHECK(a.kinds[0].count == 12);  // Malloc
    CHECK(a.kinds[0].bytes == 1000 + 1000 + 4096 + 4096 + 64 + 64 + 64 + 500 + 300 + 50 + 2048 + 20000);
    CHECK(a.kinds[1].count == 10);  // Free
    CHECK(a.kinds[2].count == 2);   // Realloc
    CHECK(a.kinds[2].bytes == 384);
    CHECK(a.kinds[3].count == 1);  // Calloc
    CHECK(a.kinds[5].count == 1);  // Mmap
    CHECK(a.kinds[6].count == 1);  // Munmap
    CHECK(a.calls == 14);
    CHECK(a.bytes == 37712);
    CHECK(a.frees == 10);
    CHECK(a.unknown_frees == 1);
    CHECK(a.failed_allocations == 1);
    CHECK(a.replaced_blocks == 0);
    CHECK(a.without_stack == 1);
    CHECK(a.stack_missing == 1);
    CHECK(a.filtered_out == 0);
    CHECK(a.peak_mapped_bytes == 8192);
    CHECK(a.mapped_bytes == 0);
    REQUIRE(a.processes.size() == 2);
    CHECK(a.processes[0].pid == 100);
    CHECK(a.processes[0].events == 25);
    CHECK(a.processes[0].calls == 13);
    CHECK(a.processes[0].bytes == 35664);
    CHECK(a.processes[0].leaked_bytes == 2800);
    CHECK(a.processes[0].leaked_blocks == 4);
    CHECK(a.processes[1].pid == 200);
    CHECK(a.processes[1].events == 2);
    CHECK(a.processes[1].calls == 1);
    CHECK(a.processes[1].bytes == 2048);
    CHECK(a.processes[1].leaked_bytes == 0);
    CHECK(a.processes[1].leaked_blocks == 0);
    // Power-of-two buckets: 64, 128, 256-511 (256, 300, 500), 512-1023 (the two 1000), 2048, 4096, 20000.
    REQUIRE(a.histogram.size() == 7);
    CHECK(a.histogram[0].min == 64);
    CHECK(a.histogram[0].max == 127);
    CHECK(a.histogram[0].calls == 3);
    CHECK(a.histogram[2].min == 256);
    CHECK(a.histogram[2].max == 511);
    CHECK(a.histogram[2].calls == 3);
    CHECK(a.histogram[2].bytes == 1056);
    CHECK(a.histogram[6].min == 16384);
    CHECK(a.histogram[6].calls == 1);
}

TEST_CASE("report: the peak is the live blocks at its moment, by site, even after they change") {
    const Fixture f;
    const Analysis a = f.analyse();
    // At 25 us: the two 1000 B leaks and the 20000 B block (leak site), the 500 B block of the
    // missing stack and the 300 B one without a stack.
    CHECK(a.peak_bytes == 22800);
    CHECK(a.peak_blocks == 5);
    CHECK(a.peak_time_ns == 25'000);
    CHECK(site(a, kHashLeak).peak_bytes == 22000);
    CHECK(site(a, kHashLeak).peak_blocks == 3);
    CHECK(site(a, kHashMissing).peak_bytes == 500);
    CHECK(site(a, 0).peak_bytes == 300);
    // The earlier high (14288 B at 4 us) is not the peak: the buffers are not in it.
    CHECK(site(a, kHashPeak).peak_bytes == 0);
    CHECK(site(a, kHashPeak).peak_blocks == 0);
    CHECK(site(a, kHashChild).peak_bytes == 0);

    const Ranked r = rank(a.sites, Cost::Peak, 10);
    REQUIRE(r.top.size() == 3);
    CHECK(r.top[0]->hash == kHashLeak);
    CHECK(r.top[1]->hash == kHashMissing);
    CHECK(r.top[2]->hash == 0);
    CHECK(r.other_sites == 0);
}

TEST_CASE("report: leaks are the blocks live at the end, with their stacks") {
    const Fixture f;
    const Analysis a = f.analyse();
    CHECK(a.leaked_bytes == 2800);
    CHECK(a.leaked_blocks == 4);
    const Ranked r = rank(a.sites, Cost::Leaked, 2);
    REQUIRE(r.top.size() == 2);
    CHECK(r.top[0]->live_bytes == 2000);
    CHECK(r.top[0]->live_blocks == 2);
    CHECK(functions(*r.top[0]) == std::vector<std::string>{"leak_inner", "leak_outer", "main"});
    CHECK(r.top[1]->hash == kHashMissing);
    CHECK(r.top[1]->frames == nullptr);
    CHECK(r.other_sites == 1);
    CHECK(r.other.bytes == 300);
    CHECK(r.other.blocks == 1);
}

TEST_CASE("report: calls and bytes per site") {
    const Fixture f;
    const Analysis a = f.analyse();
    CHECK(site(a, kHashLeak).calls == 3);
    CHECK(site(a, kHashLeak).bytes == 22000);
    CHECK(site(a, kHashPeak).calls == 3);
    CHECK(site(a, kHashPeak).bytes == 12288);
    CHECK(site(a, kHashScratch).calls == 5);  // the failed malloc is not one
    CHECK(site(a, kHashScratch).bytes == 576);
    CHECK(site(a, kHashChild).calls == 1);
    const Ranked calls = rank(a.sites, Cost::Allocations, 1);
    REQUIRE(calls.top.size() == 1);
    CHECK(calls.top[0]->hash == kHashScratch);
    CHECK(calls.other_sites == 5);
    CHECK(calls.other.blocks == 9);
}

TEST_CASE("report: temporary allocations, by the threshold of heap events in between") {
    // Process 100's stream of heap events (allocations and releases of known blocks): the
    // scratch block freed at t9, the realloc'd one released at t15 by the realloc and its
    // successor freed at t16, and the 20000 B block at t26 are released right after their
    // allocation; so is the child's only block. The two scratch blocks of t10-t13 have one
    // event between their allocation and release; the peak buffers two.
    SUBCASE("threshold 0 (the default): heaptrack's") {
        const Fixture f;
        const Analysis a = f.analyse({}, 0);
        CHECK(a.temporary_calls == 5);
        CHECK(a.temporary_bytes == 64 + 128 + 256 + 20000 + 2048);
        CHECK(site(a, kHashPeak).temporary_calls == 0);
        CHECK(site(a, kHashScratch).temporary_calls == 3);  // a realloc's release of old_addr is one
        CHECK(site(a, kHashScratch).temporary_bytes == 448);
        CHECK(site(a, kHashChild).temporary_calls == 1);
        CHECK(site(a, kHashLeak).temporary_calls == 1);
    }
    SUBCASE("threshold 1") {
        const Fixture f;
        const Analysis a = f.analyse({}, 1);
        CHECK(a.temporary_calls == 7);
        CHECK(a.temporary_bytes == 22624);
        CHECK(site(a, kHashPeak).temporary_calls == 0);
        CHECK(site(a, kHashScratch).temporary_calls == 5);
        CHECK(site(a, kHashScratch).temporary_bytes == 576);
    }
    SUBCASE("threshold 2") {
        const Fixture f;
        const Analysis a = f.analyse({}, 2);
        CHECK(site(a, kHashPeak).temporary_calls == 3);
        CHECK(site(a, kHashPeak).temporary_bytes == 12288);
    }
}

TEST_CASE("report: filters") {
    const Fixture f;
    SUBCASE("--pid") {
        FilterOptions o;
        o.pids = {200};
        const Analysis a = f.analyse(o);
        CHECK(a.events == 2);
        CHECK(a.calls == 1);
        CHECK(a.bytes == 2048);
        CHECK(a.peak_bytes == 2048);
        CHECK(a.leaked_bytes == 0);
        REQUIRE(a.processes.size() == 1);
        CHECK(a.processes[0].pid == 200);
    }
    SUBCASE("--min-size: the blocks left out are not taken for unknown when freed") {
        FilterOptions o;
        o.min_size = 1000;
        const Analysis a = f.analyse(o);
        CHECK(a.calls == 7);
        CHECK(a.bytes == 22000 + 12288 + 2048);
        CHECK(a.filtered_out == 7);
        CHECK(a.unknown_frees == 1);
        CHECK(a.leaked_bytes == 2000);
        CHECK(a.peak_bytes == 22000);
    }
    SUBCASE("--max-size") {
        FilterOptions o;
        o.max_size = 64;
        const Analysis a = f.analyse(o);
        CHECK(a.calls == 3);
        CHECK(a.bytes == 192);
        CHECK(a.peak_bytes == 128);
    }
    SUBCASE("--focus matches a function, file or module anywhere in the stack") {
        FilterOptions o;
        o.focus = std::regex("leak_outer");
        Analysis a = f.analyse(o);
        CHECK(a.calls == 3);
        CHECK(a.sites.size() == 1);
        o.focus = std::regex("libc\\.so");
        a = f.analyse(o);
        CHECK(a.calls == 1);
        CHECK(a.bytes == 2048);
        o.focus = std::regex("buffer\\.h$");
        a = f.analyse(o);
        CHECK(a.calls == 3);
    }
    SUBCASE("--ignore keeps stacks it cannot see") {
        FilterOptions o;
        o.ignore = std::regex("^main$");
        const Analysis a = f.analyse(o);
        CHECK(a.calls == 2);  // the missing stack and the one without a stack
        CHECK(a.bytes == 800);
    }
    SUBCASE("--from/--to") {
        FilterOptions o;
        o.from_ns = 8'000;
        o.to_ns = 16'000;
        const Analysis a = f.analyse(o);
        CHECK(a.events == 9);
        CHECK(a.calls == 5);
        CHECK(a.bytes == 576);
        CHECK(a.unknown_frees == 0);
        CHECK(a.leaked_bytes == 0);
        CHECK(a.peak_bytes == 256);
        CHECK(a.duration_ns == 16'000);
    }
    SUBCASE("--from: frees of blocks made before the window are not unknown") {
        FilterOptions o;
        o.from_ns = 5'000;
        const Analysis a = f.analyse(o);
        CHECK(a.unknown_frees == 1);  // only 0x9999
        CHECK(a.frees == 7);
        CHECK(a.leaked_bytes == 800);  // the leaks of 0 and 1 us are outside
    }
}

TEST_CASE("report: realloc is a free of old_addr and an allocation; missed frees are counted") {
    const StackTable none;
    Analyzer an(none, {}, 1);
    an.add(event(EventKind::Malloc, 0, 0x10, 100));
    an.add(event(EventKind::Realloc, 1, 0x20, 300, 0, 0x10));  // moves
    an.add(event(EventKind::Realloc, 2, 0x20, 50, 0, 0x20));   // shrinks in place
    an.add(event(EventKind::Realloc, 3, 0x30, 70, 0, 0x777));  // of an unknown block
    an.add(event(EventKind::Realloc, 4, 0, 999, 0, 0x30));     // fails: 0x30 stays
    an.add(event(EventKind::Malloc, 5, 0x30, 10));             // 0x30 again: its free was missed
    an.add(event(EventKind::Free, 6, 0, 0));                   // free(NULL)
    const Analysis a = std::move(an).finish();
    CHECK(a.calls == 5);
    CHECK(a.bytes == 530);
    CHECK(a.frees == 3);
    CHECK(a.unknown_frees == 1);
    CHECK(a.failed_allocations == 1);
    CHECK(a.replaced_blocks == 1);
    CHECK(a.leaked_bytes == 60);
    CHECK(a.leaked_blocks == 2);
    CHECK(a.peak_bytes == 300);
    CHECK(a.peak_blocks == 1);
    CHECK(a.peak_time_ns == 1);
    CHECK(a.without_stack == 5);
}

TEST_CASE("report: stacks that differ only in addresses are one site") {
    StackTable stacks;
    auto frame = [](uint64_t ip, const char* function) { return Frame{ip, "/m", "", function, "f.c", 7, false}; };
    stacks.add(1, {frame(0x10, "leaf"), frame(0x20, "main")});
    stacks.add(2, {frame(0x10, "leaf"), frame(0x28, "main")});  // main's call copied (an unrolled loop)
    stacks.add(3, {frame(0x30, ""), frame(0x20, "main")});      // no function: addresses tell apart
    stacks.add(4, {frame(0x38, ""), frame(0x20, "main")});
    Analyzer an(stacks, {}, 1);
    for (uint64_t h : {1, 2, 3, 4, 5, 6}) an.add(event(EventKind::Malloc, h, h * 16, 10 * h, h));  // 5, 6: missing
    const Analysis a = std::move(an).finish();
    REQUIRE(a.sites.size() == 4);
    CHECK(a.sites[0].hash == 1);
    CHECK(a.sites[0].calls == 2);
    CHECK(a.sites[0].bytes == 30);
    CHECK(a.sites[1].hash == 3);
    CHECK(a.sites[1].calls == 1);
    CHECK(a.sites[2].hash == 4);
    CHECK(a.sites[3].hash == 5);
    CHECK(a.sites[3].frames == nullptr);
    CHECK(a.sites[3].calls == 2);
    CHECK(a.sites[3].bytes == 110);
    CHECK(a.stack_missing == 2);
}

TEST_CASE("report: the timeline stays under its cap and keeps the peak") {
    Timeline t;
    for (uint64_t i = 0; i < 1'000'000; ++i) t.add(i * 997, i == 654'321 ? 1'000'000 : i % 1000);
    const auto points = t.points();
    CHECK(points.size() <= Timeline::kMaxPoints);
    CHECK(points.size() > Timeline::kMaxPoints / 2);
    uint64_t max = 0;
    for (const auto& p : points) max = std::max(max, p.bytes);
    CHECK(max == 1'000'000);
    CHECK(points.front().time_ns == 0);
    CHECK(points[1].time_ns == t.bucket_ns());
}

TEST_CASE("report: units") {
    CHECK(human_bytes(1023) == "1023 B");
    CHECK(human_bytes(1024) == "1.0 KiB");
    CHECK(human_bytes(5 * 1024 * 1024 + 512 * 1024) == "5.5 MiB");
    CHECK(parse_quantity("256MiB") == 256.0 * 1024 * 1024);
    CHECK(parse_quantity("1e6") == 1e6);
    CHECK(parse_quantity("4K") == 4096.0);
    CHECK(parse_quantity("12") == 12.0);
    CHECK_FALSE(parse_quantity("12 parsecs"));
    CHECK_FALSE(parse_quantity(""));
    CHECK(parse_duration_ns("1.5s") == 1'500'000'000u);
    CHECK(parse_duration_ns("200ms") == 200'000'000u);
    CHECK(parse_duration_ns("3") == 3'000'000'000u);
    CHECK(parse_duration_ns("30us") == 30'000u);
    CHECK_FALSE(parse_duration_ns("-1s"));
    CHECK_FALSE(parse_duration_ns("soon"));
}

TEST_CASE("report: --fail-if") {
    const Fixture f;
    const Analysis a = f.analyse();
    auto verdict = [&](const std::string& expr, const Analysis* base = nullptr) -> std::string {
        auto c = parse_fail_if(expr);
        REQUIRE_MESSAGE(c.ok(), c.error().message());
        auto v = evaluate(c.value(), metrics(a, base));
        REQUIRE_MESSAGE(v.ok(), v.error().message());
        return v.value().value_or("");
    };
    CHECK(verdict("leaked>0") == "leaked>0 holds: leaked = 2800 B (2.7 KiB)");
    CHECK(verdict("leaked>2800") == "");
    CHECK(verdict("leaked>=2800") == "leaked>=2800 holds: leaked = 2800 B (2.7 KiB)");
    CHECK(verdict("peak>20KiB") == "peak>20KiB holds: peak = 22800 B (22.3 KiB)");
    CHECK(verdict("peak>256MiB") == "");
    CHECK(verdict("calls>1e6") == "");
    CHECK(verdict("calls > 13") == "calls > 13 holds: calls = 14");
    CHECK(verdict("calls==1, leaked_blocks==4") == "leaked_blocks==4 holds: leaked_blocks = 4");

    FilterOptions smaller;
    smaller.max_size = 4096;  // no 20000 B block: peak 14288 B
    const Analysis base = f.analyse(smaller);
    CHECK(base.peak_bytes == 14288);
    CHECK(verdict("peak_delta>5%", &base) == "peak_delta>5% holds: peak_delta = 8512 B (8.3 KiB) (+59.57 % of 14288 B (14.0 KiB))");
    CHECK(verdict("peak_delta>60%", &base) == "");
    CHECK(verdict("peak_delta>8000", &base) == "peak_delta>8000 holds: peak_delta = 8512 B (8.3 KiB)");

    CHECK_FALSE(parse_fail_if("leaked").ok());
    CHECK_FALSE(parse_fail_if("leaked>lots").ok());
    CHECK_FALSE(parse_fail_if("leaked>5%").ok());
    CHECK_FALSE(parse_fail_if(">5").ok());
    auto unknown = evaluate(parse_fail_if("heat>1").value(), metrics(a, nullptr));
    REQUIRE_FALSE(unknown.ok());
    CHECK(unknown.error().message().find("unknown metric 'heat'") != std::string::npos);
    auto no_diff = evaluate(parse_fail_if("peak_delta>1").value(), metrics(a, nullptr));
    CHECK_FALSE(no_diff.ok());
}

TEST_CASE("report: --diff matches sites by function names") {
    const Fixture f;
    FilterOptions smaller;
    smaller.max_size = 4096;
    const Analysis base = f.analyse(smaller);
    const Analysis now = f.analyse();
    const Diff d = diff(base, now);
    CHECK(d.base.peak == 14288);
    CHECK(d.now.peak == 22800);
    // The leak site has the 20000 B block; the peaks of the others differ since BASE's peak is
    // the buffers' (at 4 us) and ARTIFACT's the leak site's (at 25 us).
    REQUIRE(d.rows.size() == 4);
    CHECK(d.rows[1].stack == "main;build_peak;make_buffer");
    CHECK(d.rows[1].base.peak == 12288);
    CHECK(d.rows[1].now.peak == 0);
    CHECK(d.rows[2].stack == "[stack missing]");
    CHECK(d.rows[3].stack == "[no stack]");
    CHECK(d.rows[0].stack == "main;leak_outer;leak_inner");
    CHECK(d.rows[0].base.calls == 2);
    CHECK(d.rows[0].now.calls == 3);
    CHECK(d.rows[0].base.bytes == 2000);
    CHECK(d.rows[0].now.bytes == 22000);
    CHECK(d.rows[0].base.peak == 2000);
    CHECK(d.rows[0].now.peak == 22000);
    OutputOptions o;
    o.cost = Cost::Allocated;
    CHECK(diff_folded(base, now, o) ==
          "[libc.so.6];main;child_work 2048 2048\n"
          "[no stack] 300 300\n"
          "[stack missing] 500 500\n"
          "main;build_peak;make_buffer 12288 12288\n"
          "main;leak_outer;leak_inner 2000 22000\n"
          "main;scratch 576 576\n");
}

TEST_CASE("report: folded stacks, root first, for each cost") {
    const Fixture f;
    const Analysis a = f.analyse();
    OutputOptions o;
    o.cost = Cost::Peak;
    CHECK(folded_report(a, o) == "[no stack] 300\n[stack missing] 500\nmain;leak_outer;leak_inner 22000\n");
    o.cost = Cost::Leaked;
    CHECK(folded_report(a, o) == "[no stack] 300\n[stack missing] 500\nmain;leak_outer;leak_inner 2000\n");
    o.cost = Cost::Allocations;
    CHECK(folded_report(a, o) ==
          "[libc.so.6];main;child_work 1\n[no stack] 1\n[stack missing] 1\nmain;build_peak;make_buffer 3\n"
          "main;leak_outer;leak_inner 3\nmain;scratch 5\n");
    o.cost = Cost::Temporary;
    CHECK(folded_report(a, o) == "[libc.so.6];main;child_work 1\nmain;leak_outer;leak_inner 1\nmain;scratch 3\n");
}

TEST_CASE("report: with --from the header gives the span's own duration") {
    const Fixture f;
    FilterOptions o;
    o.from_ns = 10'000;  // t10 .. t26 (us)
    const Analysis a = f.analyse(o);
    CHECK(a.from_ns == 10'000);
    CHECK(a.duration_ns == 26'000);
    CHECK(span_ns(a) == 16'000);
    CHECK(text_report(a, {}).find("duration: 16.0 us, 17 events (from 10.0 us to 26.0 us after the recording's first event)\n") !=
          std::string::npos);
    CHECK(f.analyse().from_ns == 0);
}

TEST_CASE("report: pprof's first mapping, its main binary, is the program's module") {
    // The first stack's innermost frame is libc's: its module must still not come first.
    StackTable stacks;
    stacks.add(1, {Frame{0x7f00, "/usr/lib/x86_64-linux-gnu/libc.so.6", "", "strdup", "", 0, false},
                   Frame{0x4010, "/opt/app/bin/app", "", "main", "", 0, false}});
    Analyzer an(stacks, {}, 0);
    an.add(event(EventKind::Malloc, kStart, 0x10, 8, 1));
    const Analysis a = std::move(an).finish();
    memtrack::pprof::Profile p;
    REQUIRE(p.ParseFromString(gunzip(pprof_report(a, {}))));
    REQUIRE(p.mapping_size() == 2);
    CHECK(p.strings(int(p.mapping(0).filename())) == "/opt/app/bin/app");
    CHECK(p.mapping(0).id() == 1);
}

TEST_CASE("report: pprof holds the four sample types per site, inlined frames in one location") {
    const Fixture f;
    const Analysis a = f.analyse();
    memtrack::pprof::Profile p;
    REQUIRE(p.ParseFromString(gunzip(pprof_report(a, {}))));
    auto str = [&](int64_t i) { return p.strings(int(i)); };
    REQUIRE(p.sample_type_size() == 4);
    CHECK(str(p.sample_type(0).type()) == "alloc_objects");
    CHECK(str(p.sample_type(1).type()) == "alloc_space");
    CHECK(str(p.sample_type(2).type()) == "inuse_objects");
    CHECK(str(p.sample_type(3).type()) == "inuse_space");
    CHECK(str(p.sample_type(3).unit()) == "bytes");
    REQUIRE(p.sample_size() == 6);
    // Sites in order of first allocation: leak, peak, scratch, missing, no stack, child.
    const std::vector<std::vector<int64_t>> values{
        {3, 22000, 2, 2000}, {3, 12288, 0, 0}, {5, 576, 0, 0}, {1, 500, 1, 500}, {1, 300, 1, 300}, {1, 2048, 0, 0}};
    for (int i = 0; i < 6; ++i) {
        CAPTURE(i);
        REQUIRE(p.sample(i).value_size() == 4);
        for (int k = 0; k < 4; ++k) CHECK(p.sample(i).value(k) == values[size_t(i)][size_t(k)]);
    }
    // build_peak's sample: two locations, the first with make_buffer inlined into build_peak.
    const auto& s = p.sample(1);
    REQUIRE(s.location_id_size() == 2);
    const auto& loc = p.location(int(s.location_id(0) - 1));
    CHECK(loc.address() == 0x402010);
    REQUIRE(loc.line_size() == 2);
    CHECK(str(p.function(int(loc.line(0).function_id() - 1)).name()) == "make_buffer");
    CHECK(loc.line(0).line() == 5);
    CHECK(str(p.function(int(loc.line(1).function_id() - 1)).name()) == "build_peak");
    CHECK(str(p.function(int(loc.line(1).function_id() - 1)).filename()) == "src/app.c");
    const auto& map = p.mapping(int(loc.mapping_id() - 1));
    CHECK(str(map.filename()) == "/opt/app/bin/app");
    CHECK(str(map.build_id()) == "ab12cd34");
    CHECK(map.memory_start() == 0x401010);
    CHECK(map.memory_limit() == 0x404011);
}

TEST_CASE("report: speedscope has a bytes and a count profile, frames root first") {
    const Fixture f;
    const Analysis a = f.analyse();
    OutputOptions o;
    o.title = "scenario";
    const json::value v = json::parse(speedscope_report(a, o));
    CHECK(v.at("$schema") == "https://www.speedscope.app/file-format-schema.json");
    const json::array& profiles = v.at("profiles").as_array();
    REQUIRE(profiles.size() == 4);
    CHECK(profiles[0].at("name") == "peak");
    CHECK(profiles[0].at("unit") == "bytes");
    CHECK(profiles[0].at("endValue") == 22800);
    CHECK(profiles[3].at("name") == "allocations");
    CHECK(profiles[3].at("unit") == "none");
    CHECK(profiles[3].at("endValue") == 14);
    const json::array& frames = v.at("shared").at("frames").as_array();
    const json::array& first = profiles[0].at("samples").as_array()[0].as_array();
    REQUIRE(first.size() == 3);
    CHECK(frames[size_t(first[0].as_int64())].at("name") == "main");
    CHECK(frames[size_t(first[2].as_int64())].at("name") == "leak_inner");
    CHECK(frames[size_t(first[2].as_int64())].at("line") == 10);
    CHECK(profiles[0].at("weights").as_array()[0] == 22000);
}

TEST_CASE("report: the html page loads nothing and stays small whatever the input") {
    SUBCASE("the scenario") {
        const Fixture f;
        const std::string html = html_report(f.analyse(), {});
        CHECK(html.find("<script src") == std::string::npos);
        CHECK(html.find("<link") == std::string::npos);
        CHECK(html.find("https://") == std::string::npos);
        CHECK(html.find("[\"leak_inner\",\"") != std::string::npos);
    }
    SUBCASE("100000 sites, deep stacks") {
        StackTable stacks;
        Analyzer an(stacks, {}, 1);
        an.record_site_timeline();
        for (uint64_t i = 1; i <= 100'000; ++i) {
            std::vector<Frame> frames;
            for (int d = 0; d < 30; ++d)
                frames.push_back(Frame{i, "/m", "", "function_" + std::to_string(i % 997) + "_" + std::to_string(d), "f.c",
                                       uint32_t(d), false});
            stacks.add(i, frames);
            an.add(event(EventKind::Malloc, i * 10, i * 16, 100 + i % 50, i));
        }
        const Analysis a = std::move(an).finish();
        const std::string html = html_report(a, {});
        CHECK(html.size() < 3u * 1024 * 1024);
        CHECK(html.find("[\"[other sites]\",\"\"]") != std::string::npos);
    }
}

TEST_CASE("report: track's summary") {
    const Fixture f;
    const Analysis a = f.analyse();
    CHECK(track_summary(a, "/out/100.MemtrackArtifact.msgpack") ==
          "memtrack: 27 events from 2 processes in 26.0 us\n"
          "memtrack: peak heap 22.3 KiB (22800 B) in 5 blocks at 25.0 us\n"
          "memtrack: leaked 2.7 KiB (2800 B) in 4 blocks\n"
          "memtrack: next: memtrack report /out/100.MemtrackArtifact.msgpack\n");
}

// ---- the command, on files ----

TEST_CASE("report: golden files (tests/golden/report/)") {
    const Scenario s = report_scenario();
    const std::string dir = golden_dir();
    const bool update = std::getenv("MEMTRACK_UPDATE_GOLDEN") != nullptr;
    const std::string artifact = dir + "/100.MemtrackArtifact.msgpack";
    const std::string base = dir + "/base.MemtrackArtifact.msgpack";
    const Scenario b = report_scenario_base();
    if (update) {
        write_zstd_file(artifact, scenario_artifact_bytes(s));
        write_zstd_file(dir + "/100.MemtrackStacks.msgpack", scenario_stacks_bytes(s));
        write_zstd_file(base, scenario_artifact_bytes(b));
        write_zstd_file(dir + "/base.MemtrackStacks.msgpack", scenario_stacks_bytes(b));
    }
    // The committed inputs are the scenarios, event for event.
    for (auto [path, events] : {std::pair{artifact, &s.events}, std::pair{base, &b.events}}) {
        std::vector<Event> read;
        REQUIRE(read_artifact(path, [&](const Event& e) { read.push_back(e); }).ok());
        CHECK(read == *events);
    }

    TempDir tmp;
    struct Golden {
        const char* file;
        std::string format;
        std::string cost = "peak";
        std::string diff;
    };
    for (const Golden& g : {Golden{"expected.txt", "text", "peak", ""}, Golden{"expected.json", "json", "peak", ""},
                            Golden{"expected.folded", "folded", "allocated", ""},
                            Golden{"expected-diff.txt", "text", "peak", base}, Golden{"expected-diff.json", "json", "peak", base},
                            Golden{"expected-diff.folded", "folded", "allocated", base}}) {
        CAPTURE(g.file);
        ReportOptions opt;
        opt.artifact = artifact;
        opt.format = g.format;
        opt.cost = g.cost;
        opt.diff_base = g.diff;
        const Captured c = run_captured(tmp, opt);
        CHECK(c.rc == 0);
        CHECK(c.err == "");
        const std::string path = dir + "/" + g.file;
        if (update) write_file(path, c.out);
        CHECK(c.out == read_file(path));
    }
}

TEST_CASE("report: bad input is a one-line error and no output file") {
    TempDir tmp;
    const std::string artifact = write_scenario(tmp, report_scenario());
    auto one_line = [](const std::string& s) { return !s.empty() && s.find('\n') == s.size() - 1; };
    const std::string out = tmp / "out.json";

    SUBCASE("a missing artifact") {
        ReportOptions o;
        o.artifact = tmp / "missing.MemtrackArtifact.msgpack";
        o.output = out;
        const Captured c = run_captured(tmp, o);
        CHECK(c.rc == 1);
        CHECK(one_line(c.err));
        CHECK(c.err.find("missing.MemtrackArtifact.msgpack") != std::string::npos);
        CHECK_FALSE(std::filesystem::exists(out));
    }
    SUBCASE("a damaged artifact") {
        const std::string bad = tmp / "bad.MemtrackArtifact.msgpack";
        write_file(bad, "not zstd at all");
        ReportOptions o;
        o.artifact = bad;
        o.output = out;
        const Captured c = run_captured(tmp, o);
        CHECK(c.rc == 1);
        CHECK(one_line(c.err));
        CHECK(c.err.rfind("memtrack: report: ", 0) == 0);
        CHECK_FALSE(std::filesystem::exists(out));
    }
    SUBCASE("the function views: one at a time, text or json, a function that names one") {
        auto run = [&](void (*set)(ReportOptions&)) {
            ReportOptions o;
            o.artifact = artifact;
            o.output = out;
            set(o);
            return run_captured(tmp, o);
        };
        Captured c = run([](ReportOptions& o) { o.by = "line"; });
        CHECK(c.rc == 2);
        CHECK(c.err == "memtrack: report: --by 'line': site or function\n");
        c = run([](ReportOptions& o) { o.bottom_up = o.top_down = true; });
        CHECK(c.rc == 2);
        CHECK(c.err == "memtrack: report: --by function, --bottom-up, --top-down and --caller-callee are one view each: choose one\n");
        c = run([](ReportOptions& o) { o.by = "function", o.format = "folded"; });
        CHECK(c.rc == 2);
        c = run([](ReportOptions& o) { o.caller_callee = "leak_"; });
        CHECK(c.rc == 1);
        CHECK(c.err == "memtrack: report: --caller-callee leak_: 2 functions contain it: 'leak_inner', 'leak_outer'\n");
        CHECK_FALSE(std::filesystem::exists(out));
        c = run([](ReportOptions& o) { o.caller_callee = "leak_outer", o.format = "json"; });
        CHECK(c.rc == 0);
        CHECK(read_file(out).find(R"("caller_callee":{"function":"leak_outer","self":{"calls":0,)") != std::string::npos);
        c = run([](ReportOptions& o) { o.suppressions = "/nonexistent.supp"; });
        CHECK(c.rc == 1);
        CHECK(c.err == "memtrack: report: open /nonexistent.supp: No such file or directory: cannot read the suppressions file\n");
        c = run([](ReportOptions& o) { o.hide_frames = "("; });
        CHECK(c.rc == 2);
    }
    SUBCASE("a damaged stacks file beside it") {
        write_file(tmp / "100.MemtrackStacks.msgpack", "garbage");
        ReportOptions o;
        o.artifact = artifact;
        const Captured c = run_captured(tmp, o);
        CHECK(c.rc == 1);
        CHECK(one_line(c.err));
        CHECK(c.err.find("100.MemtrackStacks.msgpack") != std::string::npos);
        CHECK(c.out == "");
    }
    SUBCASE("no stacks file: a warning, and sites without frames") {
        std::filesystem::remove(tmp / "100.MemtrackStacks.msgpack");
        ReportOptions o;
        o.artifact = artifact;
        o.format = "folded";
        const Captured c = run_captured(tmp, o);
        CHECK(c.rc == 0);
        CHECK(one_line(c.err));
        CHECK(c.out == "[no stack] 300\n[stack missing] 22500\n");
    }
    SUBCASE("bad options exit 2") {
        for (auto change : std::vector<std::function<void(ReportOptions&)>>{
                 [](ReportOptions& o) { o.format = "pdf"; },
                 [](ReportOptions& o) {
                     o.format = "pprof";
                     o.output.clear();
                 },
                 [](ReportOptions& o) { o.cost = "weight"; },
                 [](ReportOptions& o) { o.focus = "(unclosed"; },
                 [](ReportOptions& o) { o.min_size = "big"; },
                 [](ReportOptions& o) { o.from = "later"; },
                 [](ReportOptions& o) { o.fail_if = {"heat>1"}; },
                 [](ReportOptions& o) { o.fail_if = {"peak_delta>1%"}; },  // no --diff
             }) {
            ReportOptions o;
            o.artifact = artifact;
            o.output = out;
            change(o);
            const Captured c = run_captured(tmp, o);
            CHECK(c.rc == 2);
            CHECK_MESSAGE(one_line(c.err), c.err);
            CHECK_FALSE(std::filesystem::exists(out));
        }
    }
}

TEST_CASE("report: --fail-if exits 3 with its verdict, the report written all the same") {
    TempDir tmp;
    ReportOptions o;
    o.artifact = write_scenario(tmp, report_scenario());
    o.format = "json";
    o.output = tmp / "r.json";
    o.fail_if = {"leaked>0"};
    Captured c = run_captured(tmp, o);
    CHECK(c.rc == 3);
    CHECK(c.err == "memtrack: report: fail-if: leaked>0 holds: leaked = 2800 B (2.7 KiB)\n");
    CHECK(std::filesystem::exists(o.output));
    o.fail_if = {"leaked>1MiB", "calls>1e6"};
    c = run_captured(tmp, o);
    CHECK(c.rc == 0);
    CHECK(c.err == "");
}

TEST_CASE("report: --python-only keeps a stack's Python frames and folds the native ones between them") {
    auto native = [](uint64_t ip, const char* function) { return Frame{ip, "/usr/bin/python3.11", "", function, "x.c", 1, false}; };
    auto py = [](uint64_t ip, const char* function, uint32_t line) {
        return Frame{ip, kPythonModule, "", function, "/src/app.py", line, false};
    };
    const Frame malloc_ = native(0x10, "malloc"), resize = native(0x20, "PyByteArray_Resize"),
                call = native(0x30, "_PyObject_Call"), json_c = native(0x38, "scanner_call"),
                bytes_main = native(0x40, "Py_BytesMain"), fill = py(1, "Store.fill", 11), main_ = py(2, "main", 40),
                module = py(3, "<module>", 50);
    Scenario s;
    // Two stacks with the same Python frames and different C code between them, and a stack
    // with no Python frame (the interpreter's start-up).
    s.stacks = {{0xa1, 1, {malloc_, resize, fill, call, main_, module, bytes_main}},
                {0xa2, 1, {malloc_, resize, fill, json_c, main_, module, bytes_main}},
                {0xa3, 1, {malloc_, bytes_main}}};
    s.events = {make_event(EventKind::Malloc, 1, 1, kStart, 0x1000, 100, 0xa1),
                make_event(EventKind::Malloc, 1, 1, kStart + 1, 0x2000, 200, 0xa2),
                make_event(EventKind::Malloc, 1, 1, kStart + 2, 0x3000, 7, 0xa3)};
    CHECK(python_only(s.stacks[0].frames) == std::vector<Frame>{fill, main_, module});
    CHECK(python_only(s.stacks[2].frames) == s.stacks[2].frames);

    TempDir dir;
    ReportOptions opt;
    opt.artifact = write_scenario(dir, s);
    opt.cost = "allocated";
    opt.format = "folded";
    // The allocator's own frame (malloc) is folded by default (FrameFold.hpp); `<module>` is a
    // Python name, not template arguments to elide.
    CHECK(run_captured(dir, opt).out ==
          "Py_BytesMain 7\n"
          "Py_BytesMain;<module>;main;_PyObject_Call;Store.fill;PyByteArray_Resize 100\n"
          "Py_BytesMain;<module>;main;scanner_call;Store.fill;PyByteArray_Resize 200\n");
    opt.python_only = true;
    // One site now: the two stacks differ only in the C code folded away.
    CHECK(run_captured(dir, opt).out == "<module>;main;Store.fill 300\nPy_BytesMain 7\n");
    opt.format = "json";
    const Captured c = run_captured(dir, opt);
    REQUIRE(c.rc == 0);
    const json::value v = json::parse(c.out);
    std::vector<std::vector<std::string>> sites;
    for (const json::value& site : v.at("allocated").as_array()) {
        std::vector<std::string> frames;
        for (const json::value& f : site.at("frames").as_array()) frames.push_back(std::string(f.at("function").as_string()));
        sites.push_back(frames);
    }
    CHECK(sites == std::vector<std::vector<std::string>>{{"Store.fill", "main", "<module>"}, {"malloc", "Py_BytesMain"}});
    opt.format = "text";
    const std::string text = run_captured(dir, opt).out;
    CHECK(text.find("Store.fill") != std::string::npos);
    CHECK(text.find("_PyObject_Call") == std::string::npos);
    CHECK(text.find("scanner_call") == std::string::npos);
}
