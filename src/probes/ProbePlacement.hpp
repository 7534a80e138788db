#pragma once
// Where to put a function's probe so the kernel emulates the trapped instruction instead of
// single-stepping it (0.5-0.7 us against 9-10 us per call here), without changing what is
// recorded. Decodes the function with Capstone and moves the probe past a straight-line prefix
// of instructions that neither branch, nor touch the stack pointer, nor write a register the
// BPF handler reads, onto the first instruction the kernel emulates, provided no branch in the
// function lands there (so every call executes it exactly once). Otherwise: the entry.
#include <cstdint>
#include <string>
#include <vector>

namespace memtrack {

struct Placement {
    uint64_t offset = 0;  // bytes past the function's entry
    std::string reason;   // the decoded evidence, for -v
};

// code: the function's bytes from its entry (its whole body when its size is known).
// arg_regs: how many argument registers (rdi, rsi, rdx, ...) the handler reads.
Placement place_probe(const std::vector<uint8_t>& code, uint64_t entry_vaddr, unsigned arg_regs);

}  // namespace memtrack
