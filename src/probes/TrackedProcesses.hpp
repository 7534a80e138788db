#pragma once
// Owns user space's writes to BPF's `tracked` map: which processes are recorded, and through
// which links (record.h's MT_TRACKED_*). The command and each process attached by the socket
// are marked shared; ProcessLinks marks a process own once its own links exist. BPF itself
// marks forked children (on_fork) and forgets exited processes.
#include <sys/types.h>

#include "core/Result.hpp"

namespace memtrack {

class TrackedProcesses {
public:
    // map_fd: the `tracked` map (not owned: BpfSession's skeleton owns it).
    explicit TrackedProcesses(int map_fd) : fd_(map_fd) {}

    // pid recorded through the shared links; false: tracked already, and left as it is (a
    // process with links of its own marked shared again would be recorded by both).
    Result<bool> track_shared(pid_t pid);
    // pid recorded through links of its own (the shared ones ignore it).
    Result<void> track_own(pid_t pid);

private:
    int fd_;
};

}  // namespace memtrack
