#include "symbols/SymbolIndex.hpp"

#include <elfutils/libdwfl.h>
#include <gelf.h>

#include <algorithm>
#include <tuple>

namespace memtrack {
namespace {

struct Candidate {
    uint64_t start;
    uint64_t end;  // a sizeless symbol: the end of its section
    int rank;      // lower wins among symbols at one address
    bool sized;
    const char* name;
};

bool is_code_symbol(const GElf_Sym& sym) {
    const int type = GELF_ST_TYPE(sym.st_info);
    return type == STT_FUNC || type == STT_GNU_IFUNC || type == STT_NOTYPE;
}

// libdwfl's preference at one address: a sized symbol over a sizeless one, then global, weak,
// local, then the smaller. Among equals the first in its search order wins (build() keeps that
// order).
int rank_of(const GElf_Sym& sym) {
    int binding = 2;
    switch (GELF_ST_BIND(sym.st_info)) {
    case STB_GLOBAL: binding = 0; break;
    case STB_WEAK: binding = 1; break;
    default: break;
    }
    return (sym.st_size == 0 ? 4 : 0) + binding;
}

}  // namespace

SymbolIndex SymbolIndex::build(Dwfl_Module* mod) {
    std::vector<Candidate> all;
    const int n = dwfl_module_getsymtab(mod);
    if (n > 0) all.reserve(size_t(n));
    auto add = [&](int i) {
        GElf_Sym sym;
        GElf_Addr addr = 0;
        GElf_Word shndx = 0;
        Elf* elf = nullptr;
        Dwarf_Addr bias = 0;
        const char* name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, &elf, &bias);
        if (name == nullptr || name[0] == '\0' || !is_code_symbol(sym) || addr == 0) return;
        if (sym.st_shndx == SHN_UNDEF || sym.st_shndx == SHN_ABS) return;  // imports, absolute values
        uint64_t end = addr + sym.st_size;
        if (sym.st_size == 0) {
            // An assembly label without a size reaches to the next symbol, but never past its
            // section (so not from _init over the PLT), as libdwfl has it.
            GElf_Shdr sh;
            end = UINT64_MAX;
            if (elf != nullptr && gelf_getshdr(elf_getscn(elf, shndx), &sh) != nullptr && sh.sh_addr <= sym.st_value)
                end = addr + (sh.sh_addr + sh.sh_size - sym.st_value);
        }
        all.push_back({addr, end, rank_of(sym), sym.st_size != 0, name});
    };
    // libdwfl's search order: the global symbols, then the local ones (entry 0 is the null
    // symbol), so aliases of equal rank (memmove/memcpy, a function and its __GI_ twin) resolve
    // to the name libdwfl gave.
    const int first_global = std::clamp(dwfl_module_getsymtab_first_global(mod), 1, std::max(n, 1));
    for (int i = first_global; i < n; ++i) add(i);
    for (int i = 1; i < first_global; ++i) add(i);
    std::stable_sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) {
        return std::tie(a.start, a.rank, a.end) < std::tie(b.start, b.rank, b.end);
    });

    SymbolIndex index;
    index.starts_.reserve(all.size());
    index.ends_.reserve(all.size());
    index.names_.reserve(all.size());
    index.parents_.reserve(all.size());
    std::vector<uint32_t> open;  // sized symbols whose range the next start may still be in
    for (size_t i = 0; i < all.size(); ++i) {
        const Candidate& c = all[i];
        if (i > 0 && all[i - 1].start == c.start) continue;  // the best one at this address is kept
        while (!open.empty() && index.ends_[open.back()] <= c.start) open.pop_back();
        // A sizeless label inside a sized function would hide it; libdwfl prefers the function.
        if (!c.sized && !open.empty()) continue;
        const auto at = uint32_t(index.starts_.size());
        index.starts_.push_back(c.start);
        index.ends_.push_back(c.end);
        index.names_.push_back(c.name);
        index.parents_.push_back(open.empty() ? kNoParent : open.back());
        if (c.sized) open.push_back(at);
    }
    return index;
}

const char* SymbolIndex::find(uint64_t addr) const {
    const auto it = std::upper_bound(starts_.begin(), starts_.end(), addr);
    if (it == starts_.begin()) return nullptr;
    // A sizeless symbol's end is its section's: up to the next symbol, in the same section.
    const auto closest = uint32_t(it - starts_.begin() - 1);
    for (uint32_t k = closest; k != kNoParent; k = parents_[k])
        if (addr < ends_[k]) return names_[k];
    return nullptr;
}

}  // namespace memtrack
