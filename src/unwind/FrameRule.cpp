#include "unwind/FrameRule.hpp"

#include <dwarf.h>

#include <limits>

namespace memtrack {
namespace {

// libdw's encodings (elfutils 0.188, libdw/cfi.c and dwarf_frame_{cfa,register}.c):
// - CFA = reg + N (DW_CFA_def_cfa and kin): one DW_OP_bregx op, number = reg, number2 = N;
//   a DW_CFA_def_cfa_expression: its ops as written, interned.
// - register rules: same_value = no ops and *ops == nullptr; undefined = no ops and *ops ==
//   ops_mem; offset(N) = DW_OP_call_frame_cfa [, DW_OP_plus_uconst N] (N two's complement);
//   val_offset adds DW_OP_stack_value; register(R) = DW_OP_regx R; expressions as written.
//   x86-64's ABI defaults (backends/x86_64_cfi.c) make rbp and rip same_value until the CIE
//   says otherwise, and every other register undefined.

struct RegRule {
    enum Kind { same, undefined, at_cfa, other } kind = other;
    int64_t offset = 0;  // at_cfa: saved at CFA + offset
};

RegRule register_rule(Dwarf_Frame* frame, int regno) {
    Dwarf_Op mem[3];
    Dwarf_Op* ops = nullptr;
    size_t nops = 0;
    if (dwarf_frame_register(frame, regno, mem, &ops, &nops) != 0) return {};
    if (nops == 0) return {ops == nullptr ? RegRule::same : RegRule::undefined, 0};
    if (ops[0].atom != DW_OP_call_frame_cfa) return {};
    if (nops == 1) return {RegRule::at_cfa, 0};
    if (nops == 2 && ops[1].atom == DW_OP_plus_uconst) return {RegRule::at_cfa, int64_t(ops[1].number)};
    return {};
}

// glibc's and binutils' .plt FDE: CFA = rsp + 8, + 8 more once the stub has pushed its index,
// which is when (rip & 15) >= threshold. Answers the threshold, or 0 when `ops` is not it.
int plt_threshold(const Dwarf_Op* ops, size_t nops) {
    if (nops != 9) return 0;
    const bool shape = ops[0].atom == DW_OP_breg7 && ops[0].number == 8 && ops[1].atom == DW_OP_breg16 &&
                       ops[1].number == 0 && ops[2].atom == DW_OP_lit15 && ops[3].atom == DW_OP_and &&
                       (ops[4].atom == DW_OP_lit11 || ops[4].atom == DW_OP_lit10) && ops[5].atom == DW_OP_ge &&
                       ops[6].atom == DW_OP_lit3 && ops[7].atom == DW_OP_shl && ops[8].atom == DW_OP_plus;
    return shape ? ops[4].atom - DW_OP_lit0 : 0;
}

FrameRule unsupported(Unsupported cause) {
    FrameRule r;
    r.row.kind = mt_unwind_kind(MT_CFA_UNSUPPORTED, MT_RBP_SAME);
    r.cause = cause;
    return r;
}

}  // namespace

std::string_view unsupported_name(Unsupported cause) {
    switch (cause) {
        case Unsupported::none: return "none";
        case Unsupported::frame_error: return "frame_error";
        case Unsupported::signal_frame: return "signal_frame";
        case Unsupported::ra_column: return "ra_column";
        case Unsupported::ra_rule: return "ra_rule";
        case Unsupported::cfa_undefined: return "cfa_undefined";
        case Unsupported::cfa_register: return "cfa_register";
        case Unsupported::cfa_offset: return "cfa_offset";
        case Unsupported::cfa_expression: return "cfa_expression";
        case Unsupported::rbp_rule: return "rbp_rule";
        case Unsupported::count: break;
    }
    return "?";
}

FrameRule frame_rule(Dwarf_Frame* frame) {
    bool signal = false;
    const int ra = dwarf_frame_info(frame, nullptr, nullptr, &signal);
    if (ra < 0) return unsupported(Unsupported::frame_error);
    if (signal) return unsupported(Unsupported::signal_frame);
    if (ra != kDwarfRip) return unsupported(Unsupported::ra_column);

    const RegRule rip = register_rule(frame, kDwarfRip);
    if (rip.kind == RegRule::undefined) {
        FrameRule r;
        r.row.kind = mt_unwind_kind(MT_CFA_END, MT_RBP_SAME);
        return r;
    }
    if (rip.kind != RegRule::at_cfa || rip.offset != -8) return unsupported(Unsupported::ra_rule);

    FrameRule r;
    uint32_t cfa_type = MT_CFA_NONE;
    Dwarf_Op* ops = nullptr;
    size_t nops = 0;
    if (dwarf_frame_cfa(frame, &ops, &nops) != 0) return unsupported(Unsupported::frame_error);
    if (nops == 0) return unsupported(Unsupported::cfa_undefined);
    int reg = -1;
    int64_t offset = 0;
    if (nops == 1 && ops[0].atom == DW_OP_bregx) {
        reg = int(ops[0].number);
        offset = int64_t(ops[0].number2);
    } else if (nops == 1 && (ops[0].atom == DW_OP_breg7 || ops[0].atom == DW_OP_breg6)) {
        // The same rule written as a CFA expression.
        reg = ops[0].atom - DW_OP_breg0;
        offset = int64_t(ops[0].number);
    }
    if (reg >= 0) {
        if (reg != kDwarfRsp && reg != kDwarfRbp) return unsupported(Unsupported::cfa_register);
        if (offset < 0 || offset > std::numeric_limits<uint16_t>::max()) return unsupported(Unsupported::cfa_offset);
        cfa_type = reg == kDwarfRsp ? MT_CFA_RSP : MT_CFA_RBP;
        r.row.cfa_off = uint16_t(offset);
    } else if (const int threshold = plt_threshold(ops, nops)) {
        cfa_type = MT_CFA_PLT;
        r.row.cfa_off = 8;
        r.row.rbp_off8 = int8_t(threshold);
    } else {
        return unsupported(Unsupported::cfa_expression);
    }

    const RegRule rbp = register_rule(frame, kDwarfRbp);
    uint32_t rbp_rule = MT_RBP_SAME;
    switch (rbp.kind) {
        case RegRule::same: break;
        case RegRule::undefined: rbp_rule = MT_RBP_UNDEFINED; break;
        case RegRule::at_cfa:
            // A PLT row's rbp_off8 holds its threshold, so its rbp can only be unchanged.
            if (cfa_type == MT_CFA_PLT || rbp.offset % 8 != 0 || rbp.offset / 8 < std::numeric_limits<int8_t>::min() ||
                rbp.offset / 8 > std::numeric_limits<int8_t>::max())
                return unsupported(Unsupported::rbp_rule);
            rbp_rule = MT_RBP_AT_CFA;
            r.row.rbp_off8 = int8_t(rbp.offset / 8);
            break;
        case RegRule::other: return unsupported(Unsupported::rbp_rule);
    }
    r.row.kind = mt_unwind_kind(cfa_type, rbp_rule);
    return r;
}

}  // namespace memtrack
