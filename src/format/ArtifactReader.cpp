#include "format/ArtifactReader.hpp"

#include <optional>

#include <msgpack.hpp>

#include "format/EventFastPath.hpp"
#include "format/EventObject.hpp"
#include "format/MsgpackStream.hpp"

namespace memtrack {
namespace {

// msgpack allocates a map's or array's slots as soon as it reads the header, so a corrupt header
// claiming 2^32 entries would exhaust memory before any check of ours runs. An event has at most
// 8 keys; the rest is generous room for keys a newer writer might add.
const msgpack::unpack_limit kLimits(/*array=*/64, /*map=*/64, /*str=*/4096, /*bin=*/4096,
                                    /*ext=*/4096, /*depth=*/4);
// An event takes under 100 bytes; this leaves the same generous room, and bounds what a value
// that never ends can make the reader hold.
constexpr size_t kMaxEventBytes = 64 * 1024;

}  // namespace

Result<uint64_t> read_artifact(const std::string& path, const std::function<void(const Event&)>& on_event) {
    auto generic = [&](const msgpack::object& o, uint64_t) -> std::optional<std::string> {
        Event e;
        if (auto bad = event_from_object(o, e)) return bad;
        on_event(e);
        return std::nullopt;
    };
    // Every event memtrack writes takes this path; the generic one sees only what it cannot
    // vouch for (EventFastPath.hpp).
    auto fast = [&](const char* data, size_t len) {
        msgpack_stream::Taken taken;
        while (taken.bytes < len) {
            Event e;
            const size_t n = decode_event_fast(data + taken.bytes, len - taken.bytes, e);
            if (n == 0) break;
            on_event(e);
            taken.bytes += n;
            ++taken.values;
        }
        return taken;
    };
    return msgpack_stream::read_stream(path, kLimits, kMaxEventBytes, {.value = "event", .file = "artifact"}, generic, fast);
}

}  // namespace memtrack
