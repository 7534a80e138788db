/* SPDX-License-Identifier: MIT */
/*
 * walk_harness.h: the environment src/bpf/walk_env.h declares, defined over plain memory, and
 * the walk itself, compiled from the same headers as the BPF object.
 */
#include "walk_harness.h"

#include <string.h>

#include "bpf/cfi_walk.h"
#include "bpf/python_walk.h"

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
static struct walk_memory walk_memory_value;
static struct row_cache_entry row_cache_values[MT_ROW_CACHE_SLOTS];
static struct chain chain_values[MT_CHAIN_SLOTS];
static struct mt_python_proc python_proc;
static __u64 python_thread_kept; /* python_threads' value for the one task */

struct mt_walk_map counters = {counter_values, sizeof(__u64), MT_COUNTER_MAX, false, 0};
struct mt_walk_map stack_scratch = {&stack_scratch_value, sizeof(stack_scratch_value), 1, false, 0};
struct mt_walk_map unwind_rows = {NULL, sizeof(struct mt_unwind_row), 0, false, 0};
struct mt_walk_map unwind_procs = {&process, sizeof(process), 0, true, 0};
struct mt_walk_map walk_memory = {&walk_memory_value, sizeof(walk_memory_value), 1, false, 0};
struct mt_walk_map row_cache = {row_cache_values, sizeof(struct row_cache_entry), MT_ROW_CACHE_SLOTS, false, 0};
struct mt_walk_map chains = {chain_values, sizeof(struct chain), MT_CHAIN_SLOTS, false, 0};
struct mt_walk_map python_procs = {&python_proc, sizeof(python_proc), 0, true, 0};
struct mt_walk_map python_threads = {&python_thread_kept, sizeof(python_thread_kept), 1, false, 0};

/* User memory: regions of captured words, not overlapping (the stack first). */
#define MT_REPLAY_REGIONS 4096
static struct mt_replay_region regions[MT_REPLAY_REGIONS];
static __u32 region_count;
/*
 * The words of successful reads of at most MT_PY_WINDOW bytes (a field, or the Python walk's
 * span of a thread state or its frames; not the stack's copies, which the walk notes itself), when logged
 * (mt_replay_log_reads). A stack copy that short logs its words too: kept, they change nothing.
 */
static __u64 *read_log;
static __u32 read_log_cap, read_log_count;
/* bpf_probe_read_user calls, and those of the last capture's Python walk. */
static __u32 read_calls, python_reads;

static __u64 current_tid;
/* The thread's pending uretprobes (none unless mt_replay_returns gave some), innermost first. */
static struct return_instance returns[MT_CHAIN_RETURNS + 2];
static struct uprobe_task utask;
static struct task_struct current_task = {&utask, {0}};

void *bpf_map_lookup_elem(struct mt_walk_map *map, const void *key)
{
	__u32 k;
	memcpy(&k, key, sizeof(k));
	if (map->hash)
		return map->entries && k == map->key ? map->data : NULL;
	return k < map->entries ? (char *)map->data + (size_t)k * map->size : NULL;
}

/* The region holding addr, or NULL. */
static const struct mt_replay_region *region_at(__u64 addr)
{
	for (__u32 i = 0; i < region_count; i++)
		if (addr >= regions[i].lo && addr < regions[i].hi)
			return &regions[i];
	return NULL;
}

long bpf_probe_read_user(void *dst, __u32 size, const void *addr)
{
	const __u64 start = (__u64)addr;
	read_calls++;
	/* Piece by piece: a read may span regions that touch (words captured one by one). */
	for (__u64 a = start; a < start + size;) {
		const struct mt_replay_region *r = region_at(a);
		if (!r) {
			memset(dst, 0, size); /* as the kernel's helper leaves it */
			return -14;
		}
		__u64 n = r->hi - a < start + size - a ? r->hi - a : start + size - a;
		memcpy((char *)dst + (a - start), (const char *)r->words + (a - r->lo), n);
		a += n;
	}
	if (read_log && size && size <= MT_PY_WINDOW)
		for (__u64 w = start & ~7ULL; w < start + size && read_log_count < read_log_cap; w += 8)
			read_log[read_log_count++] = w;
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

void *bpf_task_storage_get(struct mt_walk_map *map, struct task_struct *task, void *value, __u64 flags)
{
	(void)task, (void)value, (void)flags;
	return map->data;
}

void mt_replay_reset(void)
{
	memset(counter_values, 0, sizeof(counter_values));
	memset(&stack_scratch_value, 0, sizeof(stack_scratch_value));
	memset(&process, 0, sizeof(process));
	memset(&walk_memory_value, 0, sizeof(walk_memory_value));
	memset(row_cache_values, 0, sizeof(row_cache_values));
	memset(chain_values, 0, sizeof(chain_values));
	unwind_procs.entries = 0;
	unwind_rows.data = NULL;
	unwind_rows.entries = 0;
	memset(&python_proc, 0, sizeof(python_proc));
	python_procs.entries = 0;
	python_thread_kept = 0;
	current_task.thread.fsbase = 0;
	utask.return_instances = NULL;
	region_count = 0;
	read_log = NULL;
	read_log_cap = read_log_count = 0;
	read_calls = python_reads = 0;
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

void mt_replay_memory(const struct mt_replay_region *r, __u32 count)
{
	region_count = count < MT_REPLAY_REGIONS ? count : MT_REPLAY_REGIONS;
	memcpy(regions, r, region_count * sizeof(r[0]));
}

void mt_replay_python(const struct mt_python_proc *p, __u64 fsbase)
{
	python_proc = *p;
	python_procs.key = unwind_procs.key;
	python_procs.entries = 1;
	current_task.thread.fsbase = fsbase;
}

void mt_replay_returns(const __u64 *stack, const __u64 *orig, __u32 count)
{
	const __u32 n = count < MT_CHAIN_RETURNS + 2 ? count : MT_CHAIN_RETURNS + 2;
	for (__u32 i = 0; i < n; i++) {
		returns[i].stack = stack[i];
		returns[i].orig_ret_vaddr = orig[i];
		returns[i].next = i + 1 < n ? &returns[i + 1] : NULL;
	}
	utask.return_instances = n ? &returns[0] : NULL;
}

void mt_replay_log_reads(__u64 *log, __u32 capacity)
{
	read_log = log;
	read_log_cap = capacity;
	read_log_count = 0;
}

__u32 mt_replay_logged(void)
{
	return read_log_count;
}

__u32 mt_replay_capture(__u32 tid, __u64 pc, __u64 sp, __u64 bp, __u32 max, __u64 *ips)
{
	struct pt_regs regs = {pc, sp, bp};
	struct mt_stack_record *s = &stack_scratch_value.rec;
	current_tid = ((__u64)unwind_procs.key << 32) | tid;
	s->hash = 0;
	__u32 nr = cfi_capture(&regs, &stack_scratch_value, unwind_procs.key, max) & MT_WALK_FRAMES;
	/* As capture_stack: native frames cut at max, then the interpreter's. */
	if (nr > max)
		nr = max;
	const __u32 before = read_calls;
	nr = python_walk(&stack_scratch_value, nr, unwind_procs.key);
	python_reads = read_calls - before;
	memcpy(ips, s->ips, nr * sizeof(ips[0]));
	return nr;
}

__u32 mt_replay_python_reads(void)
{
	return python_reads;
}

__u64 mt_replay_counter(__u32 idx)
{
	return idx < MT_COUNTER_MAX ? counter_values[idx] : 0;
}

__u32 mt_replay_noted(const __u64 **addrs)
{
	const struct walk_trace *t = &walk_memory_value.trace;
	*addrs = t->addr;
	return t->reads < MT_CHAIN_READS ? t->reads : MT_CHAIN_READS;
}
