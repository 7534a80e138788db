#include "actors/RingConsumer.hpp"

#include <unistd.h>

#include <boost/asio/post.hpp>

#include "actors/BatchSink.hpp"
#include "core/Clock.hpp"
#include "core/Log.hpp"

namespace memtrack {

namespace asio = boost::asio;

RingConsumer::RingConsumer(asio::io_context& io, RingView& ring, BatchQueue& out, Options opt)
    : strand_(asio::make_strand(io)), ring_(ring), out_(out), opt_(opt),
      wake_(strand_, ::dup(ring.fd())), delay_timer_(strand_),
      backstop_(strand_, opt_.backstop, [this] { on_kick(); }) {}

void RingConsumer::start() {
    asio::post(strand_, [this] {
        backstop_.start();
        on_kick();
    });
}

void RingConsumer::kick() {
    if (kick_pending_.exchange(true)) return;
    asio::post(strand_, [this] {
        kick_pending_ = false;
        on_kick();
    });
}

void RingConsumer::on_queue_space() {
    asio::post(strand_, [this] {
        if (!blocked_on_queue_) return;
        blocked_on_queue_ = false;
        on_kick();
    });
}

void RingConsumer::read_through(uint64_t pos, Done done) {
    asio::post(strand_, [this, pos, done = std::move(done)]() mutable {
        drains_.emplace_back(pos, std::move(done));
        complete_drains();
        on_kick();
    });
}

void RingConsumer::stop() {
    asio::post(strand_, [this] {
        stopped_ = true;
        boost::system::error_code ec;
        wake_.cancel(ec);
        delay_timer_.cancel();
        backstop_.stop();
        wake_.close(ec);
    });
}

void RingConsumer::on_kick() {
    if (stopped_ || scheduled_ || blocked_on_queue_) return;
    if (ring_.fill_bytes() > 0) {
        scheduled_ = true;
        read_chunk();
    } else {
        arm_wait();
        complete_drains();
    }
}

void RingConsumer::read_chunk() {
    scheduled_ = false;
    if (stopped_) return;
    if (out_.write_available() == 0) {
        // The writer is behind: stop reading; BPF pauses producers if the ring fills meanwhile.
        blocked_on_queue_ = true;
        return;
    }
    const uint64_t t0 = monotonic_ns();
    const uint64_t before = ring_.consumer_pos();
    auto batch = pool_->take();
    if (opt_.records == Records::Events) batch->records.reserve(opt_.chunk_records);
    uint64_t bad_len = 0;
    if (opt_.records == Records::Events) {
        ring_.consume(opt_.chunk_records, [&](const void* data, uint32_t len) {
            if (len != sizeof(mt_record)) {
                ++bad_len;  // not ours: counted, never silently lost
                return;
            }
            batch->records.push_back(*static_cast<const mt_record*>(data));
        });
    } else {
        ring_.consume(opt_.chunk_records, [&](const void* data, uint32_t len) {
            const auto* r = static_cast<const mt_stack_record*>(data);
            if (len < MT_STACK_HEADER_BYTES || len != MT_STACK_HEADER_BYTES + 8u * r->nr) {
                ++bad_len;
                return;
            }
            batch->stacks.push_back(StackSample{r->hash, int32_t(r->pid), r->flags, {r->ips, r->ips + r->nr}, {}});
        });
    }
    const uint64_t after = ring_.consumer_pos();
    if (bad_len) log::error("{} ring records had an unexpected size", bad_len);
    const double fill = double(ring_.fill_bytes()) / double(ring_.capacity());
    if (after != before) {
        // Time spent with nothing to read: with resume-at-empty it is the gap between emptying
        // the ring and the paused producers' next records.
        if (empty_since_ns_) counters_.idle_ns.add(t0 - empty_since_ns_);
        empty_since_ns_ = 0;
        batch->end_pos = after;
        const uint64_t n = batch->records.size() + batch->stacks.size();
        if (before_queue_) before_queue_(*batch);
        out_.push(batch.release());
        sink_->notify();
        counters_.records.add(n);
        counters_.bytes.add(after - before);
        counters_.chunks.add();
        counters_.max_records_per_chunk.raise_to(n);
        counters_.chunk_ns.add(monotonic_ns() - t0);
    }
    if (observer_) observer_(after, fill);
    complete_drains();
    schedule_next();
}

void RingConsumer::schedule_next() {
    if (stopped_ || scheduled_) return;
    if (ring_.fill_bytes() == 0) {
        arm_wait();
        // A record committed between the check and the arming did not wake us: look again.
        if (ring_.fill_bytes() == 0) {
            if (!empty_since_ns_) empty_since_ns_ = monotonic_ns();
            return;
        }
    }
    scheduled_ = true;
    if (opt_.delay.count() > 0) {
        delay_timer_.expires_after(opt_.delay);
        delay_timer_.async_wait([this](boost::system::error_code ec) {
            if (!ec) read_chunk();
            else scheduled_ = false;
        });
    } else {
        // Yield the strand between chunks so other actors' handlers run.
        asio::post(strand_, [this] { read_chunk(); });
    }
}

void RingConsumer::arm_wait() {
    if (wait_armed_ || stopped_) return;
    wait_armed_ = true;
    // wake_ and the timers were made on strand_, so their handlers run on it.
    wake_.async_wait(asio::posix::stream_descriptor::wait_read, [this](boost::system::error_code ec) {
        wait_armed_ = false;
        if (!ec) on_kick();
    });
}

void RingConsumer::complete_drains() {
    if (drains_.empty()) return;
    const uint64_t pos = ring_.consumer_pos();
    for (auto it = drains_.begin(); it != drains_.end();) {
        if (pos >= it->first) {
            auto done = std::move(it->second);
            it = drains_.erase(it);
            done();
        } else {
            ++it;
        }
    }
}

}  // namespace memtrack
