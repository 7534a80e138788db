#include "format/JsonLines.hpp"

// Boost.JSON is used header-only: this is the one translation unit of the whole project that
// compiles its implementation. Every other file includes the ordinary <boost/json/...> headers
// and links against what this one defines; a second src.hpp would give duplicate symbols.
#include <boost/json/src.hpp>

namespace memtrack {

boost::json::object event_to_json_object(const Event& e) {
    // boost::json::object keeps insertion order, so the keys come out in the artifact's order.
    boost::json::object o;
    o["pid"] = e.pid;
    o["tid"] = e.tid;
    o["timestamp"] = e.timestamp;
    o["addr"] = e.addr;
    const std::string_view type = artifact_name(e.kind);
    o["type"] = boost::json::string_view(type.data(), type.size());
    // The same rules as encode_event, so a dump shows exactly what the runner would see.
    if (e.kind == EventKind::Realloc && e.old_addr) o["old_addr"] = *e.old_addr;
    if (e.kind != EventKind::Free) o["size"] = e.size;
    if (is_allocation(e.kind) && e.stack_hash != 0) o["stack_hash"] = e.stack_hash;
    return o;
}

std::string event_to_json(const Event& e) { return boost::json::serialize(event_to_json_object(e)); }

}  // namespace memtrack
