#pragma once
// A process's view of one ELF file without the process: its PT_LOAD segments mapped at a base
// address as the dynamic loader maps them. Drives the resolver on a file directly (benchmarks,
// tests of big binaries), with no process to read /proc from.
#include <cstdint>
#include <string>
#include <vector>

#include "core/Result.hpp"
#include "symbols/ProcessMaps.hpp"

namespace memtrack {

struct FileMaps {
    ProcessMaps maps;  // pid() is 0: the resolver opens the file by path
    uint64_t base = 0;
    // The executable segments' module address ranges [first, second): base + one of these is a
    // code address of the mapped file.
    std::vector<std::pair<uint64_t, uint64_t>> code;
};

// Maps `path` at `base` (page-aligned).
Result<FileMaps> map_file(const std::string& path, uint64_t base = 0x7f0000000000);

}  // namespace memtrack
