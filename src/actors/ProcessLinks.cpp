#include "actors/ProcessLinks.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include <algorithm>
#include <chrono>
#include <string>

#include <boost/asio/post.hpp>

#include "actors/Stats.hpp"
#include "bpf/record.h"
#include "core/Clock.hpp"
#include "core/Log.hpp"
#include "probes/BpfSession.hpp"
#include "bpf/hold.h"
#include "process/ProcessHolds.hpp"
#include "process/ProcessSignal.hpp"

namespace memtrack {

namespace asio = boost::asio;

namespace {

// Spawn notices wake us at once (BPF_RB_FORCE_WAKEUP); the scan only finds notices the ring
// had no room for, so it can be slow.
constexpr auto kBackstop = std::chrono::milliseconds(50);

ring_buffer* open_spawns(int map_fd, ring_buffer_sample_fn fn, void* ctx) {
    ring_buffer* rb = ring_buffer__new(map_fd, fn, ctx, nullptr);
    if (!rb) throw FatalError(fmt::format("cannot read the spawns ring: {}", std::strerror(errno)));
    return rb;
}

}  // namespace

ProcessLinks::ProcessLinks(asio::io_context& io, BpfSession& bpf, ProcessHolds& holds, Stats& stats)
    : strand_(asio::make_strand(io)),
      bpf_(bpf),
      holds_(holds),
      stats_(stats),
      spawns_(open_spawns(bpf.spawns_ring_fd(), &ProcessLinks::on_spawn_record, this), ring_buffer__free),
      spawns_watch_(strand_, ::dup(ring_buffer__epoll_fd(spawns_.get()))),
      backstop_(strand_) {}

ProcessLinks::~ProcessLinks() { close_all(); }

Result<void> ProcessLinks::attach_now(pid_t pid) { return attach_process(pid, 0); }

void ProcessLinks::attach(pid_t pid, std::function<void(Result<void>)> done) {
    asio::post(strand_, [this, pid, done = std::move(done)] { done(attach_process(pid, 0)); });
}

Result<void> ProcessLinks::attach_process(pid_t pid, uint64_t start_boottime) {
    if (processes_.count(pid)) return {};
    const uint64_t t0 = monotonic_ns();
    if (processes_.size() >= kMaxOwnLinked) return use_shared(t0);
    // The pidfd first: it pins the process we check, and tells us when it exits.
    Fd pidfd;
    if (start_boottime) {
        auto opened = open_same_process(pid, start_boottime);
        if (!opened) return opened.error();
        pidfd = std::move(opened).value();
        if (!pidfd.valid()) return Error{"attach probes", std::to_string(pid), ESRCH, "process gone"};
    } else {
        pidfd.reset(int(::syscall(SYS_pidfd_open, pid, 0)));
        if (!pidfd.valid()) return errno_error("pidfd_open", std::to_string(pid));
    }
    auto links = bpf_.attach_process_probes(pid);
    if (!links) {
        log::error("probes of its own for process {}: {}; using the shared ones", pid, links.error().message());
        return use_shared(t0);
    }
    if (auto r = bpf_.track_own(pid); !r) {
        // Still marked shared: the shared links serve it, its own would record it twice.
        closer_.close(std::move(links).value());
        log::error("probes of its own for process {}: {}; using the shared ones", pid, r.error().message());
        return use_shared(t0);
    }
    Process p;
    p.links = std::move(links).value();
    p.exit_watch = std::make_unique<asio::posix::stream_descriptor>(strand_, pidfd.release());
    p.exit_watch->async_wait(asio::posix::stream_descriptor::wait_read, [this, pid](boost::system::error_code ec) {
        if (!ec) on_exit(pid);
    });
    processes_.emplace(pid, std::move(p));
    stats_.on_process_probes(monotonic_ns() - t0);
    return {};
}

// The process keeps the `tracked` mark BPF gave it at fork (or track() gave it): shared.
Result<void> ProcessLinks::use_shared(uint64_t t0) {
    if (auto r = bpf_.attach_shared_probes(); !r) return r.error();
    stats_.on_shared_probes(monotonic_ns() - t0);
    return {};
}

void ProcessLinks::start() {
    asio::post(strand_, [this] {
        arm_spawn_watch();
        arm_backstop();
    });
}

void ProcessLinks::stop() {
    asio::post(strand_, [this] {
        stopped_ = true;
        boost::system::error_code ec;
        spawns_watch_.cancel(ec);
        backstop_.cancel();
        // Whoever is still held gets its probes now (or is released without them): nobody stays
        // stopped behind us.
        on_spawns();
        scan_held();
        for (auto& [pid, p] : processes_) p.exit_watch->cancel(ec);
    });
}

void ProcessLinks::detach_all() {
    asio::post(strand_, [this] {
        for (auto& [pid, p] : processes_) closer_.close(std::move(p.links));
        processes_.clear();
    });
}

void ProcessLinks::close_all() {
    for (auto& [pid, p] : processes_) closer_.close(std::move(p.links));
    processes_.clear();
    closer_.wait_idle();
}

int ProcessLinks::on_spawn_record(void* ctx, void* data, size_t size) {
    if (size < sizeof(mt_spawn)) return 0;
    const auto* s = static_cast<const mt_spawn*>(data);
    static_cast<ProcessLinks*>(ctx)->pending_.emplace_back(s->pid, s->start_boottime);
    return 0;
}

void ProcessLinks::arm_spawn_watch() {
    spawns_watch_.async_wait(asio::posix::stream_descriptor::wait_read, [this](boost::system::error_code ec) {
        if (ec || stopped_) return;
        on_spawns();
        arm_spawn_watch();
    });
}

void ProcessLinks::arm_backstop() {
    backstop_.expires_after(kBackstop);
    backstop_.async_wait([this](boost::system::error_code ec) {
        if (ec || stopped_) return;
        scan_held();
        arm_backstop();
    });
}

void ProcessLinks::on_spawns() {
    pending_.clear();
    if (int n = ring_buffer__consume(spawns_.get()); n < 0)
        log::error("spawns ring: {}", std::strerror(-n));
    for (auto [pid, start] : pending_) release_spawned(pid, start);
    pending_.clear();
}

// New processes the ring had no room to announce: still held for their probes. One whose
// release was asked already (its notice came) may still look held: it is not handled twice.
void ProcessLinks::scan_held() {
    const std::vector<uint32_t> held = holds_.held_for(MT_HOLD_SPAWN);
    std::erase_if(releasing_, [&](const auto& r) { return std::find(held.begin(), held.end(), r.first) == held.end(); });
    for (uint32_t pid : held)
        if (auto h = holds_.entry(pid); h && !releasing_.count({pid, h->start_boottime}))
            release_spawned(pid, h->start_boottime);
}

void ProcessLinks::release_spawned(uint32_t pid, uint64_t start_boottime) {
    if (!releasing_.emplace(pid, start_boottime).second) return;  // its notice and the scan both found it
    if (auto r = attach_process(pid_t(pid), start_boottime); !r) {
        // It runs unrecorded rather than stays stopped; an exit in between is not an error.
        if (r.error().err != ESRCH) {
            stats_.on_process_probe_error();
            log::error("probes for new process {}: {}", pid, r.error().message());
        }
    }
    holds_.release(pid, MT_HOLD_SPAWN);
}

void ProcessLinks::on_exit(pid_t pid) {
    auto it = processes_.find(pid);
    if (it == processes_.end()) return;
    closer_.close(std::move(it->second.links));
    processes_.erase(it);
}

}  // namespace memtrack
