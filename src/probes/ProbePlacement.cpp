#include "probes/ProbePlacement.hpp"

#include <capstone/capstone.h>

#include <fmt/format.h>

#include <memory>
#include <set>

namespace memtrack {
namespace {

// The proof (straight line, no stack or argument write, a candidate no branch lands on) holds
// for any length; the bound only stops the search. jemalloc's free computes its size-class
// lookup in nine instructions before its first jne: it needs more than glibc's one or two.
constexpr unsigned kMaxSkipped = 12;

struct Handle {
    csh h = 0;
    bool ok = false;
    Handle() {
        ok = cs_open(CS_ARCH_X86, CS_MODE_64, &h) == CS_ERR_OK;
        if (ok) cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
    }
    ~Handle() {
        if (ok) cs_close(&h);
    }
};

struct Insns {
    cs_insn* insn = nullptr;
    size_t count = 0;
    ~Insns() {
        if (insn) cs_free(insn, count);
    }
};

// The instructions arch/x86/kernel/uprobes.c emulates: relative jumps, calls and conditional
// jumps, nops, and push of a register.
bool emulated(csh h, const cs_insn& i) {
    switch (i.id) {
    case X86_INS_JMP:
    case X86_INS_CALL:
        return i.detail->x86.op_count == 1 && i.detail->x86.operands[0].type == X86_OP_IMM;
    case X86_INS_NOP:
        return true;
    case X86_INS_PUSH:
        return i.detail->x86.op_count == 1 && i.detail->x86.operands[0].type == X86_OP_REG;
    default:
        break;
    }
    return cs_insn_group(h, &i, CS_GRP_JUMP) && cs_insn_group(h, &i, CS_GRP_BRANCH_RELATIVE);
}

bool is_branch(const cs_insn& i) {
    for (uint8_t g = 0; g < i.detail->groups_count; ++g) {
        const uint8_t grp = i.detail->groups[g];
        if (grp == CS_GRP_JUMP || grp == CS_GRP_CALL || grp == CS_GRP_RET || grp == CS_GRP_IRET || grp == CS_GRP_INT)
            return true;
    }
    return false;
}

// The 64-bit register a register id belongs to (edi -> rdi, dil -> rdi, ...).
x86_reg full_register(csh h, x86_reg r) {
    const std::string name = cs_reg_name(h, r) ? cs_reg_name(h, r) : "";
    static const std::pair<const char*, x86_reg> families[] = {
        {"di", X86_REG_RDI}, {"si", X86_REG_RSI}, {"dx", X86_REG_RDX}, {"dl", X86_REG_RDX},
        {"cx", X86_REG_RCX}, {"cl", X86_REG_RCX}, {"sp", X86_REG_RSP}, {"r8", X86_REG_R8},
    };
    for (auto& [suffix, full] : families)
        if (name.find(suffix) != std::string::npos) return full;
    return r;
}

}  // namespace

Placement place_probe(const std::vector<uint8_t>& code, uint64_t entry_vaddr, unsigned arg_regs) {
    Handle cs;
    if (!cs.ok || code.empty()) return {0, "entry: cannot decode"};
    Insns d;
    d.count = cs_disasm(cs.h, code.data(), code.size(), entry_vaddr, 0, &d.insn);
    if (d.count == 0) return {0, "entry: cannot decode"};
    if (emulated(cs.h, d.insn[0])) return {0, fmt::format("entry: {} is emulated", d.insn[0].mnemonic)};

    // Every direct branch target in the body; an indirect jump may land anywhere.
    std::set<uint64_t> targets;
    bool indirect = false;
    for (size_t k = 0; k < d.count; ++k) {
        const cs_insn& i = d.insn[k];
        if (!cs_insn_group(cs.h, &i, CS_GRP_JUMP)) continue;
        const cs_x86& x = i.detail->x86;
        if (x.op_count == 1 && x.operands[0].type == X86_OP_IMM) targets.insert(uint64_t(x.operands[0].imm));
        else indirect = true;
    }
    if (indirect) return {0, "entry: the body has an indirect jump"};

    const x86_reg args[] = {X86_REG_RDI, X86_REG_RSI, X86_REG_RDX, X86_REG_RCX, X86_REG_R8};
    std::string skipped;
    for (size_t k = 0; k < d.count && k <= kMaxSkipped; ++k) {
        const cs_insn& i = d.insn[k];
        if (k > 0 && emulated(cs.h, i)) {
            if (targets.count(i.address)) return {0, fmt::format("entry: {:#x} is a branch target", i.address - entry_vaddr)};
            return {i.address - entry_vaddr,
                    fmt::format("skips {}; {} is emulated and reached once", skipped, i.mnemonic)};
        }
        if (is_branch(i)) return {0, fmt::format("entry: {} before any emulated instruction", i.mnemonic)};
        cs_regs read, write;
        uint8_t nread = 0, nwrite = 0;
        if (cs_regs_access(cs.h, &i, read, &nread, write, &nwrite) != CS_ERR_OK)
            return {0, "entry: cannot tell what an instruction writes"};
        for (uint8_t w = 0; w < nwrite; ++w) {
            const x86_reg r = full_register(cs.h, x86_reg(write[w]));
            if (r == X86_REG_RSP) return {0, fmt::format("entry: {} moves the stack pointer", i.mnemonic)};
            for (unsigned a = 0; a < arg_regs && a < std::size(args); ++a)
                if (r == args[a]) return {0, fmt::format("entry: {} writes an argument register", i.mnemonic)};
        }
        if (!skipped.empty()) skipped += ", ";
        skipped += fmt::format("{} {}", i.mnemonic, i.op_str);
    }
    return {0, "entry: no emulated instruction in the prologue"};
}

}  // namespace memtrack
