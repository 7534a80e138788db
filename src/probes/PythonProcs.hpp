#pragma once
// The CPython runtimes of tracked processes, handed to the BPF walk of Python frames
// (bpf/python_walk.h) through the python_procs map: where the process's `_PyRuntime` is and
// its version's offsets (symbols/PythonLayout). Not an actor: ProcessLinks calls it on its
// strand while a process is held for new code (exec, the loader's hook), as UnwindTables.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "core/Result.hpp"

namespace memtrack {

class PythonProcs {
public:
    // `procs_fd`: the python_procs map.
    explicit PythonProcs(int procs_fd) : procs_fd_(procs_fd) {}

    // Reads pid's mappings; a process that maps a CPython runtime memtrack walks is described,
    // any other one is not (an exec into something else drops its description).
    Result<void> describe(pid_t pid);
    void forget(pid_t pid);

private:
    // _PyRuntime's vaddr in the file (dev, inode); nullopt: the file does not define it.
    std::optional<uint64_t> runtime_vaddr(const std::string& path, uint64_t dev, uint64_t ino);

    int procs_fd_;
    std::map<std::pair<uint64_t, uint64_t>, std::optional<uint64_t>> runtime_by_file_;
};

}  // namespace memtrack
