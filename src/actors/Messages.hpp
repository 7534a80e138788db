#pragma once
// What actors hand each other. High-rate data (record batches) goes through the lock-free
// queue; control messages are posted to the receiving actor's strand as function calls.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/lockfree/spsc_queue.hpp>

#include "core/Result.hpp"
#include "core/Strand.hpp"
#include "format/Record.hpp"
#include "format/StacksFile.hpp"  // Frame
#include "symbols/ProcessMaps.hpp"

namespace memtrack {

// A distinct call stack as the stacks ring delivers it (src/bpf/record.h, mt_stack_record).
struct StackSample {
    uint64_t hash = 0;
    int32_t pid = 0;
    uint16_t flags = 0;  // MT_STACK_NEW_MAPS, MT_STACK_HELD, MT_STACK_LOADER_CODE, MT_STACK_PY_KNOWN
    std::vector<uint64_t> ips;
    // The frames of its Python slots (bpf/python.h), in order, named by Symbolizer::read_new_maps
    // while the process was held at this stack: a code object lives in the process's memory
    // only, and may be freed, or another one made at its address, once it runs on.
    std::vector<Frame> python;
};

// What a stack that said its process's mappings changed was answered with: all of them, or only
// the code the loader added since the last answer (AddedCode), to add to what was known.
struct MapsRead {
    MapsRead(ProcessMaps m, bool added = false) : maps(std::move(m)), added_only(added) {}
    ProcessMaps maps;
    bool added_only = false;
};

// One chunk of ring records, in ring order: events from the event ring, stacks from the stacks ring.
struct RecordBatch {
    std::vector<mt_record> records;
    std::vector<StackSample> stacks;
    // The mappings of the processes whose stacks say they changed, read before the batch was
    // queued (Symbolizer::read_new_maps).
    std::vector<MapsRead> maps;
    uint64_t end_pos = 0;  // the ring's consumer position right after this batch
};

// RingConsumer -> Writer. Bounded: when it is full the consumer stops reading the ring (and
// BPF back-pressure takes over); nothing is ever dropped here.
inline constexpr size_t kBatchQueueDepth = 64;
using BatchQueue = boost::lockfree::spsc_queue<RecordBatch*, boost::lockfree::capacity<kBatchQueueDepth>>;

// Sink -> RingConsumer: batches already written, handed back so the consumer reuses them (and
// their vectors' capacity) instead of allocating a batch per chunk. Measured: with a new batch per
// 1024-record chunk, 4096-record chunks ran 10-15 % faster through the Writer. When the pool is
// full the batch is freed; when it is empty the consumer allocates.
class BatchPool {
public:
    BatchPool() = default;
    BatchPool(const BatchPool&) = delete;
    BatchPool& operator=(const BatchPool&) = delete;
    ~BatchPool() {
        RecordBatch* b = nullptr;
        while (free_.pop(b)) delete b;
    }
    // From the sink's strand only.
    void give_back(std::unique_ptr<RecordBatch> b) {
        if (free_.push(b.get())) b.release();
    }
    // From the consumer's strand only: an empty batch, reused when one is available.
    std::unique_ptr<RecordBatch> take() {
        RecordBatch* b = nullptr;
        if (!free_.pop(b)) return std::make_unique<RecordBatch>();
        b->records.clear();
        b->stacks.clear();
        b->maps.clear();
        b->end_pos = 0;
        return std::unique_ptr<RecordBatch>(b);
    }

private:
    boost::lockfree::spsc_queue<RecordBatch*, boost::lockfree::capacity<kBatchQueueDepth>> free_;
};

using DrainDone = std::function<void(Result<uint64_t> records_written)>;

}  // namespace memtrack
