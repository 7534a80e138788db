#include "format/ArtifactEncoder.hpp"

#include <array>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace memtrack {
namespace {

// The Writer encodes millions of events a second, so the encoder writes MessagePack bytes
// itself: keys and type names are constant byte strings copied whole, integers take the form
// msgpack-c's packer picks (the shortest one, and the unsigned forms for non-negative signed
// values), which is what rmp-serde writes and what the golden bytes in the format doc show.
// tests/unit/test_artifact_encoder.cpp checks it against msgpack-c's packer.

// A key or a type name as a MessagePack fixstr: the 0xa0|length byte, then the characters.
template <size_t N>
struct FixStr {
    std::array<char, N> bytes{};
    consteval FixStr(const char (&s)[N]) {
        static_assert(N - 1 < 32, "fixstr holds at most 31 bytes");
        bytes[0] = char(0xa0 | (N - 1));
        for (size_t i = 0; i + 1 < N; ++i) bytes[i + 1] = s[i];
    }
};

template <size_t N>
char* put(char* p, const FixStr<N>& s) {
    std::memcpy(p, s.bytes.data(), N);
    return p + N;
}

template <typename T>
char* put_be(char* p, uint8_t tag, T v) {
    *p++ = char(tag);
    for (int shift = 8 * (int(sizeof(T)) - 1); shift >= 0; shift -= 8) *p++ = char(uint8_t(v >> shift));
    return p;
}

// Stores the tag and always 8 value bytes (one unaligned store, no loop), then advances by the
// form's length. The bytes past it are overwritten by the next field; at the end of an event
// they stay within kMaxEncodedEventBytes, which counts every integer at its widest (9 bytes).
char* put_uint(char* p, uint64_t v) {
    if (v < 0x80) {
        *p = char(v);  // positive fixint
        return p + 1;
    }
    // 0xcc uint8, 0xcd uint16, 0xce uint32, 0xcf uint64
    const unsigned form = unsigned(v >= 0x100) + unsigned(v >= 0x10000) + unsigned(v >= 0x100000000ull);
    const unsigned bytes = 1u << form;
    p[0] = char(0xcc + form);
    const uint64_t big_endian = __builtin_bswap64(v << (64 - 8 * bytes));
    std::memcpy(p + 1, &big_endian, sizeof(big_endian));
    return p + 1 + bytes;
}

char* put_int(char* p, int32_t v) {
    if (v >= 0) return put_uint(p, uint64_t(v));
    if (v >= -32) {
        *p = char(int8_t(v));  // negative fixint
        return p + 1;
    }
    if (v >= -128) return put_be(p, 0xd0, uint8_t(v));
    if (v >= -32768) return put_be(p, 0xd1, uint16_t(v));
    return put_be(p, 0xd2, uint32_t(v));
}

constexpr FixStr kPid{"pid"};
constexpr FixStr kTid{"tid"};
constexpr FixStr kTimestamp{"timestamp"};
constexpr FixStr kAddr{"addr"};
constexpr FixStr kType{"type"};
constexpr FixStr kOldAddr{"old_addr"};
constexpr FixStr kSize{"size"};
constexpr FixStr kStackHash{"stack_hash"};

// The `type` value of every artifact kind, indexed by EventKind; empty for the others.
struct TypeValue {
    char bytes[16];
    uint8_t len;
};
constexpr auto kTypeValues = [] {
    std::array<TypeValue, 256> t{};
    for (EventKind k : {EventKind::Malloc, EventKind::Free, EventKind::Realloc, EventKind::Calloc,
                        EventKind::AlignedAlloc, EventKind::Mmap, EventKind::Munmap, EventKind::Brk}) {
        const std::string_view name = artifact_name(k);
        TypeValue& v = t[size_t(k)];
        v.bytes[0] = char(0xa0 | name.size());
        for (size_t i = 0; i < name.size(); ++i) v.bytes[i + 1] = name[i];
        v.len = uint8_t(name.size() + 1);
    }
    return t;
}();

// The longest map: every key, 5-byte int32s, 9-byte uint64s, "AlignedAlloc".
static_assert(1 + 2 * (4 + 5) + (10 + 9) + (5 + 9) + (5 + 13) + (9 + 9) + (5 + 9) + (11 + 9) <= kMaxEncodedEventBytes);
// The type value is copied as a whole TypeValue::bytes, past its end: that must fit too.
static_assert(1 + 2 * (4 + 5) + (10 + 9) + (5 + 9) + 5 + sizeof(TypeValue::bytes) <= kMaxEncodedEventBytes);


// What an event and a ring record have in common: encode_event and encode_record write through
// this, so both write the same bytes by construction.
struct Fields {
    EventKind kind;
    int32_t pid, tid;
    uint64_t timestamp, addr;
    bool has_old_addr;
    uint64_t old_addr, size, stack_hash;
};

[[gnu::always_inline]] inline char* encode_fields(const Fields& e, char* p) {
    const TypeValue& type = kTypeValues[size_t(e.kind)];
    assert(type.len != 0 && "encode_event: kind is not an artifact kind");
    if (type.len == 0) return p;

    // The runner's schema: old_addr exists only on Realloc, size on everything but Free, and
    // stack_hash only on allocations, where 0 means "no stack" and is left out.
    const bool with_old_addr = e.kind == EventKind::Realloc && e.has_old_addr;
    const bool with_size = e.kind != EventKind::Free;
    const bool with_stack = is_allocation(e.kind) && e.stack_hash != 0;

    *p++ = char(0x80 | (5 + int(with_old_addr) + int(with_size) + int(with_stack)));  // fixmap
    p = put_int(put(p, kPid), e.pid);
    p = put_int(put(p, kTid), e.tid);
    p = put_uint(put(p, kTimestamp), e.timestamp);
    p = put_uint(put(p, kAddr), e.addr);
    p = put(p, kType);
    std::memcpy(p, type.bytes, sizeof(type.bytes));  // fixed size: one move; only len counts
    p += type.len;
    if (with_old_addr) p = put_uint(put(p, kOldAddr), e.old_addr);
    if (with_size) p = put_uint(put(p, kSize), e.size);
    if (with_stack) p = put_uint(put(p, kStackHash), e.stack_hash);
    return p;
}

}  // namespace

char* encode_event(const Event& e, char* p) {
    return encode_fields({e.kind, e.pid, e.tid, e.timestamp, e.addr, e.old_addr.has_value(), e.old_addr.value_or(0),
                          e.size, e.stack_hash},
                         p);
}

char* encode_record(const mt_record& r, char* p) {
    return encode_fields({EventKind(mt_record_kind(&r)), int32_t(r.pid), int32_t(r.tid), r.timestamp, r.addr,
                          (mt_record_flags(&r) & MT_FLAG_OLD_ADDR) != 0, r.old_addr, mt_record_size(&r),
                          r.stack_hash},
                         p);
}

void encode_event(const Event& e, std::string& out) {
    char buf[kMaxEncodedEventBytes];
    out.append(buf, size_t(encode_event(e, buf) - buf));
}

}  // namespace memtrack
