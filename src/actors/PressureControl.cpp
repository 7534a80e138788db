#include "actors/PressureControl.hpp"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include <fstream>
#include <sstream>
#include <vector>

#include <boost/asio/post.hpp>

#include "actors/Stats.hpp"
#include "bpf/record.h"
#include "core/Clock.hpp"
#include "core/Fd.hpp"
#include "core/Log.hpp"
#include "probes/BpfSession.hpp"

namespace memtrack {

namespace asio = boost::asio;

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

Result<bool> resume_if_same_process(int32_t pid, uint64_t start_boottime_ns) {
    Fd pidfd(int(::syscall(SYS_pidfd_open, pid, 0)));
    if (!pidfd.valid()) {
        if (errno == ESRCH) return false;  // gone: nothing to resume
        return errno_error("pidfd_open", std::to_string(pid));
    }
    const long hz = ::sysconf(_SC_CLK_TCK);
    const auto ticks = proc_start_ticks(pid);
    if (!ticks || *ticks != start_boottime_ns / (1000000000ull / uint64_t(hz))) return false;  // reused pid
    if (::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGCONT, nullptr, 0) != 0) {
        if (errno == ESRCH) return false;
        return errno_error("pidfd_send_signal SIGCONT", std::to_string(pid));
    }
    return true;
}

PressureControl::PressureControl(asio::io_context& io, BpfSession& bpf, Stats& stats, WatermarkPolicy policy)
    : strand_(asio::make_strand(io)), bpf_(bpf), stats_(stats), policy_(policy), backstop_(strand_) {}

void PressureControl::start() {
    asio::post(strand_, [this] { arm_backstop(); });
}

void PressureControl::on_chunk(size_t ring, double fill) {
    last_fill_[ring < kRings ? ring : kRings - 1].store(fill, std::memory_order_relaxed);
    if (bpf_.stops_outstanding().load(std::memory_order_acquire) == 0) return;
    if (evaluate_pending_.exchange(true)) return;
    asio::post(strand_, [this] {
        evaluate_pending_ = false;
        evaluate();
    });
}

void PressureControl::evaluate() {
    if (stopped_ || bpf_.stops_outstanding().load() == 0) return;
    for (const auto& fill : last_fill_)
        if (!policy_.should_resume(fill.load(std::memory_order_relaxed))) return;
    resume_stopped();
}

namespace {
std::vector<uint32_t> stopped_pids(int map_fd) {
    std::vector<uint32_t> pids;
    uint32_t key = 0, next = 0;
    while (bpf_map_get_next_key(map_fd, pids.empty() ? nullptr : &key, &next) == 0) {
        pids.push_back(next);
        key = next;
    }
    return pids;
}
}  // namespace

size_t PressureControl::stopped_count() const { return stopped_pids(bpf_.pressure_map_fd()).size(); }

size_t PressureControl::resume_stopped() {
    const int fd = bpf_.pressure_map_fd();
    size_t resumed = 0;
    for (uint32_t pid : stopped_pids(fd)) {
        mt_stop stop{};
        if (bpf_map_lookup_elem(fd, &pid, &stop) != 0) continue;  // died meanwhile: BPF removed it
        auto r = resume_if_same_process(int32_t(pid), stop.start_boottime);
        if (!r) log::error("resume: {}", r.error().message());
        // Remove after SIGCONT: a new stop for this pid can only be published after this.
        if (bpf_map_delete_elem(fd, &pid) == 0) bpf_.stops_outstanding().fetch_sub(1);
        if (r && *r) {
            stats_.on_resume(int32_t(pid), monotonic_ns() - stop.stop_ns);
            ++resumed;
        }
    }
    return resumed;
}

void PressureControl::resume_all(Done done) {
    asio::post(strand_, [this, done = std::move(done)] {
        resume_stopped();
        done();
    });
}

void PressureControl::stop() {
    asio::post(strand_, [this] {
        stopped_ = true;
        backstop_.cancel();
    });
}

void PressureControl::arm_backstop() {
    // Covers a stop published just after the consumer's last chunk report.
    if (stopped_) return;
    backstop_.expires_after(std::chrono::milliseconds(5));
    backstop_.async_wait([this](boost::system::error_code ec) {
        if (ec) return;
        evaluate();
        arm_backstop();
    });
}

}  // namespace memtrack
