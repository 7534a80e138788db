// The Symbolizer applies a process's new mappings from the stack that brought them: the stacks
// queued before it in the same batch were taken in the image the process had before.
#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <map>

#include "TestFiles.hpp"
#include "actors/Symbolizer.hpp"
#include "bpf/record.h"
#include "format/StacksFile.hpp"

using namespace memtrack;
using memtrack::unittest::TempDir;

namespace {

// Parsed maps carry pid 0, so the stacks here are pid 0's: /proc/0/maps does not exist, so
// nothing is read again behind the test's back.
StackSample stack(uint64_t hash, uint64_t ip, uint16_t flags) {
    StackSample s;
    s.hash = hash;
    s.pid = 0;
    s.flags = flags;
    s.ips = {ip};
    return s;
}

// Runs a Symbolizer writing to `path` over `batches`, in order, to its finish; its counters.
SymbolizerCounters symbolize(const std::string& path, const std::vector<RecordBatch*>& batches) {
    auto file = ZstdFileWriter::create(path);
    REQUIRE(file);
    boost::asio::io_context io;
    BatchQueue queue;
    Symbolizer symbolizer(io, queue, std::move(file).value(), nullptr);
    for (RecordBatch* b : batches) REQUIRE(queue.push(b));
    symbolizer.notify();
    bool finished = false;
    symbolizer.finish([&](Result<uint64_t> r) {
        CHECK(r);
        finished = true;
    });
    io.run();
    REQUIRE(finished);
    return symbolizer.counters();
}

}  // namespace

TEST_CASE("Symbolizer: new mappings apply from the stack that brought them, not to the ones before") {
    TempDir dir;
    const std::string path = dir / "stacks.msgpack";
    // The first image, then an exec: the second image's code is elsewhere.
    auto* first = new RecordBatch;
    first->stacks.push_back(stack(1, 0x400100, MT_STACK_NEW_MAPS));
    first->maps.push_back(ProcessMaps::parse("00400000-00401000 r-xp 00000000 00:00 0 /nonexistent/first\n"));
    auto* both = new RecordBatch;
    both->stacks.push_back(stack(2, 0x400200, 0));                // still the first image
    both->stacks.push_back(stack(3, 0x500100, MT_STACK_NEW_MAPS));  // the exec'ed one
    both->maps.push_back(ProcessMaps::parse("00500000-00501000 r-xp 00000000 00:00 0 /nonexistent/second\n"));
    const SymbolizerCounters c = symbolize(path, {first, both});

    std::map<uint64_t, std::vector<Frame>> frames;
    REQUIRE(read_stacks(path, [&](uint64_t hash, int32_t, std::vector<Frame>&& f) { frames[hash] = std::move(f); }));
    REQUIRE(frames.size() == 3);
    for (uint64_t hash : {1, 2, 3}) {
        CAPTURE(hash);
        REQUIRE(frames[hash].size() == 1);  // cut (no frame) when judged by the wrong image's mappings
    }
    CHECK(frames[2][0].module == "/nonexistent/first");
    CHECK(frames[3][0].module == "/nonexistent/second");
    CHECK(c.stacks_cut_outside_code.get() == 0);
}

TEST_CASE("Symbolizer: a stack sent again is written, counted and timed once, its ring bytes every time") {
    // BPF sends a stack again once another stack took its way in seen_stacks: here stack 7 comes
    // three times, in the batch that brought it first and in the next one.
    TempDir dir;
    const std::string path = dir / "stacks.msgpack";
    auto* first = new RecordBatch;
    first->stacks.push_back(stack(7, 0x400100, MT_STACK_NEW_MAPS));
    first->maps.push_back(ProcessMaps::parse("00400000-00401000 r-xp 00000000 00:00 0 /nonexistent/first\n"));
    first->stacks.push_back(stack(7, 0x400100, 0));
    auto* again = new RecordBatch;
    again->stacks.push_back(stack(8, 0x400200, 0));
    again->stacks.push_back(stack(7, 0x400100, 0));
    const SymbolizerCounters c = symbolize(path, {first, again});

    std::map<uint64_t, int> written;
    REQUIRE(read_stacks(path, [&](uint64_t hash, int32_t, std::vector<Frame>&&) { ++written[hash]; }));
    CHECK(written == std::map<uint64_t, int>{{7, 1}, {8, 1}});
    CHECK(c.stacks_unique.get() == 2);
    CHECK(c.symbolize_ns.count() == 2);
    // No sample for the stacks that needed no symbolizing: the fastest one took time.
    CHECK(c.symbolize_ns.percentile(0.0) > 0);
    // Each of the four took a 16-byte header, one frame and the ring's 8-byte header.
    CHECK(c.stack_ring_bytes.get() == 4 * (MT_STACK_HEADER_BYTES + 8 + 8));
}
