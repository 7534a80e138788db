/* SPDX-License-Identifier: MIT */
/*
 * The BPF stack walks (src/bpf/cfi_walk.h, chain_cache.h, python_walk.h) compiled in user space,
 * over one captured process: its unwind description and rows, and captured words (its stack, and
 * the interpreter's structures for Python frames) as the only user memory. The maps are plain memory of one CPU, kept between captures (kept chains, the row
 * cache, counters) until mt_replay_reset. Not thread-safe: one replay at a time.
 */
#ifndef MEMTRACK_REPLAY_WALK_HARNESS_H
#define MEMTRACK_REPLAY_WALK_HARNESS_H

#include <linux/types.h>

#include "bpf/python.h"
#include "bpf/unwind.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Empties every map: no process, no kept chain, no cached row, counters at 0. */
void mt_replay_reset(void);

/* The process the walk runs in: tgid's description (rows[row_first...] per mapping). */
void mt_replay_process(__u32 tgid, __u32 generation, const struct mt_unwind_mapping *maps, __u32 count,
		       const struct mt_unwind_row *rows, __u32 row_count);

/* User memory: the words of each region, lo to hi (8-aligned); the first is the stack. Reads
 * elsewhere fail. The words must outlive the replays. */
struct mt_replay_region {
	__u64 lo, hi;
	const __u64 *words;
};
void mt_replay_memory(const struct mt_replay_region *regions, __u32 count);

/* The process runs CPython (python_walk.h): its description, and the thread's fs base. */
void mt_replay_python(const struct mt_python_proc *p, __u64 fsbase);

/*
 * The thread's pending uretprobes, innermost first: the return address at stack[i] was replaced
 * by the kernel's trampoline and is really orig[i] (at most MT_CHAIN_RETURNS + 2 of them).
 */
void mt_replay_returns(const __u64 *stack, const __u64 *orig, __u32 count);

/* From now, the words of each successful user-memory read of at most MT_PY_WINDOW bytes (not
 * the walk's copies of the stack) go to log (up to capacity). */
void mt_replay_log_reads(__u64 *log, __u32 capacity);
__u32 mt_replay_logged(void);

/*
 * One capture, as memtrack.bpf.c's capture_stack takes it at an allocator's return with these
 * registers in thread tid: the native frames (cfi_capture, at most max <= 127), then the
 * Python ones (python_walk), into ips.
 */
__u32 mt_replay_capture(__u32 tid, __u64 pc, __u64 sp, __u64 bp, __u32 max, __u64 *ips);

/* The user-memory reads (bpf_probe_read_user calls) the last capture's Python walk made. */
__u32 mt_replay_python_reads(void);

/* Counter idx (MT_COUNTER_*) since the reset. */
__u64 mt_replay_counter(__u32 idx);

/* The stack words the last walked capture depended on (its chain's addresses); their count. */
__u32 mt_replay_noted(const __u64 **addrs);

#ifdef __cplusplus
}
#endif

#endif
