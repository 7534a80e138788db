// The timeline file's codec (format/Timeline) and the assembly of ring records into its events
// (format/TimelineRecords): an exec's pieces, exit statuses, RSS.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "../common/TempDir.hpp"
#include "TestFiles.hpp"
#include "format/Timeline.hpp"
#include "format/TimelineRecords.hpp"

using namespace memtrack;
using namespace memtrack::unittest;
using memtrack::testsupport::TempDir;
using Type = TimelineEvent::Type;

namespace {

mt_record record(uint32_t kind, int32_t pid, uint64_t time, uint64_t size = 0, uint32_t flags = 0) {
    mt_record r{};
    r.timestamp = time;
    r.size_kind = mt_pack_size_kind(size, kind, flags);
    r.pid = uint32_t(pid);
    r.tid = uint32_t(pid);
    return r;
}

// The pieces BPF sends for one text, MT_EXEC_TEXT_BYTES at a time (at least one).
std::vector<mt_record> pieces(int32_t pid, uint64_t time, uint32_t part, const std::string& text, uint32_t flags = 0) {
    std::vector<mt_record> out;
    for (uint32_t off = 0; off == 0 || off < text.size(); off += MT_EXEC_TEXT_BYTES) {
        mt_record r = record(MT_KIND_EXEC_TEXT, pid, time, mt_exec_text_size(part, uint32_t(text.size()), off), flags);
        char buf[MT_EXEC_TEXT_BYTES] = {};
        if (off < text.size()) std::memcpy(buf, text.data() + off, std::min<size_t>(MT_EXEC_TEXT_BYTES, text.size() - off));
        std::memcpy(&r.addr, buf, 8);
        std::memcpy(&r.old_addr, buf + 8, 8);
        std::memcpy(&r.stack_hash, buf + 16, 8);
        out.push_back(r);
    }
    return out;
}

std::vector<TimelineEvent> assemble(TimelineRecords& t, const std::vector<mt_record>& records) {
    std::vector<TimelineEvent> out;
    for (const auto& r : records) t.add(r, [&](const TimelineEvent& e) { out.push_back(e); });
    return out;
}

}  // namespace

TEST_CASE("timeline: an exec is one event once its arguments' last piece is in, pieces of other pids between") {
    TimelineRecords t;
    static constexpr char kArgs[] = "/usr/bin/python3\0-c\0print('a fairly long argument')";
    const std::string args(kArgs, sizeof kArgs);  // the last argument's NUL included, as the kernel keeps it
    const std::string path = "/usr/bin/python3.11-with-a-long-name";
    std::vector<mt_record> rs{record(MT_KIND_EXEC, 7, 1000)};
    auto p = pieces(7, 1000, MT_EXEC_PATH, path);
    auto a = pieces(7, 1000, MT_EXEC_ARGS, args);
    rs.insert(rs.end(), p.begin(), p.end());
    rs.push_back(record(MT_KIND_EXEC, 8, 1001));  // another process's exec, interleaved
    rs.insert(rs.end(), a.begin(), a.end() - 1);
    auto other = pieces(8, 1001, MT_EXEC_PATH, "/bin/true");
    auto other_args = pieces(8, 1001, MT_EXEC_ARGS, std::string("true\0", 5));
    rs.insert(rs.end(), other.begin(), other.end());
    rs.insert(rs.end(), other_args.begin(), other_args.end());
    CHECK(assemble(t, rs).size() == 1);  // pid 8's only: pid 7's last piece is still missing
    auto last = assemble(t, {a.back()});
    REQUIRE(last.size() == 1);
    CHECK(last[0].type == Type::Exec);
    CHECK(last[0].pid == 7);
    CHECK(last[0].time == 1000);
    CHECK(last[0].path == path);
    CHECK(last[0].argv == std::vector<std::string>{"/usr/bin/python3", "-c", "print('a fairly long argument')"});
    CHECK_FALSE(last[0].argv_cut);
    CHECK(t.unfinished_execs() == 0);
    CHECK(t.unexpected() == 0);
}

TEST_CASE("timeline: an exec with no arguments, and one whose arguments were cut") {
    TimelineRecords t;
    std::vector<mt_record> rs{record(MT_KIND_EXEC, 5, 10)};
    for (auto& r : pieces(5, 10, MT_EXEC_PATH, "")) rs.push_back(r);
    for (auto& r : pieces(5, 10, MT_EXEC_ARGS, "")) rs.push_back(r);
    rs.push_back(record(MT_KIND_EXEC, 6, 11));
    for (auto& r : pieces(6, 11, MT_EXEC_PATH, "/x")) rs.push_back(r);
    for (auto& r : pieces(6, 11, MT_EXEC_ARGS, std::string("x\0a-cut-argum", 13), MT_FLAG_TEXT_CUT)) rs.push_back(r);
    auto ev = assemble(t, rs);
    REQUIRE(ev.size() == 2);
    CHECK(ev[0].path.empty());
    CHECK(ev[0].argv.empty());
    CHECK(ev[1].argv == std::vector<std::string>{"x", "a-cut-argum"});
    CHECK(ev[1].argv_cut);
}

TEST_CASE("timeline: exit statuses, forks, RSS and pieces without their exec") {
    TimelineRecords t;
    mt_record fork = record(MT_KIND_FORK, 100, 1);
    fork.addr = 101;
    mt_record rss = record(MT_KIND_RSS, 101, 2, /*swap=*/4096);
    rss.addr = 1 << 20;
    rss.old_addr = 2 << 20;
    rss.stack_hash = 8192;
    auto ev = assemble(t, {fork, rss, record(MT_KIND_RSS_PEAK, 101, 3, 5 << 20), record(MT_KIND_EXIT, 101, 4, 42 << 8),
                           record(MT_KIND_EXIT, 102, 5, 9), record(MT_KIND_EXIT, 103, 6, 0x80 | 11),
                           pieces(104, 7, MT_EXEC_ARGS, "x")[0]});
    REQUIRE(ev.size() == 6);
    CHECK(ev[0].type == Type::Fork);
    CHECK(ev[0].pid == 101);
    CHECK(ev[0].parent == 100);
    CHECK(ev[1].type == Type::Rss);
    CHECK(ev[1].anon == 1 << 20);
    CHECK(ev[1].file == 2 << 20);
    CHECK(ev[1].shmem == 8192);
    CHECK(ev[1].swap == 4096);
    CHECK(ev[2].peak == 5 << 20);
    CHECK(ev[3].code == 42);
    CHECK_FALSE(ev[3].signal);
    CHECK(ev[4].signal == 9);
    CHECK_FALSE(ev[4].code);
    CHECK(ev[5].signal == 11);
    CHECK(ev[5].core);
    CHECK(t.unexpected() == 1);
}

TEST_CASE("timeline: every event type survives the file, with the keys it carries") {
    std::vector<TimelineEvent> in;
    auto add = [&](Type type, int32_t pid) -> TimelineEvent& {
        TimelineEvent e;
        e.type = type;
        e.time = 1000 + in.size();
        e.pid = pid;
        return in.emplace_back(std::move(e));
    };
    add(Type::Start, 10);
    add(Type::Attach, 20).argv = {"server", "--port", "80"};
    in.back().path = "/usr/sbin/server";
    add(Type::Fork, 11).parent = 10;
    auto& exec = add(Type::Exec, 11);
    exec.path = "/bin/true";
    exec.argv = {"true"};
    exec.argv_cut = true;
    add(Type::Exit, 11).code = 0;
    add(Type::Exit, 12).signal = 6;
    in.back().core = true;
    add(Type::Enable, 0);
    add(Type::Mark, 0).name = "bench_parse";
    add(Type::Disable, 0);
    auto& rss = add(Type::Rss, 10);
    rss.anon = 1;
    rss.file = 2;
    rss.shmem = 3;
    rss.swap = 4;
    add(Type::RssPeak, 10).peak = 1ull << 40;
    add(Type::Detach, 20);

    std::string raw;
    for (auto& e : in) encode_timeline_event(e, raw);
    TempDir dir;
    const std::string path = dir / "t.MemtrackTimeline.msgpack";
    write_zstd_file(path, raw);
    std::vector<TimelineEvent> out;
    auto n = read_timeline(path, [&](TimelineEvent&& e) { out.push_back(std::move(e)); });
    REQUIRE(n);
    CHECK(n.value() == in.size());
    CHECK(out == in);

    // The fields a type does not carry are not written: a mark has no pid.
    std::string one;
    encode_timeline_event(in[7], one);
    CHECK(one == std::string("\x83\xa4type\xa4mark\xa4time\xcd\x03\xef\xa4name\xab" "bench_parse"));
}

TEST_CASE("timeline: a value of an unknown type is an error after the events before it") {
    std::string raw;
    TimelineEvent e;
    e.type = Type::Enable;
    encode_timeline_event(e, raw);
    raw += "\x82\xa4type\xa4nope\xa4time\x01";
    TempDir dir;
    const std::string path = dir / "bad.msgpack";
    write_zstd_file(path, raw);
    size_t seen = 0;
    auto n = read_timeline(path, [&](TimelineEvent&&) { ++seen; });
    CHECK(seen == 1);
    REQUIRE_FALSE(n);
    CHECK(n.error().message().find("unknown type 'nope'") != std::string::npos);
}
