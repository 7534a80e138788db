#include "format/ArtifactEncoder.hpp"

#include <cassert>
#include <cstdint>
#include <string_view>

#include <msgpack.hpp>

#include "format/MsgpackStream.hpp"

namespace memtrack {

void encode_event(const Event& e, std::string& out) {
    const std::string_view type = artifact_name(e.kind);
    assert(!type.empty() && "encode_event: kind is not an artifact kind");
    if (type.empty()) return;

    // The runner's schema: old_addr exists only on Realloc, size on everything but Free, and
    // stack_hash only on allocations, where 0 means "no stack" and is left out.
    const bool with_old_addr = e.kind == EventKind::Realloc && e.old_addr.has_value();
    const bool with_size = e.kind != EventKind::Free;
    const bool with_stack = is_allocation(e.kind) && e.stack_hash != 0;

    using msgpack_stream::pack_string;
    using msgpack_stream::StringSink;
    StringSink sink{out};
    msgpack::packer<StringSink> pk(sink);
    pk.pack_map(5 + uint32_t(with_old_addr) + uint32_t(with_size) + uint32_t(with_stack));
    // packer picks the shortest form, and the unsigned forms for non-negative signed values,
    // which is what rmp-serde writes and what the golden bytes in the format doc show.
    pack_string(pk, "pid");
    pk.pack_int32(e.pid);
    pack_string(pk, "tid");
    pk.pack_int32(e.tid);
    pack_string(pk, "timestamp");
    pk.pack_uint64(e.timestamp);
    pack_string(pk, "addr");
    pk.pack_uint64(e.addr);
    pack_string(pk, "type");
    pack_string(pk, type);
    if (with_old_addr) {
        pack_string(pk, "old_addr");
        pk.pack_uint64(*e.old_addr);
    }
    if (with_size) {
        pack_string(pk, "size");
        pk.pack_uint64(e.size);
    }
    if (with_stack) {
        pack_string(pk, "stack_hash");
        pk.pack_uint64(e.stack_hash);
    }
}

}  // namespace memtrack
