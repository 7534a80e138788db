#pragma once
// Owns: the outstanding barriers (one per drain request, and the close) and their timing.
// Accepts: request(done): done(records written) once every record produced before the request,
// on every lane, is consumed, written and flushed; close(read, done): the same barrier, then
// every sink closes its file: read() once every lane is consumed through it, done(records
// written, or the first error) once every file is closed; from any thread: counters().
//
// The one route to "everything written": drain requests, and the shutdown that a command's exit,
// a signal or a client's request starts.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "actors/ActorCounters.hpp"
#include "actors/Messages.hpp"

namespace memtrack {

class Lane;

class DrainBarrier {
public:
    // lanes[0] is the event lane: its record count is the reply's.
    DrainBarrier(boost::asio::io_context& io, std::vector<Lane*> lanes);
    void request(DrainDone done);
    void close(Done read, DrainDone done);
    DrainCounters counters() const { return counters_; }

private:
    enum class Kind { Flush, Close };
    // Touched only on strand_.
    struct Pending {
        Kind kind;
        uint64_t start_ns;
        size_t unread;      // lanes not yet consumed through the barrier
        size_t lanes_left;  // lanes whose sink has not answered
        Result<uint64_t> records;
        Done read;
        DrainDone done;
    };
    void start(Kind kind, Done read, DrainDone done);
    void lane_read(uint64_t id, size_t lane, uint64_t target);
    void lane_done(uint64_t id, size_t lane, Result<uint64_t> records);

    Strand strand_;
    std::vector<Lane*> lanes_;
    DrainCounters counters_;
    uint64_t next_id_ = 0;
    std::unordered_map<uint64_t, Pending> pending_;
};

}  // namespace memtrack
