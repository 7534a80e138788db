#include "actors/PressureControl.hpp"

#include <boost/asio/post.hpp>

#include "bpf/hold.h"
#include "process/ProcessHolds.hpp"
#include "ring/RingView.hpp"

namespace memtrack {

namespace asio = boost::asio;

PressureControl::PressureControl(asio::io_context& io, ProcessHolds& holds, WatermarkPolicy policy)
    : strand_(asio::make_strand(io)), holds_(holds), policy_(policy),
      backstop_(strand_, std::chrono::milliseconds(5), [this] { evaluate(); }) {}

void PressureControl::start() {
    asio::post(strand_, [this] { backstop_.start(); });
}

void PressureControl::on_chunk(double fill) {
    if (!policy_.should_resume(fill)) return;  // this ring alone already says no
    if (holds_.outstanding(MT_HOLD_PRESSURE) == 0) return;
    if (evaluate_pending_.exchange(true)) return;
    asio::post(strand_, [this] {
        evaluate_pending_ = false;
        evaluate();
    });
}

bool PressureControl::rings_low() const {
    for (const RingView* ring : rings_)
        if (!policy_.should_resume(double(ring->fill_bytes()) / double(ring->capacity()))) return false;
    return true;
}

void PressureControl::evaluate() {
    if (stopped_ || holds_.outstanding(MT_HOLD_PRESSURE) == 0 || !rings_low()) return;
    holds_.release_every(MT_HOLD_PRESSURE, [this] { return rings_low(); });
}

void PressureControl::resume_all(Done done) {
    holds_.release_every(MT_HOLD_PRESSURE, [] { return true; }, std::move(done));
}

void PressureControl::stop() {
    asio::post(strand_, [this] {
        stopped_ = true;
        backstop_.stop();
    });
}

}  // namespace memtrack
