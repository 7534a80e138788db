#pragma once
// The one mapping from libdw's answer for a pc (a Dwarf_Frame) onto the rule of an unwind row
// (src/bpf/unwind.h): what the BPF walker can follow, and why it cannot follow the rest.
#include <elfutils/libdw.h>

#include <array>
#include <cstdint>
#include <string_view>

extern "C" {
#include "bpf/unwind.h"
}

namespace memtrack {

// Why a frame's rule became MT_CFA_UNSUPPORTED.
enum class Unsupported : uint8_t {
    none = 0,
    frame_error,     // libdw could not compute the CFA (invalid CFI)
    signal_frame,    // the CIE's 'S' augmentation: the caller's state is a sigcontext
    ra_column,       // the CIE's return address column is not rip (16)
    ra_rule,         // the return address is not "saved at CFA-8"
    cfa_undefined,   // no CFA rule
    cfa_register,    // CFA = r + N with r neither rsp nor rbp
    cfa_offset,      // CFA = rsp/rbp + N with N outside [0, 65535]
    cfa_expression,  // a CFA expression other than the PLT's
    rbp_rule,        // rbp is neither unchanged, undefined nor saved at CFA + 8k (|k| <= 128)
    count
};
inline constexpr size_t kUnsupportedCauses = size_t(Unsupported::count);

std::string_view unsupported_name(Unsupported cause);

struct FrameRule {
    mt_unwind_row row{};  // pc left 0: the caller knows where the rule starts
    Unsupported cause = Unsupported::none;
};

// DWARF register numbers of x86-64 used by the rules.
inline constexpr int kDwarfRbp = 6;
inline constexpr int kDwarfRsp = 7;
inline constexpr int kDwarfRip = 16;

FrameRule frame_rule(Dwarf_Frame* frame);

inline bool same_rule(const mt_unwind_row& a, const mt_unwind_row& b) {
    return a.kind == b.kind && a.cfa_off == b.cfa_off && a.rbp_off8 == b.rbp_off8;
}

}  // namespace memtrack
