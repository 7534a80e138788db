// ProbePlacement on hand-assembled prologues: the probe moves only where the decoded control
// flow proves every call still traps exactly once with its arguments intact.
#include <doctest/doctest.h>

#include "bpf/record.h"
#include "probes/ProbePlacement.hpp"

using memtrack::place_probe;

namespace {
constexpr uint64_t kBase = 0x1000;
const std::vector<uint8_t> kRet{0xc3};

std::vector<uint8_t> join(std::initializer_list<std::vector<uint8_t>> parts) {
    std::vector<uint8_t> out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}
}  // namespace

TEST_CASE("glibc free: the probe moves past test %rdi,%rdi onto the je") {
    // test %rdi,%rdi; je +0x10; push %rbp; pop %rbp; ret; (NULL path) ret
    const auto code = join({{0x48, 0x85, 0xff}, {0x0f, 0x84, 0x03, 0x00, 0x00, 0x00}, {0x55}, {0x5d}, kRet, kRet});
    auto p = place_probe(code, kBase, 1);
    CHECK(p.offset == 3);
    CHECK(p.reason.find("je") != std::string::npos);
}

TEST_CASE("jemalloc free: a longer straight-line prefix that keeps rdi is skipped too") {
    // mov %rdi,%rax; mov %rdi,%rcx; shr $0x1a,%rax; and $0xf0,%eax; add %rdx,%rax;
    // cmp 0x1b0(%rax),%rcx; jne +0x1; ret; ret
    const auto code = join({{0x48, 0x89, 0xf8}, {0x48, 0x89, 0xf9}, {0x48, 0xc1, 0xe8, 0x1a}, {0x25, 0xf0, 0x00, 0x00, 0x00},
                            {0x48, 0x01, 0xd0}, {0x48, 0x3b, 0x88, 0xb0, 0x01, 0x00, 0x00}, {0x75, 0x01}, kRet, kRet});
    auto p = place_probe(code, kBase, 1);
    CHECK(p.offset == 3 + 3 + 4 + 5 + 3 + 7);
    CHECK(p.reason.find("jne") != std::string::npos);
}

TEST_CASE("an emulated first instruction keeps the entry") {
    const auto code = join({{0x41, 0x54}, {0x41, 0x5c}, kRet});  // push %r12; pop %r12; ret
    CHECK(place_probe(code, kBase, 1).offset == 0);
}

TEST_CASE("endbr64 then a tail jump: the jump") {
    const auto code = join({{0xf3, 0x0f, 0x1e, 0xfa}, {0xe9, 0x00, 0x10, 0x00, 0x00}});
    CHECK(place_probe(code, kBase, 1).offset == 4);
}

TEST_CASE("a skipped instruction that writes an argument the handler reads keeps the entry") {
    // mov %rsi,%rdi; push %rbx; pop %rbx; ret
    const auto code = join({{0x48, 0x89, 0xf7}, {0x53}, {0x5b}, kRet});
    CHECK(place_probe(code, kBase, 1).offset == 0);
    // ... unless the handler does not read that register: mov %rdx,%rsi with one argument read
    const auto code2 = join({{0x48, 0x89, 0xd6}, {0x53}, {0x5b}, kRet});
    CHECK(place_probe(code2, kBase, 1).offset == 3);
    CHECK(place_probe(code2, kBase, 2).offset == 0);
}

TEST_CASE("moving the stack pointer before the candidate keeps the entry") {
    // sub $8,%rsp; push %rbx; ...
    const auto code = join({{0x48, 0x83, 0xec, 0x08}, {0x53}, {0x5b}, {0x48, 0x83, 0xc4, 0x08}, kRet});
    CHECK(place_probe(code, kBase, 1).offset == 0);
}

TEST_CASE("a candidate that a branch lands on keeps the entry") {
    // test %rdi,%rdi; push %rbx (at +3); pop %rbx; jmp back to +3 (would trap twice)
    const auto code = join({{0x48, 0x85, 0xff}, {0x53}, {0x5b}, {0xeb, 0xfc}, kRet});
    auto p = place_probe(code, kBase, 1);
    CHECK(p.offset == 0);
    CHECK(p.reason.find("branch target") != std::string::npos);
}

TEST_CASE("an indirect jump in the body keeps the entry") {
    // test %rdi,%rdi; push %rbx; jmp *%rax
    const auto code = join({{0x48, 0x85, 0xff}, {0x53}, {0xff, 0xe0}});
    CHECK(place_probe(code, kBase, 1).offset == 0);
}

TEST_CASE("undecodable bytes keep the entry") {
    CHECK(place_probe({}, kBase, 1).offset == 0);
    CHECK(place_probe({0x0f, 0x0b}, kBase, 1).offset == 0);  // ud2 only
}

TEST_CASE("mimalloc's malloc: the size copied from rdi to rsi is read from rsi, past the heap load into rdi") {
    // mov 0xb449(%rip),%rax; mov %rdi,%rsi; mov %fs:(%rax),%rdi; cmp $0x400,%rsi; ja +0x29; ret
    const auto code = join({{0x48, 0x8b, 0x05, 0x49, 0xb4, 0x00, 0x00}, {0x48, 0x89, 0xfe}, {0x64, 0x48, 0x8b, 0x38},
                            {0x48, 0x81, 0xfe, 0x00, 0x04, 0x00, 0x00}, {0x77, 0x29}, kRet});
    auto p = place_probe(code, kBase, 1);
    CHECK(p.offset == 7 + 3 + 4 + 7);
    CHECK(p.args[0] == MT_REG_RSI);
    // Placed at the entry, the size is where the ABI puts it.
    CHECK(memtrack::entry_placement(0, "off").args[0] == MT_REG_RDI);
}

TEST_CASE("a copy that is overwritten in turn, or a 32-bit copy, does not keep the argument") {
    // mov %rdi,%rsi; mov %rax,%rsi; mov %fs:(%rax),%rdi; ja
    const auto overwritten = join({{0x48, 0x89, 0xfe}, {0x48, 0x89, 0xc6}, {0x64, 0x48, 0x8b, 0x38}, {0x77, 0x01}, kRet, kRet});
    CHECK(place_probe(overwritten, kBase, 1).offset == 0);
    // mov %edi,%esi (drops the upper half); mov %fs:(%rax),%rdi; ja
    const auto narrow = join({{0x89, 0xfe}, {0x64, 0x48, 0x8b, 0x38}, {0x77, 0x01}, kRet, kRet});
    CHECK(place_probe(narrow, kBase, 1).offset == 0);
}

TEST_CASE("mi_heap_*: the arguments start at rsi, and rdi (the heap) may be overwritten") {
    // mov (%rdi),%rdi; cmp $0x400,%rsi; ja +1; ret; ret
    const auto code = join({{0x48, 0x8b, 0x3f}, {0x48, 0x81, 0xfe, 0x00, 0x04, 0x00, 0x00}, {0x77, 0x01}, kRet, kRet});
    auto p = place_probe(code, kBase, 1, 1);
    CHECK(p.offset == 3 + 7);
    CHECK(p.args[0] == MT_REG_RSI);
    CHECK(place_probe(code, kBase, 1, 0).offset == 0);  // as a plain function its first argument is gone
    // (heap, p, size): the second argument is in rdx.
    CHECK(memtrack::entry_placement(1, "off").args[1] == MT_REG_RDX);
}

TEST_CASE("after-syscall sites: the instruction after a fork's system call, one BPF can stop right after") {
    using memtrack::site_after_first_syscall;
    // glibc 2.36's _Fork: mov $0x38,%eax; syscall; cmp $-0x1000,%rax; ja ...; ret
    const auto fork = join({{0xb8, 0x38, 0x00, 0x00, 0x00}, {0x0f, 0x05}, {0x48, 0x3d, 0x00, 0xf0, 0xff, 0xff},
                            {0x77, 0x01}, kRet, kRet});
    auto site = site_after_first_syscall(fork, kBase);
    REQUIRE(site);
    CHECK(site->offset == 7);
    CHECK(site->length == 6);
    // vfork: pop %rdi; mov $0x3a,%eax; syscall; push %rdi: the child's first instruction moves
    // the stack (and the kernel emulates it): no site.
    const auto vfork = join({{0x5f}, {0xb8, 0x3a, 0x00, 0x00, 0x00}, {0x0f, 0x05}, {0x57}, kRet});
    CHECK_FALSE(site_after_first_syscall(vfork, kBase));
    // A branch after the system call: the process would not stop right after it.
    const auto branch = join({{0x0f, 0x05}, {0x77, 0x01}, kRet, kRet});
    CHECK_FALSE(site_after_first_syscall(branch, kBase));
    // A return before any system call ends the search (what follows is not this function).
    const auto none = join({{0x31, 0xc0}, kRet, {0x0f, 0x05}, {0x48, 0x3d, 0x00, 0xf0, 0xff, 0xff}});
    CHECK_FALSE(site_after_first_syscall(none, kBase));
}

TEST_CASE("after-syscall sites: an entry point is one when its first instruction is stepped in place") {
    using memtrack::site_at_entry;
    // The loader's _start: mov %rsp,%rdi
    auto site = site_at_entry({0x48, 0x89, 0xe7, 0xe8, 0x00, 0x00, 0x00, 0x00}, kBase);
    REQUIRE(site);
    CHECK(site->offset == 0);
    CHECK(site->length == 3);
    // endbr64 (a static executable's _start begins so)
    site = site_at_entry({0xf3, 0x0f, 0x1e, 0xfa, 0x31, 0xed}, kBase);
    REQUIRE(site);
    CHECK(site->length == 4);
    CHECK_FALSE(site_at_entry({0x55, 0x48, 0x89, 0xe5}, kBase));  // push %rbp moves the stack
    CHECK_FALSE(site_at_entry({0xe9, 0x00, 0x00, 0x00, 0x00}, kBase));  // jmp
}
