#pragma once
// Opening a mapped file (or the vDSO) as a Module with libdwfl: which file to open, separate
// debug info found by build-id or .gnu_debuglink under /usr/lib/debug, and the identity the
// module is shared under.
#include <memory>
#include <string>

#include "core/Result.hpp"
#include "symbols/Module.hpp"
#include "symbols/ProcessMaps.hpp"

namespace memtrack {

struct LoadedModule {
    std::unique_ptr<Module> module;
    std::string identity;  // module_identity(): build-id, or file identity without one
};

// The file mapped by `m`. With pid > 0 it is opened through /proc/PID/map_files (the exact file,
// even deleted or in another mount namespace), then /proc/PID/root; else by path. A deleted
// file is never opened by its path, which names another file now, or none.
Result<LoadedModule> load_module_file(int pid, const Mapping& m);

// The vDSO, from `image` (memtrack's own copy of it: the kernel maps one image into every 64-bit
// process). `image` must outlive the module.
Result<LoadedModule> load_vdso_image(std::string& image);

}  // namespace memtrack
