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

#include "core/Clock.hpp"
#include "process/StopRelease.hpp"

namespace memtrack {

Result<StopGuard> StopGuard::start(std::vector<int> stopped_maps, uint32_t* recording) {
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
        ssize_t n;
        while ((n = ::read(p[0], &byte, 1)) < 0 && errno == EINTR) {}
        // One byte: memtrack is exiting cleanly, its probes are gone, one pass is enough.
        // EOF: memtrack died. Its probes detach some tens of ms after its fds close, and a pause
        // published meanwhile would be missed by one pass: pass until the maps stay empty.
        const int quiet_passes = n == 1 ? 1 : 5;
        // After a death, entries marked in the last second may never have had their SIGCONT.
        const uint64_t marked_since = n == 1 ? kNoMarked : monotonic_ns() - 1000000000ull;
        __atomic_store_n(recording, 0u, __ATOMIC_SEQ_CST);
        for (int quiet = 0, pass = 0; quiet < quiet_passes && pass < 400; ++pass) {
            size_t held = 0;
            for (int map_fd : stopped_maps) held += count_stopped(map_fd);
            resume_all_maps(stopped_maps, marked_since);
            quiet = held == 0 ? quiet + 1 : 0;
            if (quiet < quiet_passes) ::usleep(20000);
        }
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
    const char clean = 1;
    (void)!::write(alive_.get(), &clean, 1);
    alive_.reset();
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {}
}

}  // namespace memtrack
