// libFuzzer target: the artifact reader (read_artifact), fast path and generic path, on any file.
#include <cstddef>
#include <cstdint>

#include "FuzzFile.hpp"
#include "format/ArtifactReader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    memtrack::fuzz::FuzzFile file(data, size);
    uint64_t events = 0;
    auto r = memtrack::read_artifact(file.path(), [&](const memtrack::Event&) { ++events; });
    if (r && r.value() != events) __builtin_trap();  // the count returned is the count delivered
    return 0;
}
