#include "unwind/CfiTableCheck.hpp"

#include <fmt/format.h>

namespace memtrack {

std::optional<std::string> cfi_table_fault(const CfiTable& t, uint64_t file_size) {
    for (size_t i = 0; i < t.segments.size(); ++i) {
        const LoadSegment& s = t.segments[i];
        if (s.filesz > s.memsz || s.offset > file_size || s.filesz > file_size - s.offset)
            return fmt::format("segment {} (offset {:#x}, {} bytes) lies outside the {}-byte file", i, s.offset,
                               s.filesz, file_size);
    }
    if (t.rows.empty()) return std::string("no rows");
    auto inside = [&](uint64_t pc) {
        for (const LoadSegment& s : t.segments)
            if (s.executable && pc >= s.vaddr && pc - s.vaddr <= s.memsz) return true;
        return false;
    };
    for (size_t i = 0; i < t.rows.size(); ++i) {
        const mt_unwind_row& r = t.rows[i];
        if (i > 0 && r.pc <= t.rows[i - 1].pc)
            return fmt::format("row {} (pc {:#x}) {} row {} (pc {:#x})", i, r.pc,
                               r.pc == t.rows[i - 1].pc ? "overlaps" : "is not sorted after", i - 1, t.rows[i - 1].pc);
        if (!inside(r.pc)) return fmt::format("row {} (pc {:#x}) points outside the object's code", i, r.pc);
        if (mt_unwind_cfa_type(&r) > MT_CFA_UNSUPPORTED || mt_unwind_rbp_rule(&r) > MT_RBP_UNDEFINED)
            return fmt::format("row {} has an unknown kind {:#x}", i, r.kind);
    }
    if (mt_unwind_cfa_type(&t.rows.back()) != MT_CFA_NONE) return std::string("its last row is not NONE");
    return std::nullopt;
}

}  // namespace memtrack
