#include "probes/ElfSymbols.hpp"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <memory>

#include "core/Fd.hpp"

namespace memtrack {
namespace {

struct ElfCloser {
    void operator()(Elf* e) const { elf_end(e); }
};
using ElfPtr = std::unique_ptr<Elf, ElfCloser>;

struct LoadSegment {
    uint64_t vaddr, offset, filesz;
};

}  // namespace

Result<ElfSymbols> ElfSymbols::load(const std::string& path, const std::vector<std::string>& wanted) {
    if (elf_version(EV_CURRENT) == EV_NONE) return Error{"elf_version", path, 0, elf_errmsg(-1)};
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return errno_error("open", path);
    ElfPtr elf(elf_begin(fd.get(), ELF_C_READ, nullptr));
    if (!elf) return Error{"elf_begin", path, 0, elf_errmsg(-1)};

    std::vector<LoadSegment> segments;
    size_t nphdr = 0;
    if (elf_getphdrnum(elf.get(), &nphdr) != 0) return Error{"elf_getphdrnum", path, 0, elf_errmsg(-1)};
    for (size_t i = 0; i < nphdr; ++i) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf.get(), int(i), &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
            segments.push_back({ph.p_vaddr, ph.p_offset, ph.p_filesz});
    }

    ElfSymbols out;
    out.path_ = path;
    const std::unordered_set<std::string_view> want(wanted.begin(), wanted.end());
    Elf_Scn* scn = nullptr;
    while ((scn = elf_nextscn(elf.get(), scn)) != nullptr) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB)) continue;
        Elf_Data* data = elf_getdata(scn, nullptr);
        if (!data || sh.sh_entsize == 0) continue;
        const size_t count = sh.sh_size / sh.sh_entsize;
        for (size_t i = 0; i < count; ++i) {
            GElf_Sym sym;
            if (!gelf_getsym(data, int(i), &sym)) continue;
            const int type = GELF_ST_TYPE(sym.st_info);
            if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF || sym.st_value == 0)
                continue;
            const char* name = elf_strptr(elf.get(), sh.sh_link, sym.st_name);
            if (!name || !*name || (!want.empty() && !want.count(name))) continue;
            for (const auto& seg : segments) {
                if (sym.st_value >= seg.vaddr && sym.st_value < seg.vaddr + seg.filesz) {
                    // .dynsym comes first and wins: it is what the dynamic linker binds.
                    out.functions_.try_emplace(name, FunctionSymbol{sym.st_value, sym.st_size,
                                                                    sym.st_value - seg.vaddr + seg.offset});
                    break;
                }
            }
        }
    }
    return out;
}

std::optional<FunctionSymbol> ElfSymbols::find(std::string_view name) const {
    auto it = functions_.find(std::string(name));
    if (it == functions_.end()) return std::nullopt;
    return it->second;
}

Result<std::vector<uint8_t>> ElfSymbols::code(const FunctionSymbol& fn, size_t max) const {
    Fd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return errno_error("open", path_);
    const size_t want = fn.size ? std::min<size_t>(fn.size, max) : max;
    std::vector<uint8_t> bytes(want);
    const ssize_t n = ::pread(fd.get(), bytes.data(), want, off_t(fn.file_offset));
    if (n < 0) return errno_error("pread", path_);
    bytes.resize(size_t(n));
    return bytes;
}

}  // namespace memtrack
