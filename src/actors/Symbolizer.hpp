#pragma once
// Owns: the stacks file, the Resolver (libdwfl state, per-module and per-address caches), the
// mappings snapshot of every process seen, the consumer side of the stack batch queue, and the
// decision to end a first-stack pause (MT_HOLD_SNAPSHOT) once its mappings are read.
// Accepts: notify(), flush_through(pos, done), finish(done) (from BatchSink); read_new_maps(batch)
// on the stacks consumer's strand; from any thread: counters().
//
// When symbolizing lags behind a flood of new stacks, nothing is dropped and memory stays
// bounded: batches wait in the stack queue (64 batches of at most --chunk-records stacks); once
// it is full the stacks consumer stops reading, the stacks ring fills, and at its stop watermark
// BPF pauses the processes that send new stacks (pressure) until the queue drains. The resolver's
// memory is bounded by the binaries mapped (one index per module, compile unit and function
// met) and a bounded address cache.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "actors/BatchSink.hpp"
#include "actors/ActorCounters.hpp"
#include "format/ZstdFileWriter.hpp"
#include "symbols/ProcessMaps.hpp"
#include "symbols/PythonCode.hpp"
#include "symbols/Resolver.hpp"

namespace memtrack {

class AddedCode;
class ProcessHolds;

class Symbolizer : public BatchSink {
public:
    // `resolver` may already be preloading modules (Resolver::preload). `delay_per_stack` is a
    // testing knob (--symbolize-delay-us): a symbolizer that lags.
    // `added`: the code the loader added to each process (null: every change reads all mappings).
    Symbolizer(boost::asio::io_context& io, BatchQueue& in, ZstdFileWriter stacks_file, ProcessHolds* holds,
               AddedCode* added = nullptr, std::unique_ptr<Resolver> resolver = nullptr,
               std::chrono::microseconds delay_per_stack = {});

    // On the stacks consumer's strand, before `b` is queued: reads the mappings of every process
    // whose stack says they changed, into `b`, and ends its first-stack pause. There, not on the
    // strand: a pause must not wait behind the batches queued before it, whose symbols may wait
    // for a debuginfod server (up to DEBUGINFOD_TIMEOUT). It waits only when the queue is full,
    // as pressure does. Touches nothing of the strand's but its counters. After a dlopen
    // (MT_STACK_LOADER_CODE) the answer is only the objects the loader added, when AddedCode
    // followed them all: O(new objects) where a read of /proc/PID/maps is O(objects mapped).
    void read_new_maps(RecordBatch& b);
    SymbolizerCounters counters() const { return counters_; }
    // What names the Python frames (thread-safe): ProcessLinks tells it the layouts runtimes publish.
    PythonCode& python_code() { return python_; }

private:
    // Touched only on the strand.
    void write_batch(const RecordBatch& b) override;
    Result<void> flush_file() override { return file_.flush(); }
    Result<void> finish_file() override;
    // Mappings read (by read_new_maps, or again here) replace what was known of their process;
    // the loader's additions add to it.
    void install(MapsRead read);
    // All of pid's mappings, read now (counted; AddedCode and the Python layout told): the one
    // route for a full read, from read_new_maps and from the strand (read_again).
    std::optional<ProcessMaps> read_all(int32_t pid);
    void read_again(int32_t pid);
    // Whether `ip` (a return address) lies in code `pid` maps.
    bool in_code(int32_t pid, uint64_t ip, std::unordered_set<int32_t>& reread);

    ZstdFileWriter file_;
    ProcessHolds* holds_;  // null: nothing is ever held for a snapshot (tests)
    AddedCode* added_;
    std::unique_ptr<Resolver> resolver_;
    // Names the Python frames: read_new_maps reads their code objects while the process is
    // held and hands the names to the strand with the stack (StackSample::python).
    mutable PythonCode python_;
    std::chrono::microseconds delay_per_stack_;
    SymbolizerCounters counters_;
    std::unordered_map<int32_t, ProcessMaps> maps_;
    // The stacks in the file: a stack sent again (another stack took its way in BPF's
    // seen_stacks) is written and counted once.
    std::unordered_set<uint64_t> written_;
    std::string buf_;
};

}  // namespace memtrack
