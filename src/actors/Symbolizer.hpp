#pragma once
// Owns: the stacks file, the Resolver (libdwfl state, per-module and per-address caches), the
// mappings snapshot of every process seen, the consumer side of the stack batch queue, and the
// decision to end a first-stack pause (MT_HOLD_SNAPSHOT) once its mappings are read.
// Accepts: notify(), flush_through(pos, done), finish(done) (from BatchSink).
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "actors/BatchSink.hpp"
#include "format/ZstdFileWriter.hpp"
#include "symbols/ProcessMaps.hpp"
#include "symbols/Resolver.hpp"

namespace memtrack {

class ProcessHolds;
class Stats;

class Symbolizer : public BatchSink {
public:
    // `resolver` may already be preloading modules (Resolver::preload).
    Symbolizer(boost::asio::io_context& io, BatchQueue& in, ZstdFileWriter stacks_file, Stats& stats,
               ProcessHolds* holds, std::unique_ptr<Resolver> resolver = nullptr);

private:
    // Touched only on the strand.
    void write_batch(const RecordBatch& b) override;
    Result<void> flush_file() override { return file_.flush(); }
    Result<void> finish_file() override;
    void snapshot(int32_t pid, bool held);

    ZstdFileWriter file_;
    Stats& stats_;
    ProcessHolds* holds_;  // null: nothing is ever held for a snapshot (tests)
    std::unique_ptr<Resolver> resolver_;
    std::unordered_map<int32_t, ProcessMaps> maps_;
    std::unordered_set<uint64_t> written_;  // a stack sent twice (LRU eviction) is written once
    std::string buf_;
};

}  // namespace memtrack
