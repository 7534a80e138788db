#include "probes/ProbePlacement.hpp"

#include <capstone/capstone.h>

#include "bpf/record.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <memory>
#include <set>
#include <string_view>
#include <utility>

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

static_assert(kProbeArgs == MT_COOKIE_ARGS);
constexpr int kStackPointer = MT_REG_COUNT;

// The mt_arg_reg of a general-purpose register of any width (edi, dil -> MT_REG_RDI),
// kStackPointer for the stack pointer, -1 for anything else (flags, vector registers).
int gpr_index(csh h, unsigned reg) {
    const char* name = cs_reg_name(h, reg);
    if (!name) return -1;
    const std::string_view n(name);
    if (n.size() >= 2 && n[0] == 'r' && n[1] >= '0' && n[1] <= '9') {
        int number = 0;
        for (size_t k = 1; k < n.size() && n[k] >= '0' && n[k] <= '9'; ++k) number = number * 10 + (n[k] - '0');
        static const int extended[] = {MT_REG_R8, MT_REG_R9, MT_REG_R10, MT_REG_R11,
                                       MT_REG_R12, MT_REG_R13, MT_REG_R14, MT_REG_R15};
        return number >= 8 && number <= 15 ? extended[number - 8] : -1;
    }
    static const std::pair<std::string_view, int> legacy[] = {
        {"rdi", MT_REG_RDI}, {"edi", MT_REG_RDI}, {"di", MT_REG_RDI},  {"dil", MT_REG_RDI},
        {"rsi", MT_REG_RSI}, {"esi", MT_REG_RSI}, {"si", MT_REG_RSI},  {"sil", MT_REG_RSI},
        {"rdx", MT_REG_RDX}, {"edx", MT_REG_RDX}, {"dx", MT_REG_RDX},  {"dl", MT_REG_RDX},  {"dh", MT_REG_RDX},
        {"rcx", MT_REG_RCX}, {"ecx", MT_REG_RCX}, {"cx", MT_REG_RCX},  {"cl", MT_REG_RCX},  {"ch", MT_REG_RCX},
        {"rax", MT_REG_RAX}, {"eax", MT_REG_RAX}, {"ax", MT_REG_RAX},  {"al", MT_REG_RAX},  {"ah", MT_REG_RAX},
        {"rbx", MT_REG_RBX}, {"ebx", MT_REG_RBX}, {"bx", MT_REG_RBX},  {"bl", MT_REG_RBX},  {"bh", MT_REG_RBX},
        {"rbp", MT_REG_RBP}, {"ebp", MT_REG_RBP}, {"bp", MT_REG_RBP},  {"bpl", MT_REG_RBP},
        {"rsp", kStackPointer}, {"esp", kStackPointer}, {"sp", kStackPointer}, {"spl", kStackPointer},
    };
    for (const auto& [text, index] : legacy)
        if (n == text) return index;
    return -1;
}

// A 64-bit register-to-register mov: (source, destination) mt_arg_reg, or (-1, -1).
std::pair<int, int> register_copy(csh h, const cs_insn& i) {
    const cs_x86& x = i.detail->x86;
    if (i.id != X86_INS_MOV || x.op_count != 2 || x.operands[0].type != X86_OP_REG ||
        x.operands[1].type != X86_OP_REG || x.operands[0].size != 8 || x.operands[1].size != 8)
        return {-1, -1};
    return {gpr_index(h, x.operands[1].reg), gpr_index(h, x.operands[0].reg)};
}

// By mt_arg_reg, for -v.
constexpr const char* kRegisterNames[] = {"rdi", "rsi", "rdx", "rcx", "r8",  "r9",  "rax", "rbx",
                                          "rbp", "r10", "r11", "r12", "r13", "r14", "r15"};
static_assert(std::size(kRegisterNames) == MT_REG_COUNT);

// Argument registers of the ABI, in order (rdi, rsi, rdx, rcx, r8, r9).
constexpr int kAbiArgs[] = {MT_REG_RDI, MT_REG_RSI, MT_REG_RDX, MT_REG_RCX, MT_REG_R8, MT_REG_R9};

}  // namespace

Placement entry_placement(unsigned first_arg, std::string reason) {
    Placement p{0, std::move(reason), {}};
    for (unsigned a = 0; a < kProbeArgs; ++a)
        p.args[a] = uint8_t(kAbiArgs[std::min<size_t>(first_arg + a, std::size(kAbiArgs) - 1)]);
    return p;
}

Placement place_probe(const std::vector<uint8_t>& code, uint64_t entry_vaddr, unsigned arg_count, unsigned first_arg) {
    auto at_entry = [&](std::string reason) { return entry_placement(first_arg, std::move(reason)); };
    arg_count = std::min(arg_count, kProbeArgs);
    if (first_arg + arg_count > std::size(kAbiArgs)) return at_entry("entry: arguments beyond the registers");
    Handle cs;
    if (!cs.ok || code.empty()) return at_entry("entry: cannot decode");
    Insns d;
    d.count = cs_disasm(cs.h, code.data(), code.size(), entry_vaddr, 0, &d.insn);
    if (d.count == 0) return at_entry("entry: cannot decode");
    if (emulated(cs.h, d.insn[0])) return at_entry(fmt::format("entry: {} is emulated", d.insn[0].mnemonic));

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
    if (indirect) return at_entry("entry: the body has an indirect jump");

    // The registers holding each argument's value (a bit per mt_arg_reg).
    std::array<uint32_t, kProbeArgs> holders{};
    for (unsigned a = 0; a < arg_count; ++a) holders[a] = 1u << kAbiArgs[first_arg + a];
    std::string skipped;
    for (size_t k = 0; k < d.count && k <= kMaxSkipped; ++k) {
        const cs_insn& i = d.insn[k];
        if (k > 0 && emulated(cs.h, i)) {
            if (targets.count(i.address)) return at_entry(fmt::format("entry: {:#x} is a branch target", i.address - entry_vaddr));
            Placement p = at_entry(fmt::format("skips {}; {} is emulated and reached once", skipped, i.mnemonic));
            p.offset = i.address - entry_vaddr;
            for (unsigned a = 0; a < arg_count; ++a) {
                p.args[a] = uint8_t(std::countr_zero(holders[a]));
                if (p.args[a] != kAbiArgs[first_arg + a])
                    p.reason += fmt::format("; argument {} read from its copy in {}", a, kRegisterNames[p.args[a]]);
            }
            return p;
        }
        if (is_branch(i)) return at_entry(fmt::format("entry: {} before any emulated instruction", i.mnemonic));
        cs_regs read, write;
        uint8_t nread = 0, nwrite = 0;
        if (cs_regs_access(cs.h, &i, read, &nread, write, &nwrite) != CS_ERR_OK)
            return at_entry("entry: cannot tell what an instruction writes");
        uint32_t written = 0;  // general-purpose registers the instruction writes, a bit per mt_arg_reg
        for (uint8_t w = 0; w < nwrite; ++w) {
            const int r = gpr_index(cs.h, write[w]);
            if (r == kStackPointer) return at_entry(fmt::format("entry: {} moves the stack pointer", i.mnemonic));
            if (r >= 0) written |= 1u << r;
        }
        const auto [copy_from, copy_to] = register_copy(cs.h, i);
        for (unsigned a = 0; a < arg_count; ++a) {
            const bool copied = copy_from >= 0 && copy_to >= 0 && (holders[a] >> copy_from & 1u);
            holders[a] &= ~written;
            if (copied) holders[a] |= 1u << copy_to;
            if (!holders[a]) return at_entry(fmt::format("entry: {} writes an argument register", i.mnemonic));
        }
        if (!skipped.empty()) skipped += ", ";
        skipped += fmt::format("{} {}", i.mnemonic, i.op_str);
    }
    return at_entry("entry: no emulated instruction in the prologue");
}

namespace {

// Whether an after-syscall probe may sit on `i`: it is stepped (not emulated), does not branch and
// does not move the stack pointer, so a process stopped right after it stands at i.size bytes
// further with the stack pointer it had (what BPF's watch then expects).
bool after_syscall_steppable(csh h, const cs_insn& i) {
    if (emulated(h, i) || is_branch(i)) return false;
    cs_regs read, write;
    uint8_t nread = 0, nwrite = 0;
    if (cs_regs_access(h, &i, read, &nread, write, &nwrite) != CS_ERR_OK) return false;
    for (uint8_t w = 0; w < nwrite; ++w)
        if (gpr_index(h, write[w]) == kStackPointer) return false;
    return true;
}

}  // namespace

std::optional<AfterSyscallSite> site_at_entry(const std::vector<uint8_t>& code, uint64_t vaddr) {
    Handle cs;
    if (!cs.ok || code.empty()) return std::nullopt;
    Insns d;
    d.count = cs_disasm(cs.h, code.data(), code.size(), vaddr, 1, &d.insn);
    if (d.count == 0 || !after_syscall_steppable(cs.h, d.insn[0])) return std::nullopt;
    return AfterSyscallSite{0, uint8_t(d.insn[0].size)};
}

std::optional<AfterSyscallSite> site_after_first_syscall(const std::vector<uint8_t>& code, uint64_t entry_vaddr) {
    Handle cs;
    if (!cs.ok || code.empty()) return std::nullopt;
    Insns d;
    d.count = cs_disasm(cs.h, code.data(), code.size(), entry_vaddr, 0, &d.insn);
    for (size_t k = 0; k + 1 < d.count; ++k) {
        const cs_insn& i = d.insn[k];
        if (i.id == X86_INS_SYSCALL) {
            const cs_insn& next = d.insn[k + 1];
            if (!after_syscall_steppable(cs.h, next)) return std::nullopt;
            return AfterSyscallSite{next.address - entry_vaddr, uint8_t(next.size)};
        }
        // The search follows the straight line from the entry: a return or an unconditional
        // jump ends it (what follows may be another function's code or data).
        if (i.id == X86_INS_RET || i.id == X86_INS_JMP) return std::nullopt;
    }
    return std::nullopt;
}

}  // namespace memtrack
