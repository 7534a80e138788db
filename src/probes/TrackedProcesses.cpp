#include "probes/TrackedProcesses.hpp"

#include <bpf/bpf.h>

#include <cerrno>
#include <cstdint>
#include <string>

#include "bpf/record.h"

namespace memtrack {

Result<bool> TrackedProcesses::track_shared(pid_t pid) {
    const uint32_t key = uint32_t(pid), how = MT_TRACKED_SHARED;
    if (bpf_map_update_elem(fd_, &key, &how, BPF_NOEXIST) != 0) {
        if (errno == EEXIST) return false;
        return errno_error("track pid", std::to_string(pid));
    }
    return true;
}

Result<void> TrackedProcesses::track_own(pid_t pid) {
    const uint32_t key = uint32_t(pid), how = MT_TRACKED_OWN;
    if (bpf_map_update_elem(fd_, &key, &how, BPF_ANY) != 0) return errno_error("track pid", std::to_string(pid));
    return {};
}

}  // namespace memtrack
