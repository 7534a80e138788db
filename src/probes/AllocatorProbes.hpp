#pragma once
// Which allocator functions memtrack probes, where, and the uprobe_multi links that hold them.
#include <cstdint>
#include <string>
#include <vector>

#include "core/Result.hpp"
#include "probes/UprobeMultiLink.hpp"

namespace memtrack {

struct AllocatorFunction {
    const char* symbol;
    uint32_t func;      // mt_func
    bool has_return;    // needs a return probe (allocations: the address comes back)
    bool required;      // start-up fails without it (malloc, free)
};

const std::vector<AllocatorFunction>& libc_functions();
const std::vector<AllocatorFunction>& libstdcxx_functions();

// The resolved probe sites of one library: one entry link and one return link.
struct LibraryProbes {
    std::string path;
    UprobeMultiSpec entry;
    UprobeMultiSpec ret;
    std::vector<std::string> missing;  // optional symbols the library does not have
};

// Resolves `functions` in the ELF file at `path`. Fails when a required one is missing. With
// `place`, each probe sits where ProbePlacement proves it cheaper; otherwise at the entry.
Result<LibraryProbes> resolve_library_probes(const std::string& path,
                                             const std::vector<AllocatorFunction>& functions, bool place);

// How many argument registers the BPF handler reads for a function (ProbePlacement keeps them).
unsigned argument_registers(uint32_t func);

// Paths of the C library and the C++ runtime as this process maps them (memtrack links both).
std::string loaded_library_path(const std::string& soname_prefix);

}  // namespace memtrack
