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

#include "process/StopRelease.hpp"

namespace memtrack {

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
        for (size_t i = 0; i < stopped_maps.size(); ++i)
            resume_every_stopped(stopped_maps[i], stopped_maps[(i + 1) % stopped_maps.size()]);
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
