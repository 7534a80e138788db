#include "symbols/InlineScopes.hpp"

#include <dwarf.h>

#include <algorithm>

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

CuScopes CuScopes::build(Dwarf_Die* cudie) {
    CuScopes s;
    // Depth-first over the definition scopes, one level of DIEs at a time.
    std::vector<Dwarf_Die> parents{*cudie};
    while (!parents.empty()) {
        Dwarf_Die parent = parents.back();
        parents.pop_back();
        Dwarf_Die child;
        if (dwarf_child(&parent, &child) != 0) continue;
        do {
            const int tag = dwarf_tag(&child);
            if (holds_definitions(tag)) {
                parents.push_back(child);
                continue;
            }
            if (tag != DW_TAG_subprogram) continue;
            const auto function = uint32_t(s.functions_.size());
            Dwarf_Addr base = 0, lo = 0, hi = 0;
            for (ptrdiff_t off = 0; (off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0;)
                if (hi > lo) s.ranges_.push_back({lo, hi, function});
            if (!s.ranges_.empty() && s.ranges_.back().function == function) s.functions_.push_back({child, nullptr});
        } while (dwarf_siblingof(&child, &child) == 0);
    }
    std::sort(s.ranges_.begin(), s.ranges_.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
    return s;
}

void CuScopes::inlined_frames(uint64_t pc, std::vector<Frame>& frames, std::string& function, std::string& file,
                              uint32_t& line) {
    const auto it =
        std::upper_bound(ranges_.begin(), ranges_.end(), pc, [](uint64_t v, const Range& r) { return v < r.lo; });
    if (it == ranges_.begin() || pc >= std::prev(it)->hi) return;
    Function& f = functions_[std::prev(it)->function];
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
