#include "probes/AllocatorProbes.hpp"

#include <link.h>

#include <algorithm>
#include <set>

#include "bpf/record.h"
#include "core/Log.hpp"
#include "probes/ElfSymbols.hpp"
#include "probes/ProbePlacement.hpp"

namespace memtrack {

const std::vector<AllocatorFunction>& libc_functions() {
    static const std::vector<AllocatorFunction> fns{
        {"malloc", MT_FUNC_MALLOC, true, true},
        {"free", MT_FUNC_FREE, false, true},
        {"calloc", MT_FUNC_CALLOC, true, false},
        {"realloc", MT_FUNC_REALLOC, true, false},
        {"reallocarray", MT_FUNC_REALLOCARRAY, true, false},
        {"aligned_alloc", MT_FUNC_ALIGNED_ALLOC, true, false},
        {"memalign", MT_FUNC_ALIGNED_ALLOC, true, false},
        {"posix_memalign", MT_FUNC_POSIX_MEMALIGN, true, false},
        {"valloc", MT_FUNC_VALLOC, true, false},
        {"pvalloc", MT_FUNC_VALLOC, true, false},
        // Mappings made through the C library (see the BPF side for what that leaves out).
        {"mmap", MT_FUNC_MMAP, true, false},
        {"munmap", MT_FUNC_MUNMAP, true, false},
        {"mremap", MT_FUNC_MREMAP, true, false},
        {"brk", MT_FUNC_BRK, true, false},
        {"dlopen", MT_FUNC_DLOPEN, true, false},
        {"dlmopen", MT_FUNC_DLOPEN, true, false},
    };
    return fns;
}

const std::vector<AllocatorFunction>& libstdcxx_functions() {
    static const std::vector<AllocatorFunction> fns{
        {"_Znwm", MT_FUNC_NEW, true, false},
        {"_Znam", MT_FUNC_NEW, true, false},
        {"_ZnwmRKSt9nothrow_t", MT_FUNC_NEW, true, false},
        {"_ZnamRKSt9nothrow_t", MT_FUNC_NEW, true, false},
        {"_ZnwmSt11align_val_t", MT_FUNC_NEW_ALIGNED, true, false},
        {"_ZnamSt11align_val_t", MT_FUNC_NEW_ALIGNED, true, false},
        {"_ZnwmSt11align_val_tRKSt9nothrow_t", MT_FUNC_NEW_ALIGNED, true, false},
        {"_ZnamSt11align_val_tRKSt9nothrow_t", MT_FUNC_NEW_ALIGNED, true, false},
        {"_ZdlPv", MT_FUNC_DELETE, false, false},
        {"_ZdaPv", MT_FUNC_DELETE, false, false},
        {"_ZdlPvm", MT_FUNC_DELETE, false, false},
        {"_ZdaPvm", MT_FUNC_DELETE, false, false},
        {"_ZdlPvRKSt9nothrow_t", MT_FUNC_DELETE, false, false},
        {"_ZdaPvRKSt9nothrow_t", MT_FUNC_DELETE, false, false},
        {"_ZdlPvSt11align_val_t", MT_FUNC_DELETE, false, false},
        {"_ZdaPvSt11align_val_t", MT_FUNC_DELETE, false, false},
        {"_ZdlPvmSt11align_val_t", MT_FUNC_DELETE, false, false},
        {"_ZdaPvmSt11align_val_t", MT_FUNC_DELETE, false, false},
        {"_ZdlPvSt11align_val_tRKSt9nothrow_t", MT_FUNC_DELETE, false, false},
        {"_ZdaPvSt11align_val_tRKSt9nothrow_t", MT_FUNC_DELETE, false, false},
    };
    return fns;
}

unsigned argument_registers(uint32_t func) {
    switch (func) {
    case MT_FUNC_CALLOC:
    case MT_FUNC_REALLOC:
    case MT_FUNC_ALIGNED_ALLOC:
    case MT_FUNC_NEW_ALIGNED:
    case MT_FUNC_MUNMAP:
        return 2;
    case MT_FUNC_REALLOCARRAY:
    case MT_FUNC_POSIX_MEMALIGN:
    case MT_FUNC_MMAP:
    case MT_FUNC_MREMAP:
        return 3;
    default:
        return 1;
    }
}

Result<LibraryProbes> resolve_library_probes(const std::string& path,
                                             const std::vector<AllocatorFunction>& functions, bool place) {
    std::vector<std::string> names;
    for (const auto& fn : functions) names.emplace_back(fn.symbol);
    auto elf = ElfSymbols::load(path, names);
    if (!elf) return elf.error();
    LibraryProbes out;
    out.path = path;
    out.entry.path = out.ret.path = path;
    out.ret.retprobe = true;
    // aligned_alloc and memalign share one address in glibc: one probe per offset.
    std::set<uint64_t> entry_seen, ret_seen;
    for (const auto& fn : functions) {
        auto sym = elf->find(fn.symbol);
        if (!sym) {
            if (fn.required) return Error{"find symbol", fmt::format("{} in {}", fn.symbol, path), ENOENT, {}};
            out.missing.emplace_back(fn.symbol);
            continue;
        }
        // The entry and return probes share one placement, hence one trap per call. Placement
        // never skips a push, so the entry stack pointer needs no correction (cookie: 0 pushed).
        Placement where{0, "entry: placement off"};
        if (place) {
            auto code = elf->code(*sym, 4096);
            where = code ? place_probe(*code, sym->vaddr, argument_registers(fn.func))
                         : Placement{0, "entry: " + code.error().message()};
        }
        const uint64_t offset = sym->file_offset + where.offset;
        const uint64_t cookie = MT_COOKIE(fn.func, 0);
        if (entry_seen.insert(offset).second) {
            out.entry.offsets.push_back(offset);
            out.entry.cookies.push_back(cookie);
        }
        if (fn.has_return && ret_seen.insert(offset).second) {
            out.ret.offsets.push_back(offset);
            out.ret.cookies.push_back(cookie);
        }
        log::info("probe {}+{:#x} at {:#x}: {}", fn.symbol, where.offset, offset, where.reason);
    }
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
