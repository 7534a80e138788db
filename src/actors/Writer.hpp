#pragma once
// Owns: the artifact file and its zstd stream, the timeline file and its stream, the consumer
// side of the event batch queue, and the table of live tracked processes (for their lifetimes
// and the timeline's detach events).
// Accepts: notify(), flush_through(pos, done), finish(done) (from BatchSink), add_root_process(),
// note(); from any thread: counters().
//
// The ring's records go to one file or the other by kind: the artifact's eight kinds to the
// artifact, byte for byte as the runner reads it; process life and RSS to the timeline. Both
// files are flushed and finished together.
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/ActorCounters.hpp"
#include "actors/BatchSink.hpp"
#include "format/Timeline.hpp"
#include "format/TimelineRecords.hpp"
#include "format/ZstdFileWriter.hpp"

namespace memtrack {

class Writer : public BatchSink {
public:
    // Without a timeline, the ring's timeline records only count the processes' lifetimes.
    Writer(boost::asio::io_context& io, BatchQueue& in, ZstdFileWriter artifact,
           std::optional<ZstdFileWriter> timeline = std::nullopt);

    // A process whose start no Fork record reports: `start` is the timeline's Start (the command
    // memtrack forked) or Attach event for it.
    void add_root_process(TimelineEvent start);
    // An event of the recording's own (enable, disable, mark), written to the timeline as it is.
    void note(TimelineEvent e);
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
    void on_timeline_event(const TimelineEvent& e);
    // Hands tbuf_ to the timeline's stream.
    void write_timeline();

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
    std::optional<ZstdFileWriter> timeline_;
    TimelineRecords timeline_records_;
    std::string tbuf_;  // timeline events encoded since the last write
};

}  // namespace memtrack
