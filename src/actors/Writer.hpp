#pragma once
// Owns: the artifact file and its zstd stream, the consumer side of the batch queue, the
// pending flush requests, and the table of live tracked processes (for their lifetimes).
// Accepts: notify() (batches queued), flush_through(pos, done), finish(done).
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/Messages.hpp"
#include "format/ZstdFileWriter.hpp"

namespace memtrack {

class Stats;

class Writer {
public:
    Writer(boost::asio::io_context& io, BatchQueue& in, ZstdFileWriter artifact, Stats& stats);

    void set_queue_space(Done on_space) { queue_space_ = std::move(on_space); }
    // The root process starts now (its Fork record is never seen: memtrack forked it).
    void add_root_process(int32_t pid, uint64_t start_ns);

    void notify();
    // done(records written) once every record up to ring position `pos` is in the file and
    // the compressed stream is flushed to a complete block.
    void flush_through(uint64_t pos, DrainDone done);
    // Writes what is queued, ends the zstd frame; done(error or records written).
    void finish(DrainDone done);

private:
    // Touched only on strand_.
    void on_notify();
    void write_batch(const RecordBatch& b);
    void complete_flushes();
    void fail(Error e);

    Strand strand_;
    BatchQueue& in_;
    ZstdFileWriter artifact_;
    Stats& stats_;
    Done queue_space_;
    std::atomic<bool> notify_pending_{false};
    std::string buf_;
    uint64_t written_pos_ = 0;
    uint64_t records_ = 0;
    bool finished_ = false;
    std::optional<Error> error_;
    std::vector<std::pair<uint64_t, DrainDone>> flushes_;
    std::unordered_map<int32_t, uint64_t> live_processes_;  // pid -> start ns
};

}  // namespace memtrack
