#include "format/Record.hpp"

#include <array>
#include <utility>

namespace memtrack {
namespace {
constexpr std::array<std::pair<EventKind, std::string_view>, 8> kArtifactNames{{
    {EventKind::Malloc, "Malloc"},
    {EventKind::Free, "Free"},
    {EventKind::Realloc, "Realloc"},
    {EventKind::Calloc, "Calloc"},
    {EventKind::AlignedAlloc, "AlignedAlloc"},
    {EventKind::Mmap, "Mmap"},
    {EventKind::Munmap, "Munmap"},
    {EventKind::Brk, "Brk"},
}};
}  // namespace

std::string_view artifact_name(EventKind kind) {
    for (auto& [k, name] : kArtifactNames)
        if (k == kind) return name;
    return {};
}

std::optional<EventKind> kind_from_artifact_name(std::string_view name) {
    for (auto& [k, n] : kArtifactNames)
        if (n == name) return k;
    return std::nullopt;
}

bool is_artifact_kind(EventKind kind) { return !artifact_name(kind).empty(); }

bool is_allocation(EventKind kind) {
    return kind == EventKind::Malloc || kind == EventKind::Calloc || kind == EventKind::Realloc ||
           kind == EventKind::AlignedAlloc;
}

std::optional<Event> decode_record(const mt_record& r) {
    const uint32_t k = mt_record_kind(&r);
    const bool known = (k >= MT_KIND_MALLOC && k <= MT_KIND_BRK) || (k >= MT_KIND_FORK && k <= MT_KIND_EXIT);
    if (!known) return std::nullopt;
    Event e;
    e.pid = int32_t(r.pid);
    e.tid = int32_t(r.tid);
    e.timestamp = r.timestamp;
    e.addr = r.addr;
    e.kind = EventKind(k);
    e.size = mt_record_size(&r);
    if (mt_record_flags(&r) & MT_FLAG_OLD_ADDR) e.old_addr = r.old_addr;
    e.stack_hash = r.stack_hash;
    return e;
}

}  // namespace memtrack
