#include "process/AttachCheck.hpp"

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <optional>
#include <string>

namespace memtrack {
namespace {

// A numeric field of /proc/PID/status ("Tgid:", "PPid:").
std::optional<pid_t> status_field(pid_t pid, const std::string& key) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(f, line);)
        if (line.rfind(key, 0) == 0) {
            try {
                return pid_t(std::stol(line.substr(key.size())));
            } catch (const std::exception&) {
                return std::nullopt;
            }
        }
    return std::nullopt;
}

// Whether `pid` is a kernel thread: PF_KTHREAD in the flags of /proc/PID/stat (its ninth field).
// It has no user memory: nothing to probe, and pausing kthreadd would stop every new kernel thread.
bool kernel_thread(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const size_t paren = stat.rfind(')');  // the command name may hold spaces and ')'
    if (paren == std::string::npos) return false;
    std::istringstream fields(stat.substr(paren + 1));
    std::string skip;
    unsigned long flags = 0;
    for (int i = 0; i < 6; ++i) fields >> skip;  // state ppid pgrp session tty_nr tpgid
    constexpr unsigned long kPfKthread = 0x00200000;  // include/linux/sched.h
    return (fields >> flags) && (flags & kPfKthread) != 0;
}

}  // namespace

Result<void> check_attachable(pid_t pid, pid_t guard) {
    const std::string name = std::to_string(pid);
    const auto tgid = status_field(pid, "Tgid:");
    if (!tgid) return Error{"attach", name, ESRCH, {}};
    if (*tgid != pid) return Error{"attach", name, 0, "a thread of process " + std::to_string(*tgid) + ": attach that"};
    if (kernel_thread(pid)) return Error{"attach", name, 0, "a kernel thread: it makes no user-space allocations"};
    if (pid == ::getpid()) return Error{"attach", name, 0, "memtrack itself"};
    if (pid == guard) return Error{"attach", name, 0, "memtrack-guard, which resumes what memtrack paused"};
    // memtrack's ancestors, up to the first process of its pid namespace (whose parent is 0).
    pid_t up = ::getppid();
    for (int depth = 0; up > 0 && depth < 4096; ++depth) {
        if (up == pid) return Error{"attach", name, 0, "an ancestor of memtrack, which may wait for it"};
        const auto next = status_field(up, "PPid:");
        if (!next) break;
        up = *next;
    }
    return {};
}

}  // namespace memtrack
