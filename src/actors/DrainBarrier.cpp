#include "actors/DrainBarrier.hpp"

#include <boost/asio/post.hpp>

#include "actors/RingConsumer.hpp"
#include "actors/Stats.hpp"
#include "actors/Writer.hpp"
#include "core/Clock.hpp"
#include "ring/RingView.hpp"

namespace memtrack {

namespace asio = boost::asio;

DrainBarrier::DrainBarrier(asio::io_context& io, RingView& ring, RingConsumer& consumer, Writer& writer,
                           Stats& stats)
    : strand_(asio::make_strand(io)), ring_(ring), consumer_(consumer), writer_(writer), stats_(stats) {}

void DrainBarrier::request(DrainDone done) {
    asio::post(strand_, [this, done = std::move(done)]() mutable {
        // The barrier is the producer position now: records reserved later are not waited for,
        // so a drain ends however fast producers keep writing.
        const uint64_t target = ring_.producer_pos();
        const uint64_t id = next_id_++;
        pending_.emplace(id, Pending{monotonic_ns(), std::move(done)});
        writer_.flush_through(target, [this, id](Result<uint64_t> records) {
            asio::post(strand_, [this, id, records = std::move(records)]() mutable { complete(id, std::move(records)); });
        });
        consumer_.kick();  // records that did not wake the consumer still count
    });
}

void DrainBarrier::complete(uint64_t id, Result<uint64_t> records) {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    stats_.on_drain(monotonic_ns() - it->second.start_ns);
    auto done = std::move(it->second.done);
    pending_.erase(it);
    done(std::move(records));
}

}  // namespace memtrack
