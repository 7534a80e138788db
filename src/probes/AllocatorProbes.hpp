#pragma once
// The probe sites of one ELF object: which allocator entry points it defines (AllocatorCatalog),
// where each probe sits (ProbePlacement), and the uprobe_multi specs that hold them.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/Result.hpp"
#include "probes/AllocatorCatalog.hpp"
#include "probes/UprobeMultiLink.hpp"
#include "symbols/ObjectFiles.hpp"

namespace memtrack {

// The resolved probe sites of one object: one entry link and one return link.
struct ObjectProbes {
    std::string path;
    std::vector<AllocatorKind> kinds;  // empty: nothing memtrack knows, nothing to probe
    // The entry probes also hold where a process resumes after a system call that matters to its
    // holds (MT_FUNC_AFTER_SYSCALL): a new image at the entry point of the loader or a static
    // executable, a sender after kill's. One link per object: a link more cost ~50 us of
    // every new process's hold.
    UprobeMultiSpec entry;
    UprobeMultiSpec ret;
    size_t functions = 0;              // names probed (aliases of one address included)
    // The loader's: where its r_debug (the list of loaded objects) is, as an ELF vaddr.
    std::optional<uint64_t> r_debug;
    bool empty() const { return entry.offsets.empty(); }
    bool has(AllocatorKind k) const;
    std::string kinds_text() const;    // "glibc, loader"; "none"
};

// Resolves every catalog function the object file defines. With `place`, each probe sits
// where ProbePlacement proves it cheaper; otherwise at the entry. Logs (with -v) what it found.
Result<ObjectProbes> resolve_object_probes(std::shared_ptr<const ObjectFile> file, bool place);
// The same for the file at `path`, read on its own (tests).
Result<ObjectProbes> resolve_object_probes(const std::string& path, bool place);

// Paths of the C library and the C++ runtime as this process maps them (memtrack links both).
std::string loaded_library_path(const std::string& soname_prefix);

}  // namespace memtrack
