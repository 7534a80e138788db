#pragma once
// Every allocator entry point memtrack knows, by symbol name, and the allocator kinds an ELF
// object is recognised as from the names it defines. One table for every object: the C library,
// jemalloc (plain, je_ and _rjem_ prefixed), mimalloc, tcmalloc, the C++ operators, an
// executable with its allocator inside, and the dynamic loader's hook for new code.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace memtrack {

class ElfSymbols;

struct AllocatorFunction {
    std::string symbol;
    uint32_t func;    // mt_func
    bool has_return;  // needs a return probe (allocations: the address comes back)
    // The argument register of the function's first mt_func argument: 1 for mimalloc's
    // mi_heap_* (the heap comes first), 0 otherwise.
    unsigned first_arg = 0;
};

// In preference order: where several names share one address (mimalloc's malloc = mi_malloc =
// __libc_malloc), the first one gives that address its function.
const std::vector<AllocatorFunction>& allocator_functions();

enum class AllocatorKind : uint8_t {
    Glibc,
    Jemalloc,
    Mimalloc,
    Tcmalloc,
    OtherMalloc,  // defines malloc or free, none of the allocators above
    CxxOperators, // defines operator new or delete
    Loader,       // the dynamic loader's debugger hook (_dl_debug_state)
};
inline constexpr size_t kAllocatorKinds = 7;
const char* kind_name(AllocatorKind k);  // the stats key: "glibc", "jemalloc", ...
// True for the kinds that allocate (the C++ operators and the loader need one of them).
bool allocates(AllocatorKind k);

// The C library's functions that send another process a signal: where a sender resumes after
// a SIGCONT (ObjectProbes' after-syscall sites).
const std::vector<std::string>& signal_functions();

// Every name allocator_functions() has, plus the names classify() and signal_functions() look
// for: built once, viewing the table's names.
const std::unordered_set<std::string_view>& catalog_symbol_names();
std::vector<AllocatorKind> classify(const ElfSymbols& elf);

// How many argument registers the BPF handler reads for a function (ProbePlacement keeps them).
unsigned argument_registers(uint32_t func);

}  // namespace memtrack
