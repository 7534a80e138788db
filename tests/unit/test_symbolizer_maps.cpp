// The Symbolizer applies a process's new mappings from the stack that brought them: the stacks
// queued before it in the same batch were taken in the image the process had before.
#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <map>

#include "TestFiles.hpp"
#include "actors/Stats.hpp"
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

}  // namespace

TEST_CASE("Symbolizer: new mappings apply from the stack that brought them, not to the ones before") {
    TempDir dir;
    const std::string path = dir / "stacks.msgpack";
    auto file = ZstdFileWriter::create(path);
    REQUIRE(file);
    boost::asio::io_context io;
    BatchQueue queue;
    Stats stats;
    Symbolizer symbolizer(io, queue, std::move(file).value(), stats, nullptr);

    // The first image, then an exec: the second image's code is elsewhere.
    auto* first = new RecordBatch;
    first->stacks.push_back(stack(1, 0x400100, MT_STACK_NEW_MAPS));
    first->maps.push_back(ProcessMaps::parse("00400000-00401000 r-xp 00000000 00:00 0 /nonexistent/first\n"));
    auto* both = new RecordBatch;
    both->stacks.push_back(stack(2, 0x400200, 0));                // still the first image
    both->stacks.push_back(stack(3, 0x500100, MT_STACK_NEW_MAPS));  // the exec'ed one
    both->maps.push_back(ProcessMaps::parse("00500000-00501000 r-xp 00000000 00:00 0 /nonexistent/second\n"));
    REQUIRE(queue.push(first));
    REQUIRE(queue.push(both));
    symbolizer.notify();
    bool finished = false;
    symbolizer.finish([&](Result<uint64_t> r) {
        CHECK(r);
        finished = true;
    });
    io.run();
    REQUIRE(finished);

    std::map<uint64_t, std::vector<Frame>> frames;
    REQUIRE(read_stacks(path, [&](uint64_t hash, int32_t, std::vector<Frame>&& f) { frames[hash] = std::move(f); }));
    REQUIRE(frames.size() == 3);
    for (uint64_t hash : {1, 2, 3}) {
        CAPTURE(hash);
        REQUIRE(frames[hash].size() == 1);  // cut (no frame) when judged by the wrong image's mappings
    }
    CHECK(frames[2][0].module == "/nonexistent/first");
    CHECK(frames[3][0].module == "/nonexistent/second");
    CHECK(stats.to_json().at("stacks_cut_outside_code").as_uint64() == 0);
}
