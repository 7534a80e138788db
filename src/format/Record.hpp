#pragma once
// The C++ view of the BPF record (src/bpf/record.h) and the decoded event every stage passes on.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

extern "C" {
#include "bpf/record.h"
}

namespace memtrack {

// The layout is shared with the kernel programs: a change there must fail this build.
static_assert(sizeof(mt_record) == 48);
static_assert(offsetof(mt_record, timestamp) == 0);
static_assert(offsetof(mt_record, addr) == 8);
static_assert(offsetof(mt_record, size_kind) == 16);
static_assert(offsetof(mt_record, old_addr) == 24);
static_assert(offsetof(mt_record, stack_hash) == 32);
static_assert(offsetof(mt_record, pid) == 40);
static_assert(offsetof(mt_record, tid) == 44);
static_assert(MT_RECORD_VERSION == 1);
static_assert(sizeof(mt_spawn) == 24);
static_assert(offsetof(mt_spawn, start_boottime) == 8);
static_assert(offsetof(mt_spawn, hold) == 16);

enum class EventKind : uint8_t {
    Malloc = MT_KIND_MALLOC,
    Free = MT_KIND_FREE,
    Realloc = MT_KIND_REALLOC,
    Calloc = MT_KIND_CALLOC,
    AlignedAlloc = MT_KIND_ALIGNED_ALLOC,
    Mmap = MT_KIND_MMAP,
    Munmap = MT_KIND_MUNMAP,
    Brk = MT_KIND_BRK,
    Fork = MT_KIND_FORK,
    Exec = MT_KIND_EXEC,
    Exit = MT_KIND_EXIT,
};

// The artifact's `type` names. These and the functions below are inline: the Writer calls
// them for every record.
inline constexpr std::array<std::pair<EventKind, std::string_view>, 8> kArtifactNames{{
    {EventKind::Malloc, "Malloc"},
    {EventKind::Free, "Free"},
    {EventKind::Realloc, "Realloc"},
    {EventKind::Calloc, "Calloc"},
    {EventKind::AlignedAlloc, "AlignedAlloc"},
    {EventKind::Mmap, "Mmap"},
    {EventKind::Munmap, "Munmap"},
    {EventKind::Brk, "Brk"},
}};

// The artifact's `type` string; empty for kinds that never go into the artifact.
constexpr std::string_view artifact_name(EventKind kind) {
    for (auto& [k, name] : kArtifactNames)
        if (k == kind) return name;
    return {};
}
// Parses an artifact `type` string.
std::optional<EventKind> kind_from_artifact_name(std::string_view name);
// True for the kinds the MemtrackArtifact holds: the range record.h keeps them in (a range check,
// not a search: the Writer asks for every record).
constexpr bool is_artifact_kind(EventKind kind) {
    return uint8_t(kind) >= MT_KIND_MALLOC && uint8_t(kind) <= MT_KIND_BRK;
}
static_assert([] {
    for (unsigned k = 0; k < 256; ++k)
        if (is_artifact_kind(EventKind(k)) == artifact_name(EventKind(k)).empty()) return false;
    return true;
}(), "the artifact kinds are exactly the ones with a name");
// True for the kinds that create memory a later Free/Munmap releases (Malloc, Calloc, ...).
constexpr bool is_allocation(EventKind kind) {
    return kind == EventKind::Malloc || kind == EventKind::Calloc || kind == EventKind::Realloc ||
           kind == EventKind::AlignedAlloc;
}

struct Event {
    int32_t pid = 0;
    int32_t tid = 0;
    uint64_t timestamp = 0;  // CLOCK_MONOTONIC ns
    uint64_t addr = 0;
    EventKind kind = EventKind::Malloc;
    std::optional<uint64_t> old_addr;  // Realloc only, when known
    uint64_t size = 0;                 // 0 and not written for Free
    uint64_t stack_hash = 0;           // 0: none

    bool operator==(const Event&) const = default;
};

// Decodes one ring record. Returns nullopt for a kind this build does not know.
inline std::optional<Event> decode_record(const mt_record& r) {
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
