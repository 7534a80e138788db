#pragma once
// What the Writer and the Symbolizer share: the consumer side of one batch queue, drained on a
// strand a few batches per turn, and flush requests answered once every record up to a ring
// position is in their file. A subclass only says how to write a batch and flush its file.
#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

#include "actors/Messages.hpp"

namespace memtrack {

class RingConsumer;

class BatchSink {
public:
    BatchSink(boost::asio::io_context& io, BatchQueue& in);
    virtual ~BatchSink() = default;

    // Batches were pushed: one wake-up per burst.
    void notify();
    // done(records handled) once every record up to ring position `pos` is in the file and the
    // file is flushed (a complete compressed block), or done(error).
    void flush_through(uint64_t pos, DrainDone done);
    // Handles what is queued, answers the flushes it covers, closes the file; done(error or
    // records handled).
    void finish(DrainDone done);

protected:
    // Called on the strand only.
    virtual void write_batch(const RecordBatch& b) = 0;
    virtual Result<void> flush_file() = 0;
    virtual Result<void> finish_file() = 0;
    void fail(Error e);
    // A write or flush failed: the file ends where it ended, nothing more goes into it.
    bool failed() const { return error_.has_value(); }
    Strand& strand() { return strand_; }
    uint64_t records_handled() const { return records_; }
    // Batches that were waiting in the queue when the one being written was popped, itself
    // included: at most the queue's depth. (Read after the pop, the producer may have refilled
    // the freed slot already: one more than the queue ever held.)
    size_t waiting_at_pop() const { return waiting_at_pop_; }

private:
    friend class Lane;
    // Lane's wiring: `consumer` hears of queue space; written batches go back to `pool`.
    void connect(RingConsumer& consumer, BatchPool& pool) {
        consumer_ = &consumer;
        pool_ = &pool;
    }
    void on_notify();
    bool pop(RecordBatch*& raw);
    void handle(RecordBatch* raw);
    void complete_flushes();

    Strand strand_;
    BatchQueue& in_;
    RingConsumer* consumer_ = nullptr;
    BatchPool* pool_ = nullptr;
    std::atomic<bool> notify_pending_{false};
    uint64_t written_pos_ = 0;
    uint64_t records_ = 0;
    size_t waiting_at_pop_ = 0;
    bool finished_ = false;
    std::optional<Error> error_;
    std::vector<std::pair<uint64_t, DrainDone>> flushes_;
};

}  // namespace memtrack
