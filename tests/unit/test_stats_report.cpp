// The stats object (StatsReport): each key reports its owner's counter, computed values are
// computed from the right ones, and every key is documented in docs/STATS.md.
#include <doctest/doctest.h>

#include <fstream>
#include <regex>
#include <set>
#include <string>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "bpf/record.h"
#include "actors/StatsReport.hpp"
#include "ring/RingView.hpp"

using namespace memtrack;

namespace {

// Every key of `o`, nested objects' keys as `outer.inner` for the objects docs/STATS.md lists
// key by key (`unwind`); the others (per pid, per kind, per reason, histograms) are one key.
std::set<std::string> keys(const boost::json::object& o) {
    std::set<std::string> out;
    for (const auto& kv : o) {
        const std::string k(kv.key());
        out.insert(k);
        if (k == "unwind")
            for (const auto& inner : kv.value().as_object()) out.insert(k + "." + std::string(inner.key()));
    }
    return out;
}

// Key by key, so that a failure names the key; numbers must match in kind (a double stays a double).
void check_same(const boost::json::object& got, const boost::json::object& want, const std::string& path = "") {
    for (const auto& kv : want) {
        const std::string key = path + std::string(kv.key());
        CAPTURE(key);
        REQUIRE(got.contains(kv.key()));
        const boost::json::value& g = got.at(kv.key());
        if (kv.value().is_object() && g.is_object()) {
            check_same(g.as_object(), kv.value().as_object(), key + ".");
            continue;
        }
        CAPTURE(boost::json::serialize(g));
        CAPTURE(boost::json::serialize(kv.value()));
        CHECK(g.is_double() == kv.value().is_double());
        CHECK(g == kv.value());
    }
    for (const auto& kv : got) {
        const std::string key = path + std::string(kv.key());
        CAPTURE(key);
        CHECK(want.contains(kv.key()));
    }
}

RunCounters distinct_counters() {
    RunCounters c;
    c.duration_ns = 3'000'000'000;
    c.phases = {14'000'000, 15'000'000, 16'000'000};
    c.ring_bytes = 4096;
    c.events.records = 101;
    c.events.bytes = 102;
    c.events.chunks = 103;
    c.events.max_records_per_chunk = 104;
    c.events.idle_ns = 2'000'000'000;
    c.events.chunk_ns.add(3'000'000);
    c.writer.written = 201;
    c.writer.unwritten = 202;
    c.writer.artifact_events = 203;
    c.writer.allocations = 200;
    c.writer.process_lifetime_ns = 8'000'000'000;
    c.symbolizer.stacks_unique = 301;
    c.symbolizer.stack_ring_bytes = 3000;
    c.symbolizer.symbolize_ns.add(5'000'000);
    c.symbolizer.cache_hits = 3;
    c.symbolizer.cache_misses = 1;
    c.symbolizer.modules = 302;
    c.symbolizer.cpu_ns = 1'500'000'000;
    c.symbolizer.module_load_ns = 4'000'000;
    c.symbolizer.max_queued_batches = 303;
    c.symbolizer.jit_frames = 304;
    c.symbolizer.python_frames_unnamed = 309;
    c.symbolizer.python_trampolines_folded = 399;
    c.symbolizer.python_stacks = 397;
    c.symbolizer.python_stacks_known = 398;
    c.symbolizer.stacks_cut_outside_code = 305;
    c.symbolizer.frames_cut_outside_code = 306;
    c.symbolizer.maps_full_reads = 307;
    c.symbolizer.maps_added_reads = 308;
    c.drains.drain_ns.add(7'000'000);
    c.links.processes_probed = 401;
    c.links.processes_shared = 402;
    c.links.probe_errors = 403;
    c.links.attach_ns.add(2'000'000);
    c.links.objects_by_kind[size_t(AllocatorKind::Glibc)] = 404;
    c.links.objects_by_kind[size_t(AllocatorKind::Loader)] = 406;
    c.links.processes_without_allocator = 405;
    c.links.code_objects_examined = 407;
    c.links.code_full_scans = 408;
    c.objects = {409, 410, 411, 412, 414};
    c.links.exit_wakeups_early = 413;
    c.holds.taken = {501, 502, 503, 504, 505};
    c.holds.released = {511, 512, 513, 514, 515};
    c.holds.exited = {521, 522, 523, 524, 525};
    c.holds.signals = 531;
    c.holds.signal_failures = 532;
    c.holds.failed = 533;
    c.pauses.paused_ns = 2'000'000'000;
    c.pauses.stop_to_resume_ns.add(1'000'000);
    c.pauses.stop_to_resume_ns.add(1'000'000);
    c.pauses.spawn_held_ns.add(6'000'000);
    c.pauses.new_code_held_ns.add(9'000'000);
    c.pauses.pressure_resumes_by_pid = {{42, 2}};
    c.kernel = {601, 602, 603, 604, 605, 606, 607, 608, 615, 609, 610, 616, 617, 618, 619, 626, 627, 628, 621, 622, 623, 624, 625,
                1024, 611, 612, 620, {{"alloc_return", 10, 2500}, {"alloc_entry", 0, 0}}, {4, 40, 80, 120, 160}};
    c.unwind = {701, 702, 703, 704, 723, 724, 725, 705, 706, 707, 8'000'000, 709, 710, 711,
                712, 713, 714, 715, 716, 717, 718, 719, 720, 721, 722, 726, 727, 728};
    c.drains.artifact_closed_ns = 12'000'000;
    c.drains.stacks_closed_ns = 13'000'000;
    c.shutdown.stopped_at_exit = 614;
    c.shutdown.cut_short_by_signal = 615;
    c.shutdown.command_running_at_exit = 616;
    return c;
}

}  // namespace

TEST_CASE("stats: each key reports its owner's counter") {
    // One event record takes 56 bytes of ring: 48 of record, 8 of the kernel's header.
    REQUIRE(RingView::record_bytes(sizeof(mt_record)) == 56);
    const boost::json::object want = boost::json::parse(R"({
        "pressure_resumes_by_pid": {"42": 2},
        "records": 101, "bytes": 102, "dropped": 601, "duration_s": 3.0,
        "startup_ms": 14.0, "run_ms": 15.0, "teardown_ms": 16.0,
        "written": 201, "unwritten": 202, "artifact_events": 203,
        "nested_calls": 602, "stale_frames": 604, "self_traps": 603,
        "chunks": 103, "chunk_ms": {"p50": 3.0, "p99": 3.0, "max": 3.0, "count": 1},
        "max_records_per_chunk": 104,
        "max_fill": 0.25, "max_fill_bytes": 1024, "stack_max_fill_bytes": 611, "stop_bytes": 612,
        "counter_read_errors": 620,
        "stopped_at_exit": 614, "cut_short_by_signal": 615, "command_running_at_exit": 616,
        "stop_to_resume_ms": {"p50": 1.0, "p99": 1.0, "max": 1.0, "count": 2},
        "paused_s": 2.0, "paused_fraction": 0.25,
        "drain_ms": {"p50": 7.0, "p99": 7.0, "max": 7.0, "count": 1},
        "consumer_idle_s": 2.0,
        "allocation_events": 200,
        "stacks_captured": 605, "stacks_sent": 606, "stacks_unique": 301, "stack_errors": 607,
        "stacks_dropped": 608, "stacks_unclaimed": 615, "stack_ring_bytes": 3000,
        "ring_bytes_per_event": 71.0,
        "symbolize_ms": {"p50": 5.0, "p99": 5.0, "max": 5.0, "count": 1},
        "symbolizer_cache_hit_rate": 0.75, "symbolizer_modules": 302, "symbolizer_addresses": 1,
        "symbolize_cpu_s": 1.5, "symbolizer_module_load_ms": 4.0, "symbolizer_max_queued_batches": 303,
        "symbolizer_jit_frames": 304, "python_frames_unnamed": 309, "python_trampolines_folded": 399, "python_stacks": 397, "python_stacks_known": 398, "symbolizer_maps_full_reads": 307, "symbolizer_maps_added_reads": 308, "stacks_cut_outside_code": 305, "frames_cut_outside_code": 306,
        "shutdown_artifact_ms": 12.0, "shutdown_stacks_ms": 13.0,
        "processes_probed": 401, "processes_on_shared_probes": 402, "probe_attach_errors": 403,
        "probe_attach_ms": {"p50": 2.0, "p99": 2.0, "max": 2.0, "count": 1},
        "spawn_unstopped": 609, "spawn_notices_dropped": 610,
        "holds_broken_by_others": 616, "holds_restopped": 617, "holds_unrestored": 618, "holds_escaped": 619,
        "holds_restopped_self": 626, "continuers_paused": 627, "holds_caught_at_start": 628,
        "loader_hooks_missed": 621, "loader_missed_untrapped": 622, "loader_missed_rejected": 623,
        "loader_missed_unheld": 624, "loader_missed_no_hook": 625,
        "spawn_held_ms": {"p50": 6.0, "p99": 6.0, "max": 6.0, "count": 1},
        "new_code_held_ms": {"p50": 9.0, "p99": 9.0, "max": 9.0, "count": 1},
        "processes_without_allocator": 405,
        "code_objects_examined": 407,
        "code_full_scans": 408,
        "object_files_parsed": 409,
        "object_files_lookups": 410,
        "object_files_failed": 411,
        "object_files_reopened": 412,
        "object_files_reopened_for_symbols": 414,
        "exit_wakeups_early": 413,
        "allocator_objects": {"glibc": 404, "jemalloc": 0, "mimalloc": 0, "tcmalloc": 0, "other_malloc": 0,
                              "cxx_operators": 0, "loader": 406},
        "pressure_stops": 501, "pressure_resumes": 1032, "pressure_ended_by_exit": 521,
        "snapshot_stops": 502, "spawn_stops": 503, "new_code_stops": 504,
        "stop_signals": 531, "stop_signal_failures": 532, "pause_failures": 533,
        "pauses": {"pressure": {"taken": 501, "released": 511, "exited": 521},
                   "snapshot": {"taken": 502, "released": 512, "exited": 522},
                   "spawn": {"taken": 503, "released": 513, "exited": 523},
                   "module": {"taken": 504, "released": 514, "exited": 524},
                   "continuer": {"taken": 505, "released": 515, "exited": 525}},
        "unwind": {"objects": 701, "objects_without_cfi": 702, "objects_failed": 703,
                   "objects_shared_by_build_id": 704, "objects_from_cache": 723,
                   "objects_stored_in_cache": 724, "cache_errors": 725, "rows": 705, "rows_capacity": 706, "tables_full": 707,
                   "build_ms": 8.0, "processes_described": 709, "describe_errors": 710, "mappings_left_out": 711,
                   "cfi_frames": 712, "frame_pointer_frames": 713, "walks_without_tables": 714,
                   "walks_complete": 715, "walks_truncated": 716, "walks_unsupported": 717,
                   "walks_read_failed": 718, "walks_bad_frame": 719, "walks_matched": 720, "walks_changed": 721,
                   "row_cache_misses": 722, "walks_spliced": 726, "spliced_frames": 727, "walks_known": 728},
        "bpf_programs": {"alloc_return": {"runs": 10, "run_ns": 2500, "ns_per_run": 250.0},
                         "alloc_entry": {"runs": 0, "run_ns": 0, "ns_per_run": 0.0}},
        "bpf_parts": {"events": 4, "walk_ns_per_event": 10.0, "hash_ns_per_event": 20.0,
                      "stack_record_ns_per_event": 30.0, "event_record_ns_per_event": 40.0}
    })").as_object();
    check_same(stats_json(distinct_counters()), want);
}

TEST_CASE("stats: nothing counted gives zeros, not a division by zero") {
    const boost::json::object o = stats_json(RunCounters{});
    for (const char* key : {"max_fill", "paused_fraction", "ring_bytes_per_event", "symbolizer_cache_hit_rate"}) {
        CAPTURE(key);
        CHECK(o.at(key).as_double() == 0.0);
    }
    CHECK(o.at("symbolize_ms").as_object().at("count").as_uint64() == 0);
    CHECK(o.at("symbolize_ms").as_object().at("p50").as_double() == 0.0);
}

TEST_CASE("stats: every key of the object is in docs/STATS.md, and every key there is in the object") {
    std::ifstream doc(STATS_DOC);
    REQUIRE(doc);
    // The table's rows: | `key` | owner | meaning |
    const std::regex row(R"(^\| `([a-z_.]+)` \|)");
    std::set<std::string> documented;
    for (std::string line; std::getline(doc, line);) {
        std::smatch m;
        if (std::regex_search(line, m, row)) CHECK_MESSAGE(documented.insert(m[1]).second, "listed twice: " << m[1]);
    }
    const std::set<std::string> reported = keys(stats_json(RunCounters{}));
    for (const std::string& k : reported) CHECK_MESSAGE(documented.count(k), "not in docs/STATS.md: " << k);
    for (const std::string& k : documented) CHECK_MESSAGE(reported.count(k), "not in the stats object: " << k);
    CHECK(reported.size() == 128);
}

TEST_CASE("stats: the run's phases split the time from memtrack's start to the exit stats") {
    RunPhases p(1'000);
    // Under way: start-up so far; the later phases not begun.
    PhaseDurations d = p.durations(1'500);
    CHECK(d.startup_ns == 500);
    CHECK(d.run_ns == 0);
    CHECK(d.teardown_ns == 0);
    p.mark_released(2'000);
    d = p.durations(2'600);
    CHECK(d.startup_ns == 1'000);
    CHECK(d.run_ns == 600);
    CHECK(d.teardown_ns == 0);
    p.mark_shutdown(5'000);
    p.mark_shutdown(6'000);  // a second shutdown route: the first mark stays
    p.mark_finished(5'700);
    p.mark_released(9'000);
    d = p.durations(99'000);  // ended: later reads change nothing
    CHECK(d.startup_ns == 1'000);
    CHECK(d.run_ns == 3'000);
    CHECK(d.teardown_ns == 700);
    CHECK(d.startup_ns + d.run_ns + d.teardown_ns == 5'700 - 1'000);
    RunCounters c;
    c.phases = d;
    const boost::json::object o = stats_json(c);
    CHECK(o.at("startup_ms").as_double() == 0.001);
    CHECK(o.at("run_ms").as_double() == 0.003);
    CHECK(o.at("teardown_ms").as_double() == 0.0007);
}

TEST_CASE("stats: a counter copied while its owner counts holds a value it had") {
    Counter c;
    c.add(5);
    c.raise_to(3);  // not higher: unchanged
    c.raise_to(9);
    const Counter copy = c;
    c.add();
    CHECK(copy.get() == 9);
    CHECK(c.get() == 10);
    Histogram h;
    h.add(7);
    const Histogram before = h;
    h.add(70);
    CHECK(before.count() == 1);
    CHECK(before.max() == 7);
    CHECK(h.count() == 2);
    CHECK(h.sum() == 77);
}
