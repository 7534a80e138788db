#include "symbols/ElfFile.hpp"

#include <elfutils/libdwelf.h>
#include <fcntl.h>

#include <atomic>

#include <fmt/format.h>

namespace memtrack {

namespace {
std::atomic<uint64_t> opened{0};
constexpr off_t kSmallElf = 256 * 1024;
}  // namespace

uint64_t open_elf_calls() { return opened.load(std::memory_order_relaxed); }

Result<ElfFile> open_elf(const std::string& path, Elf_Cmd cmd) {
    opened.fetch_add(1, std::memory_order_relaxed);
    if (elf_version(EV_CURRENT) == EV_NONE) return Error{"elf_version", path, 0, elf_errmsg(-1)};
    ElfFile f;
    f.fd = Fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!f.fd.valid()) return errno_error("open", path);
    // A small file is read with pread: mapping it cost an mmap, its page faults and a munmap
    // (which interrupts memtrack's other threads) for each new library a hold examines. A large
    // one stays mapped: its sections are not copied to the heap.
    if (::fstat(f.fd.get(), &f.st) != 0) return errno_error("stat", path);
    if (cmd == ELF_C_READ_MMAP && f.st.st_size < kSmallElf) cmd = ELF_C_READ;
    f.elf.reset(elf_begin(f.fd.get(), cmd, nullptr));
    if (!f.elf) return Error{"elf_begin", path, 0, elf_errmsg(-1)};
    if (elf_kind(f.elf.get()) != ELF_K_ELF) return Error{"read ELF", path, 0, "not an ELF file"};
    return f;
}

Result<std::vector<LoadSegment>> load_segments(Elf* elf, const std::string& path) {
    size_t nphdr = 0;
    if (elf_getphdrnum(elf, &nphdr) != 0) return Error{"elf_getphdrnum", path, 0, elf_errmsg(-1)};
    std::vector<LoadSegment> out;
    for (size_t i = 0; i < nphdr; ++i) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, int(i), &ph) && ph.p_type == PT_LOAD)
            out.push_back({ph.p_vaddr, ph.p_offset, ph.p_filesz, ph.p_memsz, (ph.p_flags & PF_X) != 0});
    }
    return out;
}

std::string gnu_build_id(Elf* elf) {
    const void* bits = nullptr;
    const ssize_t len = dwelf_elf_gnu_build_id(elf, &bits);
    // Read for every new object in the hold that found it: a format call per byte was ~3 us.
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(len > 0 ? size_t(len) * 2 : 0);
    for (ssize_t i = 0; i < len; ++i) {
        const unsigned char b = static_cast<const unsigned char*>(bits)[i];
        hex += kDigits[b >> 4];
        hex += kDigits[b & 0xf];
    }
    return hex;
}

std::string debug_file_path(std::string_view build_id) {
    if (build_id.size() <= 2) return {};
    return fmt::format("/usr/lib/debug/.build-id/{}/{}.debug", build_id.substr(0, 2), build_id.substr(2));
}

std::optional<uint64_t> mapping_bias(const std::vector<LoadSegment>& segments, uint64_t start, uint64_t offset) {
    constexpr uint64_t kPage = 4096;
    for (const LoadSegment& s : segments) {
        // The loader maps a segment from its page-aligned offset: the mapping's offset is that.
        if (!s.executable || offset < (s.offset & ~(kPage - 1)) || offset >= s.offset + s.filesz) continue;
        // File offset o sits at start + (o - offset) and is vaddr s.vaddr + (o - s.offset).
        return start - offset + s.offset - s.vaddr;
    }
    return std::nullopt;
}

}  // namespace memtrack
