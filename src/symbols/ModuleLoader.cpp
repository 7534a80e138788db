#include "symbols/ModuleLoader.hpp"

#include <fcntl.h>

#include <cerrno>
#include <cstring>

#include "core/Fd.hpp"
#include "symbols/ModuleIdentity.hpp"

namespace memtrack {
namespace {

// Where dwfl_standard_find_debuginfo looks; null selects its default, ":.debug:/usr/lib/debug":
// build-id first (/usr/lib/debug/.build-id/xx/rest.debug), then .gnu_debuglink beside the file,
// in its .debug folder and under /usr/lib/debug.
char* g_debuginfo_path = nullptr;

// libdwfl's search for a module's debug info. Its first call is for the module's debug file:
// the one ObjectFiles opened by build-id (the module's userdata, a KnownDebugFile), where libdwfl
// would look first, is handed over. A file without one, and a later call (a dwz alternate file),
// are searched for as libdwfl does.
int find_debuginfo(Dwfl_Module* mod, void** userdata, const char* modname, GElf_Addr base, const char* file_name,
                   const char* debuglink_file, GElf_Word debuglink_crc, char** debuginfo_file_name) {
    if (auto* known = static_cast<KnownDebugFile*>(*userdata); known != nullptr && known->fd.valid()) {
        *debuginfo_file_name = ::strdup(known->path.c_str());  // libdwfl frees it
        return known->fd.release();  // libdwfl closes it
    }
    return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
                                        debuginfo_file_name);
}

// Every module is reported offline, one file per Dwfl: no process is attached, so nothing here
// depends on the traced process still being alive, and modules can be loaded on any thread.
const Dwfl_Callbacks kCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &g_debuginfo_path,
};

Error dwfl_error(const std::string& what, std::string op) { return Error{std::move(op), what, 0, dwfl_errmsg(-1)}; }

Result<Fd> dup_fd(const Fd& fd, const std::string& what) {
    Fd dup(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
    if (!dup.valid()) return errno_error("dup", what);
    return dup;
}

}  // namespace

std::string module_identity(const ObjectFile& file) { return module_identity(file.build_id(), file.path(), file.stat()); }

Result<LoadedModule> load_module(const ObjectFile& file, const std::string& name) {
    auto open = file.handles_for_symbols();
    if (!open) return open.error();
    auto fd = dup_fd((*open)->file.fd, name);
    if (!fd) return fd.error();
    KnownDebugFile debug;
    if ((*open)->debug) {
        auto dfd = dup_fd((*open)->debug->fd, (*open)->debug_path);
        if (!dfd) return dfd.error();
        debug = {std::move(dfd).value(), (*open)->debug_path};
    }

    std::unique_ptr<Dwfl, DwflDeleter> dwfl(dwfl_begin(&kCallbacks));
    if (!dwfl) return dwfl_error(name, "dwfl_begin");
    dwfl_report_begin(dwfl.get());
    // Bias 0 (add_p_vaddr with base 0): module addresses are the ELF's own p_vaddr addresses.
    Dwfl_Module* mod = dwfl_report_elf(dwfl.get(), name.c_str(), name.c_str(), fd->get(), 0, true);
    if (mod == nullptr) return dwfl_error(name, "dwfl_report_elf");  // the fd is still ours: Fd closes it
    fd->release();  // consumed by libdwfl on success
    if (dwfl_report_end(dwfl.get(), nullptr, nullptr) != 0) return dwfl_error(name, "dwfl_report_end");
    auto module = std::make_unique<Module>(std::move(dwfl), mod, std::move(debug));
    if (!module->usable()) return Error{"read ELF headers", name, 0, "no program headers"};
    return LoadedModule{std::move(module), module_identity(file)};
}

Result<LoadedModule> load_vdso_image(std::string& image) {
    std::unique_ptr<Dwfl, DwflDeleter> dwfl(dwfl_begin(&kCallbacks));
    if (!dwfl) return dwfl_error("[vdso]", "dwfl_begin");
    dwfl_report_begin(dwfl.get());
    // libdwfl reads the image in place.
    Dwfl_Module* mod = dwfl_report_offline_memory(dwfl.get(), "[vdso]", "[vdso]", image.data(), image.size());
    if (mod == nullptr) return dwfl_error("[vdso]", "dwfl_report_offline_memory");
    if (dwfl_report_end(dwfl.get(), nullptr, nullptr) != 0) return dwfl_error("[vdso]", "dwfl_report_end");
    auto module = std::make_unique<Module>(std::move(dwfl), mod);
    if (!module->usable()) return Error{"read ELF headers", "[vdso]", 0, "no program headers"};
    std::string identity = module->build_id().empty() ? std::string("[vdso]") : module->build_id();
    return LoadedModule{std::move(module), std::move(identity)};
}

}  // namespace memtrack
