#pragma once
// Owns: the outstanding drain barriers (one per request) and their timing.
// Accepts: request(done): done(records written) once every record produced before the request,
// on every ring, is consumed, written and flushed; from any thread: counters().
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "actors/ActorCounters.hpp"
#include "actors/Messages.hpp"

namespace memtrack {

class BatchSink;
class RingConsumer;
class RingView;

class DrainBarrier {
public:
    // One ring, the consumer that reads it, and the sink that writes what it reads.
    struct Lane {
        RingView* ring;
        RingConsumer* consumer;
        BatchSink* sink;
    };
    // lanes[0] is the event ring: its record count is the reply's.
    DrainBarrier(boost::asio::io_context& io, std::vector<Lane> lanes);
    void request(DrainDone done);
    DrainCounters counters() const { return counters_; }

private:
    // Touched only on strand_.
    struct Pending {
        uint64_t start_ns;
        size_t lanes_left;
        Result<uint64_t> records;
        DrainDone done;
    };
    void lane_done(uint64_t id, size_t lane, Result<uint64_t> records);

    Strand strand_;
    std::vector<Lane> lanes_;
    DrainCounters counters_;
    uint64_t next_id_ = 0;
    std::unordered_map<uint64_t, Pending> pending_;
};

}  // namespace memtrack
