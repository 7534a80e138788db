/* SPDX-License-Identifier: MIT */
/*
 * The BPF stack walk (src/bpf/cfi_walk.h, chain_cache.h) compiled in user space, over one
 * captured process: its unwind description and rows, and an image of its stack as the only user
 * memory. The maps are plain memory of one CPU, kept between captures (kept chains, the row
 * cache, counters) until mt_replay_reset. Not thread-safe: one replay at a time.
 */
#ifndef MEMTRACK_REPLAY_WALK_HARNESS_H
#define MEMTRACK_REPLAY_WALK_HARNESS_H

#include <linux/types.h>

#include "bpf/unwind.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Empties every map: no process, no kept chain, no cached row, counters at 0. */
void mt_replay_reset(void);

/* The process the walk runs in: tgid's description (rows[row_first...] per mapping). */
void mt_replay_process(__u32 tgid, __u32 generation, const struct mt_unwind_mapping *maps, __u32 count,
		       const struct mt_unwind_row *rows, __u32 row_count);

/* User memory: the words from lo to hi (hi - lo bytes, lo 8-aligned); reads elsewhere fail. */
void mt_replay_memory(__u64 lo, __u64 hi, const __u64 *words);

/*
 * One capture, as memtrack.bpf.c's capture_stack takes it (cfi_capture) at an allocator's
 * return with these registers in thread tid: the frames into ips (at most max, <= 127);
 * *known: answered by a kept chain user space had been told of.
 */
__u32 mt_replay_capture(__u32 tid, __u64 pc, __u64 sp, __u64 bp, __u32 max, __u64 *ips);

/* Counter idx (MT_COUNTER_*) since the reset. */
__u64 mt_replay_counter(__u32 idx);

/* The stack words the last walked capture depended on (its chain's addresses); their count. */
__u32 mt_replay_noted(const __u64 **addrs);

#ifdef __cplusplus
}
#endif

#endif
