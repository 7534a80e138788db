#pragma once
// One object's DWARF CFI compiled into the compact unwind rows the BPF stack walker follows
// (src/bpf/unwind.h), with what a caller needs to place them in a process: the build-id that
// keys the table and the PT_LOAD segments that give a mapping's bias.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/Result.hpp"
#include "symbols/ElfFile.hpp"
#include "symbols/ObjectFiles.hpp"
#include "unwind/FrameRule.hpp"

namespace memtrack {

static_assert(sizeof(mt_unwind_row) == 8, "mt_unwind_row is 8 bytes in the BPF map");
static_assert(offsetof(mt_unwind_row, pc) == 0 && offsetof(mt_unwind_row, cfa_off) == 4 &&
                  offsetof(mt_unwind_row, kind) == 6 && offsetof(mt_unwind_row, rbp_off8) == 7,
              "mt_unwind_row layout is shared with the BPF walker");

inline constexpr size_t kCfaTypes = MT_CFA_UNSUPPORTED + 1;

struct CfiCounts {
    size_t fdes = 0;  // FDEs whose pcs the rows describe
    size_t fdes_eh_frame = 0;
    size_t fdes_debug_frame = 0;  // used only for pcs .eh_frame does not cover
    size_t rows = 0;
    std::array<size_t, kCfaTypes> rows_by_type{};  // final rows, indexed by mt_cfa_type
    size_t frames_eh_frame = 0;                    // libdw rows read (before merging) per section
    size_t frames_debug_frame = 0;
    std::array<size_t, kUnsupportedCauses> unsupported{};  // libdw rows mapped to UNSUPPORTED, by cause
    size_t lookup_failures = 0;   // an FDE's pc libdw found no frame for: NONE from there to its end
    size_t undecodable_fdes = 0;  // FDEs whose pc range could not be read: their pcs stay NONE
    bool truncated_cfi = false;   // a section could not be read to its end
    uint64_t build_ns = 0;
};

struct CfiTable {
    // Sorted by pc, no two neighbours with the same rule; a NONE row ends each stretch of CFI
    // that the next FDE does not continue at once, and the last row is NONE.
    std::vector<mt_unwind_row> rows;
    std::string build_id;               // lowercase hex; empty when the file has none
    std::vector<LoadSegment> segments;  // every PT_LOAD
    std::string debug_frame_file;       // whose .debug_frame filled in; empty when none did
    CfiCounts counts;

    // The row in force at `vaddr`; a NONE row (pc 0) before the first row.
    mt_unwind_row row_at(uint64_t vaddr) const;

    // load address - vaddr for an executable mapping of this file at `start` from file offset
    // `offset` (as /proc/PID/maps shows it); nullopt when no executable segment holds that offset.
    std::optional<uint64_t> bias(uint64_t start, uint64_t offset) const;
};

// Objects with at least this many FDEs are read by two threads, each through handles of its
// own (libdw's FDE cache in a Dwarf_CFI is not shared between threads): a process waits for the
// tables of its code (docs/BENCHMARKS.md, "Unwind tables").
inline constexpr size_t kCfiTwoThreadsFrom = 8192;

// Reads the object's .eh_frame, then the .debug_frame of the file or of its separate debug file
// (by build-id) for pcs .eh_frame does not cover. Fails for a file that is not x86-64 ELF, or
// whose CFI describes a pc at or above 4 GiB (rows hold 32-bit pcs). The table is the same
// whichever `two_threads_from`; tests compare.
// Reads the file through its handles (ObjectFiles): nothing is opened here.
Result<CfiTable> build_cfi_table(const ObjectFile& file, size_t two_threads_from = kCfiTwoThreadsFrom);
// The same for the file at `path`, read on its own (ObjectFile::open): tests and tools.
Result<CfiTable> build_cfi_table(const std::string& path, size_t two_threads_from = kCfiTwoThreadsFrom);

}  // namespace memtrack
