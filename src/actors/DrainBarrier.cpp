#include "actors/DrainBarrier.hpp"

#include <boost/asio/post.hpp>

#include "actors/BatchSink.hpp"
#include "actors/RingConsumer.hpp"
#include "core/Clock.hpp"
#include "ring/RingView.hpp"

namespace memtrack {

namespace asio = boost::asio;

DrainBarrier::DrainBarrier(asio::io_context& io, std::vector<Lane> lanes)
    : strand_(asio::make_strand(io)), lanes_(std::move(lanes)) {}

void DrainBarrier::request(DrainDone done) {
    asio::post(strand_, [this, done = std::move(done)]() mutable {
        const uint64_t id = next_id_++;
        pending_.emplace(id, Pending{monotonic_ns(), lanes_.size(), uint64_t(0), std::move(done)});
        for (size_t i = 0; i < lanes_.size(); ++i) {
            // The barrier is each ring's producer position now: records reserved later are not
            // waited for, so a drain ends however fast producers keep writing.
            const uint64_t target = lanes_[i].ring->producer_pos();
            lanes_[i].sink->flush_through(target, [this, id, i](Result<uint64_t> records) {
                asio::post(strand_, [this, id, i, records = std::move(records)]() mutable {
                    lane_done(id, i, std::move(records));
                });
            });
            lanes_[i].consumer->kick();  // records that did not wake the consumer still count
        }
    });
}

void DrainBarrier::lane_done(uint64_t id, size_t lane, Result<uint64_t> records) {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    Pending& p = it->second;
    // The reply counts the event ring's records; any lane's error wins.
    if (!records.ok() || (lane == 0 && p.records.ok())) p.records = std::move(records);
    if (--p.lanes_left > 0) return;
    counters_.drain_ns.add(monotonic_ns() - p.start_ns);
    auto done = std::move(p.done);
    auto result = std::move(p.records);
    pending_.erase(it);
    done(std::move(result));
}

}  // namespace memtrack
