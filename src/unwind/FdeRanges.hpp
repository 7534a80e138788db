#pragma once
// The pc ranges of the FDEs in one CFI section (.eh_frame or .debug_frame), read entry by entry
// with libdw's dwarf_next_cfi. libdw finds the FDE of a given pc but has no call that lists
// them, and the table builder must know where each starts to walk its rows without probing the
// gaps between functions.
#include <libelf.h>

#include <cstdint>
#include <vector>

namespace memtrack {

struct FdeRange {
    uint64_t lo = 0;  // initial_location (ELF vaddr)
    uint64_t hi = 0;  // lo + address_range
};

struct FdeList {
    std::vector<FdeRange> ranges;  // sorted by lo; empty ranges dropped
    size_t undecodable = 0;        // FDEs whose CIE uses a pointer encoding not read here
    bool truncated = false;        // dwarf_next_cfi failed before the section's end
};

// `data` is the whole section, `section_vaddr` its sh_addr (the base of DW_EH_PE_pcrel).
FdeList list_fdes(Elf* elf, Elf_Data* data, uint64_t section_vaddr, bool eh_frame);

}  // namespace memtrack
