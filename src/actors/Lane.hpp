#pragma once
// One ring, read by its own RingConsumer into its own batch queue, written by its own sink:
// the unit DrainBarrier drains and closes. Not an actor (it owns no strand): it owns the parts
// and the one wiring between them.
//
// The wiring is made by the constructor, so a lane cannot exist half-connected: a consumer
// whose batches nobody is told about, or a sink that never reports queue space, stalls the
// pipeline without an error.
#include <utility>

#include "actors/BatchSink.hpp"
#include "actors/Messages.hpp"
#include "actors/RingConsumer.hpp"
#include "ring/RingView.hpp"

namespace memtrack {

class Lane {
public:
    Lane(const Lane&) = delete;
    Lane& operator=(const Lane&) = delete;
    virtual ~Lane() = default;

    RingView& ring() { return ring_; }
    RingConsumer& consumer() { return consumer_; }
    BatchSink& sink() { return *sink_; }

protected:
    Lane(boost::asio::io_context& io, RingView ring, RingConsumer::Options opt);
    // The consumer tells the sink about batches, the sink tells the consumer about queue space,
    // and both share the pool of written batches.
    void connect(BatchSink& sink);
    BatchQueue& queue() { return queue_; }

private:
    RingView ring_;
    BatchQueue queue_;
    BatchPool pool_;  // written batches the sink hands back for the consumer to reuse
    RingConsumer consumer_;
    BatchSink* sink_ = nullptr;
};

// A lane whose sink is a `Sink` (Writer, Symbolizer), made from `args` after the queue it reads.
// The sink's strand may be on an io_context of its own (bench/consumer_throughput --split).
template <typename Sink>
class SinkLane : public Lane {
public:
    template <typename... Args>
    SinkLane(boost::asio::io_context& io, RingView ring, RingConsumer::Options opt, Args&&... args)
        : SinkLane(io, io, std::move(ring), opt, std::forward<Args>(args)...) {}
    template <typename... Args>
    SinkLane(boost::asio::io_context& consumer_io, boost::asio::io_context& sink_io, RingView ring,
             RingConsumer::Options opt, Args&&... args)
        : Lane(consumer_io, std::move(ring), opt), sink_(sink_io, queue(), std::forward<Args>(args)...) {
        connect(sink_);
    }
    Sink& sink() { return sink_; }

private:
    Sink sink_;
};

}  // namespace memtrack
