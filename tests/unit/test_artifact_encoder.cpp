// The artifact encoder writes MessagePack bytes itself (for speed); here it is checked against
// msgpack-c's packer, the encoder it replaced, on every integer width and every map shape.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <msgpack.hpp>

#include "format/ArtifactEncoder.hpp"
#include "format/Record.hpp"

using namespace memtrack;

namespace {

// The previous encoder, key by key through msgpack-c's packer.
std::string reference_encode(const Event& e) {
    msgpack::sbuffer buf;
    msgpack::packer<msgpack::sbuffer> pk(buf);
    auto str = [&](std::string_view s) {
        pk.pack_str(uint32_t(s.size()));
        pk.pack_str_body(s.data(), uint32_t(s.size()));
    };
    const bool with_old_addr = e.kind == EventKind::Realloc && e.old_addr.has_value();
    const bool with_size = e.kind != EventKind::Free;
    const bool with_stack = is_allocation(e.kind) && e.stack_hash != 0;
    pk.pack_map(5 + uint32_t(with_old_addr) + uint32_t(with_size) + uint32_t(with_stack));
    str("pid");
    pk.pack_int32(e.pid);
    str("tid");
    pk.pack_int32(e.tid);
    str("timestamp");
    pk.pack_uint64(e.timestamp);
    str("addr");
    pk.pack_uint64(e.addr);
    str("type");
    str(artifact_name(e.kind));
    if (with_old_addr) {
        str("old_addr");
        pk.pack_uint64(*e.old_addr);
    }
    if (with_size) {
        str("size");
        pk.pack_uint64(e.size);
    }
    if (with_stack) {
        str("stack_hash");
        pk.pack_uint64(e.stack_hash);
    }
    return {buf.data(), buf.size()};
}

}  // namespace

TEST_CASE("encoder writes what msgpack-c's packer writes") {
    const std::vector<int32_t> ints{0, 1, 31, 127, 128, 255, 256, 65535, 65536, std::numeric_limits<int32_t>::max(),
                                    -1, -32, -33, -128, -129, -32768, -32769, std::numeric_limits<int32_t>::min()};
    const std::vector<uint64_t> uints{0, 1, 127, 128, 255, 256, 65535, 65536, 0xffffffffull, 0x100000000ull,
                                      0x7f3a00001000ull, std::numeric_limits<uint64_t>::max()};
    std::mt19937_64 rng(42);
    auto pick_uint = [&] {
        // Half the time a boundary, otherwise a random value of random width.
        if (rng() & 1) return uints[rng() % uints.size()];
        return rng() >> (rng() % 64);
    };
    size_t checked = 0;
    for (auto [kind, name] : kArtifactNames) {
        for (int i = 0; i < 2000; ++i) {
            Event e;
            e.kind = kind;
            e.pid = ints[rng() % ints.size()];
            e.tid = (rng() & 1) ? ints[rng() % ints.size()] : int32_t(rng());
            e.timestamp = pick_uint();
            e.addr = pick_uint();
            e.size = kind == EventKind::Free ? 0 : pick_uint();
            if (rng() % 3) e.old_addr = pick_uint();
            e.stack_hash = (rng() % 4 == 0) ? 0 : pick_uint();

            const std::string want = reference_encode(e);
            std::string got;
            encode_event(e, got);
            REQUIRE_MESSAGE(got == want, name, " event ", i);
            char buf[kMaxEncodedEventBytes];
            REQUIRE(std::string(buf, encode_event(e, buf)) == want);
            ++checked;
        }
    }
    CHECK(checked == 8 * 2000);
}

TEST_CASE("encode_record writes what encode_event writes for the decoded record") {
    std::mt19937_64 rng(7);
    size_t checked = 0;
    for (int i = 0; i < 20000; ++i) {
        mt_record r{};
        r.timestamp = rng() >> (rng() % 64);
        r.addr = rng() >> (rng() % 64);
        r.old_addr = rng() >> (rng() % 64);
        r.stack_hash = (rng() % 4 == 0) ? 0 : rng() >> (rng() % 64);
        r.pid = uint32_t(rng());
        r.tid = (rng() & 1) ? uint32_t(rng() % 100000) : uint32_t(rng());
        const auto kind = uint32_t(MT_KIND_MALLOC + rng() % (MT_KIND_BRK - MT_KIND_MALLOC + 1));
        r.size_kind = mt_pack_size_kind(rng() >> (rng() % 64), kind, (rng() & 1) ? MT_FLAG_OLD_ADDR : 0);

        const auto e = decode_record(r);
        REQUIRE(e.has_value());
        std::string want;
        encode_event(*e, want);
        char buf[kMaxEncodedEventBytes];
        REQUIRE_MESSAGE(std::string(buf, encode_record(r, buf)) == want, "record ", i);
        ++checked;
    }
    CHECK(checked == 20000);
}
