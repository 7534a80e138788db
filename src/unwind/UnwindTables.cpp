#include "unwind/UnwindTables.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "bpf/unwind.h"
#include "core/Clock.hpp"
#include "core/Log.hpp"
#include "symbols/ElfFile.hpp"
#include "symbols/ProcessMaps.hpp"

namespace memtrack {

namespace {

size_t rows_bytes(uint32_t capacity) {
    const size_t page = size_t(::sysconf(_SC_PAGESIZE));
    return (size_t(capacity) * sizeof(mt_unwind_row) + page - 1) / page * page;
}

}  // namespace

Result<std::unique_ptr<UnwindTables>> UnwindTables::open(const Maps& maps, std::shared_ptr<const CfiTableCache> cache,
                                                        ObjectFiles& files) {
    std::unique_ptr<UnwindTables> t(
        new UnwindTables(maps.rows_fd, maps.procs_fd, maps.rows_capacity, std::move(cache), files));
    if (t->capacity_ == 0) return t;
    void* p = ::mmap(nullptr, rows_bytes(t->capacity_), PROT_READ | PROT_WRITE, MAP_SHARED, t->rows_fd_, 0);
    if (p == MAP_FAILED) return errno_error("mmap", "unwind rows map");
    t->rows_ = static_cast<mt_unwind_row*>(p);
    t->counters_.rows_capacity = t->capacity_;
    t->publish();
    return t;
}

UnwindTables::UnwindTables(int rows_fd, int procs_fd, uint32_t capacity, std::shared_ptr<const CfiTableCache> cache,
                           ObjectFiles& files)
    : rows_fd_(rows_fd), procs_fd_(procs_fd), capacity_(capacity), cache_(std::move(cache)), files_(files) {}

UnwindTables::~UnwindTables() {
    if (rows_) ::munmap(rows_, rows_bytes(capacity_));
}

std::shared_ptr<const UnwindTables::Object> UnwindTables::load(const ObjectFile& file) {
    const uint64_t t0 = monotonic_ns();
    const std::string& path = file.path();
    // Another file of the same build (a copy, another container's): its rows are in the array
    // already, so its table is neither built nor read from the cache (ObjectFiles read its build-id).
    if (!file.build_id().empty()) {
        if (auto it = by_build_id_.find(file.build_id()); it != by_build_id_.end()) {
            ++counters_.objects_shared;
            return it->second;
        }
    }
    LoadedTable loaded = load_cfi_table(file, cache_.get());
    counters_.objects_cached += loaded.from_cache;
    counters_.objects_stored += loaded.stored;
    counters_.cache_errors += loaded.entry_error.has_value() + loaded.store_error.has_value();
    // A bad entry is said once: it is replaced by the table built now. A store that fails (a full
    // disk) would fail for every object: said the first time, then only counted.
    if (loaded.entry_error) log::warn("unwind: cache: {} (built again)", loaded.entry_error->message());
    if (loaded.store_error && !store_warned_) log::warn("unwind: cache: {}", loaded.store_error->message());
    else if (loaded.store_error) log::info("unwind: cache: {}", loaded.store_error->message());
    store_warned_ = store_warned_ || loaded.store_error.has_value();
    Result<CfiTable>& table = loaded.table;
    auto o = std::make_shared<Object>();
    if (!table) {
        ++counters_.objects_failed;
        log::info("unwind: no table for {} ({}): walked by frame pointer", path, table.error().message());
        counters_.build_ns += monotonic_ns() - t0;
        return o;
    }
    o->segments = file.segments();
    const auto& rows = table->rows;
    ++counters_.objects;
    if (rows.empty()) {
        ++counters_.objects_without_cfi;
    } else if (rows.size() > capacity_ - used_) {
        ++counters_.tables_full;
        if (!full_warned_) {
            full_warned_ = true;
            log::warn("unwind tables full ({} rows): {} and later objects are walked by frame pointer "
                      "(raise --unwind-rows)", capacity_, path);
        }
    } else {
        std::memcpy(rows_ + used_, rows.data(), rows.size() * sizeof(mt_unwind_row));
        o->row_first = used_;
        o->row_count = uint32_t(rows.size());
        used_ += uint32_t(rows.size());
        counters_.rows = used_;
    }
    if (!file.build_id().empty()) by_build_id_.emplace(file.build_id(), o);
    counters_.build_ns += monotonic_ns() - t0;
    log::info("unwind: {}: {} rows in {:.1f} ms{}", path, rows.size(), double(monotonic_ns() - t0) / 1e6,
              loaded.from_cache ? " (from the cache)" : "");
    return o;
}

std::shared_ptr<const UnwindTables::Object> UnwindTables::object(pid_t pid, const std::string& path, uint64_t dev,
                                                                 uint64_t ino) {
    const auto key = std::make_pair(dev, ino);
    if (auto it = by_file_.find(key); it != by_file_.end()) return it->second;
    auto file = files_.get(pid, path, dev, ino);
    std::shared_ptr<const Object> o;
    if (file) {
        o = load(**file);
    } else {
        ++counters_.objects_failed;
        log::info("unwind: no table for {} ({}): walked by frame pointer", path, file.error().message());
        o = std::make_shared<Object>();
    }
    by_file_.emplace(key, o);
    return o;
}

UnwindCounters UnwindTables::counters() const {
    std::lock_guard lock(published_mu_);
    return published_;
}

void UnwindTables::publish() {
    std::lock_guard lock(published_mu_);
    published_ = counters_;
}

Result<void> UnwindTables::describe(pid_t pid) {
    if (capacity_ == 0) return {};
    auto r = write_description(pid);
    if (!r) ++counters_.describe_errors;
    publish();
    return r;
}

Result<void> UnwindTables::describe_added(pid_t pid, const std::vector<Mapping>& added) {
    if (capacity_ == 0) return {};
    if (!described_.count(pid)) return describe(pid);
    auto r = add_mappings(pid, added);
    if (!r) ++counters_.describe_errors;
    publish();
    return r;
}

void UnwindTables::forget(pid_t pid) { described_.erase(pid); }

std::optional<mt_unwind_mapping> UnwindTables::entry(pid_t pid, const Mapping& m) {
    auto o = object(pid, m.path, m.dev, m.inode);
    auto bias = mapping_bias(o->segments, m.start, m.offset);
    if (!bias || o->row_count == 0) return std::nullopt;  // walked by frame pointer
    return mt_unwind_mapping{m.start, m.end, *bias, o->row_first, o->row_count};
}

Result<void> UnwindTables::write_description(pid_t pid) {
    auto maps = ProcessMaps::read(pid);
    if (!maps) return maps.error();
    std::vector<mt_unwind_mapping> out;
    for (const Mapping& m : maps->mappings()) {
        if (!m.executable || m.anonymous() || !m.path.starts_with("/") || m.inode == 0) continue;
        if (m.path.ends_with(" (deleted)")) continue;  // no file to read the CFI from
        if (out.size() == MT_UNWIND_MAPPINGS) {
            ++counters_.mappings_left_out;
            continue;
        }
        if (auto e = entry(pid, m)) out.push_back(*e);
    }
    return write(pid, out);
}

Result<void> UnwindTables::add_mappings(pid_t pid, const std::vector<Mapping>& added) {
    std::vector<mt_unwind_mapping> maps = described_[pid];
    bool changed = false;
    for (const Mapping& m : added) {
        auto e = entry(pid, m);
        // What the new mapping covers is no longer what was there (an object unloaded since).
        changed |= std::erase_if(maps, [&](const mt_unwind_mapping& d) { return d.start < m.end && m.start < d.end; }) > 0;
        if (!e) continue;
        if (maps.size() == MT_UNWIND_MAPPINGS) {
            ++counters_.mappings_left_out;
            continue;
        }
        maps.insert(std::upper_bound(maps.begin(), maps.end(), e->start,
                                     [](uint64_t s, const mt_unwind_mapping& d) { return s < d.start; }),
                    *e);
        changed = true;
    }
    // The description BPF has is still the process's (a full one, the new code left out): not
    // written again. Writing its ~10 KB took ~36 us of each dlopen's hold past the room.
    if (!changed) return {};
    return write(pid, maps);
}

Result<void> UnwindTables::write(pid_t pid, const std::vector<mt_unwind_mapping>& maps) {
    auto desc = std::make_unique<mt_unwind_process>();
    std::memset(desc.get(), 0, sizeof(*desc));
    desc->count = uint32_t(maps.size());
    std::copy(maps.begin(), maps.end(), desc->maps);
    desc->generation = ++generation_;
    const uint32_t key = uint32_t(pid);
    if (bpf_map_update_elem(procs_fd_, &key, desc.get(), BPF_ANY) != 0)
        return errno_error("bpf_map_update_elem", "unwind_procs");
    described_[pid] = maps;
    ++counters_.processes;
    return {};
}

}  // namespace memtrack
