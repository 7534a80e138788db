#pragma once
// Owns: the outstanding drain barriers (one per request) and their timing.
// Accepts: request(done): done(records written) once every record produced before the request
// is consumed, written and flushed.
#include <cstdint>
#include <unordered_map>

#include "actors/Messages.hpp"

namespace memtrack {

class RingConsumer;
class RingView;
class Stats;
class Writer;

class DrainBarrier {
public:
    DrainBarrier(boost::asio::io_context& io, RingView& ring, RingConsumer& consumer, Writer& writer, Stats& stats);
    void request(DrainDone done);

private:
    // Touched only on strand_.
    struct Pending {
        uint64_t start_ns;
        DrainDone done;
    };
    void complete(uint64_t id, Result<uint64_t> records);

    Strand strand_;
    RingView& ring_;
    RingConsumer& consumer_;
    Writer& writer_;
    Stats& stats_;
    uint64_t next_id_ = 0;
    std::unordered_map<uint64_t, Pending> pending_;
};

}  // namespace memtrack
