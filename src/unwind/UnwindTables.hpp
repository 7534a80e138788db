#pragma once
// The unwind tables the BPF stack walker follows (src/bpf/unwind.h): every object's rows in one
// BPF array, written once per object (cached by file, then by build-id, so a second process of a
// binary costs a lookup, and a second file of one build, its build-id read by ObjectFiles, is
// neither built nor read from the cache; built once per machine with a CfiTableCache), and each
// process's executable mappings with their biases.
// Not an actor: ProcessLinks calls it on its strand while the process is held for new code, so
// a process never runs code whose tables are missing.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bpf/unwind.h"
#include "core/Result.hpp"
#include "symbols/ObjectFiles.hpp"
#include "symbols/ProcessMaps.hpp"
#include "unwind/CfiTable.hpp"
#include "unwind/CfiTableCache.hpp"
#include "unwind/UnwindCounters.hpp"

namespace memtrack {

class UnwindTables {
public:
    // The walker's maps (BpfSession's unwind_rows_fd(), unwind_procs_fd(), unwind_rows_capacity()):
    // fds only, so that unwind/ stays below probes/.
    struct Maps {
        int rows_fd = -1, procs_fd = -1;
        uint32_t rows_capacity = 0;  // 0: the walker is off
    };
    // Maps the rows array (nothing to do when the walker is off: describe() is a no-op).
    // Tables are loaded through `cache` (load_cfi_table), which may be null: built every run.
    // Object files are read through `files` (the run's one reading of each), which outlives this.
    static Result<std::unique_ptr<UnwindTables>> open(const Maps& maps, std::shared_ptr<const CfiTableCache> cache,
                                                      ObjectFiles& files);
    ~UnwindTables();
    UnwindTables(const UnwindTables&) = delete;
    UnwindTables& operator=(const UnwindTables&) = delete;

    // Reads pid's executable mappings and hands them to the walker, building the tables of the
    // objects met for the first time. An object without usable CFI is walked by frame pointer.
    Result<void> describe(pid_t pid);
    // Adds executable mappings new in pid since its last description (the loader's new objects;
    // symbols/ProcessMaps' Mapping with path, dev and inode), replacing any they overlap: costs
    // O(mappings added), not a read of pid's maps. Without an earlier description, describe(pid).
    Result<void> describe_added(pid_t pid, const std::vector<Mapping>& added);
    // pid ended: its description is dropped.
    void forget(pid_t pid);
    // User space's counters, from any thread.
    UnwindCounters counters() const;

private:
    // An object's rows in the array, and what turns its mappings' offsets into vaddrs.
    struct Object {
        uint32_t row_first = 0;
        uint32_t row_count = 0;  // 0: no table
        std::vector<LoadSegment> segments;
    };
    UnwindTables(int rows_fd, int procs_fd, uint32_t capacity, std::shared_ptr<const CfiTableCache> cache,
                 ObjectFiles& files);
    Result<void> write_description(pid_t pid);
    Result<void> add_mappings(pid_t pid, const std::vector<Mapping>& added);
    // One mapping's entry; nullopt when walked by frame pointer (no table, no bias).
    std::optional<mt_unwind_mapping> entry(pid_t pid, const Mapping& m);
    Result<void> write(pid_t pid, const std::vector<mt_unwind_mapping>& maps);
    void publish();
    std::shared_ptr<const Object> object(pid_t pid, const std::string& path, uint64_t dev, uint64_t ino);
    std::shared_ptr<const Object> load(const ObjectFile& file);

    int rows_fd_ = -1;
    int procs_fd_ = -1;
    mt_unwind_row* rows_ = nullptr;  // the mmapped array
    uint32_t capacity_ = 0;
    std::shared_ptr<const CfiTableCache> cache_;
    ObjectFiles& files_;
    uint32_t used_ = 0;
    uint32_t generation_ = 0;  // of the last description written
    std::map<std::pair<uint64_t, uint64_t>, std::shared_ptr<const Object>> by_file_;  // (dev, ino)
    std::map<std::string, std::shared_ptr<const Object>> by_build_id_;
    // What was last written for each process, sorted by start: describe_added() adds to it.
    std::map<pid_t, std::vector<mt_unwind_mapping>> described_;
    UnwindCounters counters_;  // the caller's strand only
    mutable std::mutex published_mu_;
    UnwindCounters published_;  // counters_ as of the last describe(), for any thread
    bool full_warned_ = false;
    bool store_warned_ = false;  // a failed cache store was said (the caller's strand)
};

}  // namespace memtrack
