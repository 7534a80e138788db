#pragma once
// The ELF objects a process maps executable (its executable, the loader, each shared library),
// read from /proc/PID/maps: what allocator discovery classifies.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/Result.hpp"

namespace memtrack {

struct MappedObject {
    std::string path;  // a path memtrack can open: the mapped one, or through /proc/PID/root
    uint64_t dev = 0;  // the file's identity: one object whatever the path
    uint64_t ino = 0;
    bool operator<(const MappedObject& o) const { return dev != o.dev ? dev < o.dev : ino < o.ino; }
};

// A path to the file pid maps at `path` (as its maps show it) that memtrack can open: that path
// when it names the same file (dev, ino) here, else the same path through /proc/PID/root.
std::string openable_path(pid_t pid, const std::string& path, uint64_t dev, uint64_t ino);

// One entry per file mapped with execute permission, in address order.
Result<std::vector<MappedObject>> executable_objects(pid_t pid);

}  // namespace memtrack
