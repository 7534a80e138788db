#include "probes/AllocatorProbes.hpp"

#include <link.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "bpf/record.h"
#include "core/Log.hpp"
#include "probes/ElfSymbols.hpp"
#include "probes/ProbePlacement.hpp"

namespace memtrack {

bool ObjectProbes::has(AllocatorKind k) const { return std::find(kinds.begin(), kinds.end(), k) != kinds.end(); }

std::string ObjectProbes::kinds_text() const {
    std::string s;
    for (AllocatorKind k : kinds) s += fmt::format("{}{}", s.empty() ? "" : ", ", kind_name(k));
    return s.empty() ? "none" : s;
}

namespace {

// An after-syscall site's cookie (record.h).
uint64_t after_syscall_cookie(uint8_t length, uint64_t flags) {
    return MT_COOKIE(MT_FUNC_AFTER_SYSCALL) | MT_COOKIE_WITH_AFTER_LENGTH(length) | flags;
}

// The instruction after the system call of each of `names` the object defines, into `spec`,
// unless a probe sits there already (`seen`: file offsets).
void add_after_first_syscall(const ElfSymbols& elf, const std::vector<std::string>& names, uint64_t flags,
                             std::set<uint64_t>& seen, UprobeMultiSpec& spec) {
    for (const std::string& name : names) {
        auto sym = elf.find(name);
        if (!sym) continue;
        auto code = elf.code(*sym, 256);
        const auto site = code ? site_after_first_syscall(*code, sym->vaddr) : std::nullopt;
        if (!site) {
            log::info("{} in {}: no instruction to stop after its system call", name, elf.path());
            continue;
        }
        const uint64_t offset = sym->file_offset + site->offset;
        if (!seen.insert(offset).second) continue;
        spec.offsets.push_back(offset);
        spec.cookies.push_back(after_syscall_cookie(site->length, flags));
        log::info("after syscall: {}+{:#x} at {:#x} in {}", name, site->offset, offset, elf.path());
    }
}

// Where a process resumes after a system call that matters to its holds (MT_FUNC_AFTER_SYSCALL),
// with the entry probes: a sender after kill's, a new image at the entry point. Each site's
// instruction is one BPF can stop a process right after; each is a page the kernel copies into
// every process it is attached in: only these few.
void add_after_syscall_sites(const ElfSymbols& elf, std::set<uint64_t>& seen, ObjectProbes& out) {
    add_after_first_syscall(elf, signal_functions(), MT_COOKIE_AFTER_SIGNAL, seen, out.entry);
    auto entry = elf.entry();
    if (!entry || seen.count(entry->file_offset)) return;
    auto code = elf.code(*entry, 16);
    if (auto site = code ? site_at_entry(*code, entry->vaddr) : std::nullopt) {
        seen.insert(entry->file_offset);
        out.entry.offsets.push_back(entry->file_offset);
        out.entry.cookies.push_back(after_syscall_cookie(site->length, 0));
    } else {
        log::info("entry of {}: no instruction to stop after: an image it starts is not stopped there", elf.path());
    }
}

}  // namespace

Result<ObjectProbes> resolve_object_probes(const std::string& path, bool place) {
    auto file = ObjectFile::open(path);
    if (!file) return file.error();
    return resolve_object_probes(std::move(file).value(), place);
}

Result<ObjectProbes> resolve_object_probes(std::shared_ptr<const ObjectFile> file, bool place) {
    const std::string path = file->path();
    auto elf = ElfSymbols::load(std::move(file), catalog_symbol_names());
    if (!elf) return elf.error();
    ObjectProbes out;
    out.path = path;
    out.entry.path = out.ret.path = path;
    out.ret.retprobe = true;
    out.kinds = classify(*elf);
    if (out.kinds.empty()) return out;
    out.r_debug = elf->object_vaddr("_r_debug");
    // Names sharing one address (aliases) get one probe, the first name's function.
    std::set<uint64_t> seen;
    // The dynamic loader alone (ld.so): only its debugger hook. Its own mmap, munmap and brk map
    // the program's objects and ld.so.cache before main; they are no call the program made
    // (docs/FORMATS.md), and were 8 Mmap and 1 Munmap at the start of every program.
    const bool loader_only = out.kinds == std::vector<AllocatorKind>{AllocatorKind::Loader};
    for (const auto& fn : allocator_functions()) {
        if (loader_only && fn.func != MT_FUNC_LOADER) continue;
        auto sym = elf->find(fn.symbol);
        if (!sym) continue;
        ++out.functions;
        if (!seen.insert(sym->file_offset).second) continue;
        // The entry and return probes share one placement, hence one trap per call. Placement
        // never skips a push, so the entry stack pointer needs no correction.
        Placement where = entry_placement(fn.first_arg, "entry: placement off");
        if (place) {
            auto code = elf->code(*sym, 4096);
            where = code ? place_probe(*code, sym->vaddr, argument_registers(fn.func), fn.first_arg)
                         : entry_placement(fn.first_arg, "entry: " + code.error().message());
        }
        const uint64_t offset = sym->file_offset + where.offset;
        uint64_t cookie = MT_COOKIE(fn.func);
        for (unsigned a = 0; a < kProbeArgs; ++a) cookie |= MT_COOKIE_WITH_ARG(a, where.args[a]);
        // The loader's hook reads its r_debug's state (where the hook is called from is no
        // argument): its distance from the probed instruction rides in the cookie.
        if (fn.func == MT_FUNC_LOADER && out.r_debug)
            cookie |= MT_COOKIE_WITH_DISTANCE(int64_t(*out.r_debug) - int64_t(sym->vaddr + where.offset));
        out.entry.offsets.push_back(offset);
        out.entry.cookies.push_back(cookie);
        if (fn.has_return) {
            out.ret.offsets.push_back(offset);
            out.ret.cookies.push_back(cookie);
        }
        log::info("probe {}+{:#x} at {:#x} in {} ({}): {}", fn.symbol, where.offset, offset, path,
                  fn.has_return ? "entry+return" : "entry", where.reason);
    }
    add_after_syscall_sites(*elf, seen, out);
    log::info("object {}: {}; {} functions at {} addresses{}", path, out.kinds_text(), out.functions,
              out.entry.offsets.size(), elf->debug_path().empty() ? "" : fmt::format(" (symbols also from {})", elf->debug_path()));
    return out;
}

std::string loaded_library_path(const std::string& soname_prefix) {
    struct Search {
        const std::string* prefix;
        std::string found;
    } search{&soname_prefix, {}};
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) -> int {
            auto* s = static_cast<Search*>(data);
            const std::string name = info->dlpi_name ? info->dlpi_name : "";
            const auto slash = name.rfind('/');
            const std::string base = slash == std::string::npos ? name : name.substr(slash + 1);
            if (base.rfind(*s->prefix, 0) == 0) {
                s->found = name;
                return 1;
            }
            return 0;
        },
        &search);
    return search.found;
}

}  // namespace memtrack
