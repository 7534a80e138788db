// Writes a large synthetic recording for scripts/bench.sh --report: PREFIX.MemtrackArtifact.msgpack
// with N events and PREFIX.MemtrackStacks.msgpack with their stacks, through memtrack's own
// ArtifactEncoder, stack encoder and ZstdFileWriter (at memtrack's level), so the files are what
// `memtrack track` would write.
//
//   report_artifact PREFIX N [SITES]
//
// The workload: 4 processes of 4 threads; SITES call sites (default 20000) with 16-frame stacks;
// Malloc 72 %, Calloc 9 %, Realloc 9 % of the allocations; the live heap wanders around 100000
// blocks, and what is live at the end stays (leaks). Deterministic: same arguments, same files.
#include <algorithm>
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

struct Rng {
    uint64_t s = 0x9e3779b97f4a7c15ull;
    uint64_t next() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    }
    uint64_t below(uint64_t n) { return next() % n; }
};

struct Live {
    int32_t pid;
    uint64_t addr;
};

uint64_t stack_hash(uint64_t site) { return (site + 1) * 0x100000001b3ull; }

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        fmt::print(stderr, "usage: report_artifact PREFIX N [SITES]\n");
        return 2;
    }
    const std::string prefix = argv[1];
    const uint64_t n = std::strtoull(argv[2], nullptr, 10);
    const uint64_t sites = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 20000;
    constexpr int kProcesses = 4, kThreads = 4, kDepth = 16;
    constexpr size_t kTargetLive = 100000;

    ZstdFileWriter stacks = bench::open_or_exit("report_artifact", prefix + ".MemtrackStacks.msgpack");
    std::string buf;
    for (uint64_t s = 0; s < sites; ++s) {
        std::vector<Frame> frames;
        for (int d = 0; d < kDepth; ++d) {
            // Sites share their outer frames, as real programs do: a tree, not 20000 lines.
            const uint64_t fn = d < 4 ? d : (s >> (2 * (kDepth - 1 - d) / 3)) * kDepth + d;
            frames.push_back(Frame{0x400000 + fn * 64 + (s & 7), "/bench/app", "0123abcd", fmt::format("function_{}", fn),
                                   "/bench/app.cpp", uint32_t(10 + fn % 1000), false});
        }
        std::reverse(frames.begin(), frames.end());  // innermost first
        encode_stack(stack_hash(s), 1000, frames, buf);
        write_some("report_artifact", stacks, buf);
    }
    write_some("report_artifact", stacks, buf, true);
    check("report_artifact", stacks.finish());

    ZstdFileWriter artifact = bench::open_or_exit("report_artifact", prefix + ".MemtrackArtifact.msgpack");
    buf.clear();
    Rng rng;
    std::vector<Live> live;
    live.reserve(kTargetLive * 2);
    uint64_t t = 1'000'000'000'000ull;
    uint64_t next_addr = 0x10000;
    for (uint64_t i = 0; i < n; ++i) {
        Event e;
        const uint64_t r = rng.next();
        e.pid = int32_t(1000 + r % kProcesses);
        e.tid = e.pid * 10 + int32_t((r >> 8) % kThreads);
        t += 20 + (r >> 16) % 60;
        e.timestamp = t;
        const bool allocate = live.empty() || rng.below(100) < (live.size() < kTargetLive ? 55 : 45);
        if (allocate) {
            const uint64_t kind = rng.below(10);
            e.kind = kind < 8 ? EventKind::Malloc : kind == 8 ? EventKind::Calloc : EventKind::Realloc;
            e.size = 16 + rng.below(4096);
            e.stack_hash = stack_hash(rng.below(sites));
            e.addr = next_addr;
            next_addr += 16;
            if (e.kind == EventKind::Realloc && !live.empty()) {
                Live& old = live[rng.below(live.size())];
                e.pid = old.pid;
                e.old_addr = old.addr;
                old = live.back();
                live.pop_back();
            }
            live.push_back({e.pid, e.addr});
        } else {
            const size_t k = rng.below(live.size());
            e.kind = EventKind::Free;
            e.pid = live[k].pid;
            e.addr = live[k].addr;
            live[k] = live.back();
            live.pop_back();
        }
        encode_event(e, buf);
        write_some("report_artifact", artifact, buf);
    }
    write_some("report_artifact", artifact, buf, true);
    check("report_artifact", artifact.finish());
    fmt::print("{} events, {} stacks, {} blocks live at the end; artifact {} bytes ({} raw)\n", n, sites, live.size(),
               artifact.compressed_bytes(), artifact.raw_bytes());
    return 0;
}
