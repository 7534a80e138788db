// The artifact reader's fast path (format/EventFastPath.hpp) against its generic path
// (format/EventObject.hpp): whatever bytes the fast path accepts, the generic path must decode
// to the same event, and it must accept everything memtrack's encoder writes.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <msgpack.hpp>

#include "format/ArtifactEncoder.hpp"
#include "format/EventFastPath.hpp"
#include "format/EventObject.hpp"

using namespace memtrack;

namespace {

std::string encoded(const Event& e) {
    std::string out;
    encode_event(e, out);
    return out;
}

// A spread of events: every artifact kind, integers at each width's edges, negative ids.
std::vector<Event> sample_events() {
    const std::vector<uint64_t> numbers{0, 1, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 0xffffffffull, 0x100000000ull,
                                        UINT64_MAX};
    const std::vector<int32_t> ids{0, 1, 127, 128, 70000, INT32_MAX, -1, -32, -33, -128, -129, -40000, INT32_MIN};
    std::vector<Event> out;
    std::mt19937_64 rng(13);
    for (EventKind kind : {EventKind::Malloc, EventKind::Free, EventKind::Realloc, EventKind::Calloc,
                           EventKind::AlignedAlloc, EventKind::Mmap, EventKind::Munmap, EventKind::Brk}) {
        for (int i = 0; i < 60; ++i) {
            Event e;
            e.kind = kind;
            e.pid = ids[rng() % ids.size()];
            e.tid = ids[rng() % ids.size()];
            e.timestamp = numbers[rng() % numbers.size()];
            e.addr = numbers[rng() % numbers.size()];
            if (kind != EventKind::Free) e.size = numbers[rng() % numbers.size()];
            if (kind == EventKind::Realloc && i % 2) e.old_addr = numbers[rng() % numbers.size()];
            if (is_allocation(kind)) e.stack_hash = numbers[rng() % numbers.size()];
            out.push_back(e);
        }
    }
    return out;
}

// The generic path's answer for `bytes`, as a whole value: nullopt when it rejects them or
// they are not exactly one value.
std::optional<Event> generic(const std::string& bytes) {
    try {
        size_t off = 0;
        msgpack::object_handle h = msgpack::unpack(bytes.data(), bytes.size(), off);
        if (off != bytes.size()) return std::nullopt;
        Event e;
        if (event_from_object(h.get(), e)) return std::nullopt;
        return e;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

}  // namespace

TEST_CASE("the fast path decodes every event the encoder writes, and no prefix of one") {
    for (const Event& e : sample_events()) {
        const std::string bytes = encoded(e);
        Event got;
        REQUIRE(decode_event_fast(bytes.data(), bytes.size(), got) == bytes.size());
        CHECK(got == e);
        for (size_t n = 0; n < bytes.size(); ++n) {
            Event partial;
            CHECK(decode_event_fast(bytes.data(), n, partial) == 0);
        }
    }
}

TEST_CASE("what the fast path accepts, the generic path decodes the same") {
    // Every byte of every sample replaced by a few values: wrong types, other integer forms,
    // other key lengths, map sizes. The fast path may decline any of them; it must never
    // accept one the generic path rejects or reads otherwise.
    const std::vector<uint8_t> replacements{0x00, 0x05, 0x7f, 0x80, 0x83, 0x85, 0x89, 0x8f, 0xa0, 0xa3, 0xa4,
                                            0xc0, 0xc2, 0xcc, 0xcd, 0xce, 0xcf, 0xd0, 0xd2, 0xd3, 0xe0, 0xff};
    size_t accepted = 0;
    for (const Event& e : sample_events()) {
        const std::string bytes = encoded(e);
        for (size_t at = 0; at < bytes.size(); ++at) {
            for (uint8_t r : replacements) {
                std::string mutated = bytes;
                mutated[at] = char(r);
                Event fast;
                const size_t n = decode_event_fast(mutated.data(), mutated.size(), fast);
                if (n == 0) continue;
                ++accepted;
                const std::optional<Event> want = generic(mutated.substr(0, n));
                REQUIRE_MESSAGE(want.has_value(), "fast path accepted what the generic path rejects, byte ", at,
                                " = ", int(r));
                CHECK(fast == *want);
            }
        }
    }
    CHECK(accepted > 0);
}
