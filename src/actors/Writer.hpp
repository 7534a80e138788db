#pragma once
// Owns: the artifact file and its zstd stream, the consumer side of the event batch queue, and
// the table of live tracked processes (for their lifetimes).
// Accepts: notify(), flush_through(pos, done), finish(done) (from BatchSink), add_root_process().
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "actors/BatchSink.hpp"
#include "format/ZstdFileWriter.hpp"

namespace memtrack {

class Stats;

class Writer : public BatchSink {
public:
    Writer(boost::asio::io_context& io, BatchQueue& in, ZstdFileWriter artifact, Stats& stats);

    // A process whose start no Fork record reports (the command memtrack forked, an attached pid).
    void add_root_process(int32_t pid, uint64_t start_ns);

private:
    // Touched only on the strand.
    void write_batch(const RecordBatch& b) override;
    Result<void> flush_file() override { return artifact_.flush(); }
    Result<void> finish_file() override;

    ZstdFileWriter artifact_;
    Stats& stats_;
    std::vector<char> buf_;  // one batch's encoded events
    std::unordered_map<int32_t, uint64_t> live_processes_;  // pid -> start ns
};

}  // namespace memtrack
