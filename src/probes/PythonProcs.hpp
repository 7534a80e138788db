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
#include "symbols/ObjectFiles.hpp"
#include "symbols/ProcessMaps.hpp"

namespace memtrack {

class PythonCode;

class PythonProcs {
public:
    // `procs_fd`: the python_procs map. Object files are read through `files`, which outlives
    // this. `code`: told the layouts runtimes publish (null: none).
    PythonProcs(int procs_fd, ObjectFiles& files, PythonCode* code = nullptr)
        : procs_fd_(procs_fd), files_(files), code_(code) {}

    // Reads pid's mappings; a process that maps a CPython runtime memtrack walks is described,
    // any other one is not (an exec into something else drops its description).
    Result<void> describe(pid_t pid);
    // The mappings the loader added to pid (a dlopen): pid is described when they hold a CPython
    // runtime (an embedding program's), left as it is otherwise. O(mappings added).
    Result<void> describe_added(pid_t pid, const std::vector<Mapping>& added);
    void forget(pid_t pid);

private:
    // What the walk takes from a runtime file: _PyRuntime's vaddr (nullopt: the file does not
    // define it) and its perf trampoline's rule (call 0: none).
    struct RuntimeFile {
        std::optional<uint64_t> runtime;
        mt_python_trampoline trampoline{};
    };
    // Describes pid by the first of `maps` that holds a CPython runtime memtrack walks; false: none.
    Result<bool> describe_from(pid_t pid, const std::vector<Mapping>& maps);
    // The runtime file (dev, inode), read once.
    const RuntimeFile& runtime_file(const std::shared_ptr<const ObjectFile>& file);

    int procs_fd_;
    ObjectFiles& files_;
    PythonCode* code_;
    std::map<std::pair<uint64_t, uint64_t>, RuntimeFile> runtime_by_file_;
};

}  // namespace memtrack
