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

#include "bpf/python.h"
#include "core/Result.hpp"

namespace memtrack {

class PythonCode;

class PythonProcs {
public:
    // `procs_fd`: the python_procs map. `code`: told the layouts runtimes publish (null: none).
    explicit PythonProcs(int procs_fd, PythonCode* code = nullptr) : procs_fd_(procs_fd), code_(code) {}

    // Reads pid's mappings; a process that maps a CPython runtime memtrack walks is described,
    // any other one is not (an exec into something else drops its description).
    Result<void> describe(pid_t pid);
    void forget(pid_t pid);

private:
    // What the walk takes from a runtime file: _PyRuntime's vaddr (nullopt: the file does not
    // define it) and its perf trampoline's rule (mt_python_proc.tramp_*; tramp_call 0: none).
    struct RuntimeFile {
        std::optional<uint64_t> runtime;
        mt_python_proc trampoline{};
    };
    // The file (dev, inode) at `path`, read once.
    const RuntimeFile& runtime_file(const std::string& path, uint64_t dev, uint64_t ino);

    int procs_fd_;
    PythonCode* code_;
    std::map<std::pair<uint64_t, uint64_t>, RuntimeFile> runtime_by_file_;
};

}  // namespace memtrack
