#pragma once
// A module's code symbols sorted by address, read once when the module is loaded, so naming an
// address is a binary search. libdwfl's dwfl_module_addrinfo walks the whole symbol table on
// every call: 2-5 ms per address in node's 185k symbols (issue 16), most of a run's symbolizing.
#include <cstddef>
#include <cstdint>
#include <vector>

struct Dwfl_Module;

namespace memtrack {

class SymbolIndex {
public:
    SymbolIndex() = default;

    // Every function symbol of the table libdwfl chose for `mod` (.symtab, from the separate
    // debug file when there is one, else .dynsym with MiniDebugInfo's table), at module
    // addresses. Names point into libelf's string tables: the index must not outlive the Dwfl.
    static SymbolIndex build(Dwfl_Module* mod);

    // The (mangled) name of the function symbol containing `addr`, or nullptr. As libdwfl
    // chooses: a symbol with a size contains [start, start + size); one without a size reaches
    // to the next symbol within its section, unless a sized one contains the address; at one
    // address, a global name wins over a weak one, a weak one over a local one, then the
    // smaller, then the first in the table's order (globals first).
    const char* find(uint64_t addr) const;

    size_t size() const { return starts_.size(); }

private:
    static constexpr uint32_t kNoParent = UINT32_MAX;
    // Parallel arrays, so the binary search touches only `starts_`.
    std::vector<uint64_t> starts_;
    std::vector<uint64_t> ends_;  // a symbol without a size: its section's end
    std::vector<const char*> names_;
    // The innermost earlier symbol whose range contains this one's start: where an address
    // past the end of a nested symbol (a local label with a size inside a function) belongs.
    std::vector<uint32_t> parents_;
};

}  // namespace memtrack
