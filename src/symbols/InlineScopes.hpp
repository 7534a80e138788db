#pragma once
// The DWARF side of one address: the function that contains it and the calls inlined there.
// Each compile unit's functions are indexed by address the first time an address falls in the
// unit (one walk of its top-level DIEs), each function's scopes the first time an address falls
// in the function (ScopeTree). After that, an address costs binary searches. dwarf_getscopes,
// used before, walked the unit from its root for every address: linear in the unit's size.
#include <elfutils/libdw.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "format/StacksFile.hpp"  // Frame
#include "symbols/ScopeTree.hpp"

namespace memtrack {

class CuScopes {
public:
    static CuScopes build(Dwarf_Die* cudie);

    // Frames for the code at `pc` (a DWARF address of this unit): one per inlined call,
    // innermost first, each with the source location handed to it (`file`, `line`: the line
    // table's answer for the innermost; each call site for the frame outside it). On return
    // `file` and `line` hold the location in the containing function, and `function` its name;
    // all stay as given when no function of the unit contains `pc`.
    void inlined_frames(uint64_t pc, std::vector<Frame>& frames, std::string& function, std::string& file,
                        uint32_t& line);

private:
    void collect(Dwarf_Die* parent);

    struct Range {
        uint64_t lo = 0;
        uint64_t hi = 0;  // exclusive
        uint32_t function = 0;
    };
    struct Function {
        Dwarf_Die die{};  // valid as long as the Dwarf it came from
        std::unique_ptr<ScopeTree> tree;  // built when first needed
    };
    std::vector<Range> ranges_;  // sorted by lo
    std::vector<Function> functions_;
    std::vector<uint32_t> chain_;  // scratch
};

}  // namespace memtrack
