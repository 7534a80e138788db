/* SPDX-License-Identifier: MIT */
/*
 * CPython frames in stack records, shared by the BPF walk (python_walk.h) and user space
 * (symbols/PythonCode). A process that maps a CPython runtime (a `python3.N` executable or a
 * `libpython3.N` library defining `_PyRuntime`) is described in the `python_procs` map: where its
 * `_PyRuntime` is and the offsets of the fields the walk follows, per minor version
 * (symbols/PythonLayout.cpp says where they come from).
 *
 * A Python frame is one slot of mt_stack_record.ips, after the native frames (innermost first
 * in both parts): MT_PY_FRAME | the code object's address | the instruction index (code units
 * from the start of its bytecode) << MT_PY_INDEX_SHIFT, and MT_PY_ENTRY on the outermost frame
 * one call of the eval loop (`_PyEval_EvalFrameDefault`) ran. User space puts each eval loop's
 * frames in place of its native frame. A user address is below 2^47, so no return address has
 * either high bit.
 */
#ifndef MEMTRACK_PYTHON_H
#define MEMTRACK_PYTHON_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#define MT_PY_FRAME (1ULL << 63)
#define MT_PY_ENTRY (1ULL << 62)
#define MT_PY_INDEX_SHIFT 47
#define MT_PY_INDEX_MASK 0x7fffULL /* an index that does not fit is MT_PY_INDEX_MASK: unknown */
#define MT_PY_ADDR_MASK ((1ULL << MT_PY_INDEX_SHIFT) - 1)
#define MT_PY_MAX_FRAMES 64  /* Python frames one walk may add */
#define MT_PY_MAX_THREADS 64 /* thread states searched for the allocating thread's */
/*
 * Bytes of a thread state or a frame the walk reads at once (a power of two): every field it
 * takes from one, in one bpf_probe_read_user instead of one per field (a read costs about as
 * much for 8 bytes as for 200).
 */
#define MT_PY_SPAN 256
/*
 * Bytes the walk reads at a 3.11+ frame: the frame's span and what lies below it, where its
 * callers' frames usually are (an eval call pushes a frame on the thread's data stack above its
 * caller's), so that one read serves several frames. A power of two, >= MT_PY_SPAN + 8.
 */
#define MT_PY_WINDOW 512

static inline __u64 mt_py_slot(__u64 code, __u64 index, int entry)
{
	if (index > MT_PY_INDEX_MASK)
		index = MT_PY_INDEX_MASK;
	return MT_PY_FRAME | (entry ? MT_PY_ENTRY : 0) | (index << MT_PY_INDEX_SHIFT) | (code & MT_PY_ADDR_MASK);
}

/* How a version keeps its frames. */
enum mt_py_frames {
	MT_PY_FRAMES_310 = 1, /* PyFrameObject chain from tstate->frame; int f_lasti; one eval call each */
	MT_PY_FRAMES_311 = 2, /* _PyInterpreterFrame from tstate->cframe->current_frame; prev_instr; is_entry */
	MT_PY_FRAMES_312 = 3, /* as 3.11, but each eval call pushes a shim frame owned by the C stack */
	MT_PY_FRAMES_313 = 4, /* as 3.12, from tstate->current_frame; instr_ptr */
};
#define MT_PY_OWNED_BY_CSTACK 3 /* _PyInterpreterFrame.owner of 3.12+'s shim frames */

/*
 * The perf trampoline (3.12+ under -X perf, or sys.activate_stack_trampoline): copies of
 * _Py_trampoline_func_start in anonymous executable memory, one per code object, each calling
 * the eval loop. They have no CFI, and no frame pointer in 3.12 and 3.13, so the walk takes its
 * rule from here (python_walk.h: python_trampoline_row): at a return address with the
 * trampoline's first `call` bytes before it, CFA = sp + cfa, the caller's rbp at CFA + 8 * rbp8
 * (0: rbp unchanged). Per runtime file (symbols/PythonLayout: python_trampoline_rule).
 */
struct mt_python_trampoline {
	__u8 call; /* bytes from the trampoline's start to its call's return address, <= 16; 0: none */
	__u8 cfa;
	__s8 rbp8;
	__u8 pad[5];
	__u64 code[2]; /* its first `call` bytes, the rest 0 */
};

/* Value of python_procs (key: tgid). Offsets in bytes. */
struct mt_python_proc {
	__u64 runtime;        /* address of _PyRuntime in the process */
	__u32 frames;         /* mt_py_frames */
	__u16 interp_head;    /* _PyRuntime.interpreters.head */
	__u16 threads_head;   /* PyInterpreterState.threads.head (3.10: tstate_head) */
	__u16 tstate_next;    /* PyThreadState.next */
	__u16 tstate_thread;  /* PyThreadState.thread_id: pthread_self(), the thread's fs base */
	__u16 tstate_frame;   /* frame (3.10), cframe (3.11, 3.12), current_frame (3.13) */
	__u16 cframe_current; /* _PyCFrame.current_frame (3.11, 3.12) */
	__u16 frame_code;     /* f_code (f_executable in 3.13) */
	__u16 frame_previous; /* previous (f_back in 3.10) */
	__u16 frame_instr;    /* prev_instr (3.11, 3.12), instr_ptr (3.13), f_lasti (3.10) */
	__u16 frame_owner;    /* is_entry (3.11), owner (3.12+) */
	__u16 code_adaptive;  /* PyCodeObject.co_code_adaptive: the bytecode (3.11+) */
	/* PyCodeObject fields that tell one code object from another at the same address
	 * (mt_python_code); copied from PythonLayout's co_* (PythonLayout::proc_value). */
	__u16 code_filename, code_name /* co_qualname (3.11+), co_name (3.10) */, code_linetable, code_firstlineno;
	/*
	 * What the walk reads of a thread state ([tstate_base, + tstate_span): next, thread_id and
	 * the frame field) and of a frame ([frame_base, + frame_span): code, previous, instr and,
	 * 3.11+, owner), each in one read. Set from the offsets above by mt_py_set_spans.
	 */
	__u16 tstate_base, tstate_span, frame_base, frame_span;
	/* Bytes read at a frame, ending at its span's end rounded up to 8: MT_PY_WINDOW (3.11+), the
	 * span (3.10, whose frames are objects of their own, anywhere in the heap). */
	__u16 frame_read;
	__u16 pad[2];
	struct mt_python_trampoline tramp; /* the runtime file's; call 0: none */
};

/* Widens [*lo, *hi) to hold the field of `size` bytes at `at`; false when `at` is not aligned to it. */
static inline int mt_py_span_add(__u32 *lo, __u32 *hi, __u32 at, __u32 size)
{
	if (at < *lo)
		*lo = at;
	if (at + size > *hi)
		*hi = at + size;
	return at % size == 0;
}

/*
 * Sets p's spans (tstate_*, frame_*, frame_read) from its field offsets. False when a span does not fit
 * MT_PY_SPAN or a field is not aligned to its size (the walk takes each from its span at the
 * offset masked to that alignment): p is then not one the walk can follow. Spans start at an
 * 8-byte field, so each field is as aligned in the read copy as in the interpreter's memory.
 */
static inline int mt_py_set_spans(struct mt_python_proc *p)
{
	__u32 lo = 0xffff, hi = 0;
	int ok = mt_py_span_add(&lo, &hi, p->tstate_next, 8) & mt_py_span_add(&lo, &hi, p->tstate_thread, 8) &
		 mt_py_span_add(&lo, &hi, p->tstate_frame, 8);
	if (!ok || hi - lo > MT_PY_SPAN)
		return 0;
	p->tstate_base = lo;
	p->tstate_span = hi - lo;
	lo = 0xffff, hi = 0;
	ok = mt_py_span_add(&lo, &hi, p->frame_code, 8) & mt_py_span_add(&lo, &hi, p->frame_previous, 8);
	if (p->frames == MT_PY_FRAMES_310)
		ok &= mt_py_span_add(&lo, &hi, p->frame_instr, 4); /* int f_lasti */
	else
		ok &= mt_py_span_add(&lo, &hi, p->frame_instr, 8) & mt_py_span_add(&lo, &hi, p->frame_owner, 1);
	if (!ok || hi - lo > MT_PY_SPAN || lo % 8)
		return 0;
	p->frame_base = lo;
	p->frame_span = hi - lo;
	p->frame_read = p->frames == MT_PY_FRAMES_310 ? (p->frame_span + 7) / 8 * 8 : MT_PY_WINDOW;
	return 1;
}

/*
 * The `python_codes` map (memtrack.bpf.c): the code objects user space has read, each keyed by
 * process and address, with the fields it checked them by (symbols/PythonCode: same_object).
 * A new stack whose Python frames all name code objects still holding these fields needs no
 * pause (MT_STACK_PY_KNOWN): user space names them from what it read then.
 */
struct mt_python_code_key {
	__u32 tgid;
	__u32 zero;
	__u64 addr;
};
struct mt_python_code {
	__u64 type, filename, name, linetable;
	__s32 first_line;
	__u32 zero;
};

#endif
