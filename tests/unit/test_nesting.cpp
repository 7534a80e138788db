// The nesting rule (src/bpf/nesting.h) driven through the call sequences glibc and libstdc++
// really make, with stack pointers as the probes see them.
#include <doctest/doctest.h>

extern "C" {
#include "bpf/nesting.h"
}

namespace {
constexpr __u64 kTop = 0x7ffe0000;  // entry SP of a call made from main
// The probe addresses of the free functions (what names a function in a chain of frees).
constexpr __u64 kFree = 0x7f0000001000, kDelete = 0x7f0000002000, kSizedDelete = 0x7f0000002100;
constexpr __u64 kMiFreeSize = 0x7f0000003000, kMiFree = 0x7f0000003100;
}

TEST_CASE("a plain malloc is recorded once, at its return") {
    mt_frames f{};
    CHECK(mt_alloc_entry(&f, kTop, false) == MT_ENTRY_OUTER);
    CHECK(mt_alloc_return(&f, kTop + 8));
    CHECK(f.alloc_sp == 0);
}

TEST_CASE("operator new calling malloc records only new") {
    mt_frames f{};
    CHECK(mt_alloc_entry(&f, kTop, false) == MT_ENTRY_OUTER);        // operator new
    CHECK(mt_alloc_entry(&f, kTop - 24, false) == MT_ENTRY_NESTED);  // malloc, deeper
    CHECK_FALSE(mt_alloc_return(&f, kTop - 16));              // malloc returns
    CHECK(mt_alloc_return(&f, kTop + 8));                     // new returns: the event
}

TEST_CASE("a tail call keeps the outer call and is recorded once") {
    mt_frames f{};
    CHECK(mt_alloc_entry(&f, kTop, false) == MT_ENTRY_OUTER);  // mi_malloc_aligned
    CHECK(mt_alloc_entry(&f, kTop, true) == MT_ENTRY_TAIL);    // jmp mi_heap_malloc_small: same SP, return pending
    CHECK(mt_alloc_return(&f, kTop + 8));
    CHECK_FALSE(mt_alloc_return(&f, kTop + 8));  // only one return happens, and only one counts
}

TEST_CASE("a call at the same stack pointer after a return that never came replaces it") {
    mt_frames f{};
    CHECK(mt_alloc_entry(&f, kTop, false) == MT_ENTRY_OUTER);  // operator new: throws, no return seen
    // The next new from the same frame: the return address at its SP is its own, not the trampoline.
    CHECK(mt_alloc_entry(&f, kTop, false) == MT_ENTRY_STALE);
    CHECK(mt_alloc_return(&f, kTop + 8));
}

TEST_CASE("a frame whose return never came is replaced, not kept for ever") {
    mt_frames f{};
    CHECK(mt_alloc_entry(&f, kTop - 64, false) == MT_ENTRY_OUTER);  // new throws: no return seen
    CHECK(mt_alloc_entry(&f, kTop, false) == MT_ENTRY_STALE);       // next call from a shallower frame
    CHECK(mt_alloc_return(&f, kTop + 8));
}

TEST_CASE("free inside realloc(p, 0) is not a second event") {
    mt_frames f{};
    CHECK(mt_alloc_entry(&f, kTop, false) == MT_ENTRY_OUTER);
    CHECK_FALSE(mt_free_entry(&f, kTop - 40, 0x1000, kFree));
    CHECK(mt_alloc_return(&f, kTop + 8));
}

TEST_CASE("operator delete tail-calling free records one Free") {
    mt_frames f{};
    CHECK(mt_free_entry(&f, kTop, 0x1000, kSizedDelete));  // sized delete
    CHECK_FALSE(mt_free_entry(&f, kTop, 0x1000, kDelete));  // jmp plain delete
    CHECK_FALSE(mt_free_entry(&f, kTop, 0x1000, kFree));    // jmp free
    // The same address freed again later (after being handed out again) is a new event.
    CHECK(mt_alloc_entry(&f, kTop, false) == MT_ENTRY_OUTER);
    CHECK(mt_alloc_return(&f, kTop + 8));
    CHECK(mt_free_entry(&f, kTop - 200, 0x1000, kFree));
}

TEST_CASE("operator delete calling free from a deeper frame records one Free") {
    mt_frames f{};
    CHECK(mt_free_entry(&f, kTop, 0x1000, kDelete));
    CHECK_FALSE(mt_free_entry(&f, kTop - 16, 0x1000, kFree));
    CHECK(mt_free_entry(&f, kTop, 0x2000, kDelete));  // the next block: an event
}

// fd-find's receiver thread: it frees the blocks its walker thread allocates, at one call site,
// and allocates nothing between its frees; the walker gets a freed address back.
TEST_CASE("a block another thread got back, freed again by this thread's same function, is a new Free") {
    mt_frames f{};
    CHECK(mt_free_entry(&f, kTop, 0x1000, kFree));
    CHECK(mt_free_entry(&f, kTop, 0x1000, kFree));        // same call site: the same stack pointer
    CHECK(mt_free_entry(&f, kTop - 96, 0x1000, kFree));   // from a deeper frame
    // Through delete, then through free again: each chain enters its functions once.
    CHECK(mt_free_entry(&f, kTop, 0x1000, kDelete));
    CHECK_FALSE(mt_free_entry(&f, kTop - 16, 0x1000, kFree));  // delete's own free
    CHECK(mt_free_entry(&f, kTop - 16, 0x1000, kFree));        // the next free of the block
    CHECK(mt_free_entry(&f, kTop, 0x1000, kDelete));
}

TEST_CASE("free(NULL) is nothing") {
    mt_frames f{};
    CHECK_FALSE(mt_free_entry(&f, kTop, 0, kFree));
    CHECK(f.free_sp == 0);
}

TEST_CASE("syscalls inside allocator calls are internal, others are events") {
    mt_frames f{};
    CHECK_FALSE(mt_mapping_internal(&f, kTop - 100, 0, 0));  // user mmap
    mt_alloc_entry(&f, kTop, false);
    CHECK(mt_mapping_internal(&f, kTop - 100, 0, 0));  // malloc's own mmap or brk
    mt_alloc_return(&f, kTop + 8);
    CHECK(mt_free_entry(&f, kTop, 0x7f0000010010, kFree));
    CHECK(mt_mapping_internal(&f, kTop - 64, 0x7f0000010000, 0x21000));   // free unmapping the block
    CHECK_FALSE(mt_mapping_internal(&f, kTop - 64, 0x7f0000100000, 0x1000));  // another range
    mt_mapping_created(&f);
    CHECK_FALSE(mt_mapping_internal(&f, kTop - 64, 0x7f0000010000, 0x21000));
}

TEST_CASE("a free tail-calling another free of the same block records one Free") {
    mt_frames f{};
    CHECK(mt_free_entry(&f, kTop, 0x1000, kMiFreeSize));        // mi_free_size
    CHECK_FALSE(mt_free_entry(&f, kTop, 0x1000, kMiFree));      // jmp mi_free
    CHECK(mt_free_entry(&f, kTop, 0x2000, kMiFreeSize));        // the next block: an event
    // Freed again once handed out again: a new event.
    CHECK(mt_alloc_entry(&f, kTop, false) == MT_ENTRY_OUTER);
    CHECK(mt_alloc_return(&f, kTop + 8));
    CHECK(mt_free_entry(&f, kTop, 0x2000, kMiFree));
}

TEST_CASE("brk inside free (glibc trimming the heap) is internal, whatever the range") {
    mt_frames f{};
    CHECK_FALSE(mt_brk_internal(&f, kTop - 100));  // the program's own brk
    CHECK(mt_free_entry(&f, kTop, 0x5555000010, kFree));
    CHECK(mt_brk_internal(&f, kTop - 200));          // free -> systrim -> sbrk -> brk
    mt_mapping_created(&f);
    CHECK_FALSE(mt_brk_internal(&f, kTop - 200));
    mt_alloc_entry(&f, kTop, false);
    CHECK(mt_brk_internal(&f, kTop - 64));  // malloc growing the heap
}
