/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The user stack walked by the unwind rows user space compiles from each object's CFI
 * (unwind.h), for code built without frame pointers. Included once, by memtrack.bpf.c, after
 * its count().
 *
 * Each frame: find the process's mapping of the pc, the object's row for it, compute the CFA,
 * read the return address at CFA - 8 and the caller's rbp where the row says. A pc no row
 * covers (JIT code, [vdso], an object without CFI) is stepped by frame pointer, as
 * bpf_get_stack would. Pending uretprobes have replaced return addresses on the stack with the
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

#include "unwind.h"

/* Every object's rows, one range per object (resized before load, written by user space). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1 << 22);
	__type(key, __u32);
	__type(value, struct mt_unwind_row);
} unwind_rows SEC(".maps");

/* tgid -> its executable mappings and their rows; copied to a forked child, gone at exec and exit. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct mt_unwind_process);
} unwind_procs SEC(".maps");

#define MT_STACK_COPY_PAGE 4096
#define MT_STACK_COPY_BYTES (2 * MT_STACK_COPY_PAGE)

struct stack_copy {
	__u64 words[MT_STACK_COPY_BYTES / 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stack_copy);
} stack_copy_scratch SEC(".maps");

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

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MT_ROW_CACHE_SLOTS); /* resized before load: MT_ROW_CACHE_SLOTS per CPU */
	__type(key, __u32);
	__type(value, struct row_cache_entry);
} row_cache SEC(".maps");

/*
 * The row in force at a return address, asked of unwind_row_at. The previous frame's mapping
 * stays in it: callers are often in the same object.
 */
struct row_query {
	__u64 at;
	__u32 tgid, generation;
	struct mt_unwind_mapping map; /* end 0: none */
	struct mt_unwind_row row;     /* the answer; MT_CFA_NONE when no row covers `at` */
};

struct cfi_walk {
	__u64 pc, sp, bp;
	__u64 ri;       /* the next pending return instance, 0: none */
	__u64 ri_stack; /* the stack slot its trampoline address sits in */
	__u64 ri_orig;  /* the return address it replaced */
	bool has_tables; /* the process is described in unwind_procs */
	__u64 *ips;
	struct stack_copy *copy;
	__u64 copy_base;  /* the address copy->words[0] holds */
	__u32 copy_bytes; /* how much of the stack from copy_base is in the copy */
	__u32 n;
	__u32 max;
	struct row_query query;
};

/* The 8 bytes of stack at addr, from the copy when it holds them. */
static __always_inline int read_stack(struct cfi_walk *w, __u64 addr, __u64 *out)
{
	__u64 off = addr - w->copy_base;
	struct stack_copy *c = w->copy;
	if (c && off < w->copy_bytes && !(off & 7)) {
		/* The mask only restates off < copy_bytes <= MT_STACK_COPY_BYTES for the verifier. */
		*out = c->words[(off / 8) & (MT_STACK_COPY_BYTES / 8 - 1)];
		return 0;
	}
	return bpf_probe_read_user(out, sizeof(*out), (void *)addr);
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
	__u64 bp = w->bp, ra = 0, saved_bp = 0;
	if (!bp || bp < w->sp || (bp & 7)) {
		count(MT_COUNTER_UNWIND_COMPLETE); /* no frame pointer to follow: as far as it goes */
		return 1;
	}
	if (read_stack(w, bp, &saved_bp) != 0 || read_return_address(w, bp + 8, &ra) != 0) {
		count(MT_COUNTER_UNWIND_READ_FAILED);
		return 1;
	}
	count(MT_COUNTER_UNWIND_FP_FRAMES);
	w->sp = bp + 16;
	w->bp = saved_bp;
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
	__u32 slot = bpf_get_smp_processor_id() * MT_ROW_CACHE_SLOTS +
		     (((__u32)(at ^ (at >> 12)) * 2654435761u >> 20) & (MT_ROW_CACHE_SLOTS - 1));
	struct row_cache_entry *e = bpf_map_lookup_elem(&row_cache, &slot);
	if (e && e->pc == at && e->tgid == q->tgid && e->generation == q->generation) {
		q->row = e->row;
		return 0;
	}
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
	struct row_query *q = &w->query;
	q->at = w->pc - 1;
	struct mt_unwind_row row = {};
	if (w->has_tables) {
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
		count(MT_COUNTER_UNWIND_COMPLETE);
		return 1;
	case MT_CFA_RSP:
		cfa = w->sp + r->cfa_off;
		break;
	case MT_CFA_RBP:
		cfa = w->bp + r->cfa_off;
		break;
	case MT_CFA_PLT:
		cfa = w->sp + r->cfa_off + ((w->pc & 15) >= (__u64)(__u8)r->rbp_off8 ? 8 : 0);
		break;
	default:
		count(MT_COUNTER_UNWIND_UNSUPPORTED);
		return 1;
	}
	if (cfa <= w->sp) {
		count(MT_COUNTER_UNWIND_BAD_FRAME);
		return 1;
	}
	__u64 ra = 0;
	if (read_return_address(w, cfa - 8, &ra) != 0) {
		count(MT_COUNTER_UNWIND_READ_FAILED);
		return 1;
	}
	switch (mt_unwind_rbp_rule(r)) {
	case MT_RBP_SAME:
		break;
	case MT_RBP_AT_CFA:
		if (read_stack(w, cfa + (__s64)r->rbp_off8 * 8, &w->bp) != 0) {
			count(MT_COUNTER_UNWIND_READ_FAILED);
			return 1;
		}
		break;
	default:
		w->bp = 0;
		break;
	}
	count(MT_COUNTER_UNWIND_CFI_FRAMES);
	w->sp = cfa;
	w->pc = ra;
	return 0;
}

static long cfi_frame(__u64 i, void *ctx)
{
	struct cfi_walk *w = ctx;
	__u32 n = opaque(w->n);
	if (n >= w->max || n >= MT_MAX_FRAMES) {
		count(MT_COUNTER_UNWIND_TRUNCATED);
		return 1;
	}
	if (!w->pc) {
		count(MT_COUNTER_UNWIND_COMPLETE);
		return 1;
	}
	w->ips[n] = w->pc;
	w->n = n + 1;
	return cfi_step(w);
}

/*
 * Fills s->ips from the registers at an allocator's return: frame 0 is the
 * return address into the caller. Returns the number of frames. Each frame is counted as it is
 * found: adding the counts up in the walk and once at its end made the verifier's states differ
 * by them, and loading took 0.2 s longer.
 *
 * A global function: the verifier checks it once, on its own, and its caller continues from one
 * state (the count is any scalar) instead of one per way the walk can end.
 */
__noinline __u32 cfi_walk_stack(struct pt_regs *ctx, struct mt_stack_record *s, __u32 tgid, __u32 max)
{
	if (!s)
		return 0;
	struct cfi_walk w = {
		.pc = PT_REGS_IP(ctx),
		.sp = PT_REGS_SP(ctx),
		.bp = PT_REGS_FP(ctx),
		.ips = s->ips,
		.max = max,
	};
	struct mt_unwind_process *proc = bpf_map_lookup_elem(&unwind_procs, &tgid);
	if (!proc) {
		count(MT_COUNTER_UNWIND_NO_TABLES);
	} else {
		w.has_tables = true;
		w.query.generation = proc->generation;
	}
	w.query.tgid = tgid;
	__u32 zero = 0;
	w.copy = bpf_map_lookup_elem(&stack_copy_scratch, &zero);
	if (w.copy) {
		/* sp's own page is mapped (it is the stack): it can always be copied. */
		__u32 first = MT_STACK_COPY_PAGE - (w.sp & (MT_STACK_COPY_PAGE - 1));
		w.copy_base = w.sp;
		if (first <= MT_STACK_COPY_PAGE && bpf_probe_read_user(w.copy->words, first, (void *)w.sp) == 0) {
			w.copy_bytes = first;
			if (bpf_probe_read_user((char *)w.copy->words + first, MT_STACK_COPY_PAGE, (void *)(w.sp + first)) == 0)
				w.copy_bytes = first + MT_STACK_COPY_PAGE;
		} else {
			w.copy = NULL;
		}
	}
	struct task_struct *task = bpf_get_current_task_btf();
	ri_load(&w, (__u64)BPF_CORE_READ(task, utask, return_instances));
	bpf_loop(MT_MAX_FRAMES + 1, cfi_frame, &w, 0);
	return w.n;
}

#endif
