#pragma once
// What a CfiTable read back from somewhere memtrack does not control the bytes of (the cache
// folder: a disk error, an older memtrack's bug, a hand edit) must be before the BPF walker
// follows it: the invariants build_cfi_table keeps (CfiTable.hpp), checked, not trusted.
#include <cstdint>
#include <optional>
#include <string>

#include "unwind/CfiTable.hpp"

namespace memtrack {

// Why `table`, said to be built from a file of `file_size` bytes, is not one build_cfi_table
// could have made; nullopt when it could be. Checked: every segment lies in the file; the rows
// are sorted by pc with no two at one pc, each inside an executable segment (a row may start at
// a segment's end: a NONE row closing its last stretch), each of a known kind; the last is NONE.
std::optional<std::string> cfi_table_fault(const CfiTable& table, uint64_t file_size);

}  // namespace memtrack
