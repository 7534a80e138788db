// Writes a stacks file of many deep stacks and an artifact with one allocation per stack, for
// the readers' memory bound (issue 28 item 5; docs/BENCHMARKS.md, "Stacks file readers"):
// PREFIX.MemtrackStacks.msgpack and PREFIX.MemtrackArtifact.msgpack, through memtrack's own
// stack encoder, ArtifactEncoder and ZstdFileWriter.
//
//   deep_stacks PREFIX STACKS DEPTH same|leaf
//
// same: every stack has the same DEPTH frames (only its hash differs): the file zstd shrinks to
// almost nothing and a reader that copies frames per stack blows up. leaf: the innermost frame
// (address and function) differs per stack, the DEPTH - 1 callers are shared.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "format/ArtifactEncoder.hpp"
#include "format/StacksFile.hpp"
#include "format/ZstdFileWriter.hpp"
#include "GeneratedFiles.hpp"

using namespace memtrack;
using memtrack::bench::check;
using memtrack::bench::write_some;

namespace {

Frame frame(uint64_t fn) {
    return Frame{0x400000 + fn * 64, "/bench/deep", "0123abcd", fmt::format("deep_function_{}", fn), "/bench/deep.cpp",
                 uint32_t(10 + fn), false};
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 5 || (std::string(argv[4]) != "same" && std::string(argv[4]) != "leaf")) {
        fmt::print(stderr, "usage: deep_stacks PREFIX STACKS DEPTH same|leaf\n");
        return 2;
    }
    const std::string prefix = argv[1];
    const uint64_t n = std::strtoull(argv[2], nullptr, 10);
    const uint64_t depth = std::strtoull(argv[3], nullptr, 10);
    const bool leaf = std::string(argv[4]) == "leaf";
    if (depth == 0 || depth > 127) {
        fmt::print(stderr, "deep_stacks: DEPTH is 1..127\n");
        return 2;
    }
    std::vector<Frame> frames;
    for (uint64_t d = 0; d < depth; ++d) frames.push_back(frame(1000000 + d));  // innermost first

    ZstdFileWriter stacks = bench::open_or_exit("deep_stacks", prefix + ".MemtrackStacks.msgpack");
    std::string buf;
    for (uint64_t s = 0; s < n; ++s) {
        if (leaf) frames[0] = frame(s);
        encode_stack(s + 1, 1000, frames, buf);
        write_some("deep_stacks", stacks, buf);
    }
    write_some("deep_stacks", stacks, buf, true);
    check("deep_stacks", stacks.finish());

    ZstdFileWriter artifact = bench::open_or_exit("deep_stacks", prefix + ".MemtrackArtifact.msgpack");
    buf.clear();
    for (uint64_t s = 0; s < n; ++s) {
        Event e;
        e.pid = 1000;
        e.tid = 1000;
        e.timestamp = 1'000'000'000'000ull + s * 100;
        e.kind = EventKind::Malloc;
        e.size = 64;
        e.addr = 0x10000 + s * 64;
        e.stack_hash = s + 1;
        encode_event(e, buf);
        write_some("deep_stacks", artifact, buf);
    }
    write_some("deep_stacks", artifact, buf, true);
    check("deep_stacks", artifact.finish());
    return 0;
}
