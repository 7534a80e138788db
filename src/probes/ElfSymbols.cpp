#include "probes/ElfSymbols.hpp"

#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include "symbols/ElfFile.hpp"

namespace memtrack {
namespace {

// The function at `vaddr` if one of the executable `segments` holds it, with its file offset.
std::optional<FunctionSymbol> code_at(const std::vector<LoadSegment>& segments, uint64_t vaddr, uint64_t size) {
    for (const auto& seg : segments)
        if (vaddr >= seg.vaddr && vaddr < seg.vaddr + seg.filesz) return FunctionSymbol{vaddr, size, vaddr - seg.vaddr + seg.offset};
    return std::nullopt;
}

// Adds the functions of `elf`'s symbol tables named in `want` (all when empty; labels without a
// type too when named) that fall in `segments`, and the data objects named in `want`; a name already there keeps its first symbol.
void add_functions(Elf* elf, const std::vector<LoadSegment>& segments, const SymbolNames& want, bool symtab_only,
                   std::unordered_map<std::string, FunctionSymbol>& out,
                   std::unordered_map<std::string, uint64_t>& objects) {
    Elf_Scn* scn = nullptr;
    while ((scn = elf_nextscn(elf, scn)) != nullptr) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && (symtab_only || sh.sh_type != SHT_DYNSYM)))
            continue;
        Elf_Data* data = elf_getdata(scn, nullptr);
        if (!data || sh.sh_entsize == 0) continue;
        const size_t count = sh.sh_size / sh.sh_entsize;
        for (size_t i = 0; i < count; ++i) {
            GElf_Sym sym;
            if (!gelf_getsym(data, int(i), &sym)) continue;
            const int type = GELF_ST_TYPE(sym.st_info);
            if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
            if (type == STT_OBJECT) {
                const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
                if (name && *name && want.count(name)) objects.try_emplace(name, sym.st_value);
                continue;
            }
            // An assembly label (NOTYPE) only when asked for by name: CPython's
            // _Py_trampoline_func_start, for one.
            if (type != STT_FUNC && type != STT_GNU_IFUNC && (type != STT_NOTYPE || want.empty())) continue;
            const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
            if (!name || !*name || (!want.empty() && !want.count(name))) continue;
            // .dynsym comes first and wins: it is what the dynamic linker binds.
            if (auto fn = code_at(segments, sym.st_value, sym.st_size)) out.try_emplace(name, *fn);
        }
    }
}

// The entry point of a file whose entry is a process's first instruction after exec: the loader,
// a static executable. A file with an interpreter (a dynamic executable, the C library run as a
// program) starts in its interpreter.
std::optional<uint64_t> first_instruction(Elf* elf) {
    GElf_Ehdr eh;
    size_t nphdr = 0;
    if (!gelf_getehdr(elf, &eh) || eh.e_entry == 0 || elf_getphdrnum(elf, &nphdr) != 0) return std::nullopt;
    for (size_t i = 0; i < nphdr; ++i) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, int(i), &ph) && ph.p_type == PT_INTERP) return std::nullopt;
    }
    return eh.e_entry;
}

}  // namespace

Result<ElfSymbols> ElfSymbols::load(const std::string& path, const SymbolNames& wanted) {
    auto file = ObjectFile::open(path);
    if (!file) return file.error();
    return load(std::move(file).value(), wanted);
}

Result<ElfSymbols> ElfSymbols::load(std::shared_ptr<const ObjectFile> file, const SymbolNames& want) {
    auto open = file->handles();
    if (!open) return open.error();
    std::vector<LoadSegment> segments;
    for (const LoadSegment& seg : file->segments())
        if (seg.executable) segments.push_back(seg);

    ElfSymbols out;
    out.path_ = file->path();
    add_functions((*open)->file.elf.get(), segments, want, false, out.functions_, out.objects_);
    if (auto entry = first_instruction((*open)->file.elf.get())) out.entry_ = code_at(segments, *entry, 0);
    // Local symbols of a stripped file (glibc's internal functions) come from its separate debug
    // file, found by build-id as libdwfl finds it; the code stays the file's own.
    if ((*open)->debug) {
        add_functions((*open)->debug->elf.get(), segments, want, true, out.functions_, out.objects_);
        out.debug_path_ = (*open)->debug_path;
    }
    out.file_ = std::move(file);
    return out;
}

std::optional<FunctionSymbol> ElfSymbols::find(std::string_view name) const {
    auto it = functions_.find(std::string(name));
    if (it == functions_.end()) return std::nullopt;
    return it->second;
}

std::optional<uint64_t> ElfSymbols::object_vaddr(std::string_view name) const {
    auto it = objects_.find(std::string(name));
    if (it == objects_.end()) return std::nullopt;
    return it->second;
}

Result<std::vector<uint8_t>> ElfSymbols::code(const FunctionSymbol& fn, size_t max) const {
    auto open = file_->handles();
    if (!open) return open.error();
    const size_t want = fn.size ? std::min<size_t>(fn.size, max) : max;
    std::vector<uint8_t> bytes(want);
    const ssize_t n = ::pread((*open)->file.fd.get(), bytes.data(), want, off_t(fn.file_offset));
    if (n < 0) return errno_error("pread", path_);
    bytes.resize(size_t(n));
    return bytes;
}

}  // namespace memtrack
