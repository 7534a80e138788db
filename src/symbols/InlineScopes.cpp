#include "symbols/InlineScopes.hpp"

#include <dwarf.h>

#include "symbols/RangeSearch.hpp"

namespace memtrack {
namespace {

// Where an inlined subroutine was called from: the location of the frame just outside it.
void call_site(Dwarf_Die* inlined, std::string& file, uint32_t& line) {
    file.clear();
    line = 0;
    Dwarf_Attribute attr;
    Dwarf_Word value = 0;
    if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr), &value) == 0) {
        Dwarf_Die cu;
        Dwarf_Files* files = nullptr;
        size_t nfiles = 0;
        if (dwarf_diecu(inlined, &cu, nullptr, nullptr) != nullptr && dwarf_getsrcfiles(&cu, &files, &nfiles) == 0 &&
            value < nfiles) {
            if (const char* s = dwarf_filesrc(files, value, nullptr, nullptr)) file = s;
        }
    }
    if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &attr), &value) == 0 && value <= UINT32_MAX)
        line = uint32_t(value);
}

// Scopes that hold functions' definitions without being code themselves: C++ puts methods and
// namespaced functions there.
bool holds_definitions(int tag) {
    switch (tag) {
    case DW_TAG_namespace:
    case DW_TAG_class_type:
    case DW_TAG_structure_type:
    case DW_TAG_union_type:
    case DW_TAG_interface_type:
    case DW_TAG_module:
        return true;
    default:
        return false;
    }
}

}  // namespace

// In DIE order (recursion into namespaces and classes, not a work list): among functions that
// start at one address the first in DIE order is the one dwarf_getscopes named.
void CuScopes::collect(Dwarf_Die* parent) {
    Dwarf_Die child;
    if (dwarf_child(parent, &child) != 0) return;
    do {
        const int tag = dwarf_tag(&child);
        if (holds_definitions(tag)) {
            collect(&child);
            continue;
        }
        if (tag != DW_TAG_subprogram) continue;
        const auto function = uint32_t(functions_.size());
        Dwarf_Addr base = 0, lo = 0, hi = 0;
        for (ptrdiff_t off = 0; (off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0;)
            if (hi > lo) ranges_.push_back({lo, hi, function});
        if (!ranges_.empty() && ranges_.back().function == function) functions_.push_back({child, nullptr});
    } while (dwarf_siblingof(&child, &child) == 0);
}

CuScopes CuScopes::build(Dwarf_Die* cudie) {
    CuScopes s;
    s.collect(cudie);
    sort_by_start(s.ranges_);
    return s;
}

void CuScopes::inlined_frames(uint64_t pc, std::vector<Frame>& frames, std::string& function, std::string& file,
                              uint32_t& line) {
    const auto it = first_containing(ranges_.begin(), ranges_.end(), pc);
    if (it == ranges_.end()) return;
    Function& f = functions_[it->function];
    if (!f.tree) f.tree = std::make_unique<ScopeTree>(ScopeTree::build(&f.die));
    ScopeTree& tree = *f.tree;

    tree.chain(pc, chain_);
    // A nested function containing pc starts the chain: then it is the container.
    uint32_t container = ScopeTree::kRoot;
    size_t first_call = 0;
    if (!chain_.empty() && tree.tag(chain_.front()) == DW_TAG_subprogram) {
        container = chain_.front();
        first_call = 1;
    }
    // The line table's answer belongs to the innermost frame; each inlined subroutine passes its
    // call site on to the frame outside it.
    for (size_t i = chain_.size(); i-- > first_call;) {
        if (tree.tag(chain_[i]) != DW_TAG_inlined_subroutine) continue;
        Frame fr;
        fr.function = tree.name(chain_[i]);
        fr.file = file;
        fr.line = line;
        fr.inlined = true;
        frames.push_back(std::move(fr));
        call_site(tree.die(chain_[i]), file, line);
    }
    function = tree.name(container);
}

}  // namespace memtrack
