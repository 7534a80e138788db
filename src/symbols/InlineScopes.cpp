#include "symbols/InlineScopes.hpp"

#include <dwarf.h>

#include <algorithm>

#include "symbols/Demangle.hpp"

namespace memtrack {
namespace {

// The name of a subprogram or inlined subroutine, following DW_AT_abstract_origin and
// DW_AT_specification to where the name lives: the demangled linkage name when there is one (it
// carries namespace, class and parameters), the plain DW_AT_name otherwise (C).
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

template <typename Range>
void collect_functions(Dwarf_Die* parent, std::vector<Range>& out) {
    Dwarf_Die child;
    if (dwarf_child(parent, &child) != 0) return;
    do {
        const int tag = dwarf_tag(&child);
        if (tag == DW_TAG_subprogram) {
            Dwarf_Addr base = 0, lo = 0, hi = 0;
            for (ptrdiff_t off = 0; (off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0;)
                if (hi > lo) out.push_back({lo, hi, child});
        } else if (holds_definitions(tag)) {
            collect_functions(&child, out);
        }
    } while (dwarf_siblingof(&child, &child) == 0);
}

}  // namespace

CuScopes CuScopes::build(Dwarf_Die* cudie) {
    CuScopes s;
    collect_functions(cudie, s.ranges_);
    std::sort(s.ranges_.begin(), s.ranges_.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
    return s;
}

void CuScopes::inlined_frames(uint64_t pc, std::vector<Frame>& frames, std::string& function, std::string& file,
                              uint32_t& line) const {
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), pc, [](uint64_t v, const Range& r) { return v < r.lo; });
    if (it == ranges_.begin() || pc >= std::prev(it)->hi) return;
    Dwarf_Die container = std::prev(it)->die;

    // Down the function's own tree, through the scopes that contain pc: each inlined
    // subroutine met is a call, outermost first.
    std::vector<Dwarf_Die> calls;
    Dwarf_Die scope = container;
    for (bool deeper = true; deeper;) {
        deeper = false;
        Dwarf_Die child;
        if (dwarf_child(&scope, &child) != 0) break;
        do {
            const int tag = dwarf_tag(&child);
            if (!is_code_scope(tag) || dwarf_haspc(&child, pc) != 1) continue;
            if (tag == DW_TAG_inlined_subroutine) calls.push_back(child);
            if (tag == DW_TAG_subprogram) {  // the code is a nested function's, not this one's
                calls.clear();
                container = child;
            }
            scope = child;
            deeper = true;
            break;
        } while (dwarf_siblingof(&child, &child) == 0);
    }

    // The line table's answer belongs to the innermost frame; each inlined subroutine passes its
    // call site on to the frame outside it.
    for (auto call = calls.rbegin(); call != calls.rend(); ++call) {
        Frame f;
        f.function = die_function_name(&*call);
        f.file = file;
        f.line = line;
        f.inlined = true;
        frames.push_back(std::move(f));
        call_site(&*call, file, line);
    }
    function = die_function_name(&container);
}

}  // namespace memtrack
