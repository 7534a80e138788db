#pragma once
// Where to put a function's probe so the kernel emulates the trapped instruction instead of
// single-stepping it (0.5-0.7 us against 9-10 us per call here), without changing what is
// recorded. Decodes the function with Capstone and moves the probe past a straight-line prefix
// of instructions that neither branch, nor touch the stack pointer, nor destroy the last copy of
// an argument the BPF handler reads, onto the first instruction the kernel emulates, provided no
// branch in the function lands there (so every call executes it exactly once). Otherwise: the
// entry. A 64-bit register copy of an argument keeps it: the handler reads it where it is at the
// probe (mimalloc's malloc copies its size from rdi to rsi, then loads its heap into rdi).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memtrack {

inline constexpr unsigned kProbeArgs = 3;  // arguments a handler reads at most (MT_COOKIE_ARGS)

struct Placement {
    uint64_t offset = 0;  // bytes past the function's entry
    std::string reason;   // the decoded evidence, for -v
    // The register (enum mt_arg_reg) holding each argument the handler reads, at the probe.
    std::array<uint8_t, kProbeArgs> args{};
};

// The entry: arguments in the ABI's registers, the first of them `first_arg` (0: rdi).
Placement entry_placement(unsigned first_arg, std::string reason);

// code: the function's bytes from its entry (its whole body when its size is known).
// arg_count: how many arguments the handler reads, from ABI register `first_arg` on (1 for
// mimalloc's mi_heap_*, whose first argument is the heap).
Placement place_probe(const std::vector<uint8_t>& code, uint64_t entry_vaddr, unsigned arg_count,
                      unsigned first_arg = 0);

// An after-syscall probe site (MT_FUNC_AFTER_SYSCALL, with ObjectProbes' entry probes): the first
// instruction a process runs after a system call (a new image at its entry, a sender after
// kill's), one BPF may stop it right after: `length` bytes further, with the same stack pointer
// (the instruction is stepped, not emulated, and neither branches nor moves the stack).
struct AfterSyscallSite {
    uint64_t offset = 0;  // bytes past the start of the code given
    uint8_t length = 0;   // the instruction's
};

// The instruction after a function's first `syscall` (where kill's caller resumes).
// nullopt: none decoded on the straight line from the entry, or one BPF could not stop after.
std::optional<AfterSyscallSite> site_after_first_syscall(const std::vector<uint8_t>& code, uint64_t entry_vaddr);
// The entry point's first instruction (a new image's first): nullopt where BPF could not stop after it.
std::optional<AfterSyscallSite> site_at_entry(const std::vector<uint8_t>& code, uint64_t vaddr);

}  // namespace memtrack
