#include "probes/ElfSymbols.hpp"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <memory>

#include <fmt/format.h>

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

namespace {

// The GNU build-id of an ELF file, as hex: where its separate debug file lives.
std::string build_id_hex(Elf* elf) {
    Elf_Scn* scn = nullptr;
    while ((scn = elf_nextscn(elf, scn)) != nullptr) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE) continue;
        Elf_Data* data = elf_getdata(scn, nullptr);
        size_t off = 0, name_off = 0, desc_off = 0;
        GElf_Nhdr nh;
        while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
            if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4) continue;
            const auto* bytes = static_cast<const unsigned char*>(data->d_buf) + desc_off;
            std::string hex;
            for (size_t i = 0; i < nh.n_descsz; ++i) hex += fmt::format("{:02x}", bytes[i]);
            return hex;
        }
    }
    return {};
}

// Adds the functions of `elf`'s symbol tables named in `want` (all when empty) that fall in
// `segments`, and the data objects named in `want`; a name already there keeps its first symbol.
void add_functions(Elf* elf, const std::vector<LoadSegment>& segments,
                   const std::unordered_set<std::string_view>& want, bool symtab_only,
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
            if (type != STT_FUNC && type != STT_GNU_IFUNC) continue;
            const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
            if (!name || !*name || (!want.empty() && !want.count(name))) continue;
            for (const auto& seg : segments) {
                if (sym.st_value >= seg.vaddr && sym.st_value < seg.vaddr + seg.filesz) {
                    // .dynsym comes first and wins: it is what the dynamic linker binds.
                    out.try_emplace(name, FunctionSymbol{sym.st_value, sym.st_size,
                                                         sym.st_value - seg.vaddr + seg.offset});
                    break;
                }
            }
        }
    }
}

}  // namespace

Result<ElfSymbols> ElfSymbols::load(const std::string& path, const std::vector<std::string>& wanted) {
    if (elf_version(EV_CURRENT) == EV_NONE) return Error{"elf_version", path, 0, elf_errmsg(-1)};
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return errno_error("open", path);
    ElfPtr elf(elf_begin(fd.get(), ELF_C_READ, nullptr));
    if (!elf) return Error{"elf_begin", path, 0, elf_errmsg(-1)};
    if (elf_kind(elf.get()) != ELF_K_ELF) return Error{"read ELF", path, 0, "not an ELF file"};

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
    add_functions(elf.get(), segments, want, false, out.functions_, out.objects_);
    // Local symbols of a stripped file (glibc's internal functions) come from its separate debug
    // file, found by build-id as libdwfl finds it; the code stays the file's own.
    if (const std::string id = build_id_hex(elf.get()); id.size() > 2) {
        const std::string debug = fmt::format("/usr/lib/debug/.build-id/{}/{}.debug", id.substr(0, 2), id.substr(2));
        Fd dfd(::open(debug.c_str(), O_RDONLY | O_CLOEXEC));
        ElfPtr delf(dfd.valid() ? elf_begin(dfd.get(), ELF_C_READ, nullptr) : nullptr);
        if (delf) {
            add_functions(delf.get(), segments, want, true, out.functions_, out.objects_);
            out.debug_path_ = debug;
        }
    }
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
