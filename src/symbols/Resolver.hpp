#pragma once
// Addresses of a traced process to functions, source lines and inlined calls, from the mapped
// files' symbol tables and DWARF (elfutils libdw/libdwfl), with separate debug info found by
// build-id or .gnu_debuglink under /usr/lib/debug. Each binary is loaded and indexed once
// (Module: symbols sorted by address, each compile unit's functions once it is first needed) and
// shared by every process and path that maps it; after that an address costs microseconds.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "format/StacksFile.hpp"  // Frame
#include "symbols/ObjectFiles.hpp"
#include "symbols/ProcessMaps.hpp"

namespace memtrack {

// The module of a frame in code a runtime made, named by the process's perf map (PerfMap).
inline constexpr const char* kJitModule = "[jit]";

// Not thread-safe: one Resolver belongs to one strand (the symbolizer's).
class Resolver {
public:
    Resolver();
    ~Resolver();
    Resolver(const Resolver&) = delete;
    Resolver& operator=(const Resolver&) = delete;

    // Resolves one captured frame. `ip` is a return address: symbol and line are those of
    // `ip - 1` (the call instruction), while every returned Frame carries `ip` itself.
    //
    // Innermost first: a frame per call inlined at that spot (inlined = true), then the function
    // that contains the code. Never empty, never throws: an address outside every mapping gives
    // one Frame with only `ip`; one in a module without symbols (stripped, unreadable, deleted)
    // keeps `ip`, `module` and `build_id` when known, with `function` empty. An address in
    // anonymous executable memory is named by the process's perf map (module kJitModule).
    std::vector<Frame> resolve(const ProcessMaps& maps, uint64_t ip);

    // Starts loading the ELF files at `paths` as modules, with their symbol tables and DWARF
    // (separate debug info found and decompressed), on a thread of its own in the idle
    // scheduling class. Meant for the files stacks will almost surely name (the C library, the
    // command), before any stack exists: loading a module costs tens of milliseconds (libc's
    // compressed debug info, libdwfl's first search for debug info a file lacks), which for a
    // short command would otherwise fall on its exit path. resolve() adopts what is loaded, and
    // waits only when it needs a file still loading. Once per Resolver; unusable paths are
    // skipped.
    void preload(const std::vector<std::string>& paths);
    // No more stacks will come: skips the files not started, finishes the one loading (at normal
    // priority) and joins the thread. Idempotent; the destructor calls it.
    void stop_preloading();
    // The run's one reading of each object file (ObjectFiles, shared with the probe and unwind
    // stages), which every module is read through: libdwfl is given its descriptors, and a file
    // whose build-id is that of a module loaded already (a copy, another path of it) is given
    // that module. Before preload() and the first resolve(); without it the Resolver reads files
    // through an ObjectFiles of its own.
    void share_files(std::shared_ptr<ObjectFiles> files);

    // Lookups answered from, and added to, the per-module address cache.
    uint64_t cache_hits() const;
    uint64_t cache_misses() const;
    // Frames named by a perf map so far.
    uint64_t jit_frames() const;
    // Module files opened with libdwfl so far (one per distinct build-id, or per file without one).
    uint64_t modules_loaded() const;
    // Files made modules with libdwfl on the caller's thread (a copy of a build loaded already
    // is not).
    uint64_t files_opened() const;
    // Time spent loading and indexing modules on the caller's thread (not the preload thread's).
    uint64_t module_load_ns() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace memtrack
