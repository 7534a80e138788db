#include "symbols/FileMaps.hpp"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <memory>

#include <fmt/format.h>

#include "core/Fd.hpp"

namespace memtrack {

Result<FileMaps> map_file(const std::string& path, uint64_t base) {
    constexpr uint64_t kPage = 4096;
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return errno_error("open", path);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return errno_error("stat", path);
    elf_version(EV_CURRENT);
    std::unique_ptr<Elf, decltype(&elf_end)> elf(elf_begin(fd.get(), ELF_C_READ, nullptr), &elf_end);
    size_t phnum = 0;
    if (!elf || elf_getphdrnum(elf.get(), &phnum) != 0) return Error{"read ELF headers", path, 0, elf_errmsg(-1)};

    // The text of a maps file, parsed by the same code that reads /proc/PID/maps.
    FileMaps out;
    out.base = base;
    std::string text;
    for (size_t i = 0; i < phnum; ++i) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf.get(), int(i), &ph) == nullptr || ph.p_type != PT_LOAD) continue;
        const uint64_t start = base + (ph.p_vaddr & ~(kPage - 1));
        const uint64_t end = base + ((ph.p_vaddr + ph.p_memsz + kPage - 1) & ~(kPage - 1));
        const bool exec = (ph.p_flags & PF_X) != 0;
        text += fmt::format("{:x}-{:x} r{}{}p {:08x} {:02x}:{:02x} {} {}\n", start, end, (ph.p_flags & PF_W) ? 'w' : '-',
                            exec ? 'x' : '-', ph.p_offset & ~(kPage - 1), major(st.st_dev), minor(st.st_dev),
                            uint64_t(st.st_ino), path);
        if (exec) out.code.emplace_back(ph.p_vaddr, ph.p_vaddr + ph.p_filesz);
    }
    out.maps = ProcessMaps::parse(text);
    return out;
}

}  // namespace memtrack
