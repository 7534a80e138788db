#pragma once
// A snapshot of a process's mappings (/proc/PID/maps), for turning its addresses into
// module-relative ones. Only what symbols can come from is kept: file-backed mappings, [vdso],
// and anonymous executable memory (code a runtime made, named by its perf map).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/Result.hpp"

namespace memtrack {

struct Mapping {
    uint64_t start = 0;   // first address
    uint64_t end = 0;     // one past the last address
    uint64_t offset = 0;  // file offset mapped at `start`
    std::string path;     // as /proc shows it, " (deleted)" included; "[vdso]"; empty or "[anon:...]"
    bool executable = false;
    // Together with `path`, which file this is: a file replaced at the same path since it was
    // mapped gets another inode, so it is never mistaken for the one mapped. 0 when unknown.
    uint64_t dev = 0;  // makedev(major, minor)
    uint64_t inode = 0;

    bool anonymous() const { return path.empty() || path.starts_with("[anon"); }
};

class ProcessMaps {
public:
    ProcessMaps() = default;

    // Reads and parses /proc/PID/maps. The pid is kept so the resolver can open the mapped files
    // through /proc/PID/map_files (deleted files, other mount namespaces) while the process lives.
    static Result<ProcessMaps> read(int pid);
    // Parses the text of a maps file. Lines that do not parse are skipped, not fatal: the kernel
    // format is stable, and one odd line should not cost every other mapping. pid() is 0.
    static ProcessMaps parse(std::string_view text);
    // Mappings known otherwise (code the loader added, AddedCode), as a snapshot of pid.
    static ProcessMaps of(int pid, std::vector<Mapping> mappings);

    // Adds `more` (sorted or not) over what is known: a known mapping that overlaps one of them
    // is gone (the new one was mapped over it, or after it was unmapped).
    void add(std::vector<Mapping> more);

    // The mapping containing `addr`, or nullptr. Binary search over the sorted mappings.
    const Mapping* find(uint64_t addr) const;
    // Sorted by start; never overlapping.
    const std::vector<Mapping>& mappings() const { return mappings_; }
    // The process these maps came from; 0 for parsed text.
    int pid() const { return pid_; }

private:
    std::vector<Mapping> mappings_;
    int pid_ = 0;
};

}  // namespace memtrack
