#pragma once
// The DWARF side of one address: the function that contains it and the calls inlined there.
// Each compile unit's functions are indexed by address the first time an address falls in it
// (one walk of its DIE tree); after that, an address costs a binary search and a walk down one
// function's own DIEs. dwarf_getscopes, used before, walked the unit from its root for every
// address: linear in the size of the unit.
#include <elfutils/libdw.h>

#include <cstdint>
#include <string>
#include <vector>

#include "format/StacksFile.hpp"  // Frame

namespace memtrack {

// The functions (DW_TAG_subprogram with code) of one compile unit, by address range.
class CuScopes {
public:
    static CuScopes build(Dwarf_Die* cudie);

    // Frames for the code at `pc` (a DWARF address of this unit): one per inlined call,
    // innermost first, each with the source location handed to it (`file`, `line`: the line
    // table's answer for the innermost; each call site for the frame outside it). On return
    // `file` and `line` hold the location in the containing function, and `function` its name;
    // both stay as given (and `function` empty) when no function of the unit contains `pc`.
    void inlined_frames(uint64_t pc, std::vector<Frame>& frames, std::string& function, std::string& file,
                        uint32_t& line) const;

    size_t size() const { return ranges_.size(); }

private:
    struct Range {
        uint64_t lo = 0;
        uint64_t hi = 0;  // exclusive
        Dwarf_Die die{};  // valid as long as the Dwarf it came from
    };
    std::vector<Range> ranges_;  // sorted by lo
};

}  // namespace memtrack
