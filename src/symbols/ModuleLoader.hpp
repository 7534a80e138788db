#pragma once
// A mapped file (or the vDSO) as a Module with libdwfl: the file as ObjectFiles read it (libdwfl
// is given duplicates of its descriptors and opens nothing again: issue 33.8), separate debug
// info found by build-id (ObjectFiles' reading) or .gnu_debuglink under /usr/lib/debug (libdwfl's
// search), and the identity the module is shared under.
#include <memory>
#include <string>

#include "core/Result.hpp"
#include "symbols/Module.hpp"
#include "symbols/ObjectFiles.hpp"

namespace memtrack {

struct LoadedModule {
    std::unique_ptr<Module> module;
    std::string identity;  // module_identity(): build-id, or file identity without one
};

// The identity of a module made of `file`: its build-id, or the file's identity without one.
std::string module_identity(const ObjectFile& file);

// `file` as the module named `name` (the path the process maps it at: libdwfl looks for a
// .gnu_debuglink file beside it). libdwfl reads the file, and its separate debug file when
// ObjectFiles found one, through duplicates of ObjectFiles' descriptors: its own Elf handles over
// the same open files (it changes its handles, inflating compressed debug sections in place,
// while the probe and unwind stages read ObjectFiles' own on another thread).
Result<LoadedModule> load_module(const ObjectFile& file, const std::string& name);

// The vDSO, from `image` (memtrack's own copy of it: the kernel maps one image into every 64-bit
// process). `image` must outlive the module.
Result<LoadedModule> load_vdso_image(std::string& image);

}  // namespace memtrack
