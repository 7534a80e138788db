#include "format/EventFastPath.hpp"

#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>

namespace memtrack {
namespace {

// A cursor over one value's bytes; every read checks the end, and a failed read poisons it.
struct Cursor {
    const uint8_t* p;
    const uint8_t* end;
    bool ok = true;

    bool has(size_t n) const { return size_t(end - p) >= n; }
    uint8_t byte() {
        if (!has(1)) return ok = false, 0;
        return *p++;
    }
    uint64_t big_endian(size_t n) {
        if (!has(n)) return ok = false, 0;
        uint64_t v = 0;
        for (size_t i = 0; i < n; ++i) v = (v << 8) | p[i];
        p += n;
        return v;
    }
    // A fixstr (what the encoder writes for keys and type names); empty and !ok otherwise.
    std::string_view fixstr() {
        const uint8_t tag = byte();
        if ((tag & 0xe0) != 0xa0) return ok = false, std::string_view{};
        const size_t n = tag & 0x1f;
        if (!has(n)) return ok = false, std::string_view{};
        std::string_view s(reinterpret_cast<const char*>(p), n);
        p += n;
        return s;
    }
    // The unsigned forms msgpack-cxx reads as POSITIVE_INTEGER (the signed forms holding
    // non-negative values too, but the encoder never writes those: left to the generic path).
    uint64_t uint() {
        const uint8_t tag = byte();
        if (tag < 0x80) return tag;
        if (tag >= 0xcc && tag <= 0xcf) return big_endian(size_t(1) << (tag - 0xcc));
        return ok = false, 0;
    }
    // What get_i32 accepts from the forms the encoder writes for a pid or a tid.
    int32_t i32() {
        const uint8_t tag = byte();
        if (tag < 0x80) return int32_t(tag);
        if (tag >= 0xe0) return int32_t(int8_t(tag));  // negative fixint
        if (tag >= 0xcc && tag <= 0xcf) {
            const uint64_t v = big_endian(size_t(1) << (tag - 0xcc));
            if (v > uint64_t(std::numeric_limits<int32_t>::max())) ok = false;
            return int32_t(v);
        }
        if (tag >= 0xd0 && tag <= 0xd2) {
            const size_t n = size_t(1) << (tag - 0xd0);
            const uint64_t raw = big_endian(n);
            // Sign-extend from n bytes.
            const unsigned shift = unsigned(64 - 8 * n);
            return int32_t(int64_t(raw << shift) >> shift);
        }
        return ok = false, 0;
    }
};

// `s` is `lit`, once the caller knows their lengths are equal: a compare of constant length,
// which the compiler inlines (a string_view == calls memcmp for every key of every event).
template <size_t N>
bool same(std::string_view s, const char (&lit)[N]) {
    return std::memcmp(s.data(), lit, N - 1) == 0;
}

// The artifact's type names (kArtifactNames), by length first: this runs for every event.
bool kind_of(std::string_view name, EventKind& kind) {
    auto is = [&]<size_t N>(const char (&want)[N], EventKind k) {
        if (!same(name, want)) return false;
        kind = k;
        return true;
    };
    switch (name.size()) {
        case 3: return is("Brk", EventKind::Brk);
        case 4: return is("Free", EventKind::Free) || is("Mmap", EventKind::Mmap);
        case 6:
            return is("Malloc", EventKind::Malloc) || is("Calloc", EventKind::Calloc) ||
                   is("Munmap", EventKind::Munmap);
        case 7: return is("Realloc", EventKind::Realloc);
        case 12: return is("AlignedAlloc", EventKind::AlignedAlloc);
        default: return false;
    }
}

}  // namespace

size_t decode_event_fast(const char* data, size_t len, Event& e) {
    Cursor c{reinterpret_cast<const uint8_t*>(data), reinterpret_cast<const uint8_t*>(data) + len};
    const uint8_t header = c.byte();
    // A fixmap: the encoder writes 5 to 8 keys.
    if (!c.ok || (header & 0xf0) != 0x80) return 0;
    const unsigned keys = header & 0x0f;

    enum : unsigned { kPid = 1, kTid = 2, kTimestamp = 4, kAddr = 8, kType = 16, kOldAddr = 32, kSize = 64, kStack = 128 };
    unsigned seen = 0;
    uint64_t old_addr = 0, size = 0, stack_hash = 0;
    bool old_addr_nil = false;
    auto first = [&](unsigned bit) {
        if (seen & bit) return c.ok = false;  // a duplicate: the generic path words the error
        seen |= bit;
        return true;
    };

    for (unsigned i = 0; i < keys && c.ok; ++i) {
        const std::string_view key = c.fixstr();
        if (!c.ok) return 0;
        // Keys by length, then by their one distinguishing character.
        switch (key.size()) {
            case 3:
                if (same(key, "pid") && first(kPid)) e.pid = c.i32();
                else if (same(key, "tid") && first(kTid)) e.tid = c.i32();
                else return 0;
                break;
            case 4:
                if (same(key, "addr") && first(kAddr)) e.addr = c.uint();
                else if (same(key, "type") && first(kType)) {
                    if (!kind_of(c.fixstr(), e.kind)) return 0;
                } else if (same(key, "size") && first(kSize)) size = c.uint();
                else return 0;
                break;
            case 8:
                if (!same(key, "old_addr") || !first(kOldAddr)) return 0;
                if (c.has(1) && *c.p == 0xc0) {  // nil: "unknown", as the runner reads it
                    ++c.p;
                    old_addr_nil = true;
                } else {
                    old_addr = c.uint();
                }
                break;
            case 9:
                if (!same(key, "timestamp") || !first(kTimestamp)) return 0;
                e.timestamp = c.uint();
                break;
            case 10:
                if (!same(key, "stack_hash") || !first(kStack)) return 0;
                stack_hash = c.uint();
                break;
            default: return 0;  // a key this reader does not know: the generic path skips it
        }
    }
    if (!c.ok) return 0;
    constexpr unsigned kRequired = kPid | kTid | kTimestamp | kAddr | kType;
    if ((seen & kRequired) != kRequired) return 0;
    // What to_event in ArtifactReader.cpp keeps of the kind-dependent keys.
    if (e.kind != EventKind::Free) {
        if (!(seen & kSize)) return 0;
        e.size = size;
    }
    if (e.kind == EventKind::Realloc && (seen & kOldAddr) && !old_addr_nil) e.old_addr = old_addr;
    if (is_allocation(e.kind)) e.stack_hash = stack_hash;
    return size_t(reinterpret_cast<const char*>(c.p) - data);
}

}  // namespace memtrack
