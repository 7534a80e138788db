/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The allocating thread's Python frames (python.h), appended to a captured stack. Read from the
 * interpreter's own structures, without its help: _PyRuntime's first interpreter, its thread
 * states (the one whose thread_id is this thread's pthread_self(), the fs base), that thread
 * state's frame chain. Included by memtrack.bpf.c, and by the unit tests' replay harness (all
 * it uses from outside is walk_env.h's).
 *
 * Everything read is user memory the interpreter may be changing under another thread's GIL:
 * each read is checked, a walk ends at the first one that fails, and user space validates what
 * a slot names before it names it (symbols/PythonCode).
 */
#ifndef MEMTRACK_PYTHON_WALK_H
#define MEMTRACK_PYTHON_WALK_H

#include "python.h"
#include "unwind.h"
#include "walk_env.h"

/* CPython's frames appended to stacks (set before load); off: the eval loop's frame stands for them. */
const volatile bool python_frames = true;

MT_WALK_MAP(BPF_MAP_TYPE_HASH, python_procs, __uint(map_flags, BPF_F_NO_PREALLOC); __uint(max_entries, 65536);
	    __type(key, __u32); __type(value, struct mt_python_proc););

/* The thread state found last for this thread: checked with one read (its thread_id) next time. */
MT_WALK_MAP(BPF_MAP_TYPE_TASK_STORAGE, python_threads, __uint(map_flags, BPF_F_NO_PREALLOC); __type(key, int);
	    __type(value, __u64););

static __always_inline __u64 py_read(__u64 addr)
{
	__u64 v = 0;
	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr) != 0)
		return 0;
	return v;
}

/*
 * Reads [addr + base, + span) into v->py: every field the walk takes from a thread state or a
 * frame (mt_python_proc.tstate_*, frame_*), in one read. span is 1..MT_PY_SPAN
 * (mt_py_set_spans), masked where the verifier sees it.
 */
static __always_inline bool py_read_span(struct stack_scratch_value *v, __u64 addr, __u16 base, __u16 span)
{
	__u32 n = (span - 1) & (MT_PY_SPAN - 1);
	barrier_var(n);
	return bpf_probe_read_user(v->py, n + 1, (void *)(addr + base)) == 0;
}

/*
 * The field at `at` bytes into v->py, as aligned there as in the interpreter's memory (each read
 * starts at an 8-byte boundary, and mt_py_set_spans checked the fields' alignment): the mask
 * keeps it inside v->py for the verifier and changes no offset of a field read.
 */
static __always_inline __u64 py_span_u64(const struct stack_scratch_value *v, __u32 at)
{
	return *(const __u64 *)((const char *)v->py + (at & (MT_PY_WINDOW - 8)));
}

static __always_inline __s32 py_span_s32(const struct stack_scratch_value *v, __u32 at)
{
	return *(const __s32 *)((const char *)v->py + (at & (MT_PY_WINDOW - 4)));
}

static __always_inline __u8 py_span_u8(const struct stack_scratch_value *v, __u32 at)
{
	return *((const __u8 *)v->py + (at & (MT_PY_WINDOW - 1)));
}

/*
 * This thread's PyThreadState, 0 when it has none (a thread the interpreter does not know); its
 * span (tstate_*) is left in v->py.
 */
static __always_inline __u64 py_thread_state(struct stack_scratch_value *v, const struct mt_python_proc *p,
					     struct task_struct *task)
{
	const __u64 self = BPF_CORE_READ(task, thread.fsbase);
	const __u16 base = p->tstate_base, span = p->tstate_span;
	const __u32 thread = p->tstate_thread - base;
	__u64 *kept = bpf_task_storage_get(&python_threads, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (kept && *kept && py_read_span(v, *kept, base, span) && py_span_u64(v, thread) == self)
		return *kept;
	__u64 interp = py_read(p->runtime + p->interp_head);
	__u64 t = interp ? py_read(interp + p->threads_head) : 0;
	for (__u32 i = 0; i < MT_PY_MAX_THREADS && t; i++) {
		if (!py_read_span(v, t, base, span))
			return 0;
		if (py_span_u64(v, thread) == self) {
			if (kept)
				*kept = t;
			return t;
		}
		t = py_span_u64(v, p->tstate_next - base);
	}
	return 0;
}

/*
 * The unwind rule at return address pc when the call before it is a CPython perf trampoline's
 * (python.h, mt_python_trampoline): anonymous code has no row, and the trampoline saves no frame
 * pointer to step by. A copy of the trampoline is known by its code: the `call` bytes before
 * pc are the trampoline's first ones. Called by the CFI walk (cfi_walk.h: unwind_row_at) for a pc
 * no mapping covers; false for any other code.
 */
static __always_inline bool python_trampoline_row(__u32 tgid, __u64 pc, struct mt_unwind_row *row)
{
	struct mt_python_proc *p = bpf_map_lookup_elem(&python_procs, &tgid);
	if (!p)
		return false;
	if (p->tramp.call == 0 || p->tramp.call > sizeof(p->tramp.code))
		return false;
	/* 1..16, masked where the verifier sees it (the compiler's form of the check hides it). */
	__u32 n = (p->tramp.call - 1) & (sizeof(p->tramp.code) - 1);
	barrier_var(n);
	n += 1;
	__u64 code[2] = {};
	if (bpf_probe_read_user(code, n, (void *)(pc - n)) != 0)
		return false;
	if (code[0] != p->tramp.code[0] || code[1] != p->tramp.code[1])
		return false;
	row->pc = 0;
	row->cfa_off = p->tramp.cfa;
	row->kind = mt_unwind_kind(MT_CFA_RSP, p->tramp.rbp8 ? MT_RBP_AT_CFA : MT_RBP_SAME);
	row->rbp_off8 = p->tramp.rbp8;
	return true;
}

/* The frame walk's state (bpf_loop's context): one frame a step. */
struct py_frames {
	struct stack_scratch_value *v;
	__u64 frame;    /* the next frame to read, 0: none */
	__u64 adaptive; /* mt_python_proc.code_adaptive */
	/* The user memory v->py holds: [lo, hi), hi == lo when none. */
	__u64 lo, hi;
	__u32 kind;  /* mt_py_frames */
	__u32 nr;    /* frames in v->rec.ips */
	__u32 first; /* the first Python one */
	/* Where a frame's fields are from its span's start; the span's start, length, and what is
	 * read at a frame (frame_read). */
	__u32 code_at, previous_at, instr_at, owner_at;
	__u16 base, span, read;
};

/*
 * v->py from [end - bytes, end), bytes 8..MT_PY_WINDOW and a multiple of 8 (masked where the
 * verifier sees it); false when that memory cannot be read.
 */
static __always_inline bool py_read_window(struct py_frames *w, __u64 end, __u32 bytes)
{
	__u32 n = (bytes - 1) & (MT_PY_WINDOW - 1);
	barrier_var(n);
	n += 1;
	if (bpf_probe_read_user(w->v->py, n, (void *)(end - n)) != 0)
		return false;
	w->lo = end - n;
	w->hi = end;
	return true;
}

/*
 * Frame w->frame: its slot appended, or (3.12+) the shim an eval call pushed noted on the slot
 * before it; then its caller. 1 ends the walk. A bpf_loop step, so the verifier checks it once,
 * not once a frame. The frame's span is taken from the last read when that read held it (its
 * callee's, 3.11+), else read with what lies below it for its callers: frame_read bytes in all,
 * none below the page the span starts in (which may start a mapping: a read that faults costs
 * more than the reads it would save).
 */
static long py_frame_step(__u64 i, void *ctx)
{
	struct py_frames *w = ctx;
	struct stack_scratch_value *v = w->v;
	const __u32 nr = w->nr;
	if (!v || !w->frame || nr >= MT_MAX_FRAMES)
		return 1;
	const __u64 lo = w->frame + w->base, end = (lo + w->span + 7) & ~7ULL;
	if (lo < w->lo || end > w->hi) {
		const __u64 page = lo & ~4095ULL;
		if (!py_read_window(w, end, end - w->read >= page ? w->read : end - page))
			return 1;
	}
	/* The span is inside the read: at + span <= MT_PY_WINDOW. */
	const __u32 at = lo - w->lo;
	const __u64 code = py_span_u64(v, at + w->code_at);
	w->frame = py_span_u64(v, at + w->previous_at);
	const __u32 kind = w->kind;
	__u64 index;
	bool entry;
	if (kind == MT_PY_FRAMES_310) {
		const __s32 lasti = py_span_s32(v, at + w->instr_at);
		index = lasti < 0 ? MT_PY_INDEX_MASK : (__u64)lasti;
		entry = true;
	} else {
		const __u8 owner = py_span_u8(v, at + w->owner_at);
		if (kind != MT_PY_FRAMES_311 && owner == MT_PY_OWNED_BY_CSTACK) {
			/* The shim an eval call pushed: the frame before it was that call's outermost. */
			if (nr > w->first) {
				__u32 last = nr - 1;
				barrier_var(last); /* masked below where the verifier sees it (see the slot's) */
				v->rec.ips[last & MT_MAX_FRAMES] |= MT_PY_ENTRY;
			}
			return 0;
		}
		const __u64 instr = py_span_u64(v, at + w->instr_at), bytecode = code + w->adaptive;
		index = instr >= bytecode ? (instr - bytecode) / 2 : MT_PY_INDEX_MASK;
		entry = kind == MT_PY_FRAMES_311 && owner;
	}
	if (!code)
		return 1;
	/*
	 * Through the scratch value: a masked index past the record stays inside its spare frames.
	 * Masked out of the compiler's sight: it knows nr < MT_MAX_FRAMES and drops the mask, and
	 * 6.1's verifier does not carry that bound to the index (it refused the store).
	 */
	__u32 at_slot = nr;
	barrier_var(at_slot);
	v->rec.ips[at_slot & MT_MAX_FRAMES] = mt_py_slot(code, index, entry);
	w->nr = nr + 1;
	return 0;
}

/*
 * Appends the Python frames of the current thread to v's nr native frames; returns the new
 * count. A global function: the verifier checks it once, not at each caller.
 */
__noinline __u32 python_walk(struct stack_scratch_value *v, __u32 nr, __u32 tgid)
{
	if (!v)
		return 0;
	if (!python_frames)
		return nr;
	struct mt_python_proc *p = bpf_map_lookup_elem(&python_procs, &tgid);
	if (!p)
		return nr;
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 tstate = py_thread_state(v, p, task);
	if (!tstate)
		return nr;
	struct py_frames w = {
		.v = v,
		.frame = py_span_u64(v, p->tstate_frame - p->tstate_base),
		.adaptive = p->code_adaptive,
		.kind = p->frames,
		.nr = nr,
		.first = nr,
		.code_at = p->frame_code - p->frame_base,
		.previous_at = p->frame_previous - p->frame_base,
		.instr_at = p->frame_instr - p->frame_base,
		.owner_at = p->frame_owner - p->frame_base,
		.base = p->frame_base,
		.span = p->frame_span,
		.read = p->frame_read,
	};
	if ((w.kind == MT_PY_FRAMES_311 || w.kind == MT_PY_FRAMES_312) && w.frame)
		w.frame = py_read(w.frame + p->cframe_current);
	bpf_loop(MT_PY_MAX_FRAMES, py_frame_step, &w, 0);
	return w.nr;
}

#endif
