// The MemtrackArtifact codec against shared/formats/memtrack-artifact.md: golden bytes, round
// trips through the real writer and reader, an independent decoder, and damaged files.
#include <doctest/doctest.h>

#include "TestFiles.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/serialize.hpp>
#include <msgpack.hpp>
#include <zstd.h>

#include "cli/DumpCommand.hpp"
#include "format/ArtifactEncoder.hpp"
#include "format/ArtifactReader.hpp"
#include "format/JsonLines.hpp"
#include "format/Record.hpp"
#include "report/ArtifactTotals.hpp"
#include "report/Load.hpp"
#include "format/ZstdFileWriter.hpp"

using namespace memtrack;
using namespace memtrack::unittest;

namespace {

// "86 a3 70" -> the bytes; whitespace and newlines are ignored so the doc's dumps paste as is.
std::string hex(std::string_view text) {
    std::string out;
    int hi = -1;
    for (char c : text) {
        int v;
        if (c >= '0' && c <= '9') v = c - '0';
        else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
        else continue;
        if (hi < 0) {
            hi = v;
        } else {
            out.push_back(char(hi * 16 + v));
            hi = -1;
        }
    }
    return out;
}

std::string to_hex(std::string_view bytes) {
    std::string out;
    for (unsigned char c : bytes) {
        if (!out.empty()) out += ' ';
        out += "0123456789abcdef"[c >> 4];
        out += "0123456789abcdef"[c & 15];
    }
    return out;
}





struct ReadOutcome {
    std::vector<Event> events;
    bool ok = false;
    uint64_t count = 0;
    std::string message;
    int err = 0;
};

ReadOutcome read_all(const std::string& path) {
    ReadOutcome o;
    auto r = read_artifact(path, [&](const Event& e) { o.events.push_back(e); });
    o.ok = r.ok();
    if (r) {
        o.count = r.value();
    } else {
        o.message = r.error().message();
        o.err = r.error().err;
    }
    return o;
}

// The event every reference dump in the format doc starts from.
Event reference(EventKind kind) {
    Event e;
    e.pid = 4242;
    e.tid = 4243;
    e.timestamp = 1738000000123456789ull;
    e.addr = 0x7f3a1c000040ull;
    e.kind = kind;
    return e;
}

std::string encoded(const Event& e) {
    std::string out;
    encode_event(e, out);
    return out;
}

const char* const kMallocGolden = R"(
86 a3 70 69 64 cd 10 92 a3 74 69 64 cd 10 93 a9 74 69 6d 65 73 74 61 6d 70
cf 18 1e 9d ca b2 fc cd 15 a4 61 64 64 72 cf 00 00 7f 3a 1c 00 00 40
a4 74 79 70 65 a6 4d 61 6c 6c 6f 63 a4 73 69 7a 65 40)";

const char* const kFreeGolden = R"(
85 a3 70 69 64 cd 10 92 a3 74 69 64 cd 10 93 a9 74 69 6d 65 73 74 61 6d 70
cf 18 1e 9d ca b2 fc cd 15 a4 61 64 64 72 cf 00 00 7f 3a 1c 00 00 40
a4 74 79 70 65 a4 46 72 65 65)";

const char* const kReallocGolden = R"(
87 a3 70 69 64 cd 10 92 a3 74 69 64 cd 10 93 a9 74 69 6d 65 73 74 61 6d 70
cf 18 1e 9d ca b2 fc cd 15 a4 61 64 64 72 cf 00 00 7f 3a 1c 00 00 40
a4 74 79 70 65 a7 52 65 61 6c 6c 6f 63 a8 6f 6c 64 5f 61 64 64 72
cf 00 00 7f 3a 1c 00 00 10 a4 73 69 7a 65 cc c8)";

// splitmix64: reproducible values without depending on <random>'s distributions.
struct Rng {
    uint64_t s;
    uint64_t next() {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
};

constexpr EventKind kArtifactKinds[] = {EventKind::Malloc, EventKind::Free,   EventKind::Realloc,
                                        EventKind::Calloc, EventKind::AlignedAlloc, EventKind::Mmap,
                                        EventKind::Munmap, EventKind::Brk};

// Events of every kind, in the shape the reader gives back: the fields a kind does not carry in
// the artifact are left at their defaults so that == compares what the file can hold.
std::vector<Event> varied_events(size_t n) {
    constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
    const uint64_t edges[] = {0, 1, 127, 128, 255, 256, 65535, 65536, 0xffffffffull, 0x100000000ull, kMax - 1, kMax};
    const int32_t pid_edges[] = {0, 1, 127, 128, 4242, 65536, 4194304, std::numeric_limits<int32_t>::max(), -1,
                                 -33, std::numeric_limits<int32_t>::min()};
    Rng rng{42};
    auto u64 = [&] {
        const uint64_t r = rng.next();
        return r % 4 == 0 ? edges[rng.next() % std::size(edges)] : rng.next() >> (r % 64);
    };
    std::vector<Event> events;
    for (size_t i = 0; i < n; ++i) {
        Event e;
        e.kind = kArtifactKinds[i % std::size(kArtifactKinds)];
        e.pid = rng.next() % 3 == 0 ? pid_edges[rng.next() % std::size(pid_edges)] : int32_t(rng.next() % 100000);
        e.tid = rng.next() % 3 == 0 ? pid_edges[rng.next() % std::size(pid_edges)] : int32_t(rng.next() % 100000);
        e.timestamp = i < 16 ? edges[i % std::size(edges)] : 1738000000000000000ull + i * 1000;
        e.addr = u64();
        if (e.kind != EventKind::Free) e.size = u64();
        if (e.kind == EventKind::Realloc && rng.next() % 2 == 0) e.old_addr = u64();
        if (is_allocation(e.kind) && rng.next() % 2 == 0) e.stack_hash = u64();
        events.push_back(e);
    }
    return events;
}

std::string encode_all(const std::vector<Event>& events) {
    std::string raw;
    for (const Event& e : events) encode_event(e, raw);
    return raw;
}

}  // namespace

TEST_CASE("encoder matches the format doc's reference bytes") {
    CHECK(to_hex(encoded([] {
              Event e = reference(EventKind::Malloc);
              e.size = 64;
              return e;
          }())) == to_hex(hex(kMallocGolden)));

    CHECK(to_hex(encoded(reference(EventKind::Free))) == to_hex(hex(kFreeGolden)));

    Event realloc = reference(EventKind::Realloc);
    realloc.size = 200;
    realloc.old_addr = 0x7f3a1c000010ull;
    CHECK(to_hex(encoded(realloc)) == to_hex(hex(kReallocGolden)));
}

TEST_CASE("encoder writes stack_hash only on allocations and only when nonzero") {
    Event m = reference(EventKind::Malloc);
    m.size = 64;
    m.stack_hash = 0x0123456789abcdefull;
    std::string want = hex(kMallocGolden);
    want[0] = char(0x87);
    want += hex("aa 73 74 61 63 6b 5f 68 61 73 68 cf 01 23 45 67 89 ab cd ef");
    CHECK(to_hex(encoded(m)) == to_hex(want));

    Event small = m;
    small.stack_hash = 5;
    std::string want_small = hex(kMallocGolden);
    want_small[0] = char(0x87);
    want_small += hex("aa 73 74 61 63 6b 5f 68 61 73 68 05");
    CHECK(to_hex(encoded(small)) == to_hex(want_small));

    Event r = reference(EventKind::Realloc);
    r.size = 200;
    r.old_addr = 0x7f3a1c000010ull;
    r.stack_hash = 0x0123456789abcdefull;
    std::string want_r = hex(kReallocGolden);
    want_r[0] = char(0x88);
    want_r += hex("aa 73 74 61 63 6b 5f 68 61 73 68 cf 01 23 45 67 89 ab cd ef");
    CHECK(to_hex(encoded(r)) == to_hex(want_r));

    // Free has no size and no stack, whatever the Event holds.
    Event f = reference(EventKind::Free);
    f.size = 99;
    f.stack_hash = 7;
    CHECK(to_hex(encoded(f)) == to_hex(hex(kFreeGolden)));

    Event mm = reference(EventKind::Mmap);
    mm.size = 4096;
    mm.stack_hash = 7;
    mm.old_addr = 1;
    CHECK(static_cast<unsigned char>(encoded(mm)[0]) == 0x86);
}

TEST_CASE("encoder uses shortest and unsigned integer forms") {
    Event e = reference(EventKind::Brk);
    e.pid = 0;
    e.tid = 200;
    e.timestamp = 1;
    e.addr = 0;
    e.size = 0;
    CHECK(to_hex(encoded(e)) == to_hex(hex("86 a3 70 69 64 00 a3 74 69 64 cc c8 a9 74 69 6d 65 73 74 61 6d 70 01"
                                           "a4 61 64 64 72 00 a4 74 79 70 65 a3 42 72 6b a4 73 69 7a 65 00")));
    e.pid = -1;
    e.tid = std::numeric_limits<int32_t>::max();
    CHECK(encoded(e).substr(0, 6) == hex("86 a3 70 69 64 ff"));
    CHECK(encoded(e).substr(6, 9) == hex("a3 74 69 64 ce 7f ff ff ff"));
}

TEST_CASE("round trip through ZstdFileWriter and read_artifact") {
    TempDir dir;
    const std::string path = dir / "1.MemtrackArtifact.msgpack";
    const std::vector<Event> events = varied_events(60000);

    auto w = ZstdFileWriter::create(path, 3);
    REQUIRE(w.ok());
    std::string batch;
    uint64_t raw_total = 0;
    for (size_t i = 0; i < events.size(); ++i) {
        encode_event(events[i], batch);
        // Uneven batches, flushes now and then, and one finished frame in the middle: the reader
        // must see one stream whatever the block and frame boundaries.
        if (i % 97 == 0 || i + 1 == events.size()) {
            raw_total += batch.size();
            REQUIRE(w->write(batch).ok());
            batch.clear();
        }
        if (i % 5000 == 0) REQUIRE(w->flush().ok());
        if (i == events.size() / 2) REQUIRE(w->finish().ok());
    }
    REQUIRE(w->finish().ok());
    CHECK(w->raw_bytes() == raw_total);
    CHECK(w->compressed_bytes() == std::filesystem::file_size(path));
    CHECK(w->compressed_bytes() < w->raw_bytes());

    const ReadOutcome got = read_all(path);
    REQUIRE_MESSAGE(got.ok, got.message);
    CHECK(got.count == events.size());
    REQUIRE(got.events.size() == events.size());
    size_t mismatches = 0;
    for (size_t i = 0; i < events.size(); ++i)
        if (!(got.events[i] == events[i]) && mismatches++ < 5) FAIL_CHECK("event " << i << " differs");
    CHECK(mismatches == 0);
}

TEST_CASE("read_artifact_ahead: read_artifact's events in order, in full batches, its errors, and a caller that throws") {
    TempDir dir;
    const std::string path = dir / "ahead.MemtrackArtifact.msgpack";
    // More batches than the ring holds, so the reader waits for the caller; the last one partial.
    const size_t n = 2 * kReadAheadSlots * kReadAheadBatch + 17;
    const std::vector<Event> events = varied_events(n);
    write_zstd_file(path, encode_all(events));

    std::vector<Event> got;
    std::vector<size_t> sizes;
    auto r = read_artifact_ahead(path, [&](std::span<const Event> batch) {
        sizes.push_back(batch.size());
        got.insert(got.end(), batch.begin(), batch.end());
    });
    REQUIRE(r.ok());
    CHECK(r.value() == n);
    CHECK(got == events);
    REQUIRE(sizes.size() == 2 * kReadAheadSlots + 1);
    CHECK(std::count(sizes.begin(), sizes.end(), kReadAheadBatch) == 2 * kReadAheadSlots);
    CHECK(sizes.back() == 17);

    SUBCASE("an error comes after the events before it, as read_artifact gives both") {
        // 0xc1 is the one byte MessagePack never uses.
        const std::string bad = dir / "bad.MemtrackArtifact.msgpack";
        write_zstd_file(bad, encode_all(events) + "\xc1" + encode_all(events));
        const ReadOutcome direct = read_all(bad);
        REQUIRE_FALSE(direct.ok);
        got.clear();
        auto b = read_artifact_ahead(bad, [&](std::span<const Event> batch) { got.insert(got.end(), batch.begin(), batch.end()); });
        REQUIRE_FALSE(b.ok());
        CHECK(b.error().message() == direct.message);
        CHECK(got == direct.events);
        CHECK(got.size() == n);
    }
    SUBCASE("a caller that throws stops the reader and gets its exception") {
        size_t batches = 0;
        struct Enough {};
        CHECK_THROWS_AS(read_artifact_ahead(path,
                                            [&](std::span<const Event>) {
                                                if (++batches == 3) throw Enough{};
                                            }),
                        Enough);
        CHECK(batches == 3);
    }
    SUBCASE("an unreadable file is read_artifact's error") {
        auto none = read_artifact_ahead(dir / "none", [](std::span<const Event>) { FAIL("no events"); });
        REQUIRE_FALSE(none.ok());
        CHECK(none.error().message() == read_all(dir / "none").message);
    }
}

TEST_CASE("the written file decodes exactly as the format doc says") {
    // A decoder of its own, sharing nothing with read_artifact: decompress everything at once,
    // then MessagePack values back to back, each a map with the documented header and key order.
    TempDir dir;
    const std::string path = dir / "2.MemtrackArtifact.msgpack";
    const std::vector<Event> events = varied_events(5000);
    {
        auto w = ZstdFileWriter::create(path);
        REQUIRE(w.ok());
        for (size_t i = 0; i < events.size(); ++i) {
            REQUIRE(w->write(encoded(events[i])).ok());
            if (i == 1000) REQUIRE(w->flush().ok());
            if (i == 3000) REQUIRE(w->finish().ok());
        }
        REQUIRE(w->finish().ok());
    }

    const std::string z = read_file(path);
    std::string raw(encode_all(events).size() + 1, '\0');
    const size_t n = ZSTD_decompress(raw.data(), raw.size(), z.data(), z.size());
    REQUIRE_MESSAGE(!ZSTD_isError(n), ZSTD_getErrorName(n));
    raw.resize(n);

    size_t off = 0;
    size_t i = 0;
    for (; off < raw.size(); ++i) {
        REQUIRE(i < events.size());
        const Event& want = events[i];
        const bool old = want.kind == EventKind::Realloc && want.old_addr.has_value();
        const bool stack = is_allocation(want.kind) && want.stack_hash != 0;
        const unsigned header = (want.kind == EventKind::Free ? 0x85 : 0x86) + old + stack;
        REQUIRE(static_cast<unsigned char>(raw[off]) == header);

        msgpack::object_handle oh = msgpack::unpack(raw.data(), raw.size(), off);
        const msgpack::object& o = oh.get();
        REQUIRE(o.type == msgpack::type::MAP);
        std::vector<std::string> keys = {"pid", "tid", "timestamp", "addr", "type"};
        if (old) keys.push_back("old_addr");
        if (want.kind != EventKind::Free) keys.push_back("size");
        if (stack) keys.push_back("stack_hash");
        REQUIRE(o.via.map.size == keys.size());
        for (size_t k = 0; k < keys.size(); ++k) {
            const msgpack::object& key = o.via.map.ptr[k].key;
            REQUIRE(key.type == msgpack::type::STR);
            CHECK(std::string(key.via.str.ptr, key.via.str.size) == keys[k]);
            const msgpack::object& val = o.via.map.ptr[k].val;
            if (keys[k] == "pid") CHECK(val.as<int32_t>() == want.pid);
            if (keys[k] == "tid") CHECK(val.as<int32_t>() == want.tid);
            if (keys[k] == "timestamp") CHECK(val.as<uint64_t>() == want.timestamp);
            if (keys[k] == "addr") CHECK(val.as<uint64_t>() == want.addr);
            if (keys[k] == "type") CHECK(val.as<std::string>() == artifact_name(want.kind));
            if (keys[k] == "old_addr") CHECK(val.as<uint64_t>() == *want.old_addr);
            if (keys[k] == "size") CHECK(val.as<uint64_t>() == want.size);
            if (keys[k] == "stack_hash") CHECK(val.as<uint64_t>() == want.stack_hash);
        }
    }
    CHECK(i == events.size());
}

TEST_CASE("ZstdFileWriter edge cases") {
    TempDir dir;
    SUBCASE("finish with nothing written leaves a valid empty stream, not a 0-byte file") {
        const std::string path = dir / "empty.msgpack";
        auto w = ZstdFileWriter::create(path);
        REQUIRE(w.ok());
        REQUIRE(w->finish().ok());
        const uint64_t size = w->compressed_bytes();
        CHECK(size > 0);
        REQUIRE(w->finish().ok());
        CHECK(w->compressed_bytes() == size);
        const ReadOutcome got = read_all(path);
        CHECK_MESSAGE(got.ok, got.message);
        CHECK(got.count == 0);
    }
    SUBCASE("create reports errno") {
        auto w = ZstdFileWriter::create(dir / "no/such/dir/x.msgpack");
        REQUIRE(!w.ok());
        CHECK(w.error().err == ENOENT);
        CHECK(w.error().op == "output folder");  // the folder is opened first (OutputDir)
    }
    SUBCASE("moved-from writers give up ownership") {
        auto w = ZstdFileWriter::create(dir / "moved.msgpack");
        REQUIRE(w.ok());
        ZstdFileWriter a = std::move(w).value();
        ZstdFileWriter b = std::move(a);
        REQUIRE(b.write(encoded(reference(EventKind::Free))).ok());
        REQUIRE(b.finish().ok());
        const ReadOutcome got = read_all(dir / "moved.msgpack");
        CHECK(got.ok);
        CHECK(got.count == 1);
    }
}

TEST_CASE("truncated artifact delivers the flushed events, then reports where") {
    TempDir dir;
    const std::string path = dir / "3.MemtrackArtifact.msgpack";
    const std::vector<Event> events = varied_events(400);
    uint64_t after_first = 0;
    uint64_t after_second = 0;
    {
        auto w = ZstdFileWriter::create(path);
        REQUIRE(w.ok());
        for (size_t i = 0; i < 200; ++i) REQUIRE(w->write(encoded(events[i])).ok());
        REQUIRE(w->flush().ok());
        after_first = w->compressed_bytes();
        for (size_t i = 200; i < 400; ++i) REQUIRE(w->write(encoded(events[i])).ok());
        REQUIRE(w->flush().ok());
        after_second = w->compressed_bytes();
        REQUIRE(w->finish().ok());
    }
    REQUIRE(after_second > after_first + 2);
    const uint64_t cut = (after_first + after_second) / 2;
    std::filesystem::resize_file(path, cut);

    const ReadOutcome got = read_all(path);
    CHECK_FALSE(got.ok);
    CHECK(got.message == "truncated artifact: unfinished zstd frame at compressed offset 0: file ends at byte " +
                             std::to_string(cut));
    REQUIRE(got.events.size() == 200);
    for (size_t i = 0; i < 200; ++i) CHECK(got.events[i] == events[i]);
}

TEST_CASE("corrupt MessagePack in the middle stops after the good events") {
    TempDir dir;
    const std::string path = dir / "4.MemtrackArtifact.msgpack";
    Event a = reference(EventKind::Malloc);
    a.size = 64;
    Event b = reference(EventKind::Free);
    const std::string good = encoded(a) + encoded(b);
    // 0xc1 is the one byte MessagePack never uses.
    write_zstd_file(path, good + "\xc1\x01\x02" + encoded(a));

    const ReadOutcome got = read_all(path);
    CHECK_FALSE(got.ok);
    REQUIRE(got.events.size() == 2);
    CHECK(got.events[0] == a);
    CHECK(got.events[1] == b);
    CHECK(got.message == "corrupt event at decompressed offset " + std::to_string(good.size()) +
                             ": invalid MessagePack: parse error");
}

TEST_CASE("values that are not events are rejected with their offset") {
    TempDir dir;
    const std::string path = dir / "5.MemtrackArtifact.msgpack";
    Event a = reference(EventKind::Malloc);
    a.size = 64;
    const std::string prefix = encoded(a);
    const std::string at = "corrupt event at decompressed offset " + std::to_string(prefix.size()) + ": ";

    // A map built key by key, so a test can write what encode_event never would.
    auto map = [](std::function<void(msgpack::packer<msgpack::sbuffer>&)> body, uint32_t n) {
        msgpack::sbuffer buf;
        msgpack::packer<msgpack::sbuffer> pk(buf);
        pk.pack_map(n);
        body(pk);
        return std::string(buf.data(), buf.size());
    };
    auto common = [](msgpack::packer<msgpack::sbuffer>& pk, std::string_view type) {
        pk.pack(std::string("pid"));
        pk.pack(1);
        pk.pack(std::string("tid"));
        pk.pack(2);
        pk.pack(std::string("timestamp"));
        pk.pack(3);
        pk.pack(std::string("addr"));
        pk.pack(4);
        pk.pack(std::string("type"));
        pk.pack(std::string(type));
    };
    auto expect_error = [&](const std::string& value, const std::string& reason) {
        write_zstd_file(path, prefix + value);
        const ReadOutcome got = read_all(path);
        CHECK_FALSE(got.ok);
        CHECK(got.events.size() == 1);
        CHECK(got.message == at + reason);
    };

    SUBCASE("non-map value") {
        msgpack::sbuffer buf;
        msgpack::pack(buf, 5);
        expect_error(std::string(buf.data(), buf.size()), "expected a map, found uint");
    }
    SUBCASE("array instead of map") {
        msgpack::sbuffer buf;
        msgpack::pack(buf, std::vector<int>{1, 2});
        expect_error(std::string(buf.data(), buf.size()), "expected a map, found array");
    }
    SUBCASE("unknown type name") {
        expect_error(map([&](auto& pk) {
                         common(pk, "Foo");
                         pk.pack(std::string("size"));
                         pk.pack(1);
                     }, 6),
                     "unknown type 'Foo'");
    }
    SUBCASE("type names are case-sensitive") {
        expect_error(map([&](auto& pk) {
                         common(pk, "malloc");
                         pk.pack(std::string("size"));
                         pk.pack(1);
                     }, 6),
                     "unknown type 'malloc'");
    }
    SUBCASE("missing size") {
        expect_error(map([&](auto& pk) { common(pk, "Calloc"); }, 5), "missing key 'size' for Calloc");
    }
    SUBCASE("missing pid") {
        expect_error(map([&](auto& pk) {
                         pk.pack(std::string("type"));
                         pk.pack(std::string("Free"));
                     }, 1),
                     "missing key 'pid'");
    }
    SUBCASE("wrong value type") {
        expect_error(map([&](auto& pk) {
                         common(pk, "Malloc");
                         pk.pack(std::string("size"));
                         pk.pack(std::string("64"));
                     }, 6),
                     "key 'size': expected uint, found str");
    }
    SUBCASE("negative address") {
        expect_error(map([&](auto& pk) {
                         pk.pack(std::string("addr"));
                         pk.pack(-5);
                     }, 1),
                     "key 'addr': expected uint, found negative int");
    }
    SUBCASE("pid out of i32 range") {
        expect_error(map([&](auto& pk) {
                         pk.pack(std::string("pid"));
                         pk.pack(uint64_t(1) << 31);
                     }, 1),
                     "key 'pid': 2147483648 does not fit in i32");
    }
    SUBCASE("duplicate key") {
        expect_error(map([&](auto& pk) {
                         common(pk, "Free");
                         pk.pack(std::string("pid"));
                         pk.pack(1);
                     }, 6),
                     "duplicate key 'pid'");
    }
    SUBCASE("map header claiming billions of entries") {
        expect_error(hex("df ff ff ff ff"), "invalid MessagePack: map size overflow");
    }
    SUBCASE("value cut short at the end of a complete stream") {
        expect_error(encoded(a).substr(0, 20), "value cut short by the end of the stream (20 bytes left)");
    }
}

TEST_CASE("reader accepts any key order, unknown keys and nil old_addr") {
    TempDir dir;
    const std::string path = dir / "6.MemtrackArtifact.msgpack";
    msgpack::sbuffer buf;
    msgpack::packer<msgpack::sbuffer> pk(buf);
    pk.pack_map(8);
    pk.pack(std::string("size"));
    pk.pack(10);
    pk.pack(std::string("future_key"));
    pk.pack(std::string("whatever"));
    pk.pack(std::string("type"));
    pk.pack(std::string("Realloc"));
    pk.pack(std::string("old_addr"));
    pk.pack_nil();
    pk.pack(std::string("addr"));
    pk.pack(16);
    pk.pack(std::string("timestamp"));
    pk.pack(17);
    pk.pack(std::string("tid"));
    pk.pack(-2);
    pk.pack(std::string("pid"));
    pk.pack(7);
    write_zstd_file(path, std::string(buf.data(), buf.size()));

    const ReadOutcome got = read_all(path);
    REQUIRE_MESSAGE(got.ok, got.message);
    REQUIRE(got.events.size() == 1);
    Event want;
    want.pid = 7;
    want.tid = -2;
    want.timestamp = 17;
    want.addr = 16;
    want.kind = EventKind::Realloc;
    want.size = 10;
    CHECK(got.events[0] == want);
}

TEST_CASE("reader errors on files that are not artifacts") {
    TempDir dir;
    SUBCASE("empty file") {
        write_file(dir / "empty", "");
        const ReadOutcome got = read_all(dir / "empty");
        CHECK_FALSE(got.ok);
        CHECK(got.message == "empty artifact (0 bytes)");
    }
    SUBCASE("missing file") {
        const ReadOutcome got = read_all(dir / "missing");
        CHECK_FALSE(got.ok);
        CHECK(got.err == ENOENT);
    }
    SUBCASE("not zstd") {
        write_file(dir / "text", "hello, this is not zstd");
        const ReadOutcome got = read_all(dir / "text");
        CHECK_FALSE(got.ok);
        CHECK(got.message.rfind("corrupt zstd stream at compressed offset ", 0) == 0);
    }
    SUBCASE("damaged compressed bytes after a good frame") {
        const std::string path = dir / "damaged";
        Event a = reference(EventKind::Malloc);
        a.size = 1;
        write_zstd_file(path, encoded(a));
        const std::string first = read_file(path);
        write_file(path, first + first.substr(0, 4) + std::string(64, '\x55'));
        const ReadOutcome got = read_all(path);
        CHECK_FALSE(got.ok);
        CHECK(got.events.size() == 1);
        CHECK(got.message.rfind("corrupt zstd stream at compressed offset ", 0) == 0);
    }
}

TEST_CASE("event_to_json mirrors the artifact map") {
    Event m = reference(EventKind::Malloc);
    m.size = 64;
    CHECK(event_to_json(m) ==
          R"({"pid":4242,"tid":4243,"timestamp":1738000000123456789,"addr":139887554592832,"type":"Malloc","size":64})");

    Event f = reference(EventKind::Free);
    f.size = 3;
    f.stack_hash = 9;
    CHECK(event_to_json(f) ==
          R"({"pid":4242,"tid":4243,"timestamp":1738000000123456789,"addr":139887554592832,"type":"Free"})");

    Event r = reference(EventKind::Realloc);
    r.size = 200;
    r.old_addr = 0x7f3a1c000010ull;
    CHECK(event_to_json(r) ==
          R"({"pid":4242,"tid":4243,"timestamp":1738000000123456789,"addr":139887554592832,"type":"Realloc","old_addr":139887554592784,"size":200})");

    r.stack_hash = std::numeric_limits<uint64_t>::max();
    r.pid = -1;
    CHECK(event_to_json(r) ==
          R"({"pid":-1,"tid":4243,"timestamp":1738000000123456789,"addr":139887554592832,"type":"Realloc","old_addr":139887554592784,"size":200,"stack_hash":18446744073709551615})");
}

namespace {

Event ev(EventKind kind, int32_t pid, uint64_t addr, uint64_t size = 0) {
    Event e;
    e.kind = kind;
    e.pid = pid;
    e.tid = pid;
    e.addr = addr;
    e.size = size;
    return e;
}

std::vector<Event> summary_sequence() {
    // Blocks are per process: pid 1's realloc moves pid 1's block, which pid 1 frees.
    Event realloc_move = ev(EventKind::Realloc, 1, 0xc000, 200);
    realloc_move.old_addr = 0xb000;
    return {
        ev(EventKind::Malloc, 1, 0xa000, 100),       // live 100
        ev(EventKind::Calloc, 1, 0xb000, 50),        // live 150
        ev(EventKind::Free, 1, 0xa000),              // live 50
        realloc_move,                                // live 200 (b freed, c added)
        ev(EventKind::AlignedAlloc, 2, 0xd000, 64),  // live 264
        ev(EventKind::Free, 2, 0x1234),              // unknown block: no change
        ev(EventKind::Realloc, 2, 0xe000, 10),       // old pointer unknown: live 274 (peak)
        ev(EventKind::Free, 1, 0xc000),              // live 74
        ev(EventKind::Malloc, 1, 0, 1000),           // failed: counted, nothing live
        ev(EventKind::Mmap, 3, 0x10000, 4096),       // mapped 4096
        ev(EventKind::Mmap, 3, 0x20000, 8192),       // mapped 12288 (peak)
        ev(EventKind::Munmap, 3, 0x10000, 4096),     // mapped 8192
        ev(EventKind::Munmap, 3, 0x90000, 100),      // unknown mapping: no change
        ev(EventKind::Brk, 3, 0x555000, 0),
    };
}

}  // namespace

namespace {

// `dump --summary` of `events` written as an artifact, and the report's analysis of the same
// file (report::load, the artifact alone): the two routes a user reads the heap by.
struct TwoViews {
    std::string summary;
    report::Analysis report;
};
TwoViews both_views(const TempDir& dir, const std::vector<Event>& events) {
    const std::string path = dir / "1.MemtrackArtifact.msgpack";
    write_zstd_file(path, encode_all(events));
    Captured c = capture_output(dir, [&] { return run_dump({path, true}); });
    REQUIRE_MESSAGE(c.rc == 0, c.err);
    report::LoadOptions opt;
    opt.use_timeline = false;
    auto loaded = report::load(path, opt);
    REQUIRE_MESSAGE(loaded.ok(), loaded.error().message());
    return {c.out, std::move(loaded->analysis)};
}

}  // namespace

TEST_CASE("dump --summary totals a hand-made sequence, as the report does") {
    TempDir dir;
    const TwoViews v = both_views(dir, summary_sequence());
    CHECK(v.summary ==
          "kind                   count               bytes\n"
          "Malloc                     2                1100\n"
          "Free                       3                   -\n"
          "Realloc                    2                 210\n"
          "Calloc                     1                  50\n"
          "AlignedAlloc               1                  64\n"
          "Mmap                       2               12288\n"
          "Munmap                     2                4196\n"
          "Brk                        1                   0\n"
          "peak live heap bytes: 274\n"
          "live at end: 74 bytes in 2 blocks\n"
          "peak mapped bytes: 12288\n"
          "processes: 3\n");
    CHECK(v.report.peak_bytes == 274);
    CHECK(v.report.leaked_bytes == 74);
    CHECK(v.report.leaked_blocks == 2);
    CHECK(v.report.mapped_bytes == 8192);
}

// A process tree: the child's heap is a copy of the parent's address space, so both processes
// allocate at the same addresses. Keyed by address alone (format/Summary before), the child's
// block replaced the parent's and the parent's free then took the child's: dump --summary said
// "peak 200, live 0 bytes in 0 blocks" where the report said peak 300, 200 live in 1 block.
TEST_CASE("dump --summary and the report agree on a process tree reusing an address") {
    TempDir dir;
    const std::vector<Event> events = {
        ev(EventKind::Malloc, 10, 0xa000, 100),  // parent: live 100
        ev(EventKind::Malloc, 11, 0xa000, 200),  // child, same address: live 300 (peak)
        ev(EventKind::Free, 10, 0xa000),         // the parent's block: live 200, the child's
    };
    const TwoViews v = both_views(dir, events);
    CHECK(v.summary.find("peak live heap bytes: 300\n") != std::string::npos);
    CHECK(v.summary.find("live at end: 200 bytes in 1 blocks\n") != std::string::npos);
    CHECK(v.summary.find("processes: 2\n") != std::string::npos);
    CHECK(v.report.peak_bytes == 300);
    CHECK(v.report.leaked_bytes == 200);
    CHECK(v.report.leaked_blocks == 1);
    CHECK(v.report.unknown_frees == 0);
}

TEST_CASE("memtrack dump prints JSON lines or a summary, and what it read before an error") {
    TempDir dir;
    const std::string path = dir / "7.MemtrackArtifact.msgpack";
    Event a = reference(EventKind::Malloc);
    a.size = 64;
    Event b = reference(EventKind::Free);
    const std::string line_a = event_to_json(a) + "\n";
    const std::string line_b = event_to_json(b) + "\n";

    SUBCASE("whole file") {
        {
            auto w = ZstdFileWriter::create(path);
            REQUIRE(w.ok());
            REQUIRE(w->write(encoded(a) + encoded(b)).ok());
            REQUIRE(w->finish().ok());
        }
        Captured c = capture_output(dir, [&] { return run_dump({path, false}); });
        CHECK(c.rc == 0);
        CHECK(c.out == line_a + line_b);
        CHECK(c.err.empty());

        c = capture_output(dir, [&] { return run_dump({path, true}); });
        CHECK(c.rc == 0);
        CHECK(c.out.find("Malloc                     1                  64\n") != std::string::npos);
        CHECK(c.out.find("live at end: 0 bytes in 0 blocks\n") != std::string::npos);
        CHECK(c.out.find(R"("type")") == std::string::npos);
    }
    SUBCASE("corrupt file") {
        const std::string good = encoded(a) + encoded(b);
        write_zstd_file(path, good + "\xc1");
        const std::string error_line = "memtrack: dump: " + path + ": corrupt event at decompressed offset " +
                                       std::to_string(good.size()) + ": invalid MessagePack: parse error\n";

        Captured c = capture_output(dir, [&] { return run_dump({path, false}); });
        CHECK(c.rc == 1);
        CHECK(c.out == line_a + line_b);
        CHECK(c.err == error_line);

        c = capture_output(dir, [&] { return run_dump({path, true}); });
        CHECK(c.rc == 1);
        CHECK(c.out.find("Free                       1                   -\n") != std::string::npos);
        CHECK(c.err == error_line);
    }
}
