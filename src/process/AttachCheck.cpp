#include "process/AttachCheck.hpp"

#include <unistd.h>

#include <fstream>
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

}  // namespace

Result<void> check_attachable(pid_t pid, pid_t guard) {
    const std::string name = std::to_string(pid);
    const auto tgid = status_field(pid, "Tgid:");
    if (!tgid) return Error{"attach", name, ESRCH, {}};
    if (*tgid != pid) return Error{"attach", name, 0, "a thread of process " + std::to_string(*tgid) + ": attach that"};
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
