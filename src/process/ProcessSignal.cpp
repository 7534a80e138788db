#include "process/ProcessSignal.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace memtrack {
namespace {

// The process's start time in clock ticks since boot: field 22 of /proc/PID/stat.
std::optional<uint64_t> proc_start_ticks(int32_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(f, line)) return std::nullopt;
    const auto close = line.rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos) return std::nullopt;
    std::istringstream rest(line.substr(close + 2));
    std::string field;
    for (int i = 3; i <= 22; ++i)
        if (!(rest >> field)) return std::nullopt;
    return std::stoull(field);
}

}  // namespace

Result<void> check_proc_matches_pid_namespace() {
    char buf[32] = {};
    const ssize_t n = ::readlink("/proc/self", buf, sizeof(buf) - 1);
    if (n < 0) return errno_error("readlink", "/proc/self");
    if (std::to_string(::getpid()) != std::string(buf, size_t(n)))
        return Error{"/proc", {}, 0,
                     "it shows another pid namespace than memtrack's (mount it for this one, e.g. unshare --mount-proc)"};
    return {};
}

Result<Fd> open_same_process(int32_t pid, uint64_t start_boottime_ns) {
    Fd pidfd(int(::syscall(SYS_pidfd_open, pid, 0)));
    if (!pidfd.valid()) {
        if (errno == ESRCH) return Fd();  // gone
        return errno_error("pidfd_open", std::to_string(pid));
    }
    const long hz = ::sysconf(_SC_CLK_TCK);
    const auto ticks = proc_start_ticks(pid);
    if (!ticks || *ticks != start_boottime_ns / (1000000000ull / uint64_t(hz))) return Fd();  // reused pid
    return pidfd;
}

Result<bool> pidfd_exited(int pidfd) {
    pollfd p{pidfd, POLLIN, 0};
    int n;
    do n = ::poll(&p, 1, 0);
    while (n < 0 && errno == EINTR);
    if (n < 0) return errno_error("poll pidfd", std::to_string(pidfd));
    if (n > 0 && (p.revents & POLLNVAL)) return Error{"poll pidfd", std::to_string(pidfd), EBADF, "not an open fd"};
    return n > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

Result<bool> send_signal(int pidfd, int32_t pid, int sig) {
    if (::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0) != 0) {
        if (errno == ESRCH) return false;
        return errno_error(sig == SIGCONT ? "pidfd_send_signal SIGCONT" : "pidfd_send_signal", std::to_string(pid));
    }
    return true;
}

}  // namespace memtrack
