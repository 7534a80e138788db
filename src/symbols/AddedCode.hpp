#pragma once
// The code the loader added to each process, as the new-code hold found it (ProcessLinks, from the
// loader's list), kept for the Symbolizer: a stack taken after a dlopen is then symbolized from
// the objects that dlopen added, not from a new read of all of /proc/PID/maps, which costs
// O(objects mapped) per dlopen and made N dlopens O(N^2) with stacks on (issue 28.4).
//
// Invariant: what is published for a process was published before the hold that found it was
// released, so before any code of those objects ran; a stack naming them is taken after. A hold
// that could not follow the loader's list (a full read: the first hook of an image, another
// namespace) marks the process unfollowed here until the Symbolizer next reads all its mappings.
// Thread-safe: published on ProcessLinks' strand, taken on the stacks consumer's and looked up
// on the Symbolizer's.
#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "symbols/ProcessMaps.hpp"

namespace memtrack {

class AddedCode {
public:
    // The executable mappings a hold found the loader added to pid (paths as /proc shows them).
    void publish(int32_t pid, std::vector<Mapping> code);
    // A hold of pid that read all its mappings: what was published no longer says all that is new.
    void lose_track(int32_t pid);
    // At a snapshot of pid's mappings asked for the code the loader added: the mappings published
    // since the last snapshot, or nullopt when only a read of all of them can tell.
    std::optional<std::vector<Mapping>> take(int32_t pid);
    // A read of all of pid's mappings, about to be made: it covers everything published so far.
    void covered(int32_t pid);
    // The published mapping holding `addr`, taken or not, since pid's last full read: a stack
    // taken inside dlopen before its snapshot (a constructor's, say) is named from it.
    std::optional<Mapping> find(int32_t pid, uint64_t addr) const;
    // pid exited.
    void forget(int32_t pid);

private:
    struct Process {
        std::vector<Mapping> code;  // published since the last full read, in order
        size_t taken = 0;           // code[0, taken) handed to a snapshot
        bool followed = true;
    };
    mutable std::mutex mutex_;
    std::unordered_map<int32_t, Process> processes_;
};

}  // namespace memtrack
