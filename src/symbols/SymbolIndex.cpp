#include "symbols/SymbolIndex.hpp"

#include <elfutils/libdwfl.h>
#include <gelf.h>

#include <algorithm>
#include <tuple>

namespace memtrack {
namespace {

struct Candidate {
    uint64_t start;
    uint64_t end;
    int rank;  // lower wins among symbols at one address
    const char* name;
};

bool is_code_symbol(const GElf_Sym& sym) {
    const int type = GELF_ST_TYPE(sym.st_info);
    return type == STT_FUNC || type == STT_GNU_IFUNC || type == STT_NOTYPE;
}

// libdwfl's preference at one address: a sized symbol over a sizeless one, then global, weak,
// local, then a function over an untyped label.
int rank_of(const GElf_Sym& sym) {
    int binding = 2;
    switch (GELF_ST_BIND(sym.st_info)) {
    case STB_GLOBAL: binding = 0; break;
    case STB_WEAK: binding = 1; break;
    default: break;
    }
    return (sym.st_size == 0 ? 8 : 0) + binding * 2 + (GELF_ST_TYPE(sym.st_info) == STT_NOTYPE ? 1 : 0);
}

}  // namespace

SymbolIndex SymbolIndex::build(Dwfl_Module* mod) {
    std::vector<Candidate> all;
    const int n = dwfl_module_getsymtab(mod);
    if (n > 0) all.reserve(size_t(n));
    for (int i = 1; i < n; ++i) {  // entry 0 is the null symbol
        GElf_Sym sym;
        GElf_Addr addr = 0;
        GElf_Word shndx = 0;
        Elf* elf = nullptr;
        Dwarf_Addr bias = 0;
        const char* name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, &elf, &bias);
        if (name == nullptr || name[0] == '\0' || !is_code_symbol(sym) || addr == 0) continue;
        if (sym.st_shndx == SHN_UNDEF || sym.st_shndx == SHN_ABS) continue;  // imports, absolute values
        all.push_back({addr, addr + sym.st_size, rank_of(sym), name});
    }
    std::sort(all.begin(), all.end(),
              [](const Candidate& a, const Candidate& b) { return std::tie(a.start, a.rank) < std::tie(b.start, b.rank); });

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
        if (c.end == c.start && !open.empty()) continue;
        const auto at = uint32_t(index.starts_.size());
        index.starts_.push_back(c.start);
        index.ends_.push_back(c.end);
        index.names_.push_back(c.name);
        index.parents_.push_back(open.empty() ? kNoParent : open.back());
        if (c.end > c.start) open.push_back(at);
    }
    return index;
}

const char* SymbolIndex::find(uint64_t addr) const {
    const auto it = std::upper_bound(starts_.begin(), starts_.end(), addr);
    if (it == starts_.begin()) return nullptr;
    const auto closest = uint32_t(it - starts_.begin() - 1);
    if (ends_[closest] == starts_[closest]) return names_[closest];  // sizeless: up to the next symbol
    for (uint32_t k = closest; k != kNoParent; k = parents_[k])
        if (addr < ends_[k]) return names_[k];
    return nullptr;
}

}  // namespace memtrack
