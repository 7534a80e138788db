#pragma once
// Owns: the event ring's read position, its epoll wake-up, the producer side of the batch queue.
// Accepts: start(), kick(), on_queue_space(), read_through(pos, done), stop(); from any thread: counters().
#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "actors/ActorCounters.hpp"
#include "actors/Messages.hpp"
#include "core/Backstop.hpp"
#include "ring/RingView.hpp"

namespace memtrack {

class BatchSink;

class RingConsumer {
public:
    enum class Records { Events, Stacks };
    struct Options {
        Records records = Records::Events;
        size_t chunk_records = 1024;
        std::chrono::microseconds delay{0};             // testing knob: wait this long per chunk
        std::chrono::milliseconds backstop{10};         // reads even when no wake-up came
    };
    // Called after every chunk on the consumer's strand; must only post onwards.
    using ChunkObserver = std::function<void(uint64_t consumer_pos, double fill)>;
    // Called on the consumer's strand with each batch just before it is queued.
    using BatchHook = std::function<void(RecordBatch&)>;

    RingConsumer(boost::asio::io_context& io, RingView& ring, BatchQueue& out, Options opt);

    void set_chunk_observer(ChunkObserver obs) { observer_ = std::move(obs); }
    void set_before_queue(BatchHook hook) { before_queue_ = std::move(hook); }

    void start();
    // Look at the ring now (a drain request, or a record that did not wake us).
    void kick();
    // The writer popped a batch: reading may go on if it had stopped for a full queue.
    void on_queue_space();
    // done() once the consumer position is at least `pos` (a producer position: DrainBarrier).
    void read_through(uint64_t pos, Done done);
    void stop();
    ConsumerCounters counters() const { return counters_; }

private:
    friend class Lane;
    // Lane's wiring: `sink` is told of every batch queued; batches come from `pool`.
    void connect(BatchSink& sink, BatchPool& pool) {
        sink_ = &sink;
        pool_ = &pool;
    }

    // Everything below is touched only on strand_.
    void on_kick();
    void read_chunk();
    void schedule_next();
    void arm_wait();
    void complete_drains();

    Strand strand_;
    RingView& ring_;
    BatchQueue& out_;
    ConsumerCounters counters_;
    Options opt_;
    BatchSink* sink_ = nullptr;
    ChunkObserver observer_;
    BatchHook before_queue_;
    BatchPool* pool_ = nullptr;
    boost::asio::posix::stream_descriptor wake_;
    boost::asio::steady_timer delay_timer_;
    Backstop backstop_;
    bool scheduled_ = false;  // a read_chunk is posted or waiting on the delay timer
    bool wait_armed_ = false;
    bool blocked_on_queue_ = false;
    uint64_t empty_since_ns_ = 0;  // when the ring was last found empty (0: it has records)
    bool stopped_ = false;
    std::vector<std::pair<uint64_t, Done>> drains_;  // (target position, done)
    std::atomic<bool> kick_pending_{false};
};

}  // namespace memtrack
