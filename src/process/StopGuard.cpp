#include "process/StopGuard.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include <algorithm>
#include <vector>

#include "actors/PressureControl.hpp"
#include "bpf/record.h"

namespace memtrack {

size_t resume_every_stopped(int map_fd) {
    std::vector<uint32_t> pids;
    uint32_t key = 0, next = 0;
    while (bpf_map_get_next_key(map_fd, pids.empty() ? nullptr : &key, &next) == 0) {
        pids.push_back(next);
        key = next;
    }
    size_t resumed = 0;
    for (uint32_t pid : pids) {
        mt_stop stop{};
        if (bpf_map_lookup_elem(map_fd, &pid, &stop) != 0) continue;
        if (auto r = resume_if_same_process(int32_t(pid), stop.start_boottime); r && *r) ++resumed;
        bpf_map_delete_elem(map_fd, &pid);
    }
    return resumed;
}

Result<StopGuard> StopGuard::start(std::vector<int> stopped_maps) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return errno_error("pipe", "stop guard");
    const pid_t pid = ::fork();
    if (pid < 0) return errno_error("fork", "stop guard");
    if (pid == 0) {
        // The guard: keep the map and the pipe, nothing else.
        ::prctl(PR_SET_NAME, "memtrack-guard");
        // Ctrl-C reaches the whole process group: the guard must outlive memtrack, not die with it.
        ::signal(SIGINT, SIG_IGN);
        ::signal(SIGTERM, SIG_IGN);
        ::signal(SIGHUP, SIG_IGN);
        ::close(p[1]);
        std::vector<int> keep = stopped_maps;
        keep.push_back(p[0]);
        std::sort(keep.begin(), keep.end());
        unsigned next = 3;
        for (int fd : keep) {
            if (unsigned(fd) > next) ::syscall(SYS_close_range, next, unsigned(fd) - 1, 0);
            next = unsigned(fd) + 1;
        }
        ::syscall(SYS_close_range, next, ~0u, 0);
        char byte;
        while (::read(p[0], &byte, 1) < 0 && errno == EINTR) {}
        for (int fd : stopped_maps) resume_every_stopped(fd);
        ::_exit(0);
    }
    ::close(p[0]);
    StopGuard g;
    g.pid_ = pid;
    g.alive_.reset(p[1]);
    return g;
}

StopGuard::~StopGuard() {
    if (pid_ <= 0) return;
    alive_.reset();
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {}
}

}  // namespace memtrack
