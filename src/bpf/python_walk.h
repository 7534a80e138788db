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

/* This thread's PyThreadState, 0 when it has none (a thread the interpreter does not know). */
static __always_inline __u64 py_thread_state(const struct mt_python_proc *p, struct task_struct *task)
{
	const __u64 self = BPF_CORE_READ(task, thread.fsbase);
	__u64 *kept = bpf_task_storage_get(&python_threads, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (kept && *kept && py_read(*kept + p->tstate_thread) == self)
		return *kept;
	__u64 interp = py_read(p->runtime + p->interp_head);
	__u64 t = interp ? py_read(interp + p->threads_head) : 0;
	for (__u32 i = 0; i < MT_PY_MAX_THREADS && t; i++) {
		if (py_read(t + p->tstate_thread) == self) {
			if (kept)
				*kept = t;
			return t;
		}
		t = py_read(t + p->tstate_next);
	}
	return 0;
}

/*
 * The unwind rule at return address pc when the call before it is a CPython perf trampoline's
 * (python.h, mt_python_proc.tramp_*): anonymous code has no row, and the trampoline saves no frame
 * pointer to step by. A copy of the trampoline is known by its code: the tramp_call bytes before
 * pc are the trampoline's first ones. Called by the CFI walk (cfi_walk.h: unwind_row_at) for a pc
 * no mapping covers; false for any other code.
 */
static __always_inline bool python_trampoline_row(__u32 tgid, __u64 pc, struct mt_unwind_row *row)
{
	struct mt_python_proc *p = bpf_map_lookup_elem(&python_procs, &tgid);
	if (!p)
		return false;
	if (p->tramp_call == 0 || p->tramp_call > sizeof(p->tramp_code))
		return false;
	/* 1..16, masked where the verifier sees it (the compiler's form of the check hides it). */
	__u32 n = (p->tramp_call - 1) & (sizeof(p->tramp_code) - 1);
	barrier_var(n);
	n += 1;
	__u64 code[2] = {};
	if (bpf_probe_read_user(code, n, (void *)(pc - n)) != 0)
		return false;
	if (code[0] != p->tramp_code[0] || code[1] != p->tramp_code[1])
		return false;
	row->pc = 0;
	row->cfa_off = p->tramp_cfa;
	row->kind = mt_unwind_kind(MT_CFA_RSP, p->tramp_rbp8 ? MT_RBP_AT_CFA : MT_RBP_SAME);
	row->rbp_off8 = p->tramp_rbp8;
	return true;
}

/*
 * Appends the Python frames of the current thread to v's nr native frames; returns the new
 * count. A global function: the verifier checks its loops once.
 */
__noinline __u32 python_walk(struct stack_scratch_value *v, __u32 nr, __u32 tgid)
{
	if (!v)
		return 0;
	if (!python_frames)
		return nr;
	/* Through the scratch value: a masked index past the record stays inside its spare frames. */
	struct mt_stack_record *s = &v->rec;
	struct mt_python_proc *p = bpf_map_lookup_elem(&python_procs, &tgid);
	if (!p)
		return nr;
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 tstate = py_thread_state(p, task);
	if (!tstate)
		return nr;
	const __u32 kind = p->frames;
	__u64 frame = py_read(tstate + p->tstate_frame);
	if ((kind == MT_PY_FRAMES_311 || kind == MT_PY_FRAMES_312) && frame)
		frame = py_read(frame + p->cframe_current);
	const __u32 first = nr;
	for (__u32 i = 0; i < MT_PY_MAX_FRAMES && frame; i++) {
		if (nr >= MT_MAX_FRAMES)
			break;
		__u64 code = py_read(frame + p->frame_code);
		__u64 index;
		bool entry;
		if (kind == MT_PY_FRAMES_310) {
			__s32 lasti = 0;
			bpf_probe_read_user(&lasti, sizeof(lasti), (void *)(frame + p->frame_instr));
			index = lasti < 0 ? MT_PY_INDEX_MASK : (__u64)lasti;
			entry = true;
		} else {
			__u8 owner = 0;
			bpf_probe_read_user(&owner, sizeof(owner), (void *)(frame + p->frame_owner));
			if (kind != MT_PY_FRAMES_311 && owner == MT_PY_OWNED_BY_CSTACK) {
				/* The shim an eval call pushed: the frame before it was that call's outermost. */
				if (nr > first) {
					__u32 last = nr - 1;
					asm volatile("" : "+r"(last));
					s->ips[last & MT_MAX_FRAMES] |= MT_PY_ENTRY;
				}
				frame = py_read(frame + p->frame_previous);
				continue;
			}
			__u64 instr = py_read(frame + p->frame_instr);
			__u64 base = code + p->code_adaptive;
			index = instr >= base ? (instr - base) / 2 : MT_PY_INDEX_MASK;
			entry = kind == MT_PY_FRAMES_311 && owner;
		}
		if (!code)
			break;
		/* Masked out of the compiler's sight: it knows nr < MT_MAX_FRAMES, the verifier may not. */
		__u32 at = nr;
		asm volatile("" : "+r"(at));
		s->ips[at & MT_MAX_FRAMES] = mt_py_slot(code, index, entry);
		nr++;
		frame = py_read(frame + p->frame_previous);
	}
	return nr;
}

#endif
