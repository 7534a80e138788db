#pragma once
// One ELF file opened with libelf, and the facts every reader of it needs: its PT_LOAD segments,
// its GNU build-id and where its separate debug file lives.
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/Fd.hpp"
#include "core/Result.hpp"

namespace memtrack {

struct ElfCloser {
    void operator()(Elf* e) const { elf_end(e); }
};
using ElfPtr = std::unique_ptr<Elf, ElfCloser>;

// The descriptor outlives the Elf handle (members are destroyed in reverse order).
struct ElfFile {
    Fd fd;
    struct stat st {};  // the descriptor's, at open: what the file read is
    ElfPtr elf;
};

// Opens `path` as an ELF file (not an archive); ELF_C_READ_MMAP reads sections without copying.
Result<ElfFile> open_elf(const std::string& path, Elf_Cmd cmd = ELF_C_READ_MMAP);
// How many files open_elf opened in this process: what a test reads to prove a file is read once.
uint64_t open_elf_calls();

struct LoadSegment {
    uint64_t vaddr = 0;   // p_vaddr
    uint64_t offset = 0;  // p_offset: a mapping of file offset o sits at vaddr + (o - offset)
    uint64_t filesz = 0;
    uint64_t memsz = 0;
    bool executable = false;  // PF_X
};

// The bias (load address - vaddr) of a mapping at `start` of file offset `offset` (a line of
// /proc/PID/maps) of an executable segment; nullopt when no executable segment holds it.
std::optional<uint64_t> mapping_bias(const std::vector<LoadSegment>& segments, uint64_t start, uint64_t offset);

// Every PT_LOAD segment, in program-header order.
Result<std::vector<LoadSegment>> load_segments(Elf* elf, const std::string& path);

// Lowercase hex of the GNU build-id note; empty when the file has none.
std::string gnu_build_id(Elf* elf);

// Where Debian installs the separate debug file of the object with this build-id (the path
// libdwfl's find_debuginfo tries first); empty when the id is too short to name one.
std::string debug_file_path(std::string_view build_id);

}  // namespace memtrack
