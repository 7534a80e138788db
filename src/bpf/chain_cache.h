/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stack walks kept so that the next walk from the same place can be checked instead of done
 * again: allocation sites repeat, and a benchmark's loop allocates from the same few stacks, at
 * the same depths, every time. Per CPU, MT_CHAIN_SLOTS walks, each in the slot its thread and
 * starting registers hash to. Included by cfi_walk.h.
 *
 * Why a check is enough: a walk is a function of its starting registers (pc, sp, and rbp if a
 * rule used rbp's value before a frame's saved rbp replaced it), the rows in force (fixed by the
 * process description's generation, unique for a memtrack run), the thread's pending return
 * instances (the uretprobe trampolines it maps back), and the stack words it depended on: each
 * return address's slot, and a saved rbp once a rule used it (a saved rbp no rule uses changes
 * nothing). When all of these are equal, the walk reads the same words at the same addresses
 * and ends the same way: the frames are the kept ones. Only walks that ended at the outermost
 * frame or at max_frames are kept; a failed read or an unfollowable rule is walked again each
 * time, and counted again.
 *
 * A walk that started as the kept one but read another word is walked again, but only until it
 * meets the kept walk: the rest of a walk is a function of the registers at one of its frames
 * (pc, sp, and rbp if the rest uses it before replacing it) and the words it read from there
 * on, so a walk that reaches a kept frame's pc and sp (with its rbp, when the rest needs it),
 * past the word that changed, and finds those words unchanged takes the rest of its frames from
 * the kept walk (a splice). Return instances stand in for words (their slots are not read): a
 * splice needs every pending one below the frame, in both walks. Only a kept walk that reached
 * the outermost frame lends its rest. A spliced walk is not kept: the kept walk stays the one
 * that was walked whole, which is also what allocation sites that alternate between two callers
 * (the one kept answered, the other spliced) keep answering.
 */
#ifndef MEMTRACK_CHAIN_CACHE_H
#define MEMTRACK_CHAIN_CACHE_H

#define MT_CHAIN_SLOTS 64   /* kept walks per CPU (a power of two, at most 64: chain_slot) */
#define MT_CHAIN_READS 256  /* stack words one walk may read and still be kept: 2 a frame */
#define MT_CHAIN_RETURNS 4  /* pending return instances a kept walk may start with */
/* Per-frame arrays: one slot more than frames, so an index masked with MT_MAX_FRAMES is inside. */
#define MT_CHAIN_FRAMES (MT_MAX_FRAMES + 1)
#define MT_SPLICE_TRIES 3   /* splices a walk may attempt (a failed one usually fails at its first word) */

/* How a frame's step used the rbp the walk came to it with (chain_frame.bp_use). */
#define CHAIN_BP_USED 1u /* a rule used it before anything replaced it */
#define CHAIN_BP_SET 2u  /* the step replaced it (restored from the stack, or lost) */

/* A walk at one frame, before its step: what a later walk must meet to take the rest from it. */
struct chain_frame {
	__u64 sp;
	__u64 bp;
	__u32 reads;  /* words the walk had read before this step: the rest read addr/value from here */
	__u32 bp_use; /* CHAIN_BP_* */
};

struct chain_returns {
	__u32 count; /* MT_CHAIN_RETURNS + 1: more than fit */
	__u64 stack[MT_CHAIN_RETURNS];
	__u64 orig[MT_CHAIN_RETURNS];
};

struct chain {
	__u64 pc, sp, bp;
	__u32 bp_used; /* the walk depended on bp: it must be equal too */
	__u32 span;    /* bytes from sp to the end of the highest word the walk read */
	__u32 tid;
	__u32 generation; /* 0: nothing kept */
	__u32 n;          /* frames, in ips */
	__u32 reads;      /* words read, in addr/value */
	__u32 end;        /* the counter that ended the walk */
	__u32 known;      /* user space has its stack: sent, or found in seen_stacks */
	__u64 hash;       /* stack_hash of its frames */
	struct chain_returns returns;
	__u64 addr[MT_CHAIN_READS];
	__u64 value[MT_CHAIN_READS];
	__u64 ips[MT_CHAIN_FRAMES];
	struct chain_frame frames[MT_CHAIN_FRAMES];
};

MT_WALK_MAP(BPF_MAP_TYPE_PERCPU_ARRAY, chains, __uint(max_entries, MT_CHAIN_SLOTS); __type(key, __u32);
	    __type(value, struct chain););

static __always_inline __u32 chain_slot(__u32 tid, __u64 pc, __u64 sp)
{
	__u64 h = (pc ^ (sp >> 4) ^ ((__u64)tid << 32)) * 0x9e3779b97f4a7c15ULL;
	return (__u32)(h >> 58) & (MT_CHAIN_SLOTS - 1);
}

/* The thread's pending return instances, as far as MT_CHAIN_RETURNS + 1 of them. */
static __always_inline void chain_returns_read(struct return_instance *r, struct chain_returns *out)
{
	out->count = 0;
	for (__u32 i = 0; i <= MT_CHAIN_RETURNS && r; i++) {
		if (i == MT_CHAIN_RETURNS) {
			out->count = MT_CHAIN_RETURNS + 1;
			return;
		}
		out->stack[i] = BPF_CORE_READ(r, stack);
		out->orig[i] = BPF_CORE_READ(r, orig_ret_vaddr);
		out->count = i + 1;
		r = BPF_CORE_READ(r, next);
	}
}

/* Every pending instance's slot is below sp: a walk from sp up meets none of them. */
static __always_inline bool chain_returns_below(const struct chain_returns *r, __u64 sp)
{
	if (r->count > MT_CHAIN_RETURNS)
		return false;
	for (__u32 i = 0; i < MT_CHAIN_RETURNS; i++) {
		if (i >= r->count)
			break;
		if (r->stack[i] >= sp)
			return false;
	}
	return true;
}

static __always_inline bool chain_returns_equal(const struct chain_returns *a, const struct chain_returns *b)
{
	if (a->count != b->count || a->count > MT_CHAIN_RETURNS)
		return false;
	for (__u32 i = 0; i < MT_CHAIN_RETURNS; i++) {
		if (i >= a->count)
			break;
		if (a->stack[i] != b->stack[i] || a->orig[i] != b->orig[i])
			return false;
	}
	return true;
}

#endif
