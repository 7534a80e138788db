/* SPDX-License-Identifier: MIT */
/*
 * The nesting rule: one logical allocation is one event, recorded as the outermost allocator
 * call of its thread. Shared by the BPF programs and the unit tests (tests/unit/test_nesting.cpp).
 *
 * Nesting is decided by stack pointers, not depth counters. An inner call runs on a deeper
 * stack than the outer one; a tail call (operator new[] -> new, reallocarray -> realloc,
 * operator delete -> free) runs on the same one, while the outer call's return is still pending;
 * and an outer call whose return was never seen (an exception, a longjmp) leaves a frame whose
 * stack pointer is not above the next call's, so it is replaced instead of silencing the thread
 * for ever.
 */
#ifndef MEMTRACK_NESTING_H
#define MEMTRACK_NESTING_H

#ifndef __bpf__
#include <linux/types.h>
#include <stdbool.h>
#endif

/* The functions a chain of frees of one block may pass through: sized delete, delete, free. */
#define MT_FREE_CHAIN 4

struct mt_frames {
	__u64 alloc_sp;    /* entry SP of the outermost allocation call in flight; 0: none */
	__u64 free_sp;     /* the last recorded free: an munmap of its block inside it is internal */
	__u64 free_addr;
	/* The functions its chain entered so far (their probe addresses), free_chain_len of them. */
	__u64 free_chain[MT_FREE_CHAIN];
	__u32 free_chain_len;
};

enum mt_entry {
	MT_ENTRY_NESTED = 0, /* inside another allocator call: not recorded */
	MT_ENTRY_OUTER = 1,  /* the outermost call: its return is recorded */
	MT_ENTRY_STALE = 2,  /* outermost; an older frame that never returned was replaced */
	MT_ENTRY_TAIL = 3,   /* a tail call of the call in flight: that call's function stands */
};

/*
 * An allocation function is entered; sp is the stack pointer at its entry. outer_in_flight: the
 * return address at sp is the uretprobe trampoline, so the probed call that pushed it has not
 * returned (a tail call runs on its frame). At an equal stack pointer that tells a tail call
 * (mimalloc's mi_malloc_aligned jumping to mi_heap_malloc_small: still the aligned allocation
 * its caller asked for) from a new call after one whose return never came (operator new threw
 * bad_alloc), whose own function and arguments must replace the dead one's.
 */
static inline enum mt_entry mt_alloc_entry(struct mt_frames *f, __u64 sp, bool outer_in_flight)
{
	enum mt_entry res = MT_ENTRY_OUTER;
	if (f->alloc_sp) {
		if (sp < f->alloc_sp)
			return MT_ENTRY_NESTED;
		if (sp == f->alloc_sp && outer_in_flight)
			return MT_ENTRY_TAIL;
		res = MT_ENTRY_STALE;
	}
	f->alloc_sp = sp;
	/* A new allocation may return an address freed before: the old marker says nothing now. */
	f->free_sp = 0;
	return res;
}

/* An allocation function returns; sp is the stack pointer after `ret`. True: record it. */
static inline bool mt_alloc_return(struct mt_frames *f, __u64 sp)
{
	if (!f->alloc_sp || sp != f->alloc_sp + 8)
		return false; /* an inner call returning */
	f->alloc_sp = 0;
	return true;
}

static inline bool mt_free_chain_has(const struct mt_frames *f, __u64 fn)
{
	for (__u32 k = 0; k < MT_FREE_CHAIN && k < f->free_chain_len; k++)
		if (f->free_chain[k] == fn)
			return true;
	return false;
}

/*
 * free() or operator delete, the function whose probe sits at fn, is entered with addr. True:
 * record one Free.
 *
 * One logical free may pass through several probed functions on one block: operator delete
 * tail-calling free (or calling it), a sized delete jumping to the plain one, mimalloc's
 * mi_free_size jumping to mi_free. They run at or below the stack pointer of the first one, on
 * the same address, and none of them enters a function the chain already went through. The
 * marker has no return to end it (free has no return probe), so the last test is what ends it:
 * the thread freeing the same address again through a function its chain already entered is a
 * new free, of a block another thread got back from the allocator in between (a thread freeing
 * its walker's buffers, at one call site, allocating nothing between frees: fd-find's receiver).
 */
static inline bool mt_free_entry(struct mt_frames *f, __u64 sp, __u64 addr, __u64 fn)
{
	if (!addr)
		return false;
	if (f->alloc_sp && sp < f->alloc_sp)
		return false; /* realloc(p, 0) and friends free inside */
	if (f->free_sp && sp <= f->free_sp && addr == f->free_addr && !mt_free_chain_has(f, fn)) {
		if (f->free_chain_len < MT_FREE_CHAIN)
			f->free_chain[f->free_chain_len++] = fn;
		return false;
	}
	f->free_sp = sp;
	f->free_addr = addr;
	f->free_chain[0] = fn;
	f->free_chain_len = 1;
	return true;
}

/*
 * A mapping call (the C library's mmap, munmap, mremap, brk) runs with user stack pointer sp
 * over [start, start + len). True: it is the allocator's own work, not an event.
 */
static inline bool mt_mapping_internal(const struct mt_frames *f, __u64 sp, __u64 start, __u64 len)
{
	if (f->alloc_sp && sp < f->alloc_sp)
		return true;
	/* free() of a large block unmaps it: only a range holding the freed pointer counts. */
	return f->free_sp && sp < f->free_sp && f->free_addr >= start && f->free_addr < start + len;
}

/*
 * brk at stack pointer sp: the allocator's own work inside an allocation, and inside a free too
 * (glibc's free trims the heap top with brk, whatever range the freed block had).
 */
static inline bool mt_brk_internal(const struct mt_frames *f, __u64 sp)
{
	return (f->alloc_sp && sp < f->alloc_sp) || (f->free_sp && sp < f->free_sp);
}

/* A new mapping appeared outside any allocator call: an old free marker says nothing now. */
static inline void mt_mapping_created(struct mt_frames *f)
{
	f->free_sp = 0;
}

#endif
