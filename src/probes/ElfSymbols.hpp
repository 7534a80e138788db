#pragma once
// Function symbols of one ELF file, with the file offsets uprobes are attached at.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/Result.hpp"
#include "symbols/ObjectFiles.hpp"

namespace memtrack {

struct FunctionSymbol {
    uint64_t vaddr = 0;        // st_value
    uint64_t size = 0;         // st_size
    uint64_t file_offset = 0;  // where the code sits in the file: what uprobes take
};

// Names to keep, as load() looks them up. A caller that loads every new object with the same
// names builds the set once (catalog_symbol_names): building it took ~15 us, a tenth of the
// hold at each dlopen.
using SymbolNames = std::unordered_set<std::string_view>;

class ElfSymbols {
public:
    // Keeps only the functions named in `wanted` (all of them when empty): memtrack's own
    // allocations trap on probes attached before, so start-up does as few as it can. Reads
    // .dynsym and .symtab, and the .symtab of the separate debug file found by build-id, through
    // the file's handles (ObjectFiles: no file is opened here).
    static Result<ElfSymbols> load(std::shared_ptr<const ObjectFile> file, const SymbolNames& wanted = {});
    // The same for a file read on its own (ObjectFile::open): tests and tools.
    static Result<ElfSymbols> load(const std::string& path, const SymbolNames& wanted = {});

    std::optional<FunctionSymbol> find(std::string_view name) const;
    // The address (st_value) of a data object named in `wanted`.
    std::optional<uint64_t> object_vaddr(std::string_view name) const;
    // The file's entry point (e_entry) as a function of no known size, when an exec of it, or of
    // a program it is the interpreter of, first runs there (it has no interpreter itself: the
    // loader, a static executable). nullopt otherwise, or outside its code.
    std::optional<FunctionSymbol> entry() const { return entry_; }
    bool has(std::string_view name) const { return functions_.count(std::string(name)) != 0; }
    const std::string& path() const { return path_; }
    const std::string& debug_path() const { return debug_path_; }  // empty: none read
    // Up to `max` bytes of code starting at a function's entry, read from the file's descriptor.
    Result<std::vector<uint8_t>> code(const FunctionSymbol& fn, size_t max) const;

private:
    std::shared_ptr<const ObjectFile> file_;
    std::string path_;
    std::string debug_path_;
    std::unordered_map<std::string, FunctionSymbol> functions_;
    std::unordered_map<std::string, uint64_t> objects_;
    std::optional<FunctionSymbol> entry_;
};

}  // namespace memtrack
