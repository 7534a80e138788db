#pragma once
// Owns: every object file (executable, library, loader) the run reads, known once: its identity
// (device, inode, size, times, as fstat(2) gives them for the descriptor read), its GNU build-id,
// its PT_LOAD segments, and libelf handles of it and of its separate debug file. Every stage that
// reads an object file takes it from here: the probe sites (ProbeSiteCache), the unwind table
// (UnwindTables, load_cfi_table), the Python runtime's address and bias (PythonProcs), the
// symbolizer's modules (ModuleLoader: libdwfl is given its descriptors). A file is
// opened and parsed once per run, whichever process maps it and whichever stage asks first (issue
// 33.8: it was opened up to five times, by each stage and for each bias); each stage keeps what it
// derives, keyed by the same (device, inode).
//
// Invariants: one ObjectFile per (device, inode) for the run, its facts never change (a file
// rewritten in place during the run keeps its first reading, as the stages' caches did); an open
// handle is kept for the files read most recently (kKeepOpen), which covers every stage of one
// new-code hold; a stage that needs a closed one's handle again reopens it (counted: `reopened`,
// 0 in every run measured, since each stage reads a file once); the symbolizer, which reads a
// file when its first stack arrives, may find it closed (counted apart: `reopened_for_symbols`).
// Thread-safe: ProcessLinks' strand, start-up (BpfSession), the symbolizer's strand and its
// preload thread use it.
#include <sys/stat.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/Result.hpp"
#include "symbols/ElfFile.hpp"

namespace memtrack {

// An object file's open libelf handles: the file's and its separate debug file's (by build-id),
// when there is one.
struct OpenObject {
    ElfFile file;
    std::optional<ElfFile> debug;
    std::string debug_path;  // empty: no debug file
};

class ObjectFile {
public:
    // `path` opened and parsed on its own, shared with nobody (tests, benchmarks, the path forms of
    // the stages' functions): what ObjectFiles does for each file.
    static Result<std::shared_ptr<const ObjectFile>> open(const std::string& path);

    const std::string& path() const { return path_; }  // as opened
    const struct stat& stat() const { return st_; }  // of the descriptor read
    const std::string& build_id() const { return build_id_; }  // lowercase hex; empty: none
    const std::vector<LoadSegment>& segments() const { return segments_; }  // every PT_LOAD
    // The open handles (reopened when closed since: counted by the registry). For the stages that
    // read a file in the hold that found it (probe sites, unwind table, Python runtime).
    Result<std::shared_ptr<const OpenObject>> handles() const;
    // The same for the symbolizer, which reads a file when the first stack in it arrives, maybe
    // after 64 newer files closed its handles: its reopenings are counted apart.
    Result<std::shared_ptr<const OpenObject>> handles_for_symbols() const;
    // Gives up this file's handles (kept facts stay): they close once no stage holds them.
    std::shared_ptr<const OpenObject> close() const;

private:
    ObjectFile() = default;
    struct Reopened {  // the registry's counters of reopened handles
        std::atomic<uint64_t> by_stages{0}, by_symbols{0};
    };
    // reopened: the registry's counters (null: standalone).
    static Result<std::shared_ptr<ObjectFile>> read(const std::string& path, Reopened* reopened);
    // build_id: where to put the file's GNU build-id (lowercase hex), read on the way; may be null.
    static Result<std::shared_ptr<OpenObject>> open_handles(const std::string& path, std::string* build_id = nullptr);
    Result<std::shared_ptr<const OpenObject>> handles(std::atomic<uint64_t> Reopened::*counter) const;

    std::string path_;
    struct stat st_ {};
    std::string build_id_;
    std::vector<LoadSegment> segments_;
    mutable std::mutex mu_;  // guards open_
    mutable std::shared_ptr<const OpenObject> open_;
    Reopened* reopened_ = nullptr;  // the registry's counters; null when standalone
    friend class ObjectFiles;
};

struct ObjectFileCounters {
    uint64_t parsed = 0;    // files opened and parsed: one per distinct file read
    uint64_t lookups = 0;   // answers given (every stage's, every process's)
    uint64_t failed = 0;    // files that could not be read (each tried once)
    uint64_t reopened = 0;  // handles opened again after they were closed, for a stage in a hold
    uint64_t reopened_for_symbols = 0;  // ... for the symbolizer
};

class ObjectFiles {
public:
    // Open handles kept: more than one hold's worth of new objects, few enough for the fd limit.
    static constexpr size_t kKeepOpen = 64;

    // The file pid maps at `path` (as its maps show it; 0: memtrack's own view) with this identity:
    // opened through openable_path() the first time. A file that cannot be read gives the same
    // error each time, read once.
    Result<std::shared_ptr<const ObjectFile>> get(pid_t pid, const std::string& path, uint64_t dev, uint64_t ino);
    // Closes the handles get() let go of since the last call (libelf's end, unmapping, closing:
    // ~7 us a file). A hold calls it once its process runs again, so that work is not in the
    // hold; get() closes them itself past kKeepOpen waiting, for callers that never do.
    void close_released();
    ObjectFileCounters counters() const;

private:
    using Key = std::pair<uint64_t, uint64_t>;  // (dev, ino)
    mutable std::mutex mu_;  // guards files_, recent_ and the counters but reopened_
    std::map<Key, Result<std::shared_ptr<const ObjectFile>>> files_;
    std::deque<std::shared_ptr<const ObjectFile>> recent_;  // with open handles, oldest first
    std::vector<std::shared_ptr<const OpenObject>> released_;  // handles of files out of recent_, to close
    ObjectFileCounters counters_;
    ObjectFile::Reopened reopened_;
};

}  // namespace memtrack
