// The event lane without BPF: a RingConsumer reading a ring in ordinary memory (MemoryRing) into
// a Writer, wired by SinkLane, drained and closed by DrainBarrier. What root tests can only see
// from outside (a drain's reply, a full queue that must not stall, the shutdown's order) is
// driven here step by step.
#include <doctest/doctest.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <string>
#include <vector>

#include "MemoryRing.hpp"
#include "TestFiles.hpp"
#include "actors/BatchSink.hpp"
#include "actors/DrainBarrier.hpp"
#include "actors/Lane.hpp"
#include "actors/Writer.hpp"
#include "format/ArtifactReader.hpp"
#include "format/ZstdFileWriter.hpp"

using namespace memtrack;
using memtrack::unittest::MemoryRing;
using memtrack::unittest::TempDir;

namespace {

constexpr uint64_t kRingBytes = 1 << 16;

// Runs what is ready now. An io_context that ran out of work stops, and polls nothing more
// until restarted: the sink's, with no timer of its own, does between the test's turns.
size_t poll(boost::asio::io_context& io) {
    io.restart();
    return io.poll();
}

RingConsumer::Options events_options(size_t chunk_records) {
    return {RingConsumer::Records::Events, chunk_records, std::chrono::microseconds(0), std::chrono::milliseconds(10)};
}

ZstdFileWriter artifact_at(const std::string& path) {
    auto f = ZstdFileWriter::create(path);
    REQUIRE(f);
    return std::move(f).value();
}

// Every event of the artifact must be MemoryRing::event(0 .. n-1), in order.
void check_artifact(const std::string& path, uint64_t n) {
    uint64_t seen = 0, wrong = 0;
    auto read = read_artifact(path, [&](const Event& e) {
        const mt_record want = MemoryRing::event(seen++);
        if (e.addr != want.addr || e.size != mt_record_size(&want) || e.kind != EventKind::Malloc) ++wrong;
    });
    REQUIRE(read);
    CHECK(seen == n);
    CHECK(wrong == 0);
}

// A ring, the event lane reading it into an artifact, and the lane's barrier, on one io_context.
struct OneLane {
    explicit OneLane(size_t chunk_records)
        : lane(io, ring.view(), events_options(chunk_records), artifact_at(path)), barrier(io, {&lane}) {}
    TempDir dir;
    const std::string path = dir / "events.MemtrackArtifact.msgpack";
    MemoryRing ring{kRingBytes};
    boost::asio::io_context io;
    SinkLane<Writer> lane;
    DrainBarrier barrier;
};

}  // namespace

TEST_CASE("DrainBarrier: a drain answers with every record written before it, then close finishes the file") {
    OneLane l(16);
    MemoryRing& ring = l.ring;
    SinkLane<Writer>& lane = l.lane;
    DrainBarrier& barrier = l.barrier;

    for (uint64_t i = 0; i < 100; ++i) REQUIRE(ring.write_event(i));
    lane.consumer().start();
    std::vector<std::string> order;
    barrier.request([&](Result<uint64_t> r) {
        REQUIRE(r);
        CHECK(r.value() == 100);
        order.push_back("drained");
        // Written after the drain: the close's barrier is later, so they are in the file too.
        for (uint64_t i = 100; i < 130; ++i) REQUIRE(ring.write_event(i));
        barrier.close([&] { order.push_back("read"); },
                      [&](Result<uint64_t> closed) {
                          REQUIRE(closed);
                          CHECK(closed.value() == 130);
                          order.push_back("closed");
                          lane.consumer().stop();
                      });
    });
    l.io.run();  // ends once the consumer stopped: nothing else keeps it busy

    CHECK(order == std::vector<std::string>{"drained", "read", "closed"});
    CHECK(ring.consumer_pos() == ring.producer_pos());
    CHECK(lane.sink().counters().written.get() == 130);
    check_artifact(l.path, 130);
}

TEST_CASE("RingConsumer: a full batch queue stops the reading, and the sink's progress resumes it") {
    TempDir dir;
    const std::string path = dir / "events.MemtrackArtifact.msgpack";
    MemoryRing ring(kRingBytes);
    boost::asio::io_context consumer_io, sink_io;
    // A batch per record, and the sink on an io_context of its own that runs only when told.
    SinkLane<Writer> lane(consumer_io, sink_io, ring.view(), events_options(1), artifact_at(path));
    DrainBarrier barrier(consumer_io, {&lane});

    constexpr uint64_t kEvents = 200;
    for (uint64_t i = 0; i < kEvents; ++i) REQUIRE(ring.write_event(i));
    lane.consumer().start();
    while (poll(consumer_io) > 0) {
    }
    // The queue holds kBatchQueueDepth batches: the consumer stopped there, the ring keeps the rest.
    CHECK(ring.consumer_pos() == kBatchQueueDepth * MemoryRing::kEventBytes);

    // Only the sink's pops (and the queue space they report) let the consumer go on.
    for (int turn = 0; turn < 10000 && ring.consumer_pos() < ring.producer_pos(); ++turn) {
        poll(sink_io);
        poll(consumer_io);
    }
    CHECK(ring.consumer_pos() == ring.producer_pos());

    bool closed = false;
    barrier.close(nullptr, [&](Result<uint64_t> r) {
        REQUIRE(r);
        CHECK(r.value() == kEvents);
        closed = true;
        lane.consumer().stop();
    });
    for (int turn = 0; turn < 10000 && !closed; ++turn) {
        poll(consumer_io);
        poll(sink_io);
    }
    REQUIRE(closed);
    check_artifact(path, kEvents);
}

TEST_CASE("DrainBarrier: a drain asked for just before the close is answered, with the records before it") {
    OneLane l(1024);
    MemoryRing& ring = l.ring;
    SinkLane<Writer>& lane = l.lane;
    DrainBarrier& barrier = l.barrier;

    for (uint64_t i = 0; i < 50; ++i) REQUIRE(ring.write_event(i));
    lane.consumer().start();
    std::optional<uint64_t> drained, closed;
    barrier.request([&](Result<uint64_t> r) {
        REQUIRE(r);
        drained = r.value();
    });
    barrier.close(nullptr, [&](Result<uint64_t> r) {
        REQUIRE(r);
        closed = r.value();
        lane.consumer().stop();
    });
    l.io.run();
    REQUIRE(drained);
    REQUIRE(closed);
    CHECK(*drained == 50);
    CHECK(*closed == 50);
    check_artifact(l.path, 50);
}

namespace {

// A sink that notes, for each batch it writes, how many were waiting at its pop; before it looks
// at its first batch the slot that pop freed is refilled, as the producer may at any moment.
struct WaitingSink : BatchSink {
    WaitingSink(boost::asio::io_context& io, BatchQueue& in) : BatchSink(io, in), in_(in) {}
    void write_batch(const RecordBatch&) override {
        if (seen.empty()) REQUIRE(in_.push(new RecordBatch));
        seen.push_back(waiting_at_pop());
    }
    Result<void> flush_file() override { return {}; }
    Result<void> finish_file() override { return {}; }
    BatchQueue& in_;
    std::vector<size_t> seen;
};

}  // namespace

TEST_CASE("BatchSink: the batches waiting at a pop never exceed the queue's depth, though the producer refills at once") {
    boost::asio::io_context io;
    BatchQueue queue;
    WaitingSink sink(io, queue);
    for (size_t i = 0; i < kBatchQueueDepth; ++i) REQUIRE(queue.push(new RecordBatch));
    for (size_t turn = 0; turn < 2 * kBatchQueueDepth && queue.read_available() > 0; ++turn) {
        sink.notify();
        poll(io);
    }
    REQUIRE(sink.seen.size() == kBatchQueueDepth + 1);
    CHECK(sink.seen.front() == kBatchQueueDepth);  // the refill came after the pop: not counted
    CHECK(sink.seen[1] == kBatchQueueDepth);       // the queue full again at the next pop
    CHECK(sink.seen.back() == 1);
    CHECK(*std::max_element(sink.seen.begin(), sink.seen.end()) == kBatchQueueDepth);
}
