#pragma once
// One loaded module (an ELF file, or the vDSO image) and its indexes: the symbol table sorted
// by address, built with the module, and each compile unit's functions, built the first time an
// address falls in that unit. The unit comes from libdwfl, which keeps the units' address ranges
// sorted (dwfl_module_addrdie); its line table from libdw, decoded once per unit and
// binary-searched (dwarf_getsrc_die).
#include <elfutils/libdwfl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/Fd.hpp"
#include "format/StacksFile.hpp"  // Frame
#include "symbols/InlineScopes.hpp"
#include "symbols/SymbolIndex.hpp"

namespace memtrack {

struct DwflDeleter {
    void operator()(Dwfl* d) const { dwfl_end(d); }
};

// A module's separate debug file as ObjectFiles opened it (by build-id, where libdwfl looks first),
// for libdwfl's search for the module's debug info (ModuleLoader's find_debuginfo): a duplicate
// of ObjectFiles' descriptor, given to libdwfl when it asks, so it opens no file of its own.
struct KnownDebugFile {
    Fd fd;  // invalid once given (libdwfl then owns it), or when there is none
    std::string path;
};

// Not thread-safe: built on one thread (the preload thread or the resolver's strand), then used
// only on the resolver's strand.
class Module {
public:
    struct Load {
        uint64_t offset = 0;  // p_offset
        uint64_t filesz = 0;  // p_filesz
        uint64_t vaddr = 0;   // p_vaddr
    };

    // `mod` lives in `dwfl`, reported and ended (dwfl_report_end). Reads the build-id and the
    // PT_LOAD segments; the symbol index is built by index_symbols(). `debug` is what libdwfl's
    // search for debug info is given (the module's userdata points at it).
    Module(std::unique_ptr<Dwfl, DwflDeleter> dwfl, Dwfl_Module* mod, KnownDebugFile debug = {});
    Module(const Module&) = delete;
    Module& operator=(const Module&) = delete;

    // What the first lookups would otherwise pay: the symbol index (for a file without a
    // symbol table, libdwfl's search for separate debug info), the DWARF opened (libdw inflates
    // compressed sections here) and its compile units' ranges read; libdwfl's one search for
    // debug info happens here, so a known debug file it did not take is closed after. Idempotent.
    void index_symbols();

    // A file offset inside one of the PT_LOAD segments -> the module address of that byte.
    std::optional<uint64_t> to_address(uint64_t file_offset) const;

    // Frames for the code at module address `addr` (the call instruction), innermost first,
    // without ip/module/build_id, which the caller fills in; empty when nothing is known.
    std::vector<Frame> lookup(uint64_t addr);

    bool usable() const { return elf_ok_; }
    const std::string& build_id() const { return build_id_; }
    size_t symbols() const { return symbols_.size(); }  // in the index, for -v

private:
    CuScopes& scopes_of(Dwarf_Die* cudie);

    KnownDebugFile debug_;  // before dwfl_: the module's userdata points here while libdwfl may search
    std::unique_ptr<Dwfl, DwflDeleter> dwfl_;
    Dwfl_Module* mod_ = nullptr;
    Dwarf_Addr bias_ = 0;  // 0 for files; whatever libdwfl chose for in-memory images
    bool elf_ok_ = false;
    bool indexed_ = false;
    std::string build_id_;
    std::vector<Load> loads_;
    SymbolIndex symbols_;
    // Key: the unit's DIE offset in its Dwarf.
    std::unordered_map<uint64_t, CuScopes> cu_scopes_;
};

}  // namespace memtrack
