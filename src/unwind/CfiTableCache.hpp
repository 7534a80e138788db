#pragma once
// Built CfiTables kept on disk between runs, so an object's CFI is compiled once per machine,
// not once per run: a process is held while the tables of its new code are built, and a big
// binary's take a tenth of a second (docs/BENCHMARKS.md, "Unwind tables").
//
// An entry is used only when everything its table was built from is unchanged: the object file
// (device, inode, size, modification and change times), the separate debug file its build-id
// names (the same way, or still absent), and the memtrack binary that built it (its build-id:
// a rebuilt memtrack may compile CFI differently). Anything else is a miss, and the table is
// built and stored again. Entries are zstd frames with a checksum: a damaged one is a miss,
// counted. An entry is also checked for what it holds (cfi_table_fault: rows sorted, apart, inside
// the object's code), and a zstd frame claiming more than such a table can be is refused before
// anything is allocated. The folder must be ours alone (OutputDir::open_private: reached without
// following a link others could plant, not writable by anyone else); entries are read only when
// they are regular files of ours, and pruning removes only files of ours under entry names.
#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/OutputFiles.hpp"
#include "core/Result.hpp"
#include "unwind/CfiTable.hpp"

namespace memtrack {

class CfiTableCache {
public:
    // The folder --cache-dir names by default: $MEMTRACK_CACHE_DIR, else $XDG_CACHE_HOME/memtrack,
    // else $HOME/.cache/memtrack; empty when none of them is set.
    static std::string default_dir();
    // Opens (creating, mode 0700) the cache folder `dir` for the running memtrack binary.
    static Result<CfiTableCache> open(const std::string& dir);
    // The same for entries of the builder `builder_id` (open() passes its own build-id).
    static Result<CfiTableCache> open(const std::string& dir, std::string builder_id);
    // Entries kept: one per object file, a machine's libraries and binaries and the versions an
    // upgrade left behind.
    static constexpr size_t kMaxEntries = 2048;

    // The table of the file `st` describes, when an entry for it is valid. A missing entry is
    // nullopt; an unreadable or damaged one is an Error (the caller counts it and builds).
    Result<std::optional<CfiTable>> find(const struct stat& st) const;
    // Keeps `table`, built from the file `st` describes (replacing its entry, never in place).
    // The first store of this cache then trims the folder: past kMaxEntries entries the least
    // recently used go, and stores cut short a day ago. A run that only reads lists nothing.
    // From one thread at a time.
    Result<void> store(const struct stat& st, const CfiTable& table) const;

    const std::string& path() const { return dir_.path(); }
    // Whether two stat(2)s describe one file, unmodified: what an entry is kept for.
    static bool same_file(const struct stat& a, const struct stat& b);

private:
    CfiTableCache(OutputDir dir, std::string builder_id) : dir_(std::move(dir)), builder_id_(std::move(builder_id)) {}
    void prune() const;

    OutputDir dir_;
    std::string builder_id_;  // the memtrack binary's build-id
    mutable bool pruned_ = false;  // by this cache's first store
};

// A table as UnwindTables gets it, and how it came.
struct LoadedTable {
    Result<CfiTable> table = Error{"build unwind table", {}, 0, "not loaded"};
    bool from_cache = false;  // read from the cache folder
    bool stored = false;      // built, and kept in the cache folder
    std::optional<Error> entry_error;  // the entry unreadable, damaged or rejected (then built and stored again)
    std::optional<Error> store_error;  // the built table could not be kept
};

// The one route to an object's table: from `cache` when it holds it, else built (and kept there
// when the file did not change while it was read). `cache` may be null: built. The file is read
// through its handles (ObjectFiles); the path form reads it on its own (tests).
LoadedTable load_cfi_table(const ObjectFile& file, const CfiTableCache* cache);
LoadedTable load_cfi_table(const std::string& path, const CfiTableCache* cache);

}  // namespace memtrack
