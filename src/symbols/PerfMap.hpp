#pragma once
// Names of just-in-time code from the map a runtime writes for perf: /tmp/perf-PID.map, one
// "START SIZE NAME" line per code object (hex, no 0x), appended as code is made (node
// --perf-basic-prof, python3 -X perf). Code is logged before it runs, so an address a stack
// holds is in the file by the time the stack is symbolized; a miss reads what was appended since.
// The file once opened stays open: stacks are symbolized after their process has exited too,
// when its name under /proc/PID/root no longer leads to it, and what it appended last is there.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "core/Fd.hpp"
#include "core/Result.hpp"

namespace memtrack {

class PerfMap {
public:
    // The map of process `pid` (as memtrack sees it): the runtime names the file after its own
    // pid, in its own /tmp, so both come from /proc/PID (NSpid, root) while the process lives.
    static PerfMap for_process(int pid);
    // A map read from `path` as it is; `owner` is the uid the file must belong to (-1: any).
    PerfMap(std::string path, uid_t owner);

    // The name of the code object containing `addr`, or nullptr.
    const std::string* find(uint64_t addr);
    // Adds the lines of `text`; an unfinished last line waits for the rest. A later object
    // replaces the ranges of earlier ones it overlaps (the runtime reused freed code space).
    void add(std::string_view text);

    size_t size() const { return objects_.size(); }
    const std::string& path() const { return path_; }
    // Reads what was appended since the last read. A file that is a symlink or belongs to another
    // user than the process's is refused; another file under the name replaces the one read.
    // Once the name leads nowhere (the process is gone), reads on in the file held open.
    Result<void> refresh();

private:
    struct Object {
        uint64_t end;
        std::string name;
    };
    std::map<uint64_t, Object> objects_;  // by start; never overlapping
    std::string path_;
    uid_t owner_;
    Fd file_;  // the map read so far, kept open
    off_t read_to_ = 0;
    ino_t inode_ = 0;
    dev_t dev_ = 0;
    std::string partial_;
};

}  // namespace memtrack
