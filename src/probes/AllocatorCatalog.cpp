#include "probes/AllocatorCatalog.hpp"

#include "bpf/record.h"
#include "probes/ElfSymbols.hpp"

namespace memtrack {
namespace {

std::vector<AllocatorFunction> build_table() {
    std::vector<AllocatorFunction> t;
    auto add = [&](std::string name, uint32_t func, unsigned first_arg = 0) {
        const bool ret = func != MT_FUNC_FREE && func != MT_FUNC_DELETE && func != MT_FUNC_LOADER;
        t.push_back({std::move(name), func, ret, first_arg});
    };
    // The C names first: glibc's, and every allocator's override of them.
    const std::pair<const char*, uint32_t> c_names[] = {
        {"malloc", MT_FUNC_MALLOC},
        {"free", MT_FUNC_FREE},
        {"calloc", MT_FUNC_CALLOC},
        {"realloc", MT_FUNC_REALLOC},
        {"reallocarray", MT_FUNC_REALLOCARRAY},
        {"reallocf", MT_FUNC_REALLOC},  // BSD's: frees the block when it fails (mimalloc has it)
        {"aligned_alloc", MT_FUNC_ALIGNED_ALLOC},
        {"memalign", MT_FUNC_ALIGNED_ALLOC},
        {"posix_memalign", MT_FUNC_POSIX_MEMALIGN},
        {"valloc", MT_FUNC_VALLOC},
        {"pvalloc", MT_FUNC_VALLOC},
        {"cfree", MT_FUNC_FREE},
    };
    for (auto [name, func] : c_names) add(name, func);
    // jemalloc: its non-standard API, unprefixed (Debian's libjemalloc) and with the prefixes
    // of builds that leave malloc alone (je_, and _rjem_ of Rust's jemalloc crates).
    const std::pair<const char*, uint32_t> je_names[] = {
        {"mallocx", MT_FUNC_MALLOCX}, {"rallocx", MT_FUNC_REALLOC},  // (ptr, size, flags)
        {"dallocx", MT_FUNC_FREE},    {"sdallocx", MT_FUNC_FREE},    // (ptr, [size,] flags)
    };
    for (auto [name, func] : je_names) add(name, func);
    for (const char* prefix : {"je_", "_rjem_"}) {
        for (auto [name, func] : c_names) add(std::string(prefix) + name, func);
        for (auto [name, func] : je_names) add(std::string(prefix) + name, func);
    }
    // mimalloc's own API. Each allocating name also exists as mi_heap_<name> with the heap as
    // its first argument (mi_heap_malloc(heap, size)): the same function, one register on.
    const std::pair<const char*, uint32_t> mi_allocs[] = {
        {"malloc", MT_FUNC_MALLOC},
        {"malloc_small", MT_FUNC_MALLOC},
        {"calloc", MT_FUNC_CALLOC},
        {"mallocn", MT_FUNC_MALLOCN},
        {"zalloc", MT_FUNC_ZALLOC},
        {"zalloc_small", MT_FUNC_ZALLOC},
        {"realloc", MT_FUNC_REALLOC},
        {"reallocf", MT_FUNC_REALLOC},
        {"rezalloc", MT_FUNC_REALLOC},
        {"reallocn", MT_FUNC_REALLOCARRAY},
        {"recalloc", MT_FUNC_REALLOCARRAY},
        {"malloc_aligned", MT_FUNC_MALLOC_ALIGNED},
        {"malloc_aligned_at", MT_FUNC_MALLOC_ALIGNED},
        {"zalloc_aligned", MT_FUNC_MALLOC_ALIGNED},
        {"zalloc_aligned_at", MT_FUNC_MALLOC_ALIGNED},
        {"calloc_aligned", MT_FUNC_CALLOC_ALIGNED},
        {"calloc_aligned_at", MT_FUNC_CALLOC_ALIGNED},
        {"realloc_aligned", MT_FUNC_REALLOC},
        {"realloc_aligned_at", MT_FUNC_REALLOC},
        {"rezalloc_aligned", MT_FUNC_REALLOC},
        {"rezalloc_aligned_at", MT_FUNC_REALLOC},
        {"recalloc_aligned", MT_FUNC_REALLOCARRAY},
        {"recalloc_aligned_at", MT_FUNC_REALLOCARRAY},
    };
    for (auto [name, func] : mi_allocs) add(std::string("mi_") + name, func);
    for (auto [name, func] : mi_allocs) add(std::string("mi_heap_") + name, func, 1);
    add("mi_heap_alloc_new", MT_FUNC_NEW, 1);
    add("mi_heap_alloc_new_n", MT_FUNC_MALLOCN, 1);
    const std::pair<const char*, uint32_t> mi_names[] = {
        {"mi_reallocarray", MT_FUNC_REALLOCARRAY},
        {"mi_expand", MT_FUNC_REALLOC},  // in place: the same address with the new size, or NULL
        {"mi_posix_memalign", MT_FUNC_POSIX_MEMALIGN},
        {"mi_memalign", MT_FUNC_ALIGNED_ALLOC},
        {"mi_aligned_alloc", MT_FUNC_ALIGNED_ALLOC},
        {"mi_valloc", MT_FUNC_VALLOC},
        {"mi_pvalloc", MT_FUNC_VALLOC},
        {"mi_new", MT_FUNC_NEW},
        {"mi_new_nothrow", MT_FUNC_NEW},
        {"mi_new_n", MT_FUNC_MALLOCN},
        {"mi_new_aligned", MT_FUNC_NEW_ALIGNED},
        {"mi_new_aligned_nothrow", MT_FUNC_NEW_ALIGNED},
        {"mi_new_realloc", MT_FUNC_REALLOC},
        {"mi_new_reallocn", MT_FUNC_REALLOCARRAY},
        {"mi_free", MT_FUNC_FREE},
        {"mi_cfree", MT_FUNC_FREE},
        {"mi_free_size", MT_FUNC_FREE},
        {"mi_free_aligned", MT_FUNC_FREE},
        {"mi_free_size_aligned", MT_FUNC_FREE},
    };
    for (auto [name, func] : mi_names) add(name, func);
    // tcmalloc's tc_* names (its overrides of the C and C++ names are aliases of them).
    const std::pair<const char*, uint32_t> tc_names[] = {
        {"tc_malloc", MT_FUNC_MALLOC},
        {"tc_malloc_skip_new_handler", MT_FUNC_MALLOC},
        {"tc_calloc", MT_FUNC_CALLOC},
        {"tc_realloc", MT_FUNC_REALLOC},
        {"tc_memalign", MT_FUNC_ALIGNED_ALLOC},
        {"tc_posix_memalign", MT_FUNC_POSIX_MEMALIGN},
        {"tc_valloc", MT_FUNC_VALLOC},
        {"tc_pvalloc", MT_FUNC_VALLOC},
        {"tc_free", MT_FUNC_FREE},
        {"tc_cfree", MT_FUNC_FREE},
        {"tc_free_sized", MT_FUNC_FREE},
    };
    for (auto [name, func] : tc_names) add(name, func);
    for (const char* n : {"tc_new", "tc_newarray", "tc_new_nothrow", "tc_newarray_nothrow"}) add(n, MT_FUNC_NEW);
    for (const char* n : {"tc_new_aligned", "tc_newarray_aligned", "tc_new_aligned_nothrow", "tc_newarray_aligned_nothrow"})
        add(n, MT_FUNC_NEW_ALIGNED);
    for (const char* n : {"tc_delete", "tc_deletearray", "tc_delete_sized", "tc_deletearray_sized", "tc_delete_nothrow",
                          "tc_deletearray_nothrow", "tc_delete_aligned", "tc_deletearray_aligned",
                          "tc_delete_sized_aligned", "tc_deletearray_sized_aligned", "tc_delete_aligned_nothrow",
                          "tc_deletearray_aligned_nothrow"})
        add(n, MT_FUNC_DELETE);
    // The C++ operators, wherever defined (libstdc++, an allocator's override, an executable).
    for (const char* n : {"_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t"}) add(n, MT_FUNC_NEW);
    for (const char* n : {"_ZnwmSt11align_val_t", "_ZnamSt11align_val_t", "_ZnwmSt11align_val_tRKSt9nothrow_t",
                          "_ZnamSt11align_val_tRKSt9nothrow_t"})
        add(n, MT_FUNC_NEW_ALIGNED);
    for (const char* n : {"_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm", "_ZdlPvRKSt9nothrow_t", "_ZdaPvRKSt9nothrow_t",
                          "_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t", "_ZdlPvmSt11align_val_t",
                          "_ZdaPvmSt11align_val_t", "_ZdlPvSt11align_val_tRKSt9nothrow_t",
                          "_ZdaPvSt11align_val_tRKSt9nothrow_t"})
        add(n, MT_FUNC_DELETE);
    // Mappings made through the C library's wrappers (tcmalloc overrides them too; see the BPF
    // side for what that leaves out), and new code.
    const std::pair<const char*, uint32_t> map_names[] = {
        {"mmap", MT_FUNC_MMAP},     {"mmap64", MT_FUNC_MMAP},  {"munmap", MT_FUNC_MUNMAP},
        {"mremap", MT_FUNC_MREMAP}, {"brk", MT_FUNC_BRK},      {"dlopen", MT_FUNC_DLOPEN},
        {"dlmopen", MT_FUNC_DLOPEN},
    };
    for (auto [name, func] : map_names) add(name, func);
    // glibc's per-thread teardown at thread exit: it frees the blocks of the thread's cache,
    // which the program freed already, and the cache itself, which it never allocated. A local
    // symbol: found only in libc's separate debug file (Debian: libc6-dbg).
    add("__malloc_arena_thread_freeres", MT_FUNC_INTERNAL);
    add("_dl_debug_state", MT_FUNC_LOADER);
    return t;
}

bool any_of(const ElfSymbols& elf, std::initializer_list<const char*> names) {
    for (const char* n : names)
        if (elf.has(n)) return true;
    return false;
}

}  // namespace

const std::vector<AllocatorFunction>& allocator_functions() {
    static const std::vector<AllocatorFunction> table = build_table();
    return table;
}

const char* kind_name(AllocatorKind k) {
    switch (k) {
    case AllocatorKind::Glibc: return "glibc";
    case AllocatorKind::Jemalloc: return "jemalloc";
    case AllocatorKind::Mimalloc: return "mimalloc";
    case AllocatorKind::Tcmalloc: return "tcmalloc";
    case AllocatorKind::OtherMalloc: return "other_malloc";
    case AllocatorKind::CxxOperators: return "cxx_operators";
    case AllocatorKind::Loader: return "loader";
    }
    return "?";
}

bool allocates(AllocatorKind k) { return k != AllocatorKind::CxxOperators && k != AllocatorKind::Loader; }

const std::vector<std::string>& signal_functions() {
    // killpg calls kill; pthread_kill and raise signal threads of the caller's own process. Each
    // one more is a page more copied at every exec of a tracked process (after-syscall sites).
    static const std::vector<std::string> names = {"kill"};
    return names;
}

const std::unordered_set<std::string_view>& catalog_symbol_names() {
    static const std::unordered_set<std::string_view> names = [] {
        std::unordered_set<std::string_view> n;
        for (const auto& fn : allocator_functions()) n.insert(fn.symbol);
        for (const char* marker : {"__libc_start_main", "gnu_get_libc_version", "_r_debug"}) n.insert(marker);
        for (const std::string& f : signal_functions()) n.insert(f);
        return n;
    }();
    return names;
}

std::vector<AllocatorKind> classify(const ElfSymbols& elf) {
    std::vector<AllocatorKind> kinds;
    const bool c_api = any_of(elf, {"malloc", "free"});
    const bool glibc = c_api && any_of(elf, {"__libc_start_main", "gnu_get_libc_version"});
    if (glibc) kinds.push_back(AllocatorKind::Glibc);
    const bool je = any_of(elf, {"mallocx", "je_mallocx", "_rjem_mallocx", "je_malloc", "_rjem_malloc"});
    if (je) kinds.push_back(AllocatorKind::Jemalloc);
    const bool mi = elf.has("mi_malloc");
    if (mi) kinds.push_back(AllocatorKind::Mimalloc);
    const bool tc = elf.has("tc_malloc");
    if (tc) kinds.push_back(AllocatorKind::Tcmalloc);
    if (c_api && !glibc && !je && !mi && !tc) kinds.push_back(AllocatorKind::OtherMalloc);
    if (any_of(elf, {"_Znwm", "_Znam", "_ZdlPv", "_ZdaPv"})) kinds.push_back(AllocatorKind::CxxOperators);
    if (elf.has("_dl_debug_state")) kinds.push_back(AllocatorKind::Loader);
    return kinds;
}

unsigned argument_registers(uint32_t func) {
    switch (func) {
    case MT_FUNC_CALLOC:
    case MT_FUNC_REALLOC:
    case MT_FUNC_ALIGNED_ALLOC:
    case MT_FUNC_NEW_ALIGNED:
    case MT_FUNC_MALLOC_ALIGNED:
    case MT_FUNC_MALLOCX:
    case MT_FUNC_MALLOCN:
    case MT_FUNC_MUNMAP:
        return 2;
    case MT_FUNC_REALLOCARRAY:
    case MT_FUNC_POSIX_MEMALIGN:
    case MT_FUNC_CALLOC_ALIGNED:
    case MT_FUNC_MMAP:
    case MT_FUNC_MREMAP:
        return 3;
    case MT_FUNC_INTERNAL:
    case MT_FUNC_LOADER:
        return 0;
    default:
        return 1;
    }
}

}  // namespace memtrack
