/* SPDX-License-Identifier: MIT */
/*
 * walk_harness.h: the environment src/bpf/walk_env.h declares, defined over plain memory, and
 * the walk itself, compiled from the same headers as the BPF object.
 */
#include "walk_harness.h"

#include <string.h>

#include "bpf/cfi_walk.h"

/* An array map is `entries` values of `size` bytes; a hash map here holds one key at most. */
struct mt_walk_map {
	void *data;
	__u32 size;
	__u32 entries;
	bool hash;
	__u32 key; /* hash: the one key present (entries 1), or none (entries 0) */
};

static __u64 counter_values[MT_COUNTER_MAX];
static struct stack_scratch_value stack_scratch_value;
static struct mt_unwind_process process;
static struct walk_scratch walk_scratch_value;
static struct row_cache_entry row_cache_values[MT_ROW_CACHE_SLOTS];
static struct chain chain_values[MT_CHAIN_SLOTS];

struct mt_walk_map counters = {counter_values, sizeof(__u64), MT_COUNTER_MAX, false, 0};
struct mt_walk_map stack_scratch = {&stack_scratch_value, sizeof(stack_scratch_value), 1, false, 0};
struct mt_walk_map unwind_rows = {NULL, sizeof(struct mt_unwind_row), 0, false, 0};
struct mt_walk_map unwind_procs = {&process, sizeof(process), 0, true, 0};
struct mt_walk_map walk_scratch = {&walk_scratch_value, sizeof(walk_scratch_value), 1, false, 0};
struct mt_walk_map row_cache = {row_cache_values, sizeof(struct row_cache_entry), MT_ROW_CACHE_SLOTS, false, 0};
struct mt_walk_map chains = {chain_values, sizeof(struct chain), MT_CHAIN_SLOTS, false, 0};

static struct {
	__u64 lo, hi;
	const __u64 *words;
} memory;
static __u64 current_tid;
static struct uprobe_task no_returns; /* captures are taken without pending uretprobes */
static struct task_struct current_task = {&no_returns};

void *bpf_map_lookup_elem(struct mt_walk_map *map, const void *key)
{
	__u32 k;
	memcpy(&k, key, sizeof(k));
	if (map->hash)
		return map->entries && k == map->key ? map->data : NULL;
	return k < map->entries ? (char *)map->data + (size_t)k * map->size : NULL;
}

long bpf_probe_read_user(void *dst, __u32 size, const void *addr)
{
	__u64 a = (__u64)addr;
	if (a < memory.lo || a > memory.hi || size > memory.hi - a) {
		memset(dst, 0, size); /* as the kernel's helper leaves it */
		return -14;
	}
	memcpy(dst, (const char *)memory.words + (a - memory.lo), size);
	return 0;
}

long bpf_probe_read_kernel(void *dst, __u32 size, const void *addr)
{
	memmove(dst, addr, size);
	return 0;
}

long bpf_loop(__u32 n, long (*step)(__u64 i, void *ctx), void *ctx, __u64 flags)
{
	(void)flags;
	__u32 i = 0;
	while (i < n && step(i++, ctx) == 0) {
	}
	return i;
}

__u32 bpf_get_smp_processor_id(void) { return 0; }
__u64 bpf_get_current_pid_tgid(void) { return current_tid; }
struct task_struct *bpf_get_current_task_btf(void) { return &current_task; }

void mt_replay_reset(void)
{
	memset(counter_values, 0, sizeof(counter_values));
	memset(&stack_scratch_value, 0, sizeof(stack_scratch_value));
	memset(&process, 0, sizeof(process));
	memset(&walk_scratch_value, 0, sizeof(walk_scratch_value));
	memset(row_cache_values, 0, sizeof(row_cache_values));
	memset(chain_values, 0, sizeof(chain_values));
	unwind_procs.entries = 0;
	unwind_rows.data = NULL;
	unwind_rows.entries = 0;
	memory.lo = memory.hi = 0;
	memory.words = NULL;
}

void mt_replay_process(__u32 tgid, __u32 generation, const struct mt_unwind_mapping *maps, __u32 count,
		       const struct mt_unwind_row *rows, __u32 row_count)
{
	memset(&process, 0, sizeof(process));
	process.count = count < MT_UNWIND_MAPPINGS ? count : MT_UNWIND_MAPPINGS;
	process.generation = generation;
	memcpy(process.maps, maps, process.count * sizeof(maps[0]));
	unwind_procs.key = tgid;
	unwind_procs.entries = 1;
	unwind_rows.data = (void *)rows;
	unwind_rows.entries = row_count;
}

void mt_replay_memory(__u64 lo, __u64 hi, const __u64 *words)
{
	memory.lo = lo;
	memory.hi = hi;
	memory.words = words;
}

__u32 mt_replay_capture(__u32 tid, __u64 pc, __u64 sp, __u64 bp, __u32 max, __u64 *ips)
{
	struct pt_regs regs = {pc, sp, bp};
	struct mt_stack_record *s = &stack_scratch_value.rec;
	current_tid = ((__u64)unwind_procs.key << 32) | tid;
	s->hash = 0;
	__u32 nr = cfi_capture(&regs, s, unwind_procs.key, max) & (MT_WALK_KNOWN - 1);
	memcpy(ips, s->ips, nr * sizeof(ips[0]));
	return nr;
}

__u64 mt_replay_counter(__u32 idx)
{
	return idx < MT_COUNTER_MAX ? counter_values[idx] : 0;
}

__u32 mt_replay_noted(const __u64 **addrs)
{
	*addrs = walk_scratch_value.addr;
	return walk_scratch_value.reads < MT_CHAIN_READS ? walk_scratch_value.reads : MT_CHAIN_READS;
}
