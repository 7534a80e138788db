/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the stack walks (cfi_walk.h, chain_cache.h, python_walk.h) take from their surroundings,
 * and nothing else: the helpers they call, the counters they add to, the record their frames go
 * into (stack_scratch) and stack_hash. In the BPF program these are libbpf's helpers and the
 * program's maps; compiled in user space (no __bpf__), the helpers and maps are declared here for
 * a harness to define (tests/unit/replay: user memory is captured words, maps are plain memory),
 * so the same walks run over captured stacks in the unit tests.
 */
#ifndef MEMTRACK_WALK_ENV_H
#define MEMTRACK_WALK_ENV_H

#include "python.h"
#include "record.h"

#ifdef __bpf__
/* A map the walk uses: defined for the BPF object; in user space, the harness's. */
#define MT_WALK_MAP(kind, name, ...) \
	struct { \
		__uint(type, kind); \
		__VA_ARGS__ \
	} name SEC(".maps")
#else
#include <stdbool.h>
#include <stddef.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#define __noinline __attribute__((noinline))
#define barrier_var(v) __asm__ volatile("" : "+r"(v))

/* A map, as the harness keeps it: bpf_map_lookup_elem(&name, &key) finds its element. */
struct mt_walk_map;
#define MT_WALK_MAP(kind, name, ...) extern struct mt_walk_map name

/* The kernel's objects the walk reads, as far as it reads them. */
struct return_instance {
	__u64 stack;
	__u64 orig_ret_vaddr;
	struct return_instance *next;
};
struct uprobe_task {
	struct return_instance *return_instances;
};
struct thread_struct {
	__u64 fsbase;
};
struct task_struct {
	struct uprobe_task *utask;
	struct thread_struct thread;
};
struct pt_regs {
	__u64 ip, sp, bp;
};
#define PT_REGS_IP(r) ((r)->ip)
#define PT_REGS_SP(r) ((r)->sp)
#define PT_REGS_FP(r) ((r)->bp)
/* Kernel memory is the harness's own: a read is a dereference. */
#define MT_CORE_READ2(p, a) ((p)->a)
#define MT_CORE_READ3(p, a, b) ((p)->a->b)
#define MT_CORE_READ_PICK(_1, _2, _3, name, ...) name
#define BPF_CORE_READ(...) MT_CORE_READ_PICK(__VA_ARGS__, MT_CORE_READ3, MT_CORE_READ2, none)(__VA_ARGS__)

/* libbpf's helpers, as the walk calls them; the harness defines them. */
void *bpf_map_lookup_elem(struct mt_walk_map *map, const void *key);
long bpf_probe_read_user(void *dst, __u32 size, const void *addr);
long bpf_probe_read_kernel(void *dst, __u32 size, const void *addr);
long bpf_loop(__u32 n, long (*step)(__u64 i, void *ctx), void *ctx, __u64 flags);
__u32 bpf_get_smp_processor_id(void);
__u64 bpf_get_current_pid_tgid(void);
struct task_struct *bpf_get_current_task_btf(void);
#define BPF_LOCAL_STORAGE_GET_F_CREATE 1
void *bpf_task_storage_get(struct mt_walk_map *map, struct task_struct *task, void *value, __u64 flags);
#endif

/* Counters (MT_COUNTER_*), per CPU, read and summed by user space. */
MT_WALK_MAP(BPF_MAP_TYPE_PERCPU_ARRAY, counters, __uint(max_entries, MT_COUNTER_MAX); __type(key, __u32);
	    __type(value, __u64););

/* Adds n to counter idx, with *key (the caller's stack) as the lookup's key. */
static __always_inline void count_add_keyed(__u32 *key, __u32 idx, __u64 n)
{
	*key = idx;
	__u64 *v = (__u64 *)bpf_map_lookup_elem(&counters, key);
	if (v)
		__sync_fetch_and_add(v, n);
}

static __always_inline void count_add(__u32 idx, __u64 n)
{
	count_add_keyed(&idx, idx, n);
}

static __always_inline void count(__u32 idx)
{
	count_add(idx, 1);
}

/*
 * The stack being captured, per CPU. Spare frames past the record: a copy to a frame index
 * masked with MT_MAX_FRAMES, of a count masked the same way (the verifier's proof of bounds),
 * stays inside the value.
 */
struct stack_scratch_value {
	struct mt_stack_record rec;
	__u64 spare[MT_MAX_FRAMES + 1];
	/* The Python walk's last read of a thread state or of frames (python_walk.h). */
	__u64 py[MT_PY_WINDOW / 8];
};

MT_WALK_MAP(BPF_MAP_TYPE_PERCPU_ARRAY, stack_scratch, __uint(max_entries, 1); __type(key, __u32);
	    __type(value, struct stack_scratch_value););

/* stack_hash's start for process tgid's stacks (addresses mean something per process). */
static __always_inline __u64 stack_seed(__u32 tgid)
{
	return 0xcbf29ce484222325ULL ^ tgid;
}

/*
 * FNV-1a over s's frames [from, nr), on from h: stack_seed for a whole stack, or the hash of
 * its frames before `from` (a stack's Python frames go on from its native frames' hash, which a
 * kept chain has); never 0. A global function: the verifier checks its loop once, not at each
 * caller.
 */
__noinline __u64 stack_hash(struct mt_stack_record *s, __u32 from, __u32 nr, __u64 h)
{
	if (!s)
		return 1;
	for (__u32 k = 0; k < MT_MAX_FRAMES; k++) {
		__u32 i = from + k;
		barrier_var(i); /* checked below where the verifier sees it, not walked as a pointer */
		if (i >= nr || i >= MT_MAX_FRAMES)
			break;
		h = (h ^ s->ips[i]) * 0x100000001b3ULL;
	}
	h ^= h >> 31;
	return h ? h : 1;
}

#endif
