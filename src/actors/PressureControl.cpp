#include "actors/PressureControl.hpp"

#include <unistd.h>

#include <bpf/bpf.h>

#include <vector>

#include <boost/asio/post.hpp>

#include "actors/Stats.hpp"
#include "bpf/record.h"
#include "core/Clock.hpp"
#include "core/Log.hpp"
#include "probes/BpfSession.hpp"
#include "process/StopRelease.hpp"
#include "ring/RingView.hpp"

namespace memtrack {

namespace asio = boost::asio;

PressureControl::PressureControl(asio::io_context& io, BpfSession& bpf, Stats& stats, WatermarkPolicy policy)
    : strand_(asio::make_strand(io)), bpf_(bpf), stats_(stats), policy_(policy), backstop_(strand_) {}

void PressureControl::start() {
    asio::post(strand_, [this] { arm_backstop(); });
}

void PressureControl::on_chunk(size_t /*ring*/, double fill) {
    if (!policy_.should_resume(fill)) return;  // this ring alone already says no
    if (bpf_.stops_outstanding().load(std::memory_order_acquire) == 0) return;
    if (evaluate_pending_.exchange(true)) return;
    asio::post(strand_, [this] {
        evaluate_pending_ = false;
        evaluate();
    });
}

void PressureControl::evaluate() {
    if (stopped_ || bpf_.stops_outstanding().load() == 0) return;
    for (const RingView* ring : rings_)
        if (!policy_.should_resume(double(ring->fill_bytes()) / double(ring->capacity()))) return;
    resume_stopped();
}


size_t PressureControl::resume_stopped() {
    size_t resumed = 0;
    for (uint32_t pid : stopped_pids(bpf_.pressure_map_fd())) {
        auto r = release_stop(bpf_.pressure_map_fd(), bpf_.stop_maps(), pid);
        if (!r) {
            log::error("resume: {}", r.error().message());
            continue;
        }
        if (!r->removed) continue;
        bpf_.stops_outstanding().fetch_sub(1);
        // The pressure pause ends here, also when another pause (a first stack's) still holds
        // the process and its owner sends the SIGCONT: counting only our own SIGCONTs left
        // pressure_resumes short of pressure_stops.
        stats_.on_resume(int32_t(pid), monotonic_ns() - r->stop_ns);
        resumed += r->resumed;
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
