#include "format/EventObject.hpp"

#include <array>
#include <string_view>

#include <fmt/format.h>

#include "format/MsgpackStream.hpp"

namespace memtrack {
namespace {

using msgpack_stream::get_i32;
using msgpack_stream::get_u64;
using msgpack_stream::type_name;

enum Key { kPid, kTid, kTimestamp, kAddr, kType, kOldAddr, kSize, kStackHash, kKeyCount };
constexpr std::array<std::string_view, kKeyCount> kKeyNames{
    "pid", "tid", "timestamp", "addr", "type", "old_addr", "size", "stack_hash"};

// The Key named `name`, kKeyCount for none: by length first, since this runs for every key of
// every event (a search comparing each name in turn was a tenth of `memtrack report`'s time).
constexpr size_t key_of(std::string_view name) {
    switch (name.size()) {
        case 3: return name == kKeyNames[kPid] ? kPid : name == kKeyNames[kTid] ? kTid : kKeyCount;
        case 4:
            return name == kKeyNames[kAddr]   ? kAddr
                   : name == kKeyNames[kType] ? kType
                   : name == kKeyNames[kSize] ? kSize
                                              : kKeyCount;
        case 8: return name == kKeyNames[kOldAddr] ? kOldAddr : kKeyCount;
        case 9: return name == kKeyNames[kTimestamp] ? kTimestamp : kKeyCount;
        case 10: return name == kKeyNames[kStackHash] ? kStackHash : kKeyCount;
        default: return kKeyCount;
    }
}
static_assert([] {
    for (size_t k = 0; k < kKeyCount; ++k)
        if (key_of(kKeyNames[k]) != k) return false;
    return true;
}(), "key_of finds every key");

}  // namespace

std::optional<std::string> event_from_object(const msgpack::object& o, Event& e) {
    if (o.type != msgpack::type::MAP) return fmt::format("expected a map, found {}", type_name(o.type));
    std::array<bool, kKeyCount> seen{};
    std::string_view type;
    uint64_t old_addr = 0;
    uint64_t size = 0;
    uint64_t stack_hash = 0;
    bool old_addr_nil = false;

    for (uint32_t i = 0; i < o.via.map.size; ++i) {
        const msgpack::object& k = o.via.map.ptr[i].key;
        const msgpack::object& v = o.via.map.ptr[i].val;
        if (k.type != msgpack::type::STR) return fmt::format("map key is {}, not str", type_name(k.type));
        const std::string_view name(k.via.str.ptr, k.via.str.size);
        const size_t key = key_of(name);
        if (key == kKeyCount) continue;  // the runner ignores keys it does not know
        if (seen[key]) return fmt::format("duplicate key '{}'", name);
        seen[key] = true;

        std::optional<std::string> bad;
        switch (Key(key)) {
            case kPid: bad = get_i32(v, kKeyNames[kPid], e.pid); break;
            case kTid: bad = get_i32(v, kKeyNames[kTid], e.tid); break;
            case kTimestamp: bad = get_u64(v, kKeyNames[kTimestamp], e.timestamp); break;
            case kAddr: bad = get_u64(v, kKeyNames[kAddr], e.addr); break;
            case kType:
                if (v.type != msgpack::type::STR)
                    bad = fmt::format("key 'type': expected str, found {}", type_name(v.type));
                else
                    type = std::string_view(v.via.str.ptr, v.via.str.size);
                break;
            case kOldAddr:
                // The runner reads old_addr as an Option, so nil means "unknown" there too.
                if (v.type == msgpack::type::NIL)
                    old_addr_nil = true;
                else
                    bad = get_u64(v, kKeyNames[kOldAddr], old_addr);
                break;
            case kSize: bad = get_u64(v, kKeyNames[kSize], size); break;
            case kStackHash: bad = get_u64(v, kKeyNames[kStackHash], stack_hash); break;
            case kKeyCount: break;
        }
        if (bad) return bad;
    }

    for (Key required : {kPid, kTid, kTimestamp, kAddr, kType})
        if (!seen[required]) return fmt::format("missing key '{}'", kKeyNames[required]);
    const std::optional<EventKind> kind = kind_from_artifact_name(type);
    if (!kind) return fmt::format("unknown type '{}'", type);
    e.kind = *kind;
    if (e.kind != EventKind::Free) {
        if (!seen[kSize]) return fmt::format("missing key 'size' for {}", type);
        e.size = size;
    }
    if (e.kind == EventKind::Realloc && seen[kOldAddr] && !old_addr_nil) e.old_addr = old_addr;
    if (is_allocation(e.kind)) e.stack_hash = stack_hash;
    return std::nullopt;
}

}  // namespace memtrack
