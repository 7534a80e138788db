#pragma once
// Owns: the artifact file and its zstd stream, the consumer side of the event batch queue, and
// the table of live tracked processes (for their lifetimes).
// Accepts: notify(), flush_through(pos, done), finish(done) (from BatchSink), add_root_process();
// from any thread: counters().
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "actors/ActorCounters.hpp"
#include "actors/BatchSink.hpp"
#include "format/ZstdFileWriter.hpp"

namespace memtrack {

class Writer : public BatchSink {
public:
    Writer(boost::asio::io_context& io, BatchQueue& in, ZstdFileWriter artifact);

    // A process whose start no Fork record reports (the command memtrack forked, an attached pid).
    void add_root_process(int32_t pid, uint64_t start_ns);
    WriterCounters counters() const { return counters_; }

private:
    // Touched only on the strand.
    void write_batch(const RecordBatch& b) override;
    Result<void> flush_file() override;
    Result<void> finish_file() override;
    // Records count as written once a flush or the finish has put them in the file: before that
    // they sit in zstd's buffers, and a failed write loses them.
    void credit_written();
    void lose_unwritten();

    ZstdFileWriter artifact_;
    WriterCounters counters_;
    std::vector<char> buf_;  // one batch's encoded events
    // Handed to the compressor since the last successful flush.
    uint64_t unflushed_records_ = 0, unflushed_events_ = 0, unflushed_allocations_ = 0;
    // The stream is flushed after each kCreditEvery bytes of events (write_batch): a zstd block
    // is at most 128 KiB, so this ends about one block in two early.
    static constexpr uint64_t kCreditEvery = 256 * 1024;
    uint64_t credited_raw_ = 0;  // raw_bytes() at the last flush
    std::unordered_map<int32_t, uint64_t> live_processes_;  // pid -> start ns
};

}  // namespace memtrack
