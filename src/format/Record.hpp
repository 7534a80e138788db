#pragma once
// The C++ view of the BPF record (src/bpf/record.h) and the decoded event every stage passes on.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

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

// The artifact's `type` string; empty for kinds that never go into the artifact.
std::string_view artifact_name(EventKind kind);
// Parses an artifact `type` string.
std::optional<EventKind> kind_from_artifact_name(std::string_view name);
// True for the kinds the MemtrackArtifact holds.
bool is_artifact_kind(EventKind kind);
// True for the kinds that create memory a later Free/Munmap releases (Malloc, Calloc, ...).
bool is_allocation(EventKind kind);

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
std::optional<Event> decode_record(const mt_record& r);

}  // namespace memtrack
