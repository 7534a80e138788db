// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Kernel side of memtrack: allocator uprobes (attached as uprobe_multi links, one program for
 * every entry and one for every return, the function told apart by the BPF cookie), syscall
 * tracepoints for the memory-mapping calls, and process-life tracepoints that keep the tracked
 * set equal to the command and all its descendants.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "record.h"
#include "nesting.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define SIGSTOP 19
#define SIGCONT 18

/* Set before load (rodata). */
const volatile __u64 stop_bytes = ~0ULL; /* ring data at or above this: SIGSTOP the producer */
const volatile __u64 wakeup_bytes = 0;   /* below this fill, do not wake the consumer */
const volatile bool capture_stacks = true;
const volatile __u32 max_frames = 64;            /* <= MT_MAX_FRAMES */
const volatile __u64 stack_stop_bytes = ~0ULL;   /* the stacks ring's stop watermark */
/*
 * 1: user space gives tracked processes allocator links of their own (filtered to the process,
 * so other processes do not even trap), and holds each new process in spawn_stopped until it
 * has decided how its probes reach it (own links, or the shared ones past a number of
 * processes). 0: shared links only, attached at start.
 */
const volatile bool per_process_links = false;

/* Kernel 6.13+; called only when per_process_links, which user space sets on such kernels. */
extern int bpf_send_signal_task(struct task_struct *task, int sig, enum pid_type type, __u64 value) __ksym __weak;

/* Shared with user space through the skeleton's mmapped .bss. */
__u32 recording;          /* the recording flag: 0 off, 1 on */
unsigned long stops_outstanding; /* entries in pressure_stopped; lets user space skip the map walk */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24); /* resized before load */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22); /* resized before load */
} stacks SEC(".maps");

/* New processes of the tracked tree (struct mt_spawn): each wakes user space at once. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} spawns SEC(".maps");

/* A map of processes BPF paused (tgid -> struct mt_stop); user space resumes them (StopRelease). */
#define MT_STOP_MAP(name)                                \
	struct {                                         \
		__uint(type, BPF_MAP_TYPE_HASH);         \
		__uint(map_flags, BPF_F_NO_PREALLOC);    \
		__uint(max_entries, 65536);              \
		__type(key, __u32);                      \
		__type(value, struct mt_stop);           \
	} name SEC(".maps")

/* New processes held stopped until user space has attached their probes (per_process_links). */
MT_STOP_MAP(spawn_stopped);

/* Hashes of stacks already sent: each distinct stack crosses the ring once (again after eviction). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u8);
} seen_stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mt_stack_record);
} stack_scratch SEC(".maps");

/*
 * Processes whose mappings user space has read since they started, exec'd or mapped new code.
 * The first stack of a process missing here pauses it (snapshot_stopped) until the Symbolizer
 * has read /proc/PID/maps, so a process that allocates and exits at once is still symbolized.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} maps_known SEC(".maps");

MT_STOP_MAP(snapshot_stopped);

/* Thread group ids of the command and its descendants. */
/* Not preallocated: a preallocated 64 Ki-entry hash costs ~40 ms at start-up. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u32);
} tracked SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MT_COUNTER_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* Producers paused for ring pressure; PressureControl resumes them. */
MT_STOP_MAP(pressure_stopped);

/* Per-thread state: the nesting frames and the arguments saved between entry and return. */
struct thread_state {
	struct mt_frames frames;
	__u64 arg0, arg1, arg2;
	__u32 func;
	__u32 map_func;                     /* the mapping wrapper in flight (mt_func) */
	__u64 map_sp;                       /* its entry stack pointer; 0: none to record */
	__u64 map_arg0, map_arg1, map_arg2; /* its arguments */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_state);
} threads SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);
	if (v)
		__sync_fetch_and_add(v, 1);
}

static __always_inline bool current_tracked(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	return bpf_map_lookup_elem(&tracked, &tgid) != NULL;
}

static __always_inline struct thread_state *state(bool create)
{
	struct task_struct *task = bpf_get_current_task_btf();
	return bpf_task_storage_get(&threads, task, 0, create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

/*
 * Pause the current process and publish it in `stopped_map`, whose owner resumes it. Signal
 * first, then publish: a SIGCONT sent by user space for a published entry always comes after
 * this SIGSTOP, so the process can never stay stopped behind our back.
 */
static __always_inline bool stop_current(void *stopped_map)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct mt_stop *cur = bpf_map_lookup_elem(stopped_map, &tgid);
	if (cur && !cur->resuming)
		return false;
	if (bpf_send_signal(SIGSTOP) != 0) {
		count(MT_COUNTER_SIGNAL_FAILED);
		return false;
	}
	struct task_struct *task = bpf_get_current_task_btf();
	struct mt_stop stop = {
		.stop_ns = bpf_ktime_get_ns(),
		.start_boottime = BPF_CORE_READ(task, group_leader, start_boottime),
		.resuming = 0,
	};
	return bpf_map_update_elem(stopped_map, &tgid, &stop, cur ? BPF_ANY : BPF_NOEXIST) == 0;
}

/* Pause the producer when a ring is nearly full (`fill` bytes); PressureControl resumes it. */
static __always_inline void apply_pressure_at(__u64 fill, __u64 stop_at)
{
	if (fill < stop_at)
		return;
	if (stop_current(&pressure_stopped)) {
		__sync_fetch_and_add(&stops_outstanding, 1);
		count(MT_COUNTER_STOPS);
	}
}

static __always_inline void apply_pressure(void *ring, __u64 stop_at)
{
	apply_pressure_at(bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA), stop_at);
}

static __always_inline void emit_record(__u32 kind, __u64 addr, __u64 size, __u64 old_addr, __u32 flags,
					bool pressure, __u64 stack_hash)
{
	struct mt_record *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		count(MT_COUNTER_DROPPED);
		/* A full ring must pause this producer too, or it keeps losing records. */
		if (pressure)
			apply_pressure(&events, stop_bytes);
		return;
	}
	__u64 id = bpf_get_current_pid_tgid();
	r->timestamp = bpf_ktime_get_ns();
	r->addr = addr;
	r->size_kind = mt_pack_size_kind(size, kind, flags);
	r->old_addr = old_addr;
	r->stack_hash = stack_hash;
	r->pid = id >> 32;
	r->tid = (__u32)id;
	/* One look at the fill (this record included) decides both the wake-up and the pause. */
	__u64 fill = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	bpf_ringbuf_submit(r, fill < wakeup_bytes ? BPF_RB_NO_WAKEUP : 0);
	if (pressure)
		apply_pressure_at(fill, stop_bytes);
}

static __always_inline void emit(__u32 kind, __u64 addr, __u64 size, __u64 old_addr, __u32 flags)
{
	emit_record(kind, addr, size, old_addr, flags, true, 0);
}

/*
 * The user stack at an allocator's return (frame 0 is the return address into its caller),
 * hashed; the full stack goes to the stacks ring only the first time its hash is seen.
 * Returns the hash, 0 when no stack could be captured.
 */
static __always_inline __u64 capture_stack(struct pt_regs *ctx)
{
	if (!capture_stacks)
		return 0;
	__u32 zero = 0;
	struct mt_stack_record *s = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!s)
		return 0;
	long bytes = bpf_get_stack(ctx, s->ips, sizeof(s->ips), BPF_F_USER_STACK);
	if (bytes <= 0) {
		count(MT_COUNTER_STACK_ERRORS);
		return 0;
	}
	__u32 nr = bytes / 8;
	if (nr > max_frames)
		nr = max_frames;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	/* FNV-1a over the frames, seeded with the process: addresses mean something per process. */
	__u64 h = 0xcbf29ce484222325ULL ^ tgid;
	for (__u32 i = 0; i < MT_MAX_FRAMES; i++) {
		if (i >= nr)
			break;
		h = (h ^ s->ips[i]) * 0x100000001b3ULL;
	}
	h ^= h >> 31;
	if (!h)
		h = 1;
	count(MT_COUNTER_STACKS_CAPTURED);
	if (bpf_map_lookup_elem(&seen_stacks, &h))
		return h;

	bool new_maps = bpf_map_lookup_elem(&maps_known, &tgid) == NULL;
	s->hash = h;
	s->pid = tgid;
	s->nr = nr;
	s->flags = new_maps ? MT_STACK_NEW_MAPS : 0;
	/*
	 * The pause is published before the record goes out: the Symbolizer answers the record by
	 * resuming the process, and a record read before its pause was published (a producer
	 * preempted between the two) left the process stopped for good.
	 */
	bool held = new_maps && stop_current(&snapshot_stopped);
	if (bpf_ringbuf_output(&stacks, s, MT_STACK_HEADER_BYTES + (nr & MT_MAX_FRAMES) * 8, 0) != 0) {
		count(MT_COUNTER_STACKS_DROPPED); /* not marked seen: the next occurrence retries */
		if (held) {
			/* No record will ask for this pause to end: take it back. */
			bpf_map_delete_elem(&snapshot_stopped, &tgid);
			bpf_send_signal(SIGCONT);
		}
		apply_pressure(&stacks, stack_stop_bytes);
		return h;
	}
	count(MT_COUNTER_STACKS_SENT);
	__u8 one = 1;
	bpf_map_update_elem(&seen_stacks, &h, &one, BPF_ANY);
	if (new_maps)
		bpf_map_update_elem(&maps_known, &tgid, &one, BPF_ANY);
	if (held)
		count(MT_COUNTER_SNAPSHOT_STOPS);
	apply_pressure(&stacks, stack_stop_bytes);
	return h;
}

static __always_inline void emit_allocation(struct pt_regs *ctx, __u32 kind, __u64 addr, __u64 size,
					    __u64 old_addr, __u32 flags)
{
	emit_record(kind, addr, size, old_addr, flags, true, capture_stack(ctx));
}

/* ---- memory mappings ----
 * Probes on the C library's wrappers (mmap, munmap, mremap, brk), attached like the allocator
 * probes, per process. Raw sys_enter/sys_exit tracepoints put every syscall of every process on
 * the kernel's slow syscall path while memtrack ran (measured: +0.3 us per syscall in untracked
 * processes, and in the uretprobe syscall behind each allocator return). What they saw and these
 * do not: mappings made by raw syscalls, and the dynamic loader's own (libraries it loads).
 */

#define PROT_EXEC 0x4
#define MAP_FAILED ((__u64)-1)

static __always_inline bool is_mapping(__u32 func)
{
	return func >= MT_FUNC_FIRST_MAPPING;
}

/* New code in the process: stacks from now on need its mappings read again. */
static __always_inline void forget_mappings(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	bpf_map_delete_elem(&maps_known, &tgid);
}

/* A mapping wrapper's entry: remembered unless an allocator call of this thread issued it. */
static __always_inline void mapping_entry(struct thread_state *st, struct pt_regs *ctx, __u32 func, __u64 sp)
{
	__u64 a0 = PT_REGS_PARM1(ctx), a1 = PT_REGS_PARM2(ctx);
	/* Only munmap and mremap name a range that may hold a block freed just before. */
	bool ranged = func == MT_FUNC_MUNMAP || func == MT_FUNC_MREMAP;
	if (func == MT_FUNC_DLOPEN || mt_syscall_internal(&st->frames, sp, ranged ? a0 : 0, ranged ? a1 : 0)) {
		st->map_sp = 0;
		return;
	}
	st->map_func = func;
	st->map_sp = sp;
	st->map_arg0 = a0;
	st->map_arg1 = a1;
	st->map_arg2 = PT_REGS_PARM3(ctx);
}

static __always_inline void mapping_return(struct pt_regs *ctx, __u32 func)
{
	if (func == MT_FUNC_DLOPEN) {
		forget_mappings();
		return;
	}
	struct thread_state *st = state(false);
	/* The return address sits where the entry's stack pointer pointed. */
	if (!st || !st->map_sp || PT_REGS_SP(ctx) != st->map_sp + 8 || st->map_func != func)
		return;
	st->map_sp = 0;
	if (!recording)
		return;
	__u64 ret = PT_REGS_RC(ctx);
	switch (func) {
	case MT_FUNC_MMAP:
		if (ret == MAP_FAILED)
			break;
		mt_mapping_created(&st->frames);
		if (st->map_arg2 & PROT_EXEC)
			forget_mappings();
		emit(MT_KIND_MMAP, ret, st->map_arg1, 0, 0);
		break;
	case MT_FUNC_MUNMAP:
		if ((int)ret == 0)
			emit(MT_KIND_MUNMAP, st->map_arg0, st->map_arg1, 0, 0);
		break;
	case MT_FUNC_MREMAP:
		if (ret == MAP_FAILED)
			break;
		/* The artifact has no remap kind: the old range goes, the new one comes. */
		emit(MT_KIND_MUNMAP, st->map_arg0, st->map_arg1, 0, 0);
		emit(MT_KIND_MMAP, ret, st->map_arg2, 0, 0);
		break;
	case MT_FUNC_BRK:
		/* brk(0) only asks for the break. */
		if ((int)ret == 0 && st->map_arg0 != 0)
			emit(MT_KIND_BRK, st->map_arg0, 0, 0, 0);
		break;
	}
}

/*
 * Through a process's own link the kernel ran us for that process only. Through a shared link,
 * only for a tracked process without links of its own (which gets its events through those):
 * each process is served by exactly one of the two, decided before it first runs.
 */
static __always_inline bool probe_applies(__u64 cookie)
{
	if (cookie & MT_COOKIE_OWN_LINK)
		return true;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u32 *how = bpf_map_lookup_elem(&tracked, &tgid);
	return how && *how == MT_TRACKED_SHARED;
}

SEC("uprobe")
int alloc_entry(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	if (!probe_applies(cookie))
		return 0;
	struct thread_state *st = state(true);
	if (!st)
		return 0;
	__u32 func = MT_COOKIE_FUNC(cookie);
	/* The stack pointer at the call's entry, pointing at its return address. */
	__u64 sp = PT_REGS_SP(ctx) + MT_COOKIE_PUSHED(cookie);

	if (is_mapping(func)) {
		mapping_entry(st, ctx, func, sp);
		return 0;
	}

	if (func == MT_FUNC_FREE || func == MT_FUNC_DELETE) {
		__u64 addr = PT_REGS_PARM1(ctx);
		if (mt_free_entry(&st->frames, func == MT_FUNC_DELETE, sp, addr)) {
			if (recording)
				emit(MT_KIND_FREE, addr, 0, 0, 0);
		} else if (addr) {
			count(MT_COUNTER_NESTED);
		}
		return 0;
	}

	enum mt_entry e = mt_alloc_entry(&st->frames, sp);
	if (e == MT_ENTRY_NESTED) {
		count(MT_COUNTER_NESTED);
		return 0;
	}
	if (e == MT_ENTRY_STALE)
		count(MT_COUNTER_STALE_FRAME);
	st->func = func;
	st->arg0 = PT_REGS_PARM1(ctx);
	st->arg1 = PT_REGS_PARM2(ctx);
	st->arg2 = PT_REGS_PARM3(ctx);
	return 0;
}

SEC("uretprobe")
int alloc_return(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	if (!probe_applies(cookie))
		return 0;
	__u32 func = MT_COOKIE_FUNC(cookie);
	if (is_mapping(func)) {
		mapping_return(ctx, func);
		return 0;
	}
	struct thread_state *st = state(false);
	if (!st || !mt_alloc_return(&st->frames, PT_REGS_SP(ctx)))
		return 0;
	if (!recording)
		return 0;

	__u64 ret = PT_REGS_RC(ctx);
	__u64 size;
	switch (st->func) {
	case MT_FUNC_MALLOC:
	case MT_FUNC_NEW:
	case MT_FUNC_VALLOC:
		if (ret)
			emit_allocation(ctx, MT_KIND_MALLOC, ret, st->arg0, 0, 0);
		break;
	case MT_FUNC_NEW_ALIGNED:
		if (ret)
			emit_allocation(ctx, MT_KIND_ALIGNED_ALLOC, ret, st->arg0, 0, 0);
		break;
	case MT_FUNC_CALLOC:
		if (ret)
			emit_allocation(ctx, MT_KIND_CALLOC, ret, st->arg0 * st->arg1, 0, 0);
		break;
	case MT_FUNC_ALIGNED_ALLOC:
		if (ret)
			emit_allocation(ctx, MT_KIND_ALIGNED_ALLOC, ret, st->arg1, 0, 0);
		break;
	case MT_FUNC_POSIX_MEMALIGN: {
		__u64 ptr = 0;
		/* The pointer comes back through the out-parameter; the return value is an errno. */
		if ((int)ret != 0 || bpf_probe_read_user(&ptr, sizeof(ptr), (void *)st->arg0) != 0 || !ptr)
			break;
		emit_allocation(ctx, MT_KIND_ALIGNED_ALLOC, ptr, st->arg2, 0, 0);
		break;
	}
	case MT_FUNC_REALLOC:
	case MT_FUNC_REALLOCARRAY:
		size = st->func == MT_FUNC_REALLOC ? st->arg1 : st->arg1 * st->arg2;
		if (ret) {
			if (st->arg0)
				emit_allocation(ctx, MT_KIND_REALLOC, ret, size, st->arg0, MT_FLAG_OLD_ADDR);
			else
				emit_allocation(ctx, MT_KIND_MALLOC, ret, size, 0, 0);
		} else if (size == 0 && st->arg0) {
			emit(MT_KIND_FREE, st->arg0, 0, 0, 0); /* realloc(p, 0) frees p */
		}
		break;
	}
	return 0;
}

/* ---- process life ---- */

/*
 * A forked child inherits its parent's breakpoints but not its parent's links, whose filter
 * names the parent: it would run unrecorded. Stop it before it first runs (signal first, then
 * publish, as stop_current does) and tell user space, which attaches the child's own links and
 * resumes it.
 */
static __always_inline void hold_for_probes(struct task_struct *parent, struct task_struct *child, __u32 child_tgid)
{
	if (bpf_send_signal_task(child, SIGSTOP, PIDTYPE_TGID, 0) != 0) {
		count(MT_COUNTER_SPAWN_UNSTOPPED);
		return;
	}
	struct mt_stop stop = {
		.stop_ns = bpf_ktime_get_ns(),
		.start_boottime = BPF_CORE_READ(child, group_leader, start_boottime),
		.resuming = 0,
	};
	bpf_map_update_elem(&spawn_stopped, &child_tgid, &stop, BPF_ANY);
	count(MT_COUNTER_SPAWN_STOPS);
	struct mt_spawn spawn = {
		.pid = child_tgid,
		.parent = BPF_CORE_READ(parent, tgid),
		.start_boottime = stop.start_boottime,
	};
	/* Lost notices are found by user space's scan of spawn_stopped. */
	if (bpf_ringbuf_output(&spawns, &spawn, sizeof(spawn), BPF_RB_FORCE_WAKEUP) != 0)
		count(MT_COUNTER_SPAWNS_DROPPED);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_tgid = BPF_CORE_READ(parent, tgid);
	__u32 child_tgid = BPF_CORE_READ(child, tgid);
	if (parent_tgid == child_tgid || !bpf_map_lookup_elem(&tracked, &parent_tgid))
		return 0; /* a new thread, or not ours */
	__u32 shared = MT_TRACKED_SHARED; /* until user space gives it links of its own */
	bpf_map_update_elem(&tracked, &child_tgid, &shared, BPF_ANY);
	emit(MT_KIND_FORK, child_tgid, 0, 0, 0);
	if (per_process_links)
		hold_for_probes(parent, child, child_tgid);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	if (!current_tracked())
		return 0;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	bpf_map_delete_elem(&maps_known, &tgid); /* a new image: its mappings must be read again */
	emit(MT_KIND_EXEC, 0, 0, 0, 0);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	if (BPF_CORE_READ(task, pid) != tgid || !bpf_map_lookup_elem(&tracked, &tgid))
		return 0;
	/* A process that dies while pressure-stopped must not be signalled later. */
	struct mt_stop *stop = bpf_map_lookup_elem(&pressure_stopped, &tgid);
	if (stop && !stop->resuming && bpf_map_delete_elem(&pressure_stopped, &tgid) == 0)
		__sync_fetch_and_sub(&stops_outstanding, 1);
	bpf_map_delete_elem(&pressure_stopped, &tgid);
	bpf_map_delete_elem(&snapshot_stopped, &tgid);
	bpf_map_delete_elem(&spawn_stopped, &tgid);
	bpf_map_delete_elem(&maps_known, &tgid);
	bpf_map_delete_elem(&tracked, &tgid);
	emit_record(MT_KIND_EXIT, 0, BPF_CORE_READ(task, exit_code), 0, 0, false, 0); /* no SIGSTOP to a dying process */
	return 0;
}
