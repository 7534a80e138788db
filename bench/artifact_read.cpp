// Reads an artifact the way `memtrack report` does (read_artifact: zstd, then the event
// decoder) and does nothing with the events: the floor under the report's analysis, for
// scripts/bench.sh --report.
//
//   artifact_read ARTIFACT
#include <cstdio>

#include <fmt/format.h>

#include "format/ArtifactReader.hpp"

int main(int argc, char** argv) {
    if (argc != 2) {
        fmt::print(stderr, "usage: artifact_read ARTIFACT\n");
        return 2;
    }
    uint64_t sizes = 0;  // something of every event, so no part of decoding is dead code
    auto read = memtrack::read_artifact(argv[1], [&](const memtrack::Event& e) { sizes += e.size; });
    if (!read) {
        fmt::print(stderr, "artifact_read: {}\n", read.error().message());
        return 1;
    }
    fmt::print("{} events, sizes summed {}\n", read.value(), sizes);
    return 0;
}
