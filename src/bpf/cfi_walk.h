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

struct cfi_walk {
	__u64 pc, sp, bp;
	__u64 ri;       /* the next pending return instance, 0: none */
	__u64 ri_stack; /* the stack slot its trampoline address sits in */
	__u64 ri_orig;  /* the return address it replaced */
	struct mt_unwind_process *proc;
	__u64 *ips;
	__u32 n;
	__u32 max;
};

static __always_inline void ri_load(struct cfi_walk *w, __u64 ri);

/* Moves to the instance after the current one. */
static __always_inline void ri_next(struct cfi_walk *w)
{
	struct return_instance *r = (struct return_instance *)w->ri;
	ri_load(w, (__u64)BPF_CORE_READ(r, next));
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

/* The return address stored at `slot`, as the program put it there. */
static __always_inline int read_return_address(struct cfi_walk *w, __u64 slot, __u64 *ra)
{
	/* Instances below the slot belong to frames already passed (or popped, like the probed call's). */
	for (int i = 0; i < 4 && w->ri && w->ri_stack < slot; i++)
		ri_next(w);
	if (w->ri && w->ri_stack == slot) {
		*ra = w->ri_orig;
		ri_next(w);
		return 0;
	}
	return bpf_probe_read_user(ra, sizeof(*ra), (void *)slot);
}

/* The process's mapping covering pc, or NULL. */
static __always_inline struct mt_unwind_mapping *find_mapping(struct mt_unwind_process *p, __u64 pc)
{
	__u32 count = p->count;
	if (count == 0 || count > MT_UNWIND_MAPPINGS)
		return NULL;
	__u32 lo = 0, hi = count; /* the answer is the last mapping in [lo, hi) starting at or below pc */
	for (int k = 0; k < 9 && hi - lo > 1; k++) {
		__u32 mid = (lo + hi) / 2;
		if (p->maps[mid & (MT_UNWIND_MAPPINGS - 1)].start <= pc)
			lo = mid;
		else
			hi = mid;
	}
	struct mt_unwind_mapping *m = &p->maps[lo & (MT_UNWIND_MAPPINGS - 1)];
	return pc >= m->start && pc < m->end ? m : NULL;
}

/* The row in force at vaddr among the object's rows, or NULL (MT_CFA_NONE then). */
static __always_inline struct mt_unwind_row *find_row(struct mt_unwind_mapping *m, __u64 vaddr)
{
	__u32 lo = m->row_first, hi = m->row_first + m->row_count;
	if (m->row_count == 0 || vaddr > 0xffffffffULL)
		return NULL;
	for (int k = 0; k < 23 && hi - lo > 1; k++) {
		__u32 mid = lo + (hi - lo) / 2;
		struct mt_unwind_row *r = bpf_map_lookup_elem(&unwind_rows, &mid);
		if (!r)
			return NULL;
		if (r->pc <= vaddr)
			lo = mid;
		else
			hi = mid;
	}
	struct mt_unwind_row *r = bpf_map_lookup_elem(&unwind_rows, &lo);
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
	if (bpf_probe_read_user(&saved_bp, sizeof(saved_bp), (void *)bp) != 0 ||
	    read_return_address(w, bp + 8, &ra) != 0) {
		count(MT_COUNTER_UNWIND_READ_FAILED);
		return 1;
	}
	count(MT_COUNTER_UNWIND_FP_FRAMES);
	w->sp = bp + 16;
	w->bp = saved_bp;
	w->pc = ra;
	return 0;
}

/* Moves w to the caller of the frame at w->pc; returns 1 when the walk ends there. */
static __always_inline long cfi_step(struct cfi_walk *w)
{
	/* Every pc after frame 0's registers is a return address: the call is the byte before. */
	__u64 at = w->pc - 1;
	struct mt_unwind_mapping *m = w->proc ? find_mapping(w->proc, at) : NULL;
	struct mt_unwind_row *r = m ? find_row(m, at - m->bias) : NULL;
	__u32 type = r ? mt_unwind_cfa_type(r) : MT_CFA_NONE;
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
		if (bpf_probe_read_user(&w->bp, sizeof(w->bp), (void *)(cfa + (__s64)r->rbp_off8 * 8)) != 0) {
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
	__u32 n = w->n;
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
 * Fills ips (MT_MAX_FRAMES entries) from the registers at an allocator's return: frame 0 is the
 * return address into the caller. Returns the number of frames.
 */
static __always_inline __u32 cfi_walk_stack(struct pt_regs *ctx, __u32 tgid, __u64 *ips, __u32 max)
{
	struct cfi_walk w = {
		.pc = PT_REGS_IP(ctx),
		.sp = PT_REGS_SP(ctx),
		.bp = PT_REGS_FP(ctx),
		.ips = ips,
		.max = max,
	};
	w.proc = bpf_map_lookup_elem(&unwind_procs, &tgid);
	if (!w.proc)
		count(MT_COUNTER_UNWIND_NO_TABLES);
	struct task_struct *task = bpf_get_current_task_btf();
	ri_load(&w, (__u64)BPF_CORE_READ(task, utask, return_instances));
	bpf_loop(MT_MAX_FRAMES + 1, cfi_frame, &w, 0);
	return w.n;
}

#endif
