#include "actors/DrainBarrier.hpp"

#include <boost/asio/post.hpp>

#include "actors/Lane.hpp"
#include "core/Clock.hpp"
#include "core/Log.hpp"

namespace memtrack {

namespace asio = boost::asio;

DrainBarrier::DrainBarrier(asio::io_context& io, std::vector<Lane*> lanes)
    : strand_(asio::make_strand(io)), lanes_(std::move(lanes)) {}

void DrainBarrier::request(DrainDone done) { start(Kind::Flush, nullptr, std::move(done)); }

void DrainBarrier::close(Done read, DrainDone done) { start(Kind::Close, std::move(read), std::move(done)); }

void DrainBarrier::start(Kind kind, Done read, DrainDone done) {
    asio::post(strand_, [this, kind, read = std::move(read), done = std::move(done)]() mutable {
        const uint64_t id = next_id_++;
        pending_.emplace(id, Pending{kind, monotonic_ns(), lanes_.size(), lanes_.size(), uint64_t(0), std::move(read),
                                     std::move(done)});
        for (size_t i = 0; i < lanes_.size(); ++i) {
            // The barrier is each ring's producer position now: records reserved later are not
            // waited for, so a drain ends however fast producers keep writing.
            const uint64_t target = lanes_[i]->ring().producer_pos();
            lanes_[i]->consumer().read_through(target, [this, id, i, target] {
                asio::post(strand_, [this, id, i, target] { lane_read(id, i, target); });
            });
        }
    });
}

void DrainBarrier::lane_read(uint64_t id, size_t lane, uint64_t target) {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    Pending& p = it->second;
    if (--p.unread == 0 && p.read) p.read();
    auto answered = [this, id, lane](Result<uint64_t> records) {
        asio::post(strand_, [this, id, lane, records = std::move(records)]() mutable {
            lane_done(id, lane, std::move(records));
        });
    };
    // The lane's records up to the barrier are queued for its sink by now.
    if (p.kind == Kind::Flush) lanes_[lane]->sink().flush_through(target, std::move(answered));
    else lanes_[lane]->sink().finish(std::move(answered));
}

void DrainBarrier::lane_done(uint64_t id, size_t lane, Result<uint64_t> records) {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    Pending& p = it->second;
    if (p.kind == Kind::Close) {
        const uint64_t waited = monotonic_ns() - p.start_ns;
        log::info("shutdown: {} file closed after {:.1f} ms", lane == 0 ? "artifact" : "stacks", double(waited) / 1e6);
        (lane == 0 ? counters_.artifact_closed_ns : counters_.stacks_closed_ns).set(waited);
    }
    // The reply counts the event lane's records; any lane's error wins.
    if (!records.ok() || (lane == 0 && p.records.ok())) p.records = std::move(records);
    if (--p.lanes_left > 0) return;
    if (p.kind == Kind::Flush) counters_.drain_ns.add(monotonic_ns() - p.start_ns);
    auto done = std::move(p.done);
    auto result = std::move(p.records);
    pending_.erase(it);
    done(std::move(result));
}

}  // namespace memtrack
