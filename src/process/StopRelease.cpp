#include "process/StopRelease.hpp"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "bpf/record.h"
#include "core/Clock.hpp"
#include "core/Fd.hpp"
#include "core/Log.hpp"

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

// True when a map of `maps` other than `map_fd` holds pid stopped (not marked resuming).
bool held_elsewhere(int map_fd, const StopMaps& maps, uint32_t pid) {
    for (int other : maps) {
        mt_stop stop{};
        if (other != map_fd && bpf_map_lookup_elem(other, &pid, &stop) == 0 && !stop.resuming) return true;
    }
    return false;
}

}  // namespace

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

Result<bool> resume_if_same_process(int32_t pid, uint64_t start_boottime_ns) {
    auto opened = open_same_process(pid, start_boottime_ns);
    if (!opened) return opened.error();
    const Fd pidfd = std::move(opened).value();
    if (!pidfd.valid()) return false;  // gone or reused: nothing to resume
    if (::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGCONT, nullptr, 0) != 0) {
        if (errno == ESRCH) return false;
        return errno_error("pidfd_send_signal SIGCONT", std::to_string(pid));
    }
    return true;
}

Result<Released> release_stop(int map_fd, const StopMaps& maps, uint32_t pid) {
    mt_stop stop{};
    if (bpf_map_lookup_elem(map_fd, &pid, &stop) != 0 || stop.resuming) return Released{};
    mt_stop marked = stop;
    marked.resuming = monotonic_ns();
    if (bpf_map_update_elem(map_fd, &pid, &marked, BPF_EXIST) != 0) return Released{};  // gone at exit
    Released out{true, false, stop.stop_ns};
    if (held_elsewhere(map_fd, maps, pid)) return out;
    auto r = resume_if_same_process(int32_t(pid), stop.start_boottime);
    if (!r) return r.error();
    out.resumed = *r;
    return out;
}

std::vector<uint32_t> stopped_pids(int map_fd) {
    std::vector<uint32_t> pids;
    uint32_t key = 0, next = 0;
    while (bpf_map_get_next_key(map_fd, pids.empty() ? nullptr : &key, &next) == 0) {
        pids.push_back(next);
        key = next;
    }
    return pids;
}

size_t resume_every_stopped(int map_fd, const StopMaps& maps, uint64_t marked_since_ns) {
    size_t resumed = 0;
    for (uint32_t pid : stopped_pids(map_fd)) {
        mt_stop stop{};
        if (bpf_map_lookup_elem(map_fd, &pid, &stop) != 0) continue;
        const bool held = held_elsewhere(map_fd, maps, pid);
        // A marked entry was resumed already, unless memtrack died between the mark and its
        // SIGCONT: the guard passes marked_since_ns to cover that moment, and only that one,
        // so a process the user stopped after memtrack resumed it stays stopped.
        const bool marked_unsent = stop.resuming != 0 && stop.resuming >= marked_since_ns;
        if (!held && (stop.resuming == 0 || marked_unsent)) {
            auto r = resume_if_same_process(int32_t(pid), stop.start_boottime);
            if (!r) log::error("resume: {}", r.error().message());
            else resumed += *r;
        }
        bpf_map_delete_elem(map_fd, &pid);
    }
    return resumed;
}

size_t resume_all_maps(const StopMaps& maps, uint64_t marked_since_ns) {
    size_t resumed = 0;
    for (int map_fd : maps) resumed += resume_every_stopped(map_fd, maps, marked_since_ns);
    return resumed;
}

size_t count_stopped(int map_fd) {
    size_t n = 0;
    for (uint32_t pid : stopped_pids(map_fd)) {
        mt_stop stop{};
        if (bpf_map_lookup_elem(map_fd, &pid, &stop) == 0 && !stop.resuming) ++n;
    }
    return n;
}

}  // namespace memtrack
