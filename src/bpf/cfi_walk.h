/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The user stack walked by the unwind rows user space compiles from each object's CFI
 * (unwind.h), for code built without frame pointers. Included once, by memtrack.bpf.c, and
 * by the unit tests' replay harness: all it uses from outside is walk_env.h's and python_walk.h's
 * (the perf trampoline's rule).
 *
 * Each frame: find the process's mapping of the pc, the object's row for it, compute the CFA,
 * read the return address at CFA - 8 and the caller's rbp where the row says. A pc no row
 * covers (JIT code, [vdso], an object without CFI) is stepped by frame pointer, as
 * bpf_get_stack would, except in a CPython perf trampoline, which has a rule of its own
 * (python_walk.h). Pending uretprobes have replaced return addresses on the stack with the
 * kernel's trampoline; the walk puts back the original from the thread's return instances,
 * matched by stack slot.
 *
 * The rows found for each pc are kept in a per-CPU cache keyed by (process, its description's
 * generation, pc): allocation sites repeat, and a hit replaces both binary searches.
 *
 * Stack slots are read from a copy of the stack from sp to the end of the next page (two reads,
 * the second failing harmlessly where the stack ends): a copy costs about what two single-slot
 * reads do, and a walk reads up to two slots a frame. Slots past the copy are read one by one.
 */
#ifndef MEMTRACK_CFI_WALK_H
#define MEMTRACK_CFI_WALK_H

#include "python_walk.h"
#include "unwind.h"
#include "walk_env.h"

/* Every object's rows, one range per object (resized before load, written by user space). */
MT_WALK_MAP(BPF_MAP_TYPE_ARRAY, unwind_rows, __uint(map_flags, BPF_F_MMAPABLE); __uint(max_entries, 1 << 22);
	    __type(key, __u32); __type(value, struct mt_unwind_row););

/* tgid -> its executable mappings and their rows; copied to a forked child, gone at exec and exit. */
MT_WALK_MAP(BPF_MAP_TYPE_HASH, unwind_procs, __uint(map_flags, BPF_F_NO_PREALLOC); __uint(max_entries, 65536);
	    __type(key, __u32); __type(value, struct mt_unwind_process););

#define MT_STACK_COPY_PAGE 4096
#define MT_STACK_COPY_BYTES (2 * MT_STACK_COPY_PAGE)
/* Kept words each bpf_loop iteration checks: an iteration's call costs more than a word's check. */
#define MT_REPLAY_STEP 4

#include "chain_cache.h"

/*
 * The row in force at a return address, asked of unwind_row_at. The previous frame's mapping
 * stays in it: callers are often in the same object.
 */
struct row_query {
	__u64 at;
	__u32 tgid, generation;
	struct mt_unwind_mapping map; /* end 0: none */
	struct mt_unwind_row row;     /* the answer; MT_CFA_NONE when no row covers `at` */
	/* Row cache misses of this walk (unwind_row_at's), added to their counter when it ends. */
	__u32 misses;
	__u32 cache_base; /* this CPU's first slot in row_cache, found at the walk's first frame */
};
#define MT_ROW_CACHE_UNSET 0xffffffffu

/*
 * The stack copied from a walk's sp: `bytes` of it from `base` in words. Written by copy_stack
 * alone; a walk keeps base and bytes as values of its own (cfi_walk), which the verifier follows
 * on the stack: with them in map memory the walk's states multiply (load time).
 */
struct stack_copy {
	__u64 base;
	__u32 bytes;
	__u64 words[MT_STACK_COPY_BYTES / 8];
};

/*
 * The walk's three parts pass what each found to the next in these, one struct per boundary:
 * walk_plan from cfi_walk_stack to walk_frames and chain_keep_walk, walk_trace from walk_frames
 * to chain_keep_walk. They are per-CPU map memory (walk_memory), passed by pointer by
 * cfi_capture, only because the walk's call chain is at the BPF stack's 512 bytes and they are
 * kilobytes (the copy, the words read, the frames).
 */
struct walk_plan {
	__u32 tgid, tid;
	__u32 max;        /* frames the walk may find */
	__u32 generation; /* the process description's, for its rows (0: none: every step by frame pointer) */
	__u32 keep_slot;  /* the slot to keep the walk in (MT_CHAIN_SLOTS: none) */
	/*
	 * The kept walk this one may take the rest of its frames from (chain_cache.h), by slot
	 * (MT_CHAIN_SLOTS: none), and the first of its words the rest must not include (the word
	 * that changed).
	 */
	__u32 cand_slot;
	__u32 cand_from;
	struct chain_returns returns; /* the thread's pending return instances */
	/*
	 * The stack from the walk's sp: copied by chain_answer as far as the candidate's walk read
	 * (cand_slot set), else by walk_frames, whose walk and splices read it.
	 */
	struct stack_copy copy;
};

/*
 * walk_frames' own between its loop's steps (cfi_frame, splice_meet, splice_take): not read
 * after it. In map memory rather than the loop's state: the verifier does not follow map memory,
 * so the tallies and the splice's progress do not split the loop's states.
 */
struct walk_steps {
	__u32 frame; /* the frame whose step runs (trace frames[frame]) */
	/*
	 * Frames found by CFI and by frame pointer, added to their counters when the walk ends,
	 * rather than a counter's lookup and atomic add in every frame's step.
	 */
	__u32 cfi_frames, fp_frames;
	/* The splice candidate (the plan's, until MT_SPLICE_TRIES failed), which of its frames the
	 * walk has got to, and the splices tried; splice_meet's findings for splice_take: the slot,
	 * this walk's frames, whether the candidate's rbp there differs. */
	__u32 cand_slot, cand_frame, cand_tries;
	__u32 cand_taken, splice_n, splice_bp_differs;
	/*
	 * Where the walk's rbp came from. Code without frame pointers keeps data in rbp and saves it
	 * on the stack like any callee-saved register, so a chain depends on rbp's value, and on a
	 * saved rbp's word, only once a rule uses it: only then is the word noted.
	 */
	__u32 bp_source; /* BP_FROM_* */
	__u64 bp_addr;   /* BP_FROM_STACK: the word it was read from */
	struct row_query query;
};

struct walk_trace {
	__u32 reads; /* words read so far; the first MT_CHAIN_READS are in addr/value */
	__u32 span;  /* bytes from sp to the end of the highest word read */
	__u32 end;   /* the counter that ended the walk */
	__u32 bp_register_used; /* a rule used the register's rbp */
	__u32 spliced; /* the walk took the rest of its frames from the candidate: it is not kept */
	__u64 addr[MT_CHAIN_READS];
	__u64 value[MT_CHAIN_READS];
	struct chain_frame frames[MT_CHAIN_FRAMES];
	struct walk_steps steps;
};

struct walk_memory {
	struct walk_plan plan;
	struct walk_trace trace;
};

MT_WALK_MAP(BPF_MAP_TYPE_PERCPU_ARRAY, walk_memory, __uint(max_entries, 1); __type(key, __u32);
	    __type(value, struct walk_memory););

/*
 * Always 0, and the verifier cannot know it (user space could write .bss). The frame count
 * passes through it (opaque): to the verifier it is then any value below the bound checked next,
 * so the callback's states at successive frames are one state and its passes over the frame
 * loop converge instead of following all MT_MAX_FRAMES frames.
 */
__u32 opaque_zero;

static __always_inline __u32 opaque(__u32 v)
{
	__u32 zero = *(volatile __u32 *)&opaque_zero;
	return (v ^ zero) ^ zero;
}

struct row_cache_entry {
	__u64 pc;
	__u32 tgid;
	__u32 generation;
	struct mt_unwind_row row;
};

/* Resized before load: MT_ROW_CACHE_SLOTS per CPU. */
MT_WALK_MAP(BPF_MAP_TYPE_ARRAY, row_cache, __uint(max_entries, MT_ROW_CACHE_SLOTS); __type(key, __u32);
	    __type(value, struct row_cache_entry););

/* walk_frames' walk, on its stack: the loop's state, which the verifier follows. */
struct cfi_walk {
	__u64 pc, sp, bp;
	__u64 ri;       /* the next pending return instance, 0: none */
	__u64 ri_stack; /* the stack slot its trampoline address sits in */
	__u64 ri_orig;  /* the return address it replaced */
	struct stack_scratch_value *v; /* the frames go to v->rec.ips */
	struct walk_plan *plan;
	struct walk_trace *trace;
	__u64 copy_base;  /* plan->copy's bounds, as the walk's own (struct stack_copy) */
	__u32 copy_bytes;
	__u32 n;
};

/* The 8 bytes of stack at addr, from the copy (`bytes` of the stack from `base`) when it holds them. */
static __always_inline int copied_word(struct stack_copy *copy, __u64 base, __u32 bytes, __u64 addr, __u64 *out)
{
	__u64 off = addr - base;
	if (off < bytes && !(off & 7)) {
		/* The mask only restates off < bytes <= MT_STACK_COPY_BYTES for the verifier. */
		*out = copy->words[(off / 8) & (MT_STACK_COPY_BYTES / 8 - 1)];
		return 0;
	}
	return bpf_probe_read_user(out, sizeof(*out), (void *)addr);
}

static __always_inline int stack_word(struct cfi_walk *w, __u64 addr, __u64 *out)
{
	return copied_word(&w->plan->copy, w->copy_base, w->copy_bytes, addr, out);
}

enum { BP_FROM_RULE, BP_FROM_REGISTER, BP_FROM_STACK };

/* A word the walk depends on, noted for its chain. */
static __always_inline void note_word(struct cfi_walk *w, __u64 addr, __u64 value)
{
	struct walk_trace *t = w->trace;
	__u64 end = addr + 8 - w->copy_base;
	if (end > t->span)
		t->span = end > 0xffffffffULL ? 0xffffffff : (__u32)end;
	__u32 i = t->reads;
	if (i < MT_CHAIN_READS) {
		t->addr[i] = addr;
		t->value[i] = value;
	}
	t->reads = i + 1;
}

/* How the step of the frame under way used rbp (chain_frame.bp_use). */
static __always_inline void note_bp_use(struct walk_trace *t, __u32 use)
{
	t->frames[t->steps.frame & MT_MAX_FRAMES].bp_use |= use;
}

/* A return address's word: the walk depends on it. */
static __always_inline int read_stack(struct cfi_walk *w, __u64 addr, __u64 *out)
{
	if (stack_word(w, addr, out) != 0)
		return -1;
	note_word(w, addr, *out);
	return 0;
}

/* The caller's rbp, saved at addr: noted only if a rule uses it (walk_bp). */
static __always_inline int read_saved_bp(struct cfi_walk *w, __u64 addr)
{
	note_bp_use(w->trace, CHAIN_BP_SET);
	w->trace->steps.bp_source = BP_FROM_STACK;
	w->trace->steps.bp_addr = addr;
	return stack_word(w, addr, &w->bp);
}

/* rbp as a rule does not know it: 0. */
static __always_inline void forget_bp(struct cfi_walk *w)
{
	note_bp_use(w->trace, CHAIN_BP_SET);
	w->bp = 0;
	w->trace->steps.bp_source = BP_FROM_RULE;
}

/* w->bp, for a rule that uses it: the walk now depends on where it came from. */
static __always_inline __u64 walk_bp(struct cfi_walk *w)
{
	struct walk_trace *t = w->trace;
	note_bp_use(t, CHAIN_BP_USED);
	if (t->steps.bp_source == BP_FROM_REGISTER) {
		t->bp_register_used = 1;
	} else if (t->steps.bp_source == BP_FROM_STACK) {
		note_word(w, t->steps.bp_addr, w->bp);
		t->steps.bp_source = BP_FROM_RULE; /* noted once */
	}
	return w->bp;
}

/* Ends the walk, counted by why. */
static __always_inline long walk_end(struct cfi_walk *w, __u32 counter)
{
	count(counter);
	w->trace->end = counter;
	return 1;
}

static __always_inline void ri_load(struct cfi_walk *w, __u64 ri)
{
	w->ri = ri;
	w->ri_stack = 0;
	w->ri_orig = 0;
	if (!ri)
		return;
	struct return_instance *r = (struct return_instance *)ri;
	w->ri_stack = BPF_CORE_READ(r, stack);
	w->ri_orig = BPF_CORE_READ(r, orig_ret_vaddr);
}

/* Moves to the instance after the current one. */
static __always_inline void ri_next(struct cfi_walk *w)
{
	struct return_instance *r = (struct return_instance *)w->ri;
	ri_load(w, (__u64)BPF_CORE_READ(r, next));
}

/* The return address stored at `slot`, as the program put it there. */
static __always_inline int read_return_address(struct cfi_walk *w, __u64 slot, __u64 *ra)
{
	/* An instance below the slot belongs to a frame already passed (or popped, like the probed
	 * call's): each frame moves up at least one slot, so one step a frame keeps up. */
	if (w->ri && w->ri_stack < slot)
		ri_next(w);
	if (w->ri && w->ri_stack == slot) {
		*ra = w->ri_orig;
		ri_next(w);
		return 0;
	}
	return read_stack(w, slot, ra);
}

/*
 * The address of p->maps[i]. The search reads the mappings through bpf_probe_read_kernel at
 * such addresses instead of indexing the map value: an index into a map value must be precise
 * to the verifier, which then keeps every path of the search apart.
 */
static __always_inline __u64 mapping_address(struct mt_unwind_process *p, __u32 i)
{
	return (__u64)p + __builtin_offsetof(struct mt_unwind_process, maps) +
	       (__u64)(i & (MT_UNWIND_MAPPINGS - 1)) * sizeof(struct mt_unwind_mapping);
}

/*
 * A binary search for the last entry in [lo, hi) whose start is at or below key, one step per
 * bpf_loop iteration: the verifier checks a step once instead of every path through an unrolled
 * search, which costs seconds of loading.
 */
struct search {
	__u64 key;
	__u64 base; /* mappings: the process's entry (an address); 0: rows of unwind_rows */
	__u32 lo, hi;
};

/* The start of entry i: a mapping's first address, or a row's pc. */
static __always_inline int entry_start(struct search *s, __u32 i, __u64 *start)
{
	if (s->base)
		return bpf_probe_read_kernel(start, sizeof(*start),
					     (void *)mapping_address((struct mt_unwind_process *)s->base, i));
	struct mt_unwind_row *r = bpf_map_lookup_elem(&unwind_rows, &i);
	if (!r)
		return -1; /* cannot happen: user space wrote the range */
	*start = r->pc;
	return 0;
}

static long search_step(__u64 i, void *ctx)
{
	struct search *s = ctx;
	__u32 lo = s->lo, hi = s->hi;
	if (hi - lo <= 1)
		return 1;
	__u32 mid = lo + (hi - lo) / 2;
	__u64 start = 0;
	if (entry_start(s, mid, &start) != 0) {
		s->hi = s->lo; /* no answer */
		return 1;
	}
	if (start <= s->key)
		s->lo = mid;
	else
		s->hi = mid;
	return 0;
}

/* Copies the process's mapping covering pc into out; false when there is none. */
static __always_inline bool find_mapping(struct mt_unwind_process *p, __u64 pc, struct mt_unwind_mapping *out)
{
	__u32 count = p->count;
	if (count == 0 || count > MT_UNWIND_MAPPINGS)
		return false;
	struct search s = {.key = pc, .base = (__u64)p, .lo = 0, .hi = count};
	bpf_loop(9, search_step, &s, 0);
	if (s.hi == s.lo)
		return false;
	if (bpf_probe_read_kernel(out, sizeof(*out), (void *)mapping_address(p, s.lo)) != 0)
		return false;
	return pc >= out->start && pc < out->end;
}

/* The row in force at vaddr among the object's rows, or NULL (MT_CFA_NONE then). */
static __always_inline struct mt_unwind_row *find_row(struct mt_unwind_mapping *m, __u64 vaddr)
{
	if (m->row_count == 0 || vaddr > 0xffffffffULL)
		return NULL;
	struct search s = {.key = vaddr, .lo = m->row_first, .hi = m->row_first + m->row_count};
	bpf_loop(23, search_step, &s, 0);
	if (s.hi == s.lo)
		return NULL;
	__u32 at = s.lo;
	struct mt_unwind_row *r = bpf_map_lookup_elem(&unwind_rows, &at);
	return r && r->pc <= vaddr ? r : NULL;
}

/* One step by frame pointer: rbp -> {caller's rbp, return address}. */
static __always_inline long frame_pointer_step(struct cfi_walk *w)
{
	__u64 bp = walk_bp(w), ra = 0;
	if (!bp || bp < w->sp || (bp & 7)) {
		return walk_end(w, MT_COUNTER_UNWIND_COMPLETE); /* no frame pointer to follow: as far as it goes */
	}
	if (read_return_address(w, bp + 8, &ra) != 0 || read_saved_bp(w, bp) != 0) {
		return walk_end(w, MT_COUNTER_UNWIND_READ_FAILED);
	}
	w->trace->steps.fp_frames++;
	w->sp = bp + 16;
	w->pc = ra;
	return 0;
}

/*
 * A global function: the verifier checks the cache and both searches once, on their own,
 * instead of again for every state a frame of the walk can be in.
 */
__noinline int unwind_row_at(struct row_query *q)
{
	if (!q)
		return 0;
	__u64 at = q->at;
	if (q->cache_base == MT_ROW_CACHE_UNSET)
		q->cache_base = bpf_get_smp_processor_id() * MT_ROW_CACHE_SLOTS;
	__u32 slot = q->cache_base + (((__u32)(at ^ (at >> 12)) * 2654435761u >> 20) & (MT_ROW_CACHE_SLOTS - 1));
	struct row_cache_entry *e = bpf_map_lookup_elem(&row_cache, &slot);
	if (e && e->pc == at && e->tgid == q->tgid && e->generation == q->generation) {
		q->row = e->row;
		return 0;
	}
	q->misses++;
	struct mt_unwind_mapping *m = &q->map;
	if (at < m->start || at >= m->end) {
		__u32 tgid = q->tgid;
		struct mt_unwind_process *p = bpf_map_lookup_elem(&unwind_procs, &tgid);
		if (!p || !find_mapping(p, at, m))
			m->start = m->end = 0;
	}
	struct mt_unwind_row *r = m->end ? find_row(m, at - m->bias) : NULL;
	struct mt_unwind_row none = {};
	q->row = r ? *r : none;
	/* Code outside every file: a CPython perf trampoline's has a rule of its own. */
	if (!m->end)
		python_trampoline_row(q->tgid, at + 1, &q->row);
	if (e) {
		e->pc = at;
		e->tgid = q->tgid;
		e->generation = q->generation;
		e->row = q->row;
	}
	return 0;
}

/* Moves w to the caller of the frame at w->pc; returns 1 when the walk ends there. */
static __always_inline long cfi_step(struct cfi_walk *w)
{
	/* Every pc after frame 0's registers is a return address: the call is the byte before. */
	struct row_query *q = &w->trace->steps.query;
	q->at = w->pc - 1;
	struct mt_unwind_row row = {};
	if (w->plan->generation) {
		unwind_row_at(q);
		row = q->row;
	}
	struct mt_unwind_row *r = &row;
	__u32 type = mt_unwind_cfa_type(r);
	__u64 cfa;
	switch (type) {
	case MT_CFA_NONE:
		return frame_pointer_step(w);
	case MT_CFA_END:
		return walk_end(w, MT_COUNTER_UNWIND_COMPLETE);
	case MT_CFA_RSP:
		cfa = w->sp + r->cfa_off;
		break;
	case MT_CFA_RBP:
		cfa = walk_bp(w) + r->cfa_off;
		break;
	case MT_CFA_PLT:
		cfa = w->sp + r->cfa_off + ((w->pc & 15) >= (__u64)(__u8)r->rbp_off8 ? 8 : 0);
		break;
	default:
		return walk_end(w, MT_COUNTER_UNWIND_UNSUPPORTED);
	}
	if (cfa <= w->sp) {
		return walk_end(w, MT_COUNTER_UNWIND_BAD_FRAME);
	}
	__u64 ra = 0;
	if (read_return_address(w, cfa - 8, &ra) != 0) {
		return walk_end(w, MT_COUNTER_UNWIND_READ_FAILED);
	}
	switch (mt_unwind_rbp_rule(r)) {
	case MT_RBP_SAME:
		break;
	case MT_RBP_AT_CFA:
		if (read_saved_bp(w, cfa + (__s64)r->rbp_off8 * 8) != 0) {
			return walk_end(w, MT_COUNTER_UNWIND_READ_FAILED);
		}
		break;
	default:
		forget_bp(w);
		break;
	}
	w->trace->steps.cfi_frames++;
	w->sp = cfa;
	w->pc = ra;
	return 0;
}

__noinline int splice_meet(struct walk_plan *plan, struct walk_trace *t, __u32 n, __u64 pc);
__noinline __u32 splice_take(struct walk_plan *plan, struct walk_trace *t, struct stack_scratch_value *v);

/* A loop over a kept chain c's words or frames, from `from` up to `end` (bpf_loop's context). */
struct chain_scan {
	struct stack_copy *copy; /* words: the stack now */
	struct chain *c;
	__u32 from, end;
	__u32 flag; /* words: 1 while all hold; frames: the first bp_use met (0: none yet) */
	__u32 bad;  /* words, !flag: the first that changed */
};

/* Words from + i * MT_REPLAY_STEP on: each must still hold its value. */
static long chain_word_step(__u64 i, void *ctx)
{
	struct chain_scan *p = ctx;
	struct stack_copy *copy = p->copy;
	struct chain *c = p->c;
	if (!copy || !c)
		return 1;
	for (__u32 k = 0; k < MT_REPLAY_STEP; k++) {
		__u32 src = p->from + (__u32)i * MT_REPLAY_STEP + k;
		__u64 value = 0;
		if (src >= p->end)
			return 1;
		if (copied_word(copy, copy->base, copy->bytes, c->addr[src & (MT_CHAIN_READS - 1)], &value) != 0 ||
		    value != c->value[src & (MT_CHAIN_READS - 1)]) {
			p->flag = 0;
			p->bad = src;
			return 1;
		}
	}
	return 0;
}

/*
 * Every word the kept chain's walk read, from its word `from` on, still holds what it read
 * then (from the copy of the stack, else read); false with *bad the first that does not.
 */
static __always_inline bool chain_words_hold(struct stack_copy *copy, struct chain *c, __u32 from, __u32 *bad)
{
	struct chain_scan p = {.copy = copy, .c = c, .from = from, .end = c->reads, .flag = 1};
	if (from > p.end || p.end > MT_CHAIN_READS)
		return false;
	bpf_loop((p.end - from + MT_REPLAY_STEP - 1) / MT_REPLAY_STEP, chain_word_step, &p, 0);
	*bad = p.bad;
	return p.flag;
}

/* Frame n: ends the walk there, or notes the frame and steps to its caller. */
static long cfi_frame(__u64 i, void *ctx)
{
	struct cfi_walk *w = ctx;
	struct walk_trace *t = w->trace;
	__u32 n = opaque(w->n);
	if (n >= w->plan->max || n >= MT_MAX_FRAMES) {
		return walk_end(w, MT_COUNTER_UNWIND_TRUNCATED);
	}
	if (!w->pc) {
		return walk_end(w, MT_COUNTER_UNWIND_COMPLETE);
	}
	/* Noted before a splice is tried, which meets the candidate at this frame's sp and rbp. */
	struct chain_frame *f = &t->frames[n];
	f->sp = w->sp;
	f->bp = w->bp;
	f->reads = t->reads;
	f->bp_use = 0;
	if (t->steps.cand_slot < MT_CHAIN_SLOTS && n > 0 && splice_meet(w->plan, t, n, w->pc)) {
		__u32 got = splice_take(w->plan, t, w->v);
		if (got) {
			w->n = got & 0xffff;
			return walk_end(w, MT_COUNTER_UNWIND_COMPLETE);
		}
	}
	w->v->rec.ips[n] = w->pc;
	t->steps.frame = n;
	w->n = n + 1;
	return cfi_step(w);
}

/*
 * The walk has come to frame n (pc, and sp and rbp in t->frames[n]) and its splice candidate is
 * t->steps.cand_slot's chain (chain_cache.h). When the candidate's walk had a frame at this pc
 * and sp whose rest does not include the word that changed, the rest's words still hold, and its
 * rbp there is this one or the rest does not use it: the rest of its frames are this walk's.
 * splice_meet makes the cheap checks and says whether to try (1); then splice_take checks the
 * words and copies the frames, and returns the walk's frames (0: no splice here, the walk goes on
 * and writes over what was copied past its own frames). Two global functions, each checked once
 * by the verifier on its own, and each with a small frame: the walk's call chain is at the
 * stack's limit, and the two are never on it together.
 */
__noinline int splice_meet(struct walk_plan *plan, struct walk_trace *t, __u32 n, __u64 pc)
{
	if (!plan || !t || n >= MT_MAX_FRAMES)
		return 0;
	struct walk_steps *st = &t->steps;
	__u32 slot = st->cand_slot;
	if (slot >= MT_CHAIN_SLOTS)
		return 0;
	struct chain *c = bpf_map_lookup_elem(&chains, &slot);
	if (!c)
		return 0;
	__u64 sp = t->frames[n].sp;
	/* The candidate's frames below sp are passed: each frame moves sp up, in both walks. */
	__u32 j = st->cand_frame, cn = c->n;
	for (int k = 0; k < 4; k++) {
		if (j >= cn || j >= MT_MAX_FRAMES)
			break;
		if (c->frames[j & MT_MAX_FRAMES].sp >= sp)
			break;
		j++;
	}
	st->cand_frame = j;
	if (j >= cn || j >= MT_MAX_FRAMES)
		return 0;
	struct chain_frame *at = &c->frames[j & MT_MAX_FRAMES];
	if (at->sp != sp || c->ips[j & MT_MAX_FRAMES] != pc || at->reads < plan->cand_from)
		return 0;
	/* Met: a splice is tried here, and past a few failed ones no more. */
	st->cand_frame = j + 1;
	st->cand_taken = slot;
	if (++st->cand_tries >= MT_SPLICE_TRIES)
		st->cand_slot = MT_CHAIN_SLOTS;
	__u32 reads = c->reads;
	if (c->generation != plan->generation || c->end != MT_COUNTER_UNWIND_COMPLETE || cn > MT_MAX_FRAMES ||
	    reads > MT_CHAIN_READS || at->reads > reads || n + (cn - j) > plan->max ||
	    !chain_returns_below(&plan->returns, sp) || !chain_returns_below(&c->returns, sp))
		return 0;
	st->splice_n = n;
	st->splice_bp_differs = at->bp != t->frames[n].bp;
	return 1;
}

/* Frame from + i: the first whose step used or replaced rbp says whether the rest uses the rbp it starts with. */
static long splice_bp_step(__u64 i, void *ctx)
{
	struct chain_scan *p = ctx;
	struct chain *c = p->c;
	__u32 k = p->from + (__u32)i;
	if (!c || k >= p->end)
		return 1;
	p->flag = c->frames[k & MT_MAX_FRAMES].bp_use;
	return p->flag ? 1 : 0;
}

/* After splice_meet said to try: v->rec.ips from the walk's frame on are the candidate's rest. */
__noinline __u32 splice_take(struct walk_plan *plan, struct walk_trace *t, struct stack_scratch_value *v)
{
	if (!plan || !t || !v)
		return 0;
	struct walk_steps *st = &t->steps;
	__u32 slot = st->cand_taken;
	struct chain *c = bpf_map_lookup_elem(&chains, &slot);
	__u32 j = st->cand_frame - 1;
	if (!c || j >= MT_MAX_FRAMES)
		return 0;
	__u32 bad = 0;
	if (!chain_words_hold(&plan->copy, c, c->frames[j].reads, &bad))
		return 0;
	struct chain_scan p = {.c = c, .from = j, .end = c->n};
	if (st->splice_bp_differs)
		bpf_loop(MT_MAX_FRAMES, splice_bp_step, &p, 0);
	if (p.flag & CHAIN_BP_USED)
		return 0;
	__u32 n = st->splice_n, taken = p.end - j;
	/* splice_meet checked that they fit (n + taken <= max); the masks are the verifier's bounds. */
	barrier_var(n);
	barrier_var(taken);
	bpf_probe_read_kernel(&v->rec.ips[n & MT_MAX_FRAMES], (taken & MT_MAX_FRAMES) * 8, &c->ips[j]);
	t->spliced = 1;
	count(MT_COUNTER_UNWIND_SPLICED);
	count_add_keyed(&slot, MT_COUNTER_UNWIND_SPLICED_FRAMES, taken);
	return n + taken;
}

/*
 * Copies the stack from sp into `copy`: `want` bytes, but no further than the end of the page
 * after sp's (the second read fails harmlessly where the stack ends). sp's own page is mapped:
 * it is the stack. Copying costs by the byte: a kept chain asks for just what its walk read.
 */
static __always_inline void copy_stack(struct stack_copy *copy, __u64 sp, __u32 want)
{
	__u32 first = MT_STACK_COPY_PAGE - (sp & (MT_STACK_COPY_PAGE - 1));
	copy->base = sp;
	copy->bytes = 0;
	if (first > want)
		first = want;
	/* clang knows first <= MT_STACK_COPY_PAGE here and drops the check below; 6.1's verifier does
	 * not learn want's bound from `first > want`, and needs that check to bound the read. */
	barrier_var(first);
	if (first == 0 || first > MT_STACK_COPY_PAGE || bpf_probe_read_user(copy->words, first, (void *)sp) != 0)
		return;
	copy->bytes = first;
	__u32 rest = want - first;
	if (rest > MT_STACK_COPY_PAGE)
		rest = MT_STACK_COPY_PAGE;
	if (rest && bpf_probe_read_user((char *)copy->words + first, rest, (void *)(sp + first)) == 0)
		copy->bytes = first + rest;
}

/* The kept chain started where this walk starts: same registers, tables and return instances. */
static __always_inline bool chain_starts_here(struct pt_regs *ctx, struct chain *c, struct walk_plan *plan)
{
	return c->generation == plan->generation && c->tid == plan->tid && c->pc == PT_REGS_IP(ctx) &&
	       c->sp == PT_REGS_SP(ctx) && (!c->bp_used || c->bp == PT_REGS_FP(ctx)) &&
	       c->reads <= MT_CHAIN_READS && c->n <= MT_MAX_FRAMES && chain_returns_equal(&c->returns, &plan->returns);
}

/* Keeps the walk just done (t, frames in s) as the thread's chain, when it can be checked next time. */
static __always_inline void chain_keep(struct chain *c, struct walk_plan *plan, struct walk_trace *t,
				       struct mt_stack_record *s, __u32 n, struct pt_regs *ctx)
{
	__u32 reads = t->reads, end = t->end;
	if ((end != MT_COUNTER_UNWIND_COMPLETE && end != MT_COUNTER_UNWIND_TRUNCATED) || reads > MT_CHAIN_READS ||
	    n > MT_MAX_FRAMES || plan->returns.count > MT_CHAIN_RETURNS)
		return;
	c->generation = 0; /* no chain until all of it is written */
	c->tid = plan->tid;
	c->pc = PT_REGS_IP(ctx);
	c->sp = PT_REGS_SP(ctx);
	c->bp = PT_REGS_FP(ctx);
	c->bp_used = t->bp_register_used;
	c->span = t->span;
	c->n = n;
	c->reads = reads;
	c->end = end;
	c->returns = plan->returns;
	c->known = 0;
	barrier_var(n); /* the masks below are the verifier's bound: kept, though n <= MT_MAX_FRAMES */
	if (bpf_probe_read_kernel(c->addr, reads * 8, t->addr) != 0 ||
	    bpf_probe_read_kernel(c->value, reads * 8, t->value) != 0 ||
	    bpf_probe_read_kernel(c->ips, (n & MT_MAX_FRAMES) * 8, s->ips) != 0 ||
	    bpf_probe_read_kernel(c->frames, (n & MT_MAX_FRAMES) * sizeof(c->frames[0]), t->frames) != 0)
		return;
	/* Hashed once here: each walk the chain answers gets the hash with the frames. */
	c->hash = s->hash = stack_hash(s, 0, n, stack_seed(plan->tgid));
	c->generation = plan->generation;
}

/*
 * The walk, frame by frame, from the registers at an allocator's return into v->rec.ips (frame
 * 0 is the return address into the caller), as cfi_walk_stack planned it (the rows of the
 * process description's generation, 0: each step by frame pointer; a splice candidate; the
 * stack it copied); returns the number of frames, and what the walk read, for its chain, in t.
 *
 * A global function, as is its caller: the verifier checks each once, on its own, and a caller
 * continues from one state (the count is any scalar) instead of one per way the walk can end.
 */
__noinline __u32 walk_frames(struct pt_regs *ctx, struct stack_scratch_value *v, struct walk_plan *plan,
			     struct walk_trace *t)
{
	if (!v || !plan || !t)
		return 0;
	struct cfi_walk w = {
		.pc = PT_REGS_IP(ctx),
		.sp = PT_REGS_SP(ctx),
		.bp = PT_REGS_FP(ctx),
		.v = v,
		.plan = plan,
		.trace = t,
	};
	struct walk_steps *st = &t->steps;
	st->query.tgid = plan->tgid;
	st->query.generation = plan->generation;
	st->query.map.start = st->query.map.end = 0;
	st->query.misses = 0;
	st->query.cache_base = MT_ROW_CACHE_UNSET;
	st->cfi_frames = st->fp_frames = 0;
	/*
	 * A walk that may splice into the slot's chain starts where that chain did, whose check
	 * (chain_answer) copied the stack from this sp as far as the chain's walk read: a walk that
	 * meets the chain reads nothing past it. Words past it (a walk that does not meet the
	 * chain) are read one by one.
	 */
	if (plan->cand_slot >= MT_CHAIN_SLOTS || plan->copy.base != w.sp || plan->copy.bytes > MT_STACK_COPY_BYTES)
		copy_stack(&plan->copy, w.sp, MT_STACK_COPY_BYTES);
	w.copy_base = plan->copy.base;
	w.copy_bytes = plan->copy.bytes;
	t->reads = 0;
	t->span = 0;
	t->end = 0;
	t->bp_register_used = 0;
	t->spliced = 0;
	st->bp_source = BP_FROM_REGISTER;
	st->cand_slot = plan->cand_slot;
	st->cand_frame = 0;
	st->cand_tries = 0;
	struct task_struct *task = bpf_get_current_task_btf();
	ri_load(&w, (__u64)BPF_CORE_READ(task, utask, return_instances));
	bpf_loop(MT_MAX_FRAMES + 1, cfi_frame, &w, 0);
	/*
	 * The tallies through w.trace, and w.n as every counter's key once read: a key or a pointer
	 * kept apart would not fit the call chain's 512 bytes of stack (this frame is at its limit).
	 */
	__u32 n = w.n;
	st = &w.trace->steps;
	count_add_keyed(&w.n, MT_COUNTER_UNWIND_ROW_MISSES, st->query.misses);
	count_add_keyed(&w.n, MT_COUNTER_UNWIND_CFI_FRAMES, st->cfi_frames);
	count_add_keyed(&w.n, MT_COUNTER_UNWIND_FP_FRAMES, st->fp_frames);
	return n;
}

/*
 * s->ips from the kept chain c when this walk would repeat it: returns the number of frames + 1,
 * or 0 when it would not (counted as changed when it started the same; a walk that may splice
 * into c then finds in plan the word to leave out, cand_from, and the stack copied). Global, to
 * keep its stack frame apart from the walk's.
 */
__noinline __u32 chain_answer(struct pt_regs *ctx, struct mt_stack_record *s, struct chain *c, struct walk_plan *plan)
{
	if (!s || !c || !plan)
		return 0;
	plan->cand_from = 0;
	if (!chain_starts_here(ctx, c, plan))
		return 0;
	copy_stack(&plan->copy, PT_REGS_SP(ctx), c->span);
	__u32 bad = 0;
	if (!chain_words_hold(&plan->copy, c, 0, &bad)) {
		/* A splice into c must leave out the word that changed. */
		plan->cand_from = bad + 1;
		count(MT_COUNTER_UNWIND_CHAINS_CHANGED);
		return 0;
	}
	__u32 n = c->n & MT_MAX_FRAMES;
	bpf_probe_read_kernel(s->ips, n * 8, c->ips);
	s->hash = c->hash;
	count(c->end == MT_COUNTER_UNWIND_TRUNCATED ? MT_COUNTER_UNWIND_TRUNCATED : MT_COUNTER_UNWIND_COMPLETE);
	count(MT_COUNTER_UNWIND_CHAINS_MATCHED);
	return n + 1;
}

/*
 * cfi_capture's answer: the frames, MT_WALK_KNOWN when user space has that stack (it needs no
 * seen_stacks lookup), and the slot + 1 of the chain that answered or kept the walk (0: none),
 * for chain_stack_known.
 */
#define MT_WALK_FRAMES 0xffffu
#define MT_WALK_KNOWN (1u << 16)
#define MT_WALK_SLOT_SHIFT 24

/*
 * s->ips from the thread's kept chain when it still holds (chain_cache.h): returns the frames
 * + 1, | MT_WALK_KNOWN, | the chain's slot + 1 << MT_WALK_SLOT_SHIFT. 0: s must be walked
 * (walk_frames), then kept (chain_keep_walk), as this call planned it in plan.
 */
__noinline __u32 cfi_walk_stack(struct pt_regs *ctx, struct mt_stack_record *s, __u32 tgid, __u32 max,
				struct walk_plan *plan)
{
	if (!s || !plan)
		return 0;
	plan->tgid = tgid;
	plan->max = max;
	plan->cand_slot = plan->keep_slot = MT_CHAIN_SLOTS; /* none */
	plan->cand_from = 0;
	plan->generation = 0;
	struct mt_unwind_process *proc = bpf_map_lookup_elem(&unwind_procs, &tgid);
	if (!proc) {
		count(MT_COUNTER_UNWIND_NO_TABLES);
		return 0;
	}
	plan->generation = proc->generation;
	struct task_struct *task = bpf_get_current_task_btf();
	chain_returns_read((struct return_instance *)BPF_CORE_READ(task, utask, return_instances), &plan->returns);
	plan->tid = (__u32)bpf_get_current_pid_tgid();
	__u32 slot = chain_slot(plan->tid, PT_REGS_IP(ctx), PT_REGS_SP(ctx));
	struct chain *kept = bpf_map_lookup_elem(&chains, &slot);
	if (!kept)
		return 0;
	__u32 answered = chain_answer(ctx, s, kept, plan);
	if (answered)
		return answered | (kept->known ? MT_WALK_KNOWN : 0) | ((slot + 1) << MT_WALK_SLOT_SHIFT);
	plan->keep_slot = slot;
	/*
	 * A walk that started as the slot's chain but read another word may splice into it (and is
	 * not kept: the chain stays the one from here). Any other walk is walked whole and kept.
	 */
	if (plan->cand_from)
		plan->cand_slot = slot;
	return 0;
}

/*
 * After walk_frames (n frames in s, what it read in t): the walk is kept in the slot the plan
 * chose, when it can be checked next time. Returns that slot + 1 (0: none).
 */
__noinline __u32 chain_keep_walk(struct pt_regs *ctx, struct mt_stack_record *s, __u32 n, struct walk_plan *plan,
				 struct walk_trace *t)
{
	/* A spliced walk is not kept: its chain would be a copy of the candidate's rest. */
	if (!ctx || !s || !plan || !t || plan->keep_slot >= MT_CHAIN_SLOTS || t->spliced)
		return 0;
	__u32 slot = plan->keep_slot;
	struct chain *kept = bpf_map_lookup_elem(&chains, &slot);
	if (!kept)
		return 0;
	chain_keep(kept, plan, t, s, n, ctx);
	return slot + 1;
}

/*
 * v->rec.ips for the registers at an allocator's return: a kept chain's answer, or walked (at
 * most max frames) and kept. Returns the frames | MT_WALK_KNOWN | the chain's slot (MT_WALK_*).
 */
static __always_inline __u32 cfi_capture(struct pt_regs *ctx, struct stack_scratch_value *v, __u32 tgid, __u32 max)
{
	__u32 nr = 0;
	struct walk_memory *m = bpf_map_lookup_elem(&walk_memory, &nr);
	if (!m)
		return 0;
	nr = cfi_walk_stack(ctx, &v->rec, tgid, max, &m->plan);
	if (nr & MT_WALK_FRAMES)
		return nr - 1; /* frames + 1, and the flag and slot above them */
	nr = walk_frames(ctx, v, &m->plan, &m->trace);
	return nr | (chain_keep_walk(ctx, &v->rec, nr, &m->plan, &m->trace) << MT_WALK_SLOT_SHIFT);
}

/*
 * User space has h now (found seen, or sent): noted in the chain that answered or kept this
 * capture (cfi_capture's answer `walk`), if h is still its stack.
 */
__noinline int chain_stack_known(__u32 walk, __u64 h)
{
	__u32 slot = (walk >> MT_WALK_SLOT_SHIFT) - 1;
	struct chain *c = slot < MT_CHAIN_SLOTS ? bpf_map_lookup_elem(&chains, &slot) : NULL;
	if (c && c->generation && c->hash == h)
		c->known = 1;
	return 0;
}

#endif
