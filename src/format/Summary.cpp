#include "format/Summary.hpp"

#include <algorithm>

#include <boost/json/value.hpp>
#include <fmt/format.h>

namespace memtrack {
namespace {

// The artifact kinds are numbered contiguously in record.h, which lets them index an array.
static_assert(size_t(EventKind::Brk) - size_t(EventKind::Malloc) + 1 == 8);
constexpr size_t slot(EventKind k) { return size_t(k) - size_t(EventKind::Malloc); }

constexpr std::array<EventKind, 8> kArtifactKinds{
    EventKind::Malloc, EventKind::Free,   EventKind::Realloc, EventKind::Calloc,
    EventKind::AlignedAlloc, EventKind::Mmap, EventKind::Munmap, EventKind::Brk};

// mmap's MAP_FAILED, should a failed call ever be recorded.
constexpr uint64_t kMapFailed = ~uint64_t(0);

}  // namespace

void Summary::add(const Event& e) {
    if (!is_artifact_kind(e.kind)) return;
    PerKind& k = kinds_[slot(e.kind)];
    ++k.count;
    if (e.kind != EventKind::Free) k.bytes += e.size;
    pids_.insert(e.pid);

    switch (e.kind) {
        case EventKind::Free: release(e.addr); break;
        case EventKind::Realloc:
            // A failed realloc returns NULL and leaves the old block alone.
            if (e.addr == 0) break;
            if (e.old_addr) release(*e.old_addr);
            allocate(e.addr, e.size);
            break;
        case EventKind::Malloc:
        case EventKind::Calloc:
        case EventKind::AlignedAlloc:
            // addr 0 is a failed allocation: nothing became live.
            if (e.addr != 0) allocate(e.addr, e.size);
            break;
        case EventKind::Mmap:
            if (e.addr == 0 || e.addr == kMapFailed) break;
            if (auto [it, fresh] = mapped_.try_emplace(e.addr, e.size); !fresh) {
                // A new mapping at a recorded address replaced the old one (MAP_FIXED).
                mapped_bytes_ -= it->second;
                it->second = e.size;
            }
            mapped_bytes_ += e.size;
            peak_mapped_bytes_ = std::max(peak_mapped_bytes_, mapped_bytes_);
            break;
        case EventKind::Munmap:
            // Exact address match only: a partial munmap of a mapping is not tracked.
            if (auto it = mapped_.find(e.addr); it != mapped_.end()) {
                mapped_bytes_ -= it->second;
                mapped_.erase(it);
            }
            break;
        default: break;
    }
}

void Summary::allocate(uint64_t addr, uint64_t size) {
    // A block still recorded at this address means its free was missed; count it once.
    auto [it, fresh] = live_.try_emplace(addr, size);
    if (!fresh) {
        live_bytes_ -= it->second;
        it->second = size;
    }
    live_bytes_ += size;
    peak_live_bytes_ = std::max(peak_live_bytes_, live_bytes_);
}

void Summary::release(uint64_t addr) {
    // Frees of blocks allocated before tracking started are unknown here and change nothing.
    if (auto it = live_.find(addr); it != live_.end()) {
        live_bytes_ -= it->second;
        live_.erase(it);
    }
}

uint64_t Summary::count(EventKind kind) const {
    return is_artifact_kind(kind) ? kinds_[slot(kind)].count : 0;
}

uint64_t Summary::bytes(EventKind kind) const {
    return is_artifact_kind(kind) ? kinds_[slot(kind)].bytes : 0;
}

std::string Summary::text() const {
    std::string s = fmt::format("{:<14}{:>14}{:>20}\n", "kind", "count", "bytes");
    for (EventKind kind : kArtifactKinds) {
        const PerKind& k = kinds_[slot(kind)];
        if (kind == EventKind::Free)
            s += fmt::format("{:<14}{:>14}{:>20}\n", artifact_name(kind), k.count, "-");
        else
            s += fmt::format("{:<14}{:>14}{:>20}\n", artifact_name(kind), k.count, k.bytes);
    }
    s += fmt::format("peak live heap bytes: {}\n", peak_live_bytes_);
    s += fmt::format("live at end: {} bytes in {} blocks\n", live_bytes_, live_.size());
    s += fmt::format("peak mapped bytes: {}\n", peak_mapped_bytes_);
    s += fmt::format("processes: {}\n", pids_.size());
    return s;
}

boost::json::object Summary::to_json() const {
    boost::json::object kinds;
    for (EventKind kind : kArtifactKinds) {
        const PerKind& k = kinds_[slot(kind)];
        boost::json::object entry;
        entry["count"] = k.count;
        if (kind != EventKind::Free) entry["bytes"] = k.bytes;
        const std::string_view name = artifact_name(kind);
        kinds[boost::json::string_view(name.data(), name.size())] = std::move(entry);
    }
    boost::json::object o;
    o["kinds"] = std::move(kinds);
    o["peak_live_heap_bytes"] = peak_live_bytes_;
    o["live_heap_bytes"] = live_bytes_;
    o["live_heap_blocks"] = uint64_t(live_.size());
    o["peak_mapped_bytes"] = peak_mapped_bytes_;
    o["mapped_bytes"] = mapped_bytes_;
    o["processes"] = uint64_t(pids_.size());
    return o;
}

}  // namespace memtrack
