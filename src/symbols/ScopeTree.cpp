#include "symbols/ScopeTree.hpp"

#include <dwarf.h>

#include <algorithm>

#include "symbols/Demangle.hpp"
#include "symbols/RangeSearch.hpp"

namespace memtrack {
namespace {

// Scopes inside a function that code addresses can be in (what dwarf_getscopes descends into).
bool is_code_scope(int tag) {
    switch (tag) {
    case DW_TAG_lexical_block:
    case DW_TAG_inlined_subroutine:
    case DW_TAG_subprogram:  // a nested function (GNU C)
    case DW_TAG_try_block:
    case DW_TAG_catch_block:
    case DW_TAG_with_stmt:
    case DW_TAG_entry_point:
        return true;
    default:
        return false;
    }
}

}  // namespace

std::string die_function_name(Dwarf_Die* die) {
    Dwarf_Attribute attr;
    if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) != nullptr ||
        dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr) != nullptr) {
        if (const char* s = dwarf_formstring(&attr)) return demangle(s);
    }
    if (dwarf_attr_integrate(die, DW_AT_name, &attr) != nullptr) {
        if (const char* s = dwarf_formstring(&attr)) return s;
    }
    return {};
}

ScopeTree ScopeTree::build(Dwarf_Die* function) {
    ScopeTree t;
    t.nodes_.push_back({*function, dwarf_tag(function), 0, 0, false, {}});
    t.add_children(kRoot);
    return t;
}

void ScopeTree::add_children(uint32_t parent) {
    std::vector<Span> mine;
    Dwarf_Die child;
    if (dwarf_child(&nodes_[parent].die, &child) == 0) {
        do {
            const int tag = dwarf_tag(&child);
            if (!is_code_scope(tag)) continue;
            const auto node = uint32_t(nodes_.size());
            bool any = false;
            Dwarf_Addr base = 0, lo = 0, hi = 0;
            for (ptrdiff_t off = 0; (off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0;) {
                if (hi <= lo) continue;
                mine.push_back({lo, hi, node});
                any = true;
            }
            // A scope without code of its own (an abstract lexical block) holds no address:
            // dwarf_getscopes prunes it too.
            if (any) nodes_.push_back({child, tag, 0, 0, false, {}});
        } while (dwarf_siblingof(&child, &child) == 0);
    }
    sort_by_start(mine);
    nodes_[parent].first_span = uint32_t(spans_.size());
    nodes_[parent].spans = uint32_t(mine.size());
    spans_.insert(spans_.end(), mine.begin(), mine.end());
    // Children's nodes were appended in order: recurse over them (nodes_ may grow meanwhile).
    uint32_t first_child = UINT32_MAX, last_child = 0;
    for (const Span& s : mine) {
        first_child = std::min(first_child, s.node);
        last_child = std::max(last_child, s.node);
    }
    if (mine.empty()) return;
    for (uint32_t c = first_child; c <= last_child; ++c) add_children(c);
}

void ScopeTree::chain(uint64_t pc, std::vector<uint32_t>& out) const {
    out.clear();
    for (uint32_t node = kRoot;;) {
        const Node& n = nodes_[node];
        const auto begin = spans_.begin() + n.first_span, end = begin + n.spans;
        const auto it = first_containing(begin, end, pc);
        if (it == end) return;
        node = it->node;
        if (nodes_[node].tag == DW_TAG_subprogram) out.clear();
        out.push_back(node);
    }
}

const std::string& ScopeTree::name(uint32_t node) {
    Node& n = nodes_[node];
    if (!n.named) {
        n.name = die_function_name(&n.die);
        n.named = true;
    }
    return n.name;
}

}  // namespace memtrack
