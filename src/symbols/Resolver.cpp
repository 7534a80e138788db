#include "symbols/Resolver.hpp"

#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "core/Clock.hpp"
#include "core/Log.hpp"
#include "symbols/AddressCache.hpp"
#include "symbols/ModuleIdentity.hpp"
#include "symbols/ModuleLoader.hpp"
#include "symbols/PerfMap.hpp"
#include "symbols/Preloader.hpp"

namespace memtrack {

struct Resolver::Impl {
    // Declared first so it outlives the Dwfl that reads it.
    std::string vdso_image;
    // Key: module_identity(). One module per binary, whichever process or path maps it.
    std::unordered_map<std::string, std::unique_ptr<Module>> modules;
    // Key: file_key(). nullptr: the file could not be used, which is remembered so it is tried
    // (and logged) once.
    std::unordered_map<std::string, Module*> by_file;
    AddressCache cache;
    // Key: pid. The perf maps of processes with code outside every file (JIT), read as needed.
    std::unordered_map<int, PerfMap> perf_maps;
    uint64_t jit_frames = 0;
    uint64_t load_ns = 0;
    uint64_t files_opened = 0;
    // Destroyed before the modules, which its thread may still be building.
    std::unique_ptr<Preloader> preloader;
    // Every file is read through it: the run's (share_files()), or one of the Resolver's own.
    std::shared_ptr<ObjectFiles> files = std::make_shared<ObjectFiles>();

    ~Impl() {
        if (preloader) preloader->stop();
    }

    Module* module_for(int pid, const Mapping& m);
    Result<std::shared_ptr<const ObjectFile>> object_file(int pid, const Mapping& m);
    std::vector<Frame> resolve_jit(int pid, uint64_t ip, uint64_t call);
    Module* add(std::string key, Result<LoadedModule> loaded);
    Result<LoadedModule> load_vdso();
};

Result<LoadedModule> Resolver::Impl::load_vdso() {
    if (vdso_image.empty()) {
        const uint64_t base = ::getauxval(AT_SYSINFO_EHDR);
        if (base == 0) return Error{"find", "[vdso]", 0, "no AT_SYSINFO_EHDR"};
        auto self = ProcessMaps::read(::getpid());
        if (!self) return self.error();
        const Mapping* own = self->find(base);
        if (own == nullptr || own->path != "[vdso]") return Error{"find", "[vdso]", 0, "not in memtrack's own maps"};
        vdso_image.assign(reinterpret_cast<const char*>(base), own->end - base);
    }
    return load_vdso_image(vdso_image);
}

// The file `m` maps, as the run read it (ObjectFiles). A deleted file is read through
// /proc/PID/map_files (the exact file; its path names another file now, or none); a mapping
// without an identity (maps text written by hand, in tests) has the identity of its path here.
Result<std::shared_ptr<const ObjectFile>> Resolver::Impl::object_file(int pid, const Mapping& m) {
    constexpr std::string_view kDeleted = " (deleted)";
    std::string path = m.path;
    uint64_t dev = m.dev, ino = m.inode;
    if (m.path.ends_with(kDeleted)) {
        if (pid <= 0) return Error{"open", m.path, ENOENT, "deleted, and no process to read it from"};
        path = fmt::format("/proc/{}/map_files/{:x}-{:x}", pid, m.start, m.end);
    } else if (ino == 0) {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0) return errno_error("stat", path);
        dev = st.st_dev;
        ino = st.st_ino;
    }
    return files->get(pid, path, dev, ino);
}

Module* Resolver::Impl::module_for(int pid, const Mapping& m) {
    std::string key = file_key(m);
    if (auto it = by_file.find(key); it != by_file.end()) return it->second;
    if (preloader) {
        for (Preloader::Done& d : preloader->take(key)) add(std::move(d.file_key), std::move(d.loaded));
        if (auto it = by_file.find(key); it != by_file.end()) return it->second;
    }
    const uint64_t t0 = monotonic_ns();
    std::shared_ptr<const ObjectFile> file;
    if (m.path != "[vdso]") {
        auto f = object_file(pid, m);
        if (!f) return add(std::move(key), f.error());
        // A file of a build loaded already (a copy, another path of it): its module.
        if (auto it = modules.find(module_identity(**f)); it != modules.end()) {
            by_file.emplace(std::move(key), it->second.get());
            return it->second.get();
        }
        file = std::move(f).value();
        ++files_opened;
    }
    // The vDSO is x86_64's one image per kernel, like the rest of memtrack assumes. A file is named
    // by the path it is mapped at (without " (deleted)").
    Result<LoadedModule> loaded =
        file ? load_module(*file, m.path.substr(0, m.path.find(" (deleted)"))) : load_vdso();
    if (loaded) loaded->module->index_symbols();
    const uint64_t ns = monotonic_ns() - t0;
    load_ns += ns;
    log::info("symbols: opened {} ({} symbols) in {:.1f} ms", m.path, loaded ? loaded->module->symbols() : 0,
              double(ns) / 1e6);
    return add(std::move(key), std::move(loaded));
}

Module* Resolver::Impl::add(std::string key, Result<LoadedModule> loaded) {
    Module* module = nullptr;
    if (loaded) {
        // The same file under another path, or a copy of it: keep the first, whose caches may
        // be warm already.
        auto [it, inserted] = modules.try_emplace(std::move(loaded->identity));
        if (inserted) it->second = std::move(loaded->module);
        module = it->second.get();
    } else {
        log::info("symbols: {}", loaded.error().message());
    }
    by_file.emplace(std::move(key), module);
    return module;
}

std::vector<Frame> Resolver::Impl::resolve_jit(int pid, uint64_t ip, uint64_t call) {
    Frame f;
    f.ip = ip;
    if (pid == 0) return {f};
    auto it = perf_maps.find(pid);
    if (it == perf_maps.end()) {
        it = perf_maps.emplace(pid, PerfMap::for_process(pid)).first;
        if (auto r = it->second.refresh(); !r) log::info("symbols: no perf map for {}: {}", pid, r.error().message());
    }
    const std::string* name = it->second.find(call);
    if (name == nullptr) return {f};
    ++jit_frames;
    f.module = kJitModule;
    f.function = *name;
    return {f};
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
    if (m->anonymous()) return impl_->resolve_jit(maps.pid(), ip, call);
    unknown.module = m->path;
    if (!m->executable) return {unknown};
    Module* module = impl_->module_for(maps.pid(), *m);
    if (module == nullptr) return {unknown};
    unknown.build_id = module->build_id();
    const std::optional<uint64_t> addr = module->to_address(call - m->start + m->offset);
    if (!addr) return {unknown};

    std::vector<Frame> frames;
    if (const std::vector<Frame>* cached = impl_->cache.find(module, *addr)) {
        frames = *cached;
    } else {
        const uint64_t t0 = monotonic_ns();
        frames = module->lookup(*addr);
        if (const uint64_t ns = monotonic_ns() - t0; ns > 2000000)
            log::info("symbols: {:#x} in {} took {:.1f} ms", *addr, m->path, double(ns) / 1e6);
        impl_->cache.insert(module, *addr, frames);
    }
    if (frames.empty()) return {unknown};
    for (Frame& f : frames) {
        f.ip = ip;
        f.module = m->path;
        f.build_id = module->build_id();
    }
    return frames;
}

void Resolver::preload(const std::vector<std::string>& paths) {
    if (impl_->preloader) return;  // once
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
    impl_->preloader = std::make_unique<Preloader>(std::move(files), impl_->files);
}

void Resolver::stop_preloading() {
    if (impl_->preloader) impl_->preloader->stop();
}

void Resolver::share_files(std::shared_ptr<ObjectFiles> files) { impl_->files = std::move(files); }

uint64_t Resolver::cache_hits() const { return impl_->cache.hits(); }
uint64_t Resolver::cache_misses() const { return impl_->cache.misses(); }
uint64_t Resolver::jit_frames() const { return impl_->jit_frames; }
uint64_t Resolver::modules_loaded() const { return impl_->modules.size(); }
uint64_t Resolver::module_load_ns() const { return impl_->load_ns; }
uint64_t Resolver::files_opened() const { return impl_->files_opened; }

}  // namespace memtrack
