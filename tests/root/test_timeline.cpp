// The timeline file (docs/FORMATS.md) from timeline_tree (tests/progs/): every fork, exec and exit
// of the tree in order with its exact code or signal, the exec's path and arguments, and the RSS
// of a process that touches a known amount of anonymous memory.
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <filesystem>

#include <algorithm>
#include <map>
#include <set>
#include <cstdint>
#include <string>
#include <vector>

#include "Events.hpp"
#include "core/OutputFiles.hpp"
#include "fixture_sizes.h"
#include "format/Timeline.hpp"

using namespace memtrack::roottest;
using memtrack::TimelineEvent;
using Type = memtrack::TimelineEvent::Type;

namespace {

std::vector<TimelineEvent> read_all(const std::string& path) {
    std::vector<TimelineEvent> out;
    auto r = memtrack::read_timeline(path, [&](TimelineEvent&& e) { out.push_back(std::move(e)); });
    REQUIRE_MESSAGE(r, (r ? "" : r.error().message()));
    return out;
}

std::vector<TimelineEvent> of_type(const std::vector<TimelineEvent>& all, Type t) {
    std::vector<TimelineEvent> out;
    std::copy_if(all.begin(), all.end(), std::back_inserter(out), [&](auto& e) { return e.type == t; });
    return out;
}

}  // namespace

TEST_CASE("timeline: the tree's forks, execs and exits, in order, with their codes and signals") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    const std::string exit3 = fixture("exit3");
    TrackResult t = track(dir, {fixture("timeline_tree"), exit3});
    REQUIRE_MESSAGE(t.run.status == 0, t.run.describe());
    const auto all = read_all(memtrack::timeline_path_for(t.artifact));
    const int root = t.root_pid;

    const auto starts = of_type(all, Type::Start);
    REQUIRE(starts.size() == 1);
    CHECK(starts[0].pid == root);

    const auto forks = of_type(all, Type::Fork);
    REQUIRE(forks.size() == 4);
    for (auto& f : forks) CHECK(f.parent == root);
    for (size_t i = 1; i < forks.size(); ++i) CHECK(forks[i].time > forks[i - 1].time);

    const auto execs = of_type(all, Type::Exec);
    REQUIRE(execs.size() == 2);  // the command itself, then child 2
    CHECK(execs[0].pid == root);
    CHECK(execs[0].path == fixture("timeline_tree"));
    CHECK(execs[0].argv == std::vector<std::string>{fixture("timeline_tree"), exit3});
    CHECK(execs[1].pid == forks[2].pid);
    CHECK(execs[1].path == exit3);
    CHECK(execs[1].argv == std::vector<std::string>{"exit3", "one two"});
    CHECK_FALSE(execs[1].argv_cut);

    const auto exits = of_type(all, Type::Exit);
    REQUIRE(exits.size() == 5);
    for (size_t i = 0; i < 4; ++i) {
        CAPTURE(i);
        CHECK(exits[i].pid == forks[i].pid);
        CHECK(exits[i].time > forks[i].time);
        if (i + 1 < forks.size()) CHECK(exits[i].time < forks[i + 1].time);  // waited before the next fork
    }
    CHECK(exits[0].code == FX_TIMELINE_CODE);
    CHECK_FALSE(exits[0].signal);
    CHECK(exits[1].signal == 9);
    CHECK_FALSE(exits[1].code);
    CHECK(exits[2].code == 3);
    CHECK(exits[3].code == 0);
    CHECK(exits[4].pid == root);
    CHECK(exits[4].code == 0);
    // Every process ended inside the recording: none is left to detach.
    CHECK(of_type(all, Type::Detach).empty());

    // Each process's high-water mark came with its exit.
    const auto peaks = of_type(all, Type::RssPeak);
    CHECK(peaks.size() == 5);
}

TEST_CASE("timeline: RSS of a process that touches 128 MiB of anonymous memory, within 2 %") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    TrackResult t = track(dir, {fixture("timeline_tree"), fixture("exit3")});
    REQUIRE_MESSAGE(t.run.status == 0, t.run.describe());
    const auto all = read_all(memtrack::timeline_path_for(t.artifact));
    const auto forks = of_type(all, Type::Fork);
    REQUIRE(forks.size() == 4);
    const int toucher = forks[3].pid;
    constexpr double touched = double(uint64_t(FX_TIMELINE_TOUCH_MIB) << 20);

    uint64_t peak = 0, max_anon = 0, records = 0;
    for (auto& e : all) {
        if (e.pid != toucher) continue;
        if (e.type == Type::RssPeak) peak = e.peak;
        if (e.type == Type::Rss) {
            max_anon = std::max(max_anon, e.anon);
            ++records;
        }
    }
    // The mark counts the touched pages and what the program itself holds (code, libc, stack):
    // at least the touched bytes, and not 2 % above them.
    CHECK(double(peak) >= touched);
    CHECK(double(peak) <= touched * 1.02);
    // Samples every 1 MiB up to 128 MiB, then 1/64 of the value (2 MiB): the last one is within
    // 2 % below what was touched, and the count bounded by the steps.
    CHECK(double(max_anon) >= touched * 0.98);
    CHECK(double(max_anon) <= touched * 1.02);
    CHECK(records >= 64);
    CHECK(records <= 200);
}

TEST_CASE("timeline: an exec's teardown of the old image is not the new image's RSS") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    constexpr uint64_t mib = 64;
    TrackResult t = track(dir, {fixture("timeline_tree"), "touch-exec", std::to_string(mib), fixture("exit3")});
    REQUIRE_MESSAGE(t.run.status == 3, t.run.describe());
    const auto all = read_all(memtrack::timeline_path_for(t.artifact));
    const auto execs = of_type(all, Type::Exec);
    REQUIRE(execs.size() == 2);  // the command itself (memtrack's child), then exit3
    // From the command's exec on: the old image's records rise to the touched 64 MiB; the exec
    // then frees it all in the old mm, which has no owner by then (on_rss reads an ownerless mm
    // only as the current task's): none of that teardown is the process's RSS. Recorded (as
    // with that check removed), it stepped down from 64 MiB to near 0 after the peak.
    bool at_peak = false;
    std::vector<uint64_t> after_peak;
    for (auto& e : all) {
        if (e.pid != t.root_pid || e.type != Type::Rss || e.time < execs[0].time) continue;
        if (e.anon >= (mib - 1) << 20) at_peak = true;
        else if (at_peak) after_peak.push_back(e.anon);
    }
    CHECK(at_peak);
    for (uint64_t anon : after_peak) CHECK_MESSAGE(anon < (uint64_t(1) << 20), "an RSS record of ", anon, " bytes after the peak");
}

TEST_CASE("timeline: the report ends a heap at its exec (discarded) and at its exit (leaked)") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    TrackResult t = track(dir, {fixture("timeline_tree"), fixture("exit3")});
    REQUIRE_MESSAGE(t.run.status == 0, t.run.describe());
    auto report_json = [&](const std::string& artifact) {
        RunResult r = run({memtrack_bin(), "report", artifact, "--format", "json"}, std::chrono::seconds(120));
        REQUIRE_MESSAGE(r.status == 0, r.describe());
        return boost::json::parse(r.out).as_object();
    };
    const auto j = report_json(t.artifact);
    const auto& totals = j.at("totals").as_object();
    // Child 2 held FX_TIMELINE_EXEC_DROP when it exec'd exit3, which exits holding FX_EXIT3_SIZE.
    CHECK(totals.at("exec_discarded_bytes").as_int64() == FX_TIMELINE_EXEC_DROP);
    CHECK(totals.at("exec_discarded_blocks").as_int64() == 1);
    CHECK(totals.at("live_bytes").as_int64() == FX_EXIT3_SIZE);  // leaked: live at its exit
    CHECK(totals.at("live_blocks").as_int64() == 1);
    CHECK(totals.at("live_at_end_bytes").as_int64() == 0);
    CHECK(j.at("peak").at("bytes").as_int64() == FX_TIMELINE_EXEC_DROP);  // never both at once
    int found = 0;
    for (const auto& v : j.at("processes").as_array()) {
        const auto& p = v.as_object();
        if (p.at("command").as_string() != "exit3 one two") continue;
        ++found;
        CHECK(p.at("parent").as_int64() == t.root_pid);
        CHECK(p.at("status").as_string() == "exit 3");
        CHECK(p.at("exec_discarded_bytes").as_int64() == FX_TIMELINE_EXEC_DROP);
        CHECK(p.at("leaked_bytes").as_int64() == FX_EXIT3_SIZE);
        CHECK(p.at("heap_peak_bytes").as_int64() == FX_TIMELINE_EXEC_DROP);
        CHECK(p.at("calls").as_int64() == 2);
    }
    CHECK(found == 1);
    // track's closing lines are the report's figures (report/TrackSummary.hpp): child 2's block
    // alone at the peak, exit3's leaked; not both at once, as the artifact alone would give.
    const std::string& err = t.run.err;
    CHECK_MESSAGE(err.find("memtrack: peak heap 48.8 KiB (" + std::to_string(FX_TIMELINE_EXEC_DROP) + " B) in 1 block at ") !=
                      std::string::npos,
                  err);
    CHECK_MESSAGE(err.find("memtrack: leaked 9.7 KiB (" + std::to_string(FX_EXIT3_SIZE) + " B) in 1 block\n") !=
                      std::string::npos,
                  err);

    // The same artifact without its timeline: both blocks look leaked, both live at once.
    const std::string alone = dir / "alone.MemtrackArtifact.msgpack";
    std::filesystem::copy_file(t.artifact, alone);
    const auto k = report_json(alone);
    CHECK(k.at("totals").at("live_bytes").as_int64() == FX_TIMELINE_EXEC_DROP + FX_EXIT3_SIZE);
    CHECK(k.at("peak").at("bytes").as_int64() == FX_TIMELINE_EXEC_DROP + FX_EXIT3_SIZE);
    CHECK_FALSE(k.at("totals").as_object().contains("exec_discarded_bytes"));
}

TEST_CASE("timeline: 200 short processes at once, each exiting with its own code: every fork, exec and exit, in order") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    constexpr int kChildren = 200;
    TrackResult t = track(dir, {fixture("exit_many"), std::to_string(kChildren)});
    REQUIRE_MESSAGE(t.run.status == 0, t.run.describe());
    const auto all = read_all(memtrack::timeline_path_for(t.artifact));
    struct Life {
        uint64_t fork = 0, exec = 0, exit = 0;
        int code = -1, execs = 0, exits = 0;
        std::string arg;
    };
    std::map<int, Life> children;
    for (const auto& e : all) {
        if (e.pid == t.root_pid) continue;
        if (e.type == Type::Fork) {
            CHECK(e.parent == t.root_pid);
            children[e.pid].fork = e.time;
        }
        if (e.type == Type::Exec) {
            Life& l = children[e.pid];
            ++l.execs;
            l.exec = e.time;
            if (e.argv.size() == 3 && e.argv[1] == "child") l.arg = e.argv[2];
        }
        if (e.type == Type::Exit) {
            Life& l = children[e.pid];
            ++l.exits;
            l.exit = e.time;
            l.code = e.code.value_or(-1);
            CHECK_FALSE(e.signal);
        }
    }
    REQUIRE(children.size() == size_t(kChildren));
    std::set<int> codes;
    for (const auto& [pid, l] : children) {
        CAPTURE(pid);
        CHECK(l.fork != 0);
        CHECK(l.execs == 1);
        CHECK(l.exits == 1);
        CHECK(l.fork < l.exec);
        CHECK(l.exec < l.exit);
        CHECK(std::to_string(l.code) == l.arg);  // the code its own argv asked for
        codes.insert(l.code);
    }
    CHECK(codes.size() == size_t(kChildren));  // distinct: 0 .. 199
    CHECK(*codes.begin() == 0);
    CHECK(*codes.rbegin() == kChildren - 1);
}
