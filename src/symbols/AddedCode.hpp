#pragma once
// The executable mappings the loader added to each process since the Symbolizer's last snapshot
// of its maps, as ProcessLinks found them at its new-code holds (LoaderList). The first stack
// after a dlopen then needs only them, not a new read of /proc/PID/maps, which costs O(mappings)
// while the process is held for it (MT_HOLD_SNAPSHOT).
// Thread-safe: ProcessLinks' strand adds and resets, the stacks consumer's strand takes.
#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "symbols/ProcessMaps.hpp"

namespace memtrack {

class AddedCode {
public:
    // A snapshot of pid's maps is about to be read: what is added from now on is kept for the
    // next one (what is added while it is read may be in both; adding it again is harmless).
    void snapshot_started(int32_t pid);
    // Mappings the loader added to pid, found without reading all its mappings.
    void added(int32_t pid, const std::vector<Mapping>& code);
    // pid's mappings changed in a way not described by additions (exec, an unload, a list
    // ProcessLinks could not follow): its next snapshot reads them all.
    void reset(int32_t pid);
    // What was added to pid since its last snapshot; nullopt when nothing was (the change that
    // asks for a snapshot is another: read all mappings) or the additions do not describe it.
    std::optional<std::vector<Mapping>> take(int32_t pid);

private:
    std::mutex mu_;
    std::unordered_map<int32_t, std::vector<Mapping>> since_snapshot_;  // present: additions valid
};

}  // namespace memtrack
