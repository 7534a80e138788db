#include "symbols/ModuleLoader.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <string_view>

#include <fmt/format.h>

#include "core/Fd.hpp"
#include "symbols/ModuleIdentity.hpp"

namespace memtrack {
namespace {

// Where dwfl_standard_find_debuginfo looks; null selects its default, ":.debug:/usr/lib/debug":
// build-id first (/usr/lib/debug/.build-id/xx/rest.debug), then .gnu_debuglink beside the file,
// in its .debug folder and under /usr/lib/debug.
char* g_debuginfo_path = nullptr;

// Every module is reported offline, one file per Dwfl: no process is attached, so nothing here
// depends on the traced process still being alive, and modules can be loaded on any thread.
const Dwfl_Callbacks kCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &g_debuginfo_path,
};

Error dwfl_error(const std::string& what, std::string op) { return Error{std::move(op), what, 0, dwfl_errmsg(-1)}; }

}  // namespace

Result<LoadedModule> load_module_file(int pid, const Mapping& m) {
    constexpr std::string_view kDeleted = " (deleted)";
    const bool deleted = m.path.ends_with(kDeleted);
    const std::string path = deleted ? m.path.substr(0, m.path.size() - kDeleted.size()) : m.path;

    Fd fd;
    if (pid > 0) fd.reset(::open(fmt::format("/proc/{}/map_files/{:x}-{:x}", pid, m.start, m.end).c_str(),
                                 O_RDONLY | O_CLOEXEC));
    if (!fd.valid() && pid > 0 && !deleted)
        fd.reset(::open(fmt::format("/proc/{}/root{}", pid, path).c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid() && !deleted) fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return errno_error("open", m.path);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return errno_error("stat", m.path);

    std::unique_ptr<Dwfl, DwflDeleter> dwfl(dwfl_begin(&kCallbacks));
    if (!dwfl) return dwfl_error(m.path, "dwfl_begin");
    dwfl_report_begin(dwfl.get());
    // Bias 0 (add_p_vaddr with base 0): module addresses are the ELF's own p_vaddr addresses.
    // The path, not the fd's /proc name, goes to libdwfl so .gnu_debuglink is looked for beside
    // the real file.
    Dwfl_Module* mod = dwfl_report_elf(dwfl.get(), path.c_str(), path.c_str(), fd.get(), 0, true);
    if (mod == nullptr) return dwfl_error(m.path, "dwfl_report_elf");  // the fd is still ours: Fd closes it
    fd.release();  // consumed by libdwfl on success
    if (dwfl_report_end(dwfl.get(), nullptr, nullptr) != 0) return dwfl_error(m.path, "dwfl_report_end");
    auto module = std::make_unique<Module>(std::move(dwfl), mod);
    if (!module->usable()) return Error{"read ELF headers", m.path, 0, "no program headers"};
    std::string identity = module_identity(module->build_id(), path, st);
    return LoadedModule{std::move(module), std::move(identity)};
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
