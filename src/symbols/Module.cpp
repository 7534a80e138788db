#include "symbols/Module.hpp"

#include <gelf.h>

#include "symbols/Demangle.hpp"
#include "symbols/ModuleIdentity.hpp"

namespace memtrack {

Module::Module(std::unique_ptr<Dwfl, DwflDeleter> dwfl, Dwfl_Module* mod, KnownDebugFile debug)
    : debug_(std::move(debug)), dwfl_(std::move(dwfl)), mod_(mod) {
    void** userdata = nullptr;
    dwfl_module_info(mod_, &userdata, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
    if (userdata != nullptr) *userdata = &debug_;
    const unsigned char* bits = nullptr;
    GElf_Addr id_vaddr = 0;
    const int len = dwfl_module_build_id(mod_, &bits, &id_vaddr);
    if (len > 0) build_id_ = hex_bytes(bits, len);

    Elf* elf = dwfl_module_getelf(mod_, &bias_);
    size_t phnum = 0;
    if (elf == nullptr || elf_getphdrnum(elf, &phnum) != 0) return;
    for (size_t i = 0; i < phnum; ++i) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, int(i), &ph) != nullptr && ph.p_type == PT_LOAD)
            loads_.push_back({ph.p_offset, ph.p_filesz, ph.p_vaddr});
    }
    elf_ok_ = true;
}

void Module::index_symbols() {
    if (indexed_) return;
    indexed_ = true;
    symbols_ = SymbolIndex::build(mod_);
    Dwarf_Addr bias = 0;
    if (Dwarf* dwarf = dwfl_module_getdwarf(mod_, &bias)) {
        Dwarf_Aranges* aranges = nullptr;
        size_t n = 0;
        (void)dwarf_getaranges(dwarf, &aranges, &n);
    }
    debug_.fd.reset();  // not asked for: the file has symbols and DWARF of its own
}

std::optional<uint64_t> Module::to_address(uint64_t file_offset) const {
    for (const Load& l : loads_)
        if (file_offset >= l.offset && file_offset - l.offset < l.filesz)
            return l.vaddr + (file_offset - l.offset) + bias_;
    return std::nullopt;
}

CuScopes& Module::scopes_of(Dwarf_Die* cudie) {
    const uint64_t key = dwarf_dieoffset(cudie);
    auto it = cu_scopes_.find(key);
    if (it == cu_scopes_.end()) it = cu_scopes_.emplace(key, CuScopes::build(cudie)).first;
    return it->second;
}

std::vector<Frame> Module::lookup(uint64_t addr) {
    index_symbols();
    std::string symbol;
    if (const char* name = symbols_.find(addr)) symbol = demangle(name);

    std::vector<Frame> frames;
    std::string container;  // the DWARF subprogram's name
    std::string file;
    uint32_t line = 0;
    Dwarf_Addr dwarf_bias = 0;
    if (Dwarf_Die* cudie = dwfl_module_addrdie(mod_, addr, &dwarf_bias)) {
        // The unit's line table, decoded once by libdw and binary-searched (what
        // dwfl_module_getsrc does after finding the unit again).
        if (Dwarf_Line* l = dwarf_getsrc_die(cudie, addr - dwarf_bias)) {
            int lineno = 0;
            if (const char* src = dwarf_linesrc(l, nullptr, nullptr)) file = src;
            if (dwarf_lineno(l, &lineno) == 0 && lineno > 0) line = uint32_t(lineno);
        }
        scopes_of(cudie).inlined_frames(addr - dwarf_bias, frames, container, file, line);
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

}  // namespace memtrack
