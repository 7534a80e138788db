#include "symbols/Resolver.hpp"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <sched.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/Clock.hpp"
#include "core/Fd.hpp"
#include "core/Log.hpp"

namespace memtrack {
namespace {

// Where dwfl_standard_find_debuginfo looks; null selects its default, ":.debug:/usr/lib/debug":
// build-id first (/usr/lib/debug/.build-id/xx/rest.debug), then .gnu_debuglink beside the file,
// in its .debug folder and under /usr/lib/debug.
char* g_debuginfo_path = nullptr;

// Every module is reported offline, one file per Dwfl: no process is attached, so nothing here
// depends on the traced process still being alive.
const Dwfl_Callbacks kCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &g_debuginfo_path,
};

// Past this many cached addresses every module's cache is dropped: crude, but it bounds memory
// for a long trace, and refilling costs only lookups libdwfl answers from its own caches.
constexpr size_t kMaxCachedAddresses = size_t(1) << 18;

struct DwflDeleter {
    void operator()(Dwfl* d) const { dwfl_end(d); }
};

struct Load {
    uint64_t offset = 0;  // p_offset
    uint64_t filesz = 0;  // p_filesz
    uint64_t vaddr = 0;   // p_vaddr
};

std::string demangle(const char* name) {
    if (name[0] == '_' && name[1] == 'Z') {
        int status = 0;
        std::unique_ptr<char, decltype(&std::free)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                                        &std::free);
        if (status == 0 && out) return out.get();
    }
    return name;
}

std::string hex(const unsigned char* bits, int len) {
    std::string out;
    out.reserve(size_t(len) * 2);
    for (int i = 0; i < len; ++i) {
        out += "0123456789abcdef"[bits[i] >> 4];
        out += "0123456789abcdef"[bits[i] & 15];
    }
    return out;
}

// The name of a subprogram or inlined subroutine, following DW_AT_abstract_origin and
// DW_AT_specification to where the name lives: the demangled linkage name when there is one (it
// carries namespace, class and parameters), the plain DW_AT_name otherwise (C).
std::string die_function_name(Dwarf_Die* die) {
    Dwarf_Attribute attr;
    if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) != nullptr ||
        dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr) != nullptr) {
        if (const char* s = dwarf_formstring(&attr)) return demangle(s);
    }
    if (dwarf_attr_integrate(die, DW_AT_name, &attr) != nullptr) {
        if (const char* s = dwarf_formstring(&attr)) return s;
    }
    return {};
}

// Where an inlined subroutine was called from: the location of the frame just outside it.
void call_site(Dwarf_Die* inlined, std::string& file, uint32_t& line) {
    file.clear();
    line = 0;
    Dwarf_Attribute attr;
    Dwarf_Word value = 0;
    if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr), &value) == 0) {
        Dwarf_Die cu;
        Dwarf_Files* files = nullptr;
        size_t nfiles = 0;
        if (dwarf_diecu(inlined, &cu, nullptr, nullptr) != nullptr && dwarf_getsrcfiles(&cu, &files, &nfiles) == 0 &&
            value < nfiles) {
            if (const char* s = dwarf_filesrc(files, value, nullptr, nullptr)) file = s;
        }
    }
    if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &attr), &value) == 0 && value <= UINT32_MAX)
        line = uint32_t(value);
}

bool is_code_symbol(const GElf_Sym& sym) {
    const int type = GELF_ST_TYPE(sym.st_info);
    return type == STT_FUNC || type == STT_GNU_IFUNC || type == STT_NOTYPE;
}

// One module file, opened with libdwfl at bias 0 in a Dwfl of its own.
struct Module {
    std::unique_ptr<Dwfl, DwflDeleter> dwfl;
    Dwfl_Module* mod = nullptr;
    Dwarf_Addr bias = 0;  // 0 for files; whatever libdwfl chose for in-memory images
    std::string build_id;
    std::vector<Load> loads;
    // Module address (of the call instruction) -> frames without ip/module/build_id, which the
    // caller fills in; an empty vector records "nothing known here".
    std::unordered_map<uint64_t, std::vector<Frame>> cache;

    // A file offset inside one of the PT_LOAD segments -> the address the ELF file gives it.
    std::optional<uint64_t> to_vaddr(uint64_t file_offset) const {
        for (const Load& l : loads)
            if (file_offset >= l.offset && file_offset - l.offset < l.filesz) return l.vaddr + (file_offset - l.offset);
        return std::nullopt;
    }

    std::vector<Frame> lookup(Dwarf_Addr addr) const;
};

std::vector<Frame> Module::lookup(Dwarf_Addr addr) const {
    std::string symbol;
    GElf_Off offset = 0;
    GElf_Sym sym;
    GElf_Word shndx = 0;
    Elf* sym_elf = nullptr;
    Dwarf_Addr sym_bias = 0;
    if (const char* name = dwfl_module_addrinfo(mod, addr, &offset, &sym, &shndx, &sym_elf, &sym_bias))
        if (is_code_symbol(sym)) symbol = demangle(name);

    // The line table's answer belongs to the innermost frame; each inlined subroutine passes its
    // call site on to the frame outside it.
    std::string file;
    uint32_t line = 0;
    if (Dwfl_Line* l = dwfl_module_getsrc(mod, addr)) {
        int lineno = 0;
        if (const char* src = dwfl_lineinfo(l, nullptr, &lineno, nullptr, nullptr, nullptr)) file = src;
        if (lineno > 0) line = uint32_t(lineno);
    }

    std::vector<Frame> frames;
    std::string container;  // the DWARF subprogram's name
    Dwarf_Addr dwarf_bias = 0;
    if (Dwarf_Die* cudie = dwfl_module_addrdie(mod, addr, &dwarf_bias)) {
        Dwarf_Die* scopes = nullptr;
        int n = dwarf_getscopes(cudie, addr - dwarf_bias, &scopes);
        if (n > 0) {
            // dwarf_getscopes continues past an inlined subroutine into its abstract definition's
            // scopes; the physical parents of the innermost scope are the chain of callers.
            Dwarf_Die innermost = scopes[0];
            std::free(scopes);
            scopes = nullptr;
            n = dwarf_getscopes_die(&innermost, &scopes);
        }
        for (int i = 0; i < n; ++i) {
            const int tag = dwarf_tag(&scopes[i]);
            if (tag == DW_TAG_inlined_subroutine) {
                Frame f;
                f.function = die_function_name(&scopes[i]);
                f.file = file;
                f.line = line;
                f.inlined = true;
                frames.push_back(std::move(f));
                call_site(&scopes[i], file, line);
            } else if (tag == DW_TAG_subprogram) {
                container = die_function_name(&scopes[i]);
                break;
            }
        }
        std::free(scopes);
    }

    Frame outer;
    // DWARF's name first: a symbol may be a compiler clone ("f(int) [clone .cold]"), DWARF names
    // the function the source wrote. The symbol table serves modules without debug info.
    outer.function = !container.empty() ? std::move(container) : std::move(symbol);
    outer.file = std::move(file);
    outer.line = line;
    if (frames.empty() && outer.function.empty() && outer.file.empty()) return {};
    frames.push_back(std::move(outer));
    return frames;
}

}  // namespace

// The key of a file as a process's maps show it: path, device and inode.
std::string file_key(const Mapping& m) { return fmt::format("{}\n{}:{}", m.path, m.dev, m.inode); }

// Modules loaded ahead of need on a thread of their own (Resolver::preload). The resolver's
// strand adopts what is done, and waits only for a file it needs that is still loading.
struct Preloads {
    struct Done {
        std::string file_key;
        std::string identity;
        std::unique_ptr<Module> module;  // nullptr: unusable
    };
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::string> pending;  // file keys not started yet, in order
    std::string loading;               // the file key being loaded; empty between files
    std::vector<Done> done;            // loaded, not adopted yet
    std::atomic<pid_t> tid{0};         // the loading thread, for its scheduling policy
    std::atomic<bool> waited_for{false};
    bool cancel = false;  // under mu
    std::thread thread;
};

struct Resolver::Impl {
    ~Impl() { stop_preloading(); }

    // Declared first so it outlives the Dwfl that reads it.
    std::string vdso_image;
    // Key: build-id, or path/device/inode/mtime for a file without one.
    std::unordered_map<std::string, std::unique_ptr<Module>> modules;
    // Key: path, device and inode as the maps show them. nullptr: the file could not be used,
    // which is remembered so it is tried (and logged) once.
    std::unordered_map<std::string, Module*> by_file;
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t loaded = 0;
    size_t cached = 0;

    std::unique_ptr<Preloads> preloads;

    Module* module_for(int pid, const Mapping& m);
    Module* add(std::string key, std::string identity, std::unique_ptr<Module> fresh);
    void adopt_preloaded(const std::string& key);
    void stop_preloading();
    void preload_all(std::vector<Mapping> files);
    std::unique_ptr<Module> load_file(int pid, const Mapping& m, std::string& identity);
    std::unique_ptr<Module> load_vdso(std::string& identity);
    bool finish_module(Module& module, const std::string& name);
};

bool Resolver::Impl::finish_module(Module& module, const std::string& name) {
    const unsigned char* bits = nullptr;
    GElf_Addr id_vaddr = 0;
    const int len = dwfl_module_build_id(module.mod, &bits, &id_vaddr);
    if (len > 0) module.build_id = hex(bits, len);

    Elf* elf = dwfl_module_getelf(module.mod, &module.bias);
    if (elf == nullptr) {
        log::info("symbols: {}: {}", name, dwfl_errmsg(-1));
        return false;
    }
    size_t phnum = 0;
    if (elf_getphdrnum(elf, &phnum) != 0) {
        log::info("symbols: {}: no program headers", name);
        return false;
    }
    for (size_t i = 0; i < phnum; ++i) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, int(i), &ph) != nullptr && ph.p_type == PT_LOAD)
            module.loads.push_back({ph.p_offset, ph.p_filesz, ph.p_vaddr});
    }
    return true;
}

std::unique_ptr<Module> Resolver::Impl::load_file(int pid, const Mapping& m, std::string& identity) {
    constexpr std::string_view kDeleted = " (deleted)";
    const bool deleted = m.path.ends_with(kDeleted);
    const std::string path = deleted ? m.path.substr(0, m.path.size() - kDeleted.size()) : m.path;

    // The exact file the process mapped, while it lives: map_files reaches deleted files and
    // files in other mount namespaces. Then the path inside its root, then the path as is. A
    // deleted file's path now names another file, or none: never use it.
    Fd fd;
    if (pid > 0) fd.reset(::open(fmt::format("/proc/{}/map_files/{:x}-{:x}", pid, m.start, m.end).c_str(),
                                 O_RDONLY | O_CLOEXEC));
    if (!fd.valid() && pid > 0 && !deleted)
        fd.reset(::open(fmt::format("/proc/{}/root{}", pid, path).c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid() && !deleted) fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) {
        log::info("symbols: cannot open {}: {}", m.path, std::strerror(errno));
        return nullptr;
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        log::info("symbols: cannot stat {}: {}", m.path, std::strerror(errno));
        return nullptr;
    }

    auto module = std::make_unique<Module>();
    module->dwfl.reset(dwfl_begin(&kCallbacks));
    if (!module->dwfl) return nullptr;
    dwfl_report_begin(module->dwfl.get());
    // Bias 0 (add_p_vaddr with base 0): module addresses are the ELF's own p_vaddr addresses.
    // The path, not the fd's /proc name, goes to libdwfl so .gnu_debuglink is looked for beside
    // the real file.
    module->mod = dwfl_report_elf(module->dwfl.get(), path.c_str(), path.c_str(), fd.get(), 0, true);
    if (module->mod == nullptr) {
        log::info("symbols: {}: {}", m.path, dwfl_errmsg(-1));
        return nullptr;  // on failure the fd is still ours, and Fd closes it
    }
    fd.release();  // consumed by libdwfl on success
    if (dwfl_report_end(module->dwfl.get(), nullptr, nullptr) != 0) return nullptr;
    if (!finish_module(*module, m.path)) return nullptr;
    identity = !module->build_id.empty()
                   ? module->build_id
                   : fmt::format("{}\n{}:{}:{}.{}", path, uint64_t(st.st_dev), uint64_t(st.st_ino),
                                 int64_t(st.st_mtim.tv_sec), int64_t(st.st_mtim.tv_nsec));
    return module;
}

// The vDSO has no file. The kernel maps one image into every 64-bit process, so memtrack reads
// its own copy; x86_64 only, like the rest of memtrack.
std::unique_ptr<Module> Resolver::Impl::load_vdso(std::string& identity) {
    if (vdso_image.empty()) {
        const uint64_t base = ::getauxval(AT_SYSINFO_EHDR);
        if (base == 0) return nullptr;
        auto self = ProcessMaps::read(::getpid());
        if (!self) return nullptr;
        const Mapping* own = self->find(base);
        if (own == nullptr || own->path != "[vdso]") return nullptr;
        vdso_image.assign(reinterpret_cast<const char*>(base), own->end - base);
    }
    auto module = std::make_unique<Module>();
    module->dwfl.reset(dwfl_begin(&kCallbacks));
    if (!module->dwfl) return nullptr;
    dwfl_report_begin(module->dwfl.get());
    module->mod = dwfl_report_offline_memory(module->dwfl.get(), "[vdso]", "[vdso]", vdso_image.data(),
                                             vdso_image.size());
    if (module->mod == nullptr) {
        log::info("symbols: [vdso]: {}", dwfl_errmsg(-1));
        return nullptr;
    }
    if (dwfl_report_end(module->dwfl.get(), nullptr, nullptr) != 0) return nullptr;
    if (!finish_module(*module, "[vdso]")) return nullptr;
    identity = module->build_id.empty() ? std::string("[vdso]") : module->build_id;
    return module;
}

Module* Resolver::Impl::module_for(int pid, const Mapping& m) {
    std::string key = file_key(m);
    if (auto it = by_file.find(key); it != by_file.end()) return it->second;
    if (preloads) {
        adopt_preloaded(key);
        if (auto it = by_file.find(key); it != by_file.end()) return it->second;
    }
    std::string identity;
    const uint64_t t0 = monotonic_ns();
    std::unique_ptr<Module> fresh = m.path == "[vdso]" ? load_vdso(identity) : load_file(pid, m, identity);
    log::info("symbols: opened {} in {:.1f} ms", m.path, double(monotonic_ns() - t0) / 1e6);
    return add(std::move(key), std::move(identity), std::move(fresh));
}

Module* Resolver::Impl::add(std::string key, std::string identity, std::unique_ptr<Module> fresh) {
    Module* module = nullptr;
    if (fresh) {
        // The same file under another path, or a copy of it: keep the first, which may
        // already have a warm cache.
        auto [it, inserted] = modules.try_emplace(std::move(identity));
        if (inserted) {
            it->second = std::move(fresh);
            ++loaded;
        }
        module = it->second.get();
    }
    by_file.emplace(std::move(key), module);
    return module;
}

// The loading thread leaves the idle class and competes like any thread: someone waits for it.
void leave_idle_class(Preloads& p) {
    p.waited_for = true;
    const sched_param normal{};
    if (const pid_t tid = p.tid; tid != 0) ::sched_setscheduler(tid, SCHED_OTHER, &normal);
}

void Resolver::Impl::stop_preloading() {
    if (!preloads || !preloads->thread.joinable()) return;
    {
        std::lock_guard lock(preloads->mu);
        preloads->cancel = true;
    }
    leave_idle_class(*preloads);
    preloads->thread.join();
}

void Resolver::Impl::adopt_preloaded(const std::string& key) {
    Preloads& p = *preloads;
    std::unique_lock lock(p.mu);
    // Not started: the caller loads it now, the thread skips it. Being loaded: wait for it.
    std::erase(p.pending, key);
    if (p.loading == key) {
        leave_idle_class(p);
        const uint64_t t0 = monotonic_ns();
        p.cv.wait(lock, [&] { return p.loading != key; });
        log::info("symbols: waited {:.1f} ms for a preload", double(monotonic_ns() - t0) / 1e6);
    }
    for (Preloads::Done& d : p.done) add(std::move(d.file_key), std::move(d.identity), std::move(d.module));
    p.done.clear();
}

// On the preload thread: touches nothing of Impl but `preloads` (under its mutex) and the
// modules it creates, each in a Dwfl of its own.
void Resolver::Impl::preload_all(std::vector<Mapping> files) {
    Preloads& p = *preloads;
    // Idle class: the warm-up uses only a CPU nobody else wants (start-up keeps one busy in the
    // kernel verifying BPF programs), until someone waits for it (leave_idle_class). A wait that
    // came before the tid was published is seen here.
    const sched_param idle{};
    ::sched_setscheduler(0, SCHED_IDLE, &idle);
    p.tid = ::gettid();
    if (p.waited_for) leave_idle_class(p);
    for (const Mapping& m : files) {
        const std::string key = file_key(m);
        {
            std::lock_guard lock(p.mu);
            if (p.cancel) break;
            if (std::find(p.pending.begin(), p.pending.end(), key) == p.pending.end()) continue;  // taken over
            std::erase(p.pending, key);
            p.loading = key;
        }
        const uint64_t t0 = monotonic_ns();
        std::string identity;
        std::unique_ptr<Module> module = load_file(0, m, identity);
        if (module) {
            // What the first lookup would do: read the symbol table (for a file without one, a
            // search for separate debug info that loads libdebuginfod the first time), open the
            // DWARF (libdw inflates every compressed debug section here), read its ranges.
            (void)dwfl_module_getsymtab(module->mod);
            Dwarf_Addr bias = 0;
            if (Dwarf* dwarf = dwfl_module_getdwarf(module->mod, &bias)) {
                Dwarf_Aranges* aranges = nullptr;
                size_t n = 0;
                (void)dwarf_getaranges(dwarf, &aranges, &n);
            }
        }
        log::info("symbols: preloaded {}{} in {:.1f} ms", m.path, module ? "" : " (unusable)",
                  double(monotonic_ns() - t0) / 1e6);
        std::lock_guard lock(p.mu);
        p.loading.clear();
        p.done.push_back({key, std::move(identity), std::move(module)});
        p.cv.notify_all();
    }
    // Cancelled: nobody waits any more (only the destructor cancels).
}

Resolver::Resolver() : impl_(std::make_unique<Impl>()) {}
Resolver::~Resolver() = default;

std::vector<Frame> Resolver::resolve(const ProcessMaps& maps, uint64_t ip) {
    Frame unknown;
    unknown.ip = ip;
    if (ip == 0) return {unknown};
    // The call instruction ends where the return address begins: look it up, not the next one,
    // which may belong to another line, inlined call or even function.
    const uint64_t call = ip - 1;
    const Mapping* m = maps.find(call);
    if (m == nullptr) return {unknown};
    unknown.module = m->path;
    if (!m->executable) return {unknown};
    Module* module = impl_->module_for(maps.pid(), *m);
    if (module == nullptr) return {unknown};
    unknown.build_id = module->build_id;
    const std::optional<uint64_t> vaddr = module->to_vaddr(call - m->start + m->offset);
    if (!vaddr) return {unknown};
    const uint64_t addr = *vaddr + module->bias;

    std::vector<Frame> frames;
    if (auto it = module->cache.find(addr); it != module->cache.end()) {
        ++impl_->hits;
        frames = it->second;
    } else {
        ++impl_->misses;
        const uint64_t t0 = monotonic_ns();
        frames = module->lookup(addr);
        if (const uint64_t ns = monotonic_ns() - t0; ns > 2000000)
            log::info("symbols: {:#x} in {} took {:.1f} ms", addr, m->path, double(ns) / 1e6);
        if (impl_->cached >= kMaxCachedAddresses) {
            for (auto& [key, other] : impl_->modules) other->cache.clear();
            impl_->cached = 0;
        }
        module->cache.emplace(addr, frames);
        ++impl_->cached;
    }
    if (frames.empty()) return {unknown};
    for (Frame& f : frames) {
        f.ip = ip;
        f.module = m->path;
        f.build_id = module->build_id;
    }
    return frames;
}

void Resolver::preload(const std::vector<std::string>& paths) {
    if (impl_->preloads) return;  // once
    std::vector<Mapping> files;
    for (const std::string& path : paths) {
        // /proc/PID/maps shows a file's real path (/usr/lib/..., not the /lib symlink), and its
        // device and inode: the key resolve() will look the file up by.
        std::unique_ptr<char, decltype(&std::free)> real(::realpath(path.c_str(), nullptr), &std::free);
        struct stat st {};
        if (!real || ::stat(real.get(), &st) != 0) continue;
        Mapping m;
        m.path = real.get();
        m.dev = st.st_dev;
        m.inode = st.st_ino;
        if (std::none_of(files.begin(), files.end(), [&](const Mapping& f) { return f.path == m.path; }))
            files.push_back(std::move(m));
    }
    auto p = std::make_unique<Preloads>();
    for (const Mapping& m : files) p->pending.push_back(file_key(m));
    impl_->preloads = std::move(p);
    impl_->preloads->thread = std::thread([impl = impl_.get(), files = std::move(files)]() mutable {
        impl->preload_all(std::move(files));
    });
}

void Resolver::stop_preloading() { impl_->stop_preloading(); }

uint64_t Resolver::cache_hits() const { return impl_->hits; }
uint64_t Resolver::cache_misses() const { return impl_->misses; }
uint64_t Resolver::modules_loaded() const { return impl_->loaded; }

}  // namespace memtrack
