// libFuzzer target: the stacks file reader (read_stacks) on any file.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "FuzzFile.hpp"
#include "bpf/record.h"
#include "format/StacksFile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    memtrack::fuzz::FuzzFile file(data, size);
    uint64_t stacks = 0;
    auto r = memtrack::read_stacks(file.path(), [&](uint64_t, int32_t, std::vector<memtrack::Frame>&& frames) {
        size_t addresses = 0;
        for (const auto& f : frames) addresses += !f.inlined;
        if (addresses > MT_MAX_FRAMES) __builtin_trap();  // the reader's own bound
        ++stacks;
    });
    if (r && r.value() != stacks) __builtin_trap();
    return 0;
}
