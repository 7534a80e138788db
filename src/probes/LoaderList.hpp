#pragma once
// What the loader added to a process since the last look, read from its r_debug list of loaded
// objects (the link_map chain debuggers follow at the same hook) from the last object seen: a
// new-code hold costs O(objects added), not O(objects mapped) as reading /proc/PID/maps does.
//
// Invariant the cursor relies on: within the loader's base namespace, dlopen only appends to the
// list, and each change of the list ends at the loader's hook, which holds the process
// (MT_HOLD_MODULE) until it is handled. So from one hold to the next, either objects were appended
// after the last one seen, or objects were removed. A removal of the last one is seen (its code
// is no longer mapped); a removal of another changes nothing to add. Whatever the cursor cannot
// follow (another namespace, an object whose code is not where its headers put it, an unreadable
// word) makes it give up: the caller reads the whole process instead and starts a new cursor.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "core/Result.hpp"
#include "symbols/MappedObjects.hpp"
#include "symbols/ProcessMaps.hpp"

namespace memtrack {

// An object the loader added, with its executable mappings as the kernel has them.
struct AddedObject {
    MappedObject object;
    std::vector<Mapping> code;  // start, end, offset, dev, inode; path as the loader named it
};

class LoaderList {
public:
    // pid's loader list as it is now, all of it read (its objects count as seen). r_debug: the
    // loader's _r_debug in pid. nullopt: the list cannot be followed (see above).
    static Result<std::optional<LoaderList>> at_end(pid_t pid, uint64_t r_debug);
    // The objects appended since the last call (or at_end), in list order; nullopt when the
    // cursor cannot tell (the caller reads the whole process).
    Result<std::optional<std::vector<AddedObject>>> added(pid_t pid);

private:
    LoaderList(uint64_t r_debug) : r_debug_(r_debug) {}
    uint64_t r_debug_ = 0;
    uint64_t tail_ = 0;  // the last link_map seen
    Mapping tail_code_;  // its first executable mapping: still mapped as it was = still loaded
};

// The loader's base (AT_BASE) in pid's auxiliary vector; 0 when it has none (a static executable,
// or the loader run as the program).
Result<uint64_t> loader_base(pid_t pid);

}  // namespace memtrack
