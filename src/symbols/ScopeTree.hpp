#pragma once
// The code scopes of one function (lexical blocks, inlined calls, nested functions) as a tree of
// address ranges, read from its DIEs once, the first time an address falls in the function.
// Then finding the inlined calls at an address is a binary search per nesting level, with no
// DWARF parsing: walking the DIEs for each address (dwarf_siblingof and dwarf_haspc over every
// child) was most of the cost of a new address in libc's big functions.
#include <elfutils/libdw.h>

#include <cstdint>
#include <string>
#include <vector>

namespace memtrack {

class ScopeTree {
public:
    // The tree under `function` (a DW_TAG_subprogram with code).
    static ScopeTree build(Dwarf_Die* function);

    // The chain of scopes containing `pc`, outermost first, as indexes for die()/name(). The
    // function itself is not in it, unless a nested function contains pc (then the chain
    // starts there: the code is the nested function's).
    void chain(uint64_t pc, std::vector<uint32_t>& out) const;

    Dwarf_Die* die(uint32_t node) { return &nodes_[node].die; }
    int tag(uint32_t node) const { return nodes_[node].tag; }
    // The demangled name of a subprogram or inlined subroutine (die_function_name), read once.
    const std::string& name(uint32_t node);

    static constexpr uint32_t kRoot = 0;

private:
    struct Node {
        Dwarf_Die die{};
        int tag = 0;
        uint32_t first_span = 0;  // this node's children's ranges: spans_[first_span, +spans)
        uint32_t spans = 0;
        bool named = false;
        std::string name;
    };
    struct Span {
        uint64_t lo = 0;
        uint64_t hi = 0;  // exclusive
        uint32_t node = 0;
    };
    void add_children(uint32_t parent);

    std::vector<Node> nodes_;
    std::vector<Span> spans_;
};

// The name of a subprogram or inlined subroutine, following DW_AT_abstract_origin and
// DW_AT_specification to where the name lives: the demangled linkage name when there is one (it
// carries namespace, class and parameters), the plain DW_AT_name otherwise (C).
std::string die_function_name(Dwarf_Die* die);

}  // namespace memtrack
