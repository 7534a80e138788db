// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Kernel side of memtrack: allocator uprobes (attached as uprobe_multi links, one program for
 * every entry and one for every return, the function told apart by the BPF cookie), probes on the
 * C library's memory-mapping wrappers, and process-life tracepoints that keep the tracked
 * set equal to the command and all its descendants.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "record.h"
#include "hold.h"
#include "nesting.h"
#include "rss.h"
#include "walk_env.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define SIGSTOP 19
#define SIGCONT 18
#define SIGNAL_GROUP_EXIT 0x00000004 /* include/linux/sched/signal.h: signal->flags */

/* Set before load (rodata). */
const volatile __u64 stop_bytes = ~0ULL; /* ring data at or above this: SIGSTOP the producer */
const volatile __u64 wakeup_bytes = 0;   /* below this fill, do not wake the consumer */
const volatile __u64 stack_wakeup_bytes = 0; /* the same for the stacks ring */
const volatile bool capture_stacks = true;
const volatile __u32 max_frames = 64;            /* <= MT_MAX_FRAMES */
/* true: stacks walked by the CFI rows (cfi_walk.h); false: by frame pointer (bpf_get_stack). */
const volatile bool unwind_cfi = true;
const volatile __u64 stack_stop_bytes = ~0ULL;   /* the stacks ring's stop watermark */
/* --time-bpf-parts: the return program times its parts (MT_COUNTER_PART_*); off, no clock is read. */
const volatile bool time_parts = false;
/*
 * 1: user space gives tracked processes allocator links of their own (filtered to the process,
 * so other processes do not even trap), and holds each new process (MT_HOLD_SPAWN) until it
 * has decided how its probes reach it (own links, or the shared ones past a number of
 * processes). 0: shared links only, attached at start.
 */
const volatile bool per_process_links = false;
/* bpf_send_signal_task exists (user space found it in vmlinux BTF): RESTOPs and USER_STOP re-sends. */
const volatile bool signal_task = false;

/* Kernel 6.13+; called only when signal_task (per_process_links implies it). */
extern int bpf_send_signal_task(struct task_struct *task, int sig, enum pid_type type, __u64 value) __ksym __weak;

/* Shared with user space through the skeleton's mmapped .bss. */
__u32 recording;          /* the recording flag: 0 off, 1 on */
/*
 * memtrack's own pid namespace, found by find_pidns (run once by user space before anything is
 * attached): its level (0: the initial namespace) and its address, only ever compared. Every
 * pid and tid BPF hands out, stores or looks up is one of that namespace (ns_ids): user space
 * signals them, reads /proc with them and links probes to them, and a global pid would name
 * another process there (or none).
 */
__u32 pidns_level;
__u64 pidns_addr;
/* memtrack's own tgid (global), also found by find_pidns: its signals are the pause protocol's. */
__u32 memtrack_tgid;
/*
 * Pauses under way per reason (hold.h's index): BPF adds one when it takes a reason and takes
 * one away when an exit ends it; ProcessHolds takes one away when it releases one. Lets user
 * space skip the index walk when nothing is held. `unsigned long`: uint64_t's type on this ABI.
 */
unsigned long holds_outstanding[MT_HOLD_REASONS];
/* The highest fill (bytes) each ring (0: events, 1: stacks) was seen at, right after a write. */
unsigned long max_fill_bytes[2];

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

/*
 * The hold words of every pid (hold.h): pages of MT_HOLD_WORDS_PER_PAGE words, resized before
 * load to cover pid_max, mmapped by user space as one array indexed by tgid.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 32);
	__type(key, __u32);
	__type(value, struct mt_hold_page);
} holds SEC(".maps");

/*
 * Every process held at least once and not yet exited (tgid -> struct mt_held): how user space
 * finds the words to look at, and the start time that tells a reused pid. An entry is made before
 * its process's first claim and removed at its exit (or when its pid starts a new process).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct mt_held);
} held SEC(".maps");

/*
 * Hashes of stacks already sent, in sets of two ways indexed by the hash's low bits: each
 * distinct stack crosses the ring once, and again only after a later stack took its way. An
 * array, not an LRU hash: no lock, no list to shrink, and the lookup is inlined, where an LRU
 * hash takes its locks and shrinks its lists for each new stack once a program has more
 * distinct stacks than it holds (docs/BENCHMARKS.md, Real programs). A capture claims its way by
 * compare-and-swap before it sends the stack (seen_claim): of two CPUs that capture one new stack
 * at once (two threads of one program in step), one sends it.
 */
#define MT_SEEN_SETS (1u << 19) /* 1 Mi stacks, 8 MiB */
struct seen_set {
	__u64 way[2]; /* 0: empty (a stack's hash is never 0) */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MT_SEEN_SETS);
	__type(key, __u32);
	__type(value, struct seen_set);
} seen_stacks SEC(".maps");


/*
 * Processes whose mappings user space has read since they started, exec'd or mapped new code.
 * The first stack of a process missing here pauses it (MT_HOLD_SNAPSHOT) until the Symbolizer
 * has read /proc/PID/maps, so a process that allocates and exits at once is still symbolized.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} maps_known SEC(".maps");
#define MT_MAPS_KNOWN 1        /* read: nothing new since */
#define MT_MAPS_LOADER_ADDED 2 /* read, and since then the loader mapped code in dlopen */

/* Thread group ids of the command and its descendants. */
/* Not preallocated: a preallocated 64 Ki-entry hash costs ~40 ms at start-up. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u32);
} tracked SEC(".maps");

/* Exec'd images watched until their loader's hook holds them (record.h: MT_EXEC_WATCH_*). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u32);
} exec_watch SEC(".maps");

/* Per-thread state: the nesting frames and the arguments saved between entry and return. */
struct thread_state {
	struct mt_frames frames;
	__u64 arg0, arg1, arg2;
	__u32 func;
	__u32 map_func;                     /* the mapping wrapper in flight (mt_func) */
	__u64 map_sp;                       /* its entry stack pointer; 0: none to record */
	__u64 map_arg0, map_arg1, map_arg2; /* its arguments */
	__u32 in_dlopen;                    /* dlopen calls in flight (a constructor may dlopen) */
	__u32 image_allocated;              /* this thread told exec_watch an allocator probe applied */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_state);
} threads SEC(".maps");

/*
 * RESTOPs a thread sent its own process (send_self_restop) that have not landed: counted from
 * just before its bpf_send_signal until that SIGSTOP's signal_generate, which names this thread.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u32);
} self_restops SEC(".maps");

/* With time_parts: the clock now; and the time since `since` added to counter idx (a part's end is the next one's start). */
static __always_inline __u64 part_clock(void)
{
	return time_parts ? bpf_ktime_get_ns() : 0;
}

static __always_inline __u64 part_end(__u32 idx, __u64 since)
{
	if (!time_parts)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	count_add(idx, now - since);
	return now;
}

#include "cfi_walk.h"
#include "python_walk.h"

/* pid's number in memtrack's pid namespace; 0 when it has none there (not one of its descendants). */
static __always_inline __u32 ns_nr(struct pid *pid)
{
	__u32 level = pidns_level;
	if (!pid || BPF_CORE_READ(pid, level) < level || level > 32)
		return 0;
	struct upid up = {};
	__u64 at = (__u64)pid + bpf_core_field_offset(struct pid, numbers) + level * bpf_core_type_size(struct upid);
	if (bpf_probe_read_kernel(&up, sizeof(up), (void *)at) != 0 || (__u64)up.ns != pidns_addr)
		return 0;
	return up.nr;
}

/* The task's (tgid << 32 | tid) in memtrack's pid namespace, as bpf_get_current_pid_tgid lays them out. */
static __always_inline __u64 ns_ids(struct task_struct *task)
{
	if (!pidns_level)
		return ((__u64)BPF_CORE_READ(task, tgid) << 32) | (__u32)BPF_CORE_READ(task, pid);
	__u32 tgid = ns_nr(BPF_CORE_READ(task, group_leader, thread_pid));
	__u32 tid = ns_nr(BPF_CORE_READ(task, thread_pid));
	return ((__u64)tgid << 32) | tid;
}

static __always_inline __u32 ns_tgid(struct task_struct *task)
{
	return ns_ids(task) >> 32;
}

/* The current thread's ids in memtrack's pid namespace: the only ones BPF uses for it. */
static __always_inline __u64 current_ids(void)
{
	if (!pidns_level)
		return bpf_get_current_pid_tgid();
	return ns_ids(bpf_get_current_task_btf());
}

static __always_inline __u32 current_tgid(void)
{
	return current_ids() >> 32;
}

static __always_inline bool current_tracked(void)
{
	__u32 tgid = current_tgid();
	return tgid && bpf_map_lookup_elem(&tracked, &tgid) != NULL;
}

static __always_inline struct thread_state *state(bool create)
{
	struct task_struct *task = bpf_get_current_task_btf();
	return bpf_task_storage_get(&threads, task, 0, create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

static __always_inline __u32 *hold_word(__u32 tgid)
{
	__u32 page = tgid / MT_HOLD_WORDS_PER_PAGE;
	struct mt_hold_page *p = bpf_map_lookup_elem(&holds, &page);
	if (!p)
		return NULL;
	return &p->words[tgid & (MT_HOLD_WORDS_PER_PAGE - 1)];
}

/* Set once memtrack or its guard has resumed everything for good: no SIGSTOP may follow. */
static __always_inline bool holds_closed(void)
{
	__u32 *w = hold_word(MT_HOLD_CLOSED_WORD);
	return !w || *(volatile __u32 *)w != 0;
}

/* The process's `held` entry, made if missing: it must exist before the first claim. */
static __always_inline struct mt_held *held_entry(struct task_struct *task, __u32 tgid)
{
	struct mt_held *h = bpf_map_lookup_elem(&held, &tgid);
	if (h)
		return h;
	struct mt_held fresh = {
		.start_boottime = BPF_CORE_READ(task, group_leader, start_boottime),
	};
	bpf_map_update_elem(&held, &tgid, &fresh, BPF_NOEXIST);
	return bpf_map_lookup_elem(&held, &tgid);
}

/*
 * Every reason of the word ends at once: an exit, or a pid that starts a new process. Counted
 * as ended by exit, per reason.
 */
static __always_inline void end_holds(__u32 tgid)
{
	__u32 *w = hold_word(tgid);
	if (!w)
		return;
	__sync_fetch_and_and(w, ~MT_HOLD_USER_STOP); /* nobody's stop outlives its process */
	__u32 old = *(volatile __u32 *)w, next = 0;
	for (int i = 0; i < 8; i++) {
		__u32 reasons = mt_hold_end_all(old, &next);
		if (!reasons && !(old & MT_HOLD_RESUMING))
			return;
		__u32 seen = __sync_val_compare_and_swap(w, old, next);
		if (seen == old) {
			for (__u32 r = 0; r < MT_HOLD_REASONS; r++) {
				if (reasons & (1u << r)) {
					__sync_fetch_and_sub(&holds_outstanding[r], 1);
					count(MT_COUNTER_HOLDS_EXITED + r);
				}
			}
			return;
		}
		old = seen;
	}
	count(MT_COUNTER_HOLD_FAILED);
}

/* A pause for `reason` begun (its bit went from clear to set in the word): noted and counted. */
static __always_inline void pause_taken(struct mt_held *h, __u32 reason)
{
	__u32 r = mt_hold_reason_index(reason);
	if (r >= MT_HOLD_REASONS)
		return;
	h->since_ns[r] = bpf_ktime_get_ns();
	__sync_fetch_and_add(&holds_outstanding[r], 1);
	count(MT_COUNTER_HOLDS_TAKEN + r);
}

/*
 * The one way BPF pauses a process (hold.h states the protocol): claim `reason` in the
 * process's hold word as a sender, send SIGSTOP, stop being a sender. `task` is the process to
 * stop, NULL for the current one. With `resend`, a reason already held is sent again (ring
 * pressure: the thread writing must stop, whatever stopped the others). Returns true when this
 * call took the reason, which then counts as a pause begun.
 */
static __always_inline bool hold_process(struct task_struct *task, __u32 tgid, __u32 reason, bool resend)
{
	if (tgid == MT_HOLD_CLOSED_WORD) /* no pid in memtrack's namespace: not one of ours */
		return false;
	__u32 *w = hold_word(tgid);
	struct mt_held *h = held_entry(task ? task : bpf_get_current_task_btf(), tgid);
	if (!w || !h) {
		count(MT_COUNTER_HOLD_FAILED);
		return false;
	}
	__u32 old = *(volatile __u32 *)w, next = 0;
	bool claimed = false;
	for (int i = 0; i < 8; i++) {
		if (!mt_hold_claim(old, reason, resend, &next))
			return false;
		__u32 seen = __sync_val_compare_and_swap(w, old, next);
		if (seen == old) {
			claimed = true;
			break;
		}
		old = seen;
	}
	if (!claimed) {
		count(MT_COUNTER_HOLD_FAILED);
		return false;
	}
	bool taken = !(old & reason);
	if (taken)
		pause_taken(h, reason);
	/*
	 * Checked after the claim: whoever closes waits for this sender to finish. The current
	 * process gets the SIGSTOP on this thread: a SIGSTOP sent to the process goes to a thread
	 * the kernel picks, often one asleep (a thread waiting in pthread_join), and until that one
	 * runs and starts the group stop the writers run on (measured: ~3500 records past the mark
	 * with 8 writer threads beside a busy loop). Taken by this thread on its way back to user
	 * space, it stops the whole group at once; a SIGCONT to the process cancels it like any.
	 */
	if (!holds_closed()) {
		long err = task ? bpf_send_signal_task(task, SIGSTOP, PIDTYPE_TGID, 0) : bpf_send_signal_thread(SIGSTOP);
		count(err ? MT_COUNTER_SIGNAL_FAILED : MT_COUNTER_HOLD_SIGNALS);
	}
	__sync_fetch_and_sub(w, MT_HOLD_SENDER_ONE);
	return taken;
}

/*
 * hold_process for the current process, as a global function: the verifier checks it once on
 * its own, not again for every state each caller reaches it in (a uprobe reaches it from several
 * paths: pressure on both rings, the first stack of a process, new code).
 */
__noinline int hold_current(__u32 tgid, __u32 reason, int resend)
{
	return hold_process(NULL, tgid, reason, resend);
}

static __always_inline void note_fill(__u32 ring, __u64 fill)
{
	unsigned long *m = &max_fill_bytes[ring & 1];
	unsigned long cur = *(volatile unsigned long *)m;
	for (int i = 0; i < 4 && fill > cur; i++) {
		unsigned long seen = __sync_val_compare_and_swap(m, cur, fill);
		if (seen == cur)
			break;
		cur = seen;
	}
}

/* Pause the producer when a ring is nearly full (`fill` bytes); PressureControl releases it. */
static __always_inline void apply_pressure_at(__u32 ring, __u64 fill, __u64 stop_at)
{
	note_fill(ring, fill);
	if (fill < stop_at)
		return;
	hold_current(current_tgid(), MT_HOLD_PRESSURE, true);
}

static __always_inline void apply_pressure(__u32 ring, void *map, __u64 stop_at)
{
	apply_pressure_at(ring, bpf_ringbuf_query(map, BPF_RB_AVAIL_DATA), stop_at);
}

static __always_inline void emit_record(__u32 kind, __u64 addr, __u64 size, __u64 old_addr, __u32 flags,
					bool pressure, __u64 stack_hash)
{
	struct mt_record *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		count(MT_COUNTER_DROPPED);
		/* A full ring must pause this producer too, or it keeps losing records. */
		if (pressure)
			apply_pressure(0, &events, stop_bytes);
		return;
	}
	__u64 id = current_ids();
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
		apply_pressure_at(0, fill, stop_bytes);
	else
		note_fill(0, fill);
}

static __always_inline void emit(__u32 kind, __u64 addr, __u64 size, __u64 old_addr, __u32 flags)
{
	emit_record(kind, addr, size, old_addr, flags, true, 0);
}

/*
 * True when this capture is to send h: h was in neither way of its set, and this CPU wrote it
 * into one (an empty way, else either at random: two stacks of one set do not evict each other
 * forever) before any other did. False when h is seen: sent, or claimed by another CPU that is
 * sending it. A way another CPU changed first is looked at again; past a few such races the
 * stack is sent unclaimed (sent twice at worst, never lost).
 */
#define MT_SEEN_CLAIM_TRIES 4 /* docs/STATS.md, stacks_unclaimed */
static __always_inline bool seen_claim(struct seen_set *set, __u64 h)
{
	for (int tries = 0; tries < MT_SEEN_CLAIM_TRIES; tries++) {
		__u64 w0 = set->way[0], w1 = set->way[1];
		if (w0 == h || w1 == h)
			return false;
		__u32 k = !w0 ? 0 : !w1 ? 1 : bpf_get_prandom_u32() & 1;
		__u64 old = k ? w1 : w0;
		if (__sync_val_compare_and_swap(&set->way[k & 1], old, h) == old)
			return true;
	}
	count(MT_COUNTER_STACKS_UNCLAIMED);
	return true;
}

/*
 * h claimed but not sent (no room in the ring): its next capture claims and sends it again,
 * unless another CPU's kept chain took h as sent meanwhile (chain_stack_known): a drop is a lost
 * record either way, which stacks_dropped reports.
 */
static __always_inline void seen_unclaim(__u32 index, __u64 h)
{
	struct seen_set *set = bpf_map_lookup_elem(&seen_stacks, &index);
	if (!set)
		return;
	__sync_val_compare_and_swap(&set->way[0], h, 0);
	__sync_val_compare_and_swap(&set->way[1], h, 0);
}

/*
 * The code objects user space has read (python.h, mt_python_code): an LRU, as one evicted costs
 * only a pause at the next new stack that names it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct mt_python_code_key);
	__type(value, struct mt_python_code);
} python_codes SEC(".maps");

/*
 * Whether every Python frame (python.h) of s->ips[from..nr) names a code object user space has
 * read for tgid that still holds the fields it read: the same object, not one made since at a
 * freed one's address (which another pause must read). Only a new stack asks (once per stack),
 * so the reads here cost nothing per event. A global function: its loop is checked once.
 */
__noinline int python_codes_known(struct stack_scratch_value *v, __u32 from, __u32 nr, __u32 tgid)
{
	if (!v)
		return false;
	/*
	 * Not with a perf trampoline (3.12+): under -X perf it maps its code without an event
	 * memtrack sees (mmap, then mprotect), and the pause per new stack is what keeps a short
	 * process (a forked child) alive until the Symbolizer reads its mappings again.
	 */
	struct mt_python_proc *p = bpf_map_lookup_elem(&python_procs, &tgid);
	if (!p || p->tramp.call)
		return false;
	struct mt_python_code_key key = {.tgid = tgid};
	for (__u32 i = from; i < nr && i < MT_MAX_FRAMES; i++) {
		const __u64 slot = v->rec.ips[i & MT_MAX_FRAMES];
		if (!(slot & MT_PY_FRAME))
			continue;
		key.addr = slot & MT_PY_ADDR_MASK;
		const struct mt_python_code *read = bpf_map_lookup_elem(&python_codes, &key);
		if (!read)
			return false;
		__s32 first_line = 0;
		if (py_read(key.addr + 8) != read->type || py_read(key.addr + p->code_filename) != read->filename ||
		    py_read(key.addr + p->code_name) != read->name ||
		    py_read(key.addr + p->code_linetable) != read->linetable ||
		    bpf_probe_read_user(&first_line, sizeof(first_line), (void *)(key.addr + p->code_firstlineno)) != 0 ||
		    first_line != read->first_line)
			return false;
	}
	return true;
}

/*
 * The user stack at an allocator's return (frame 0 is the return address into its caller),
 * hashed; the full stack goes to the stacks ring only the first time its hash is seen.
 * Returns the hash, 0 when no stack could be captured. A global function, checked by the
 * verifier once rather than once for each kind of allocation that reaches it.
 */
__noinline __u64 capture_stack(struct pt_regs *ctx)
{
	if (!capture_stacks)
		return 0;
	__u32 zero = 0;
	struct stack_scratch_value *v = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!v)
		return 0;
	struct mt_stack_record *s = &v->rec;
	__u32 tgid = current_tgid();
	/* walk: cfi_capture's answer (MT_WALK_*): the frames, whether user space has the stack, the chain */
	__u32 nr, walk = 0;
	__u64 t = part_clock();
	s->hash = 0;
	if (unwind_cfi) {
		walk = cfi_capture(ctx, v, tgid, max_frames);
		nr = walk & MT_WALK_FRAMES;
	} else {
		long bytes = bpf_get_stack(ctx, s->ips, sizeof(s->ips), BPF_F_USER_STACK);
		if (bytes <= 0) {
			count(MT_COUNTER_STACK_ERRORS);
			return 0;
		}
		nr = bytes / 8;
	}
	if (nr > max_frames)
		nr = max_frames;
	/*
	 * The interpreter's frames go after the native ones: a stack that differs only in them is
	 * another stack (its hash goes on over them), which the kept chain, keyed by native frames,
	 * cannot know.
	 */
	__u32 with_python = python_walk(v, nr, tgid);
	const __u32 native_nr = nr;
	bool python = with_python != nr;
	if (python) {
		nr = with_python;
		walk &= ~MT_WALK_KNOWN;
	}
	t = part_end(MT_COUNTER_PART_WALK_NS, t);
	/* A walk answered by a kept chain, or kept as one, left its native frames' hash in s->hash. */
	__u64 h = s->hash ? s->hash : stack_hash(s, 0, native_nr, stack_seed(tgid));
	if (python)
		h = stack_hash(s, native_nr, nr, h);
	count(MT_COUNTER_STACKS_CAPTURED);
	if (walk & MT_WALK_KNOWN) {
		count(MT_COUNTER_UNWIND_CHAINS_KNOWN);
		part_end(MT_COUNTER_PART_HASH_NS, t);
		return h;
	}
	/* `zero` is done with: reused as the key, so the call chain's frames stay within 512 bytes. */
	zero = (__u32)h & (MT_SEEN_SETS - 1);
	struct seen_set *set = bpf_map_lookup_elem(&seen_stacks, &zero);
	/* No set cannot happen (the index is masked); taken as seen, it sends nothing. */
	bool seen = !set || !seen_claim(set, h);
	t = part_end(MT_COUNTER_PART_HASH_NS, t);
	if (seen) {
		if (unwind_cfi)
			chain_stack_known(walk, h);
		return h;
	}

	__u8 *maps_state = bpf_map_lookup_elem(&maps_known, &tgid);
	bool new_maps = !maps_state || *maps_state != MT_MAPS_KNOWN;
	bool loader_code = maps_state && *maps_state == MT_MAPS_LOADER_ADDED;
	__u32 record_bytes = MT_STACK_HEADER_BYTES + (nr & MT_MAX_FRAMES) * 8;
	/*
	 * Room first, then the pause, then the record: a record the Symbolizer can read always
	 * comes after the pause it answers, and a record that cannot be sent holds nobody.
	 */
	struct bpf_dynptr out;
	if (bpf_ringbuf_reserve_dynptr(&stacks, record_bytes, 0, &out) != 0) {
		bpf_ringbuf_discard_dynptr(&out, 0);
		count(MT_COUNTER_STACKS_DROPPED);
		seen_unclaim(zero, h); /* the next occurrence retries */
		apply_pressure(1, &stacks, stack_stop_bytes);
		return h;
	}
	s->hash = h;
	s->pid = tgid;
	s->nr = nr;
	s->flags = 0;
	if (new_maps)
		s->flags = MT_STACK_NEW_MAPS | (loader_code ? MT_STACK_LOADER_CODE : 0);
	/*
	 * Checked after the reservation. A frame's code object lives while the frame runs, and a
	 * process held for a stack runs no Python until that stack is read; so a stack naming
	 * another object at one of these addresses was either read before this check (its fields
	 * are the ones checked) or is reserved after this record: user space reads this record
	 * with the names that were checked.
	 */
	if (python && python_codes_known(v, native_nr, nr, tgid)) {
		s->flags |= MT_STACK_PY_KNOWN;
		python = false;
	}
	/*
	 * Paused until the Symbolizer has read its mappings, or the code objects its Python frames
	 * name that it has not read (they live in its memory only), so a quick exit cannot beat it.
	 */
	if ((new_maps || python) && hold_current(tgid, MT_HOLD_SNAPSHOT, false))
		s->flags |= MT_STACK_HELD;
	bpf_dynptr_write(&out, 0, s, record_bytes, 0);
	/*
	 * A wake-up costs the producer more than the record (an irq_work per record): below the mark
	 * the consumer's timer reads the ring. A held process waits for its record to be read: it wakes.
	 */
	__u64 wake = (new_maps || (s->flags & MT_STACK_HELD)) ? BPF_RB_FORCE_WAKEUP
		     : bpf_ringbuf_query(&stacks, BPF_RB_AVAIL_DATA) < stack_wakeup_bytes ? BPF_RB_NO_WAKEUP : 0;
	bpf_ringbuf_submit_dynptr(&out, wake);
	count(MT_COUNTER_STACKS_SENT);
	__u8 one = MT_MAPS_KNOWN;
	if (new_maps)
		bpf_map_update_elem(&maps_known, &tgid, &one, BPF_ANY);
	if (unwind_cfi)
		chain_stack_known(walk, h);
	apply_pressure(1, &stacks, stack_stop_bytes);
	part_end(MT_COUNTER_PART_STACK_RECORD_NS, t);
	return h;
}

static __always_inline void emit_allocation(struct pt_regs *ctx, __u32 kind, __u64 addr, __u64 size,
					    __u64 old_addr, __u32 flags)
{
	__u64 hash = capture_stack(ctx);
	__u64 t = part_clock();
	emit_record(kind, addr, size, old_addr, flags, true, hash);
	part_end(MT_COUNTER_PART_EVENT_RECORD_NS, t);
	if (time_parts)
		count(MT_COUNTER_PART_EVENTS);
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
	__u32 tgid = current_tgid();
	bpf_map_delete_elem(&maps_known, &tgid);
}

/*
 * New code the loader mapped in a dlopen: the loader's hook found it (ProcessLinks publishes it in
 * AddedCode before the process goes on), so the next new stack asks for only that
 * (MT_STACK_LOADER_CODE), not for all mappings. A process whose mappings must be read whole
 * anyway stays so.
 */
static __always_inline void loader_mapped_code(void)
{
	__u32 tgid = current_tgid();
	__u8 *known = bpf_map_lookup_elem(&maps_known, &tgid);
	if (known && *known == MT_MAPS_KNOWN)
		*known = MT_MAPS_LOADER_ADDED;
}

/*
 * The probed function's first arguments, from the registers the cookie says hold them there.
 * Read through a copy of the registers on the stack: an index into the context itself is a
 * variable context offset, which the verifier refuses.
 */
_Static_assert(MT_REG_COUNT == 15, "a register index is 4 bits, and 15 (no register) reads 0");
struct probe_args {
	__u64 v[MT_COOKIE_ARGS];
};

static __always_inline struct probe_args probe_args(struct pt_regs *ctx, __u64 cookie)
{
	__u64 regs[MT_REG_COUNT + 1] = {
		[MT_REG_RDI] = ctx->di, [MT_REG_RSI] = ctx->si, [MT_REG_RDX] = ctx->dx, [MT_REG_RCX] = ctx->cx,
		[MT_REG_R8] = ctx->r8,  [MT_REG_R9] = ctx->r9,  [MT_REG_RAX] = ctx->ax, [MT_REG_RBX] = ctx->bx,
		[MT_REG_RBP] = ctx->bp, [MT_REG_R10] = ctx->r10, [MT_REG_R11] = ctx->r11, [MT_REG_R12] = ctx->r12,
		[MT_REG_R13] = ctx->r13, [MT_REG_R14] = ctx->r14, [MT_REG_R15] = ctx->r15,
	};
	struct probe_args a;
	for (int k = 0; k < MT_COOKIE_ARGS; k++)
		a.v[k] = regs[MT_COOKIE_ARG_REG(cookie, k) & MT_REG_COUNT];
	return a;
}

/*
 * The return address at sp is the uretprobe trampoline: a probed call whose frame this is has
 * not returned yet (the kernel replaced its return address when it was entered).
 */
static __always_inline bool return_pending_at(__u64 sp)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 trampoline = BPF_CORE_READ(task, mm, uprobes_state.xol_area, vaddr), ra = 0;
	return trampoline && bpf_probe_read_user(&ra, sizeof(ra), (void *)sp) == 0 && ra == trampoline;
}

/* A mapping wrapper's entry: remembered unless an allocator call of this thread issued it. */
static __always_inline void mapping_entry(struct thread_state *st, struct pt_regs *ctx, __u64 cookie, __u32 func,
					  __u64 sp)
{
	struct probe_args args = probe_args(ctx, cookie);
	__u64 a0 = args.v[0], a1 = args.v[1];
	/* Only munmap and mremap name a range that may hold a block freed just before. */
	bool ranged = func == MT_FUNC_MUNMAP || func == MT_FUNC_MREMAP;
	bool internal = func == MT_FUNC_BRK ? mt_brk_internal(&st->frames, sp)
					    : mt_mapping_internal(&st->frames, sp, ranged ? a0 : 0, ranged ? a1 : 0);
	if (func == MT_FUNC_DLOPEN && st->in_dlopen < 64)
		st->in_dlopen++;
	if (func == MT_FUNC_DLOPEN || internal) {
		st->map_sp = 0;
		return;
	}
	st->map_func = func;
	st->map_sp = sp;
	st->map_arg0 = a0;
	st->map_arg1 = a1;
	st->map_arg2 = args.v[2];
}

static __always_inline void mapping_return(struct pt_regs *ctx, __u32 func)
{
	struct thread_state *st = state(false);
	if (func == MT_FUNC_DLOPEN) {
		if (st && st->in_dlopen)
			st->in_dlopen--;
		loader_mapped_code();
		return;
	}
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
		/* Inside dlopen, the loader's: the hook that follows sees what it maps. */
		if ((st->map_arg2 & PROT_EXEC) && st->in_dlopen)
			loader_mapped_code();
		else if (st->map_arg2 & PROT_EXEC)
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
 * New code in the current process (an exec, or the loader's hook after it mapped objects): held
 * until user space has probed the objects it now maps (the notice tells it which process).
 * A reason already held (another thread at the hook) needs no second notice.
 */
static __always_inline bool hold_for_new_code(__u32 source)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = current_tgid();
	if (!tgid || !hold_current(tgid, MT_HOLD_MODULE, false))
		return false;
	struct mt_spawn notice = {
		.pid = tgid,
		.start_boottime = BPF_CORE_READ(task, group_leader, start_boottime),
		.hold = MT_HOLD_MODULE,
		.source = source,
	};
	if (bpf_ringbuf_output(&spawns, &notice, sizeof(notice), BPF_RB_FORCE_WAKEUP) != 0)
		count(MT_COUNTER_SPAWNS_DROPPED);
	return true;
}

/* What the current process's image did toward its loader's hook (only one exec_watch watches). */
static __always_inline void exec_watch_note(__u32 bits)
{
	__u32 tgid = current_tgid();
	__u32 *w = bpf_map_lookup_elem(&exec_watch, &tgid);
	if (w)
		__sync_fetch_and_or(w, bits);
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
	__u32 tgid = current_tgid();
	__u32 *how = bpf_map_lookup_elem(&tracked, &tgid);
	if (how) {
		if (*how == MT_TRACKED_SHARED)
			return true;
		if (MT_COOKIE_FUNC(cookie) == MT_FUNC_LOADER || is_mapping(MT_COOKIE_FUNC(cookie)))
			exec_watch_note(MT_EXEC_WATCH_REJECTED);
		return false;
	}
	/*
	 * memtrack's own allocator calls (not its mappings, nor the C library's teardown at its
	 * threads' exits): its allocator must not sit behind a probe (meson.build).
	 */
	if (MT_COOKIE_FUNC(cookie) < MT_FUNC_INTERNAL && (bpf_get_current_pid_tgid() >> 32) == memtrack_tgid)
		count(MT_COUNTER_SELF_TRAPS);
	return false;
}

/* Below, with the pause protocol it takes part in. */
static __always_inline void after_syscall(struct pt_regs *ctx, __u64 cookie);

SEC("uprobe")
int alloc_entry(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	if (MT_COOKIE_FUNC(cookie) == MT_FUNC_AFTER_SYSCALL) {
		after_syscall(ctx, cookie);
		return 0;
	}
	if (!probe_applies(cookie))
		return 0;
	__u32 func = MT_COOKIE_FUNC(cookie);
	if (func == MT_FUNC_LOADER || is_mapping(func))
		exec_watch_note(MT_EXEC_WATCH_TRAPPED);
	/* The loader's hook needs no thread state: it holds even where none can be made. */
	if (func == MT_FUNC_LOADER) {
		/*
		 * The loader calls its hook before a change (RT_ADD, RT_DELETE) and after it
		 * (RT_CONSISTENT, objects mapped, not yet initialized): only the second holds.
		 */
		__s32 distance = MT_COOKIE_DISTANCE(cookie);
		int r_state = MT_RT_CONSISTENT;
		if (distance &&
		    bpf_probe_read_user(&r_state, sizeof(r_state),
					(void *)(PT_REGS_IP(ctx) + distance + MT_R_DEBUG_STATE_OFFSET)) == 0 &&
		    r_state != MT_RT_CONSISTENT) {
			exec_watch_note(MT_EXEC_WATCH_HOOK);
			return 0;
		}
		exec_watch_note(MT_EXEC_WATCH_HOOK |
				(hold_for_new_code(MT_CODE_LOADER) ? MT_EXEC_WATCH_HELD : MT_EXEC_WATCH_UNHELD));
		return 0;
	}
	struct thread_state *st = state(true);
	if (!st)
		return 0;
	/* Once per thread and image (on_exec resets it): no per-call lookup of exec_watch. */
	if (func < MT_FUNC_INTERNAL && !st->image_allocated) {
		st->image_allocated = 1;
		exec_watch_note(MT_EXEC_WATCH_ALLOCATED);
	}
	/* The stack pointer at the call's entry, pointing at its return address. */
	__u64 sp = PT_REGS_SP(ctx);

	if (is_mapping(func)) {
		mapping_entry(st, ctx, cookie, func, sp);
		return 0;
	}

	if (func == MT_FUNC_FREE || func == MT_FUNC_DELETE) {
		__u64 addr = probe_args(ctx, cookie).v[0];
		/* The probe's address names the function (one probe per function). */
		if (mt_free_entry(&st->frames, sp, addr, PT_REGS_IP(ctx))) {
			if (recording)
				emit(MT_KIND_FREE, addr, 0, 0, 0);
		} else if (addr) {
			count(MT_COUNTER_NESTED);
		}
		return 0;
	}

	/* Only a call at the stack pointer of the one in flight may be its tail call. */
	bool pending = st->frames.alloc_sp == sp && return_pending_at(sp);
	enum mt_entry e = mt_alloc_entry(&st->frames, sp, pending);
	if (e == MT_ENTRY_NESTED || e == MT_ENTRY_TAIL) {
		count(MT_COUNTER_NESTED);
		return 0;
	}
	if (e == MT_ENTRY_STALE)
		count(MT_COUNTER_STALE_FRAME);
	st->func = func;
	struct probe_args args = probe_args(ctx, cookie);
	st->arg0 = args.v[0];
	st->arg1 = args.v[1];
	st->arg2 = args.v[2];
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

	/* One allocation event, whatever the function: the stack capture is inlined once. */
	__u64 ret = PT_REGS_RC(ctx), addr = ret, size = st->arg0, old_addr = 0;
	__u32 kind = MT_KIND_MALLOC, flags = 0;
	switch (st->func) {
	case MT_FUNC_MALLOC:
	case MT_FUNC_NEW:
	case MT_FUNC_VALLOC:
		break;
	case MT_FUNC_NEW_ALIGNED:
	case MT_FUNC_MALLOC_ALIGNED:
		kind = MT_KIND_ALIGNED_ALLOC;
		break;
	case MT_FUNC_CALLOC_ALIGNED:
		kind = MT_KIND_ALIGNED_ALLOC;
		size = st->arg0 * st->arg1;
		break;
	case MT_FUNC_MALLOCX:
		/* An alignment makes it an AlignedAlloc (zeroed or not); zeroing alone a Calloc. */
		kind = (st->arg1 & MT_MALLOCX_LG_ALIGN_MASK) ? MT_KIND_ALIGNED_ALLOC
		       : (st->arg1 & MT_MALLOCX_ZERO)        ? MT_KIND_CALLOC
							     : MT_KIND_MALLOC;
		break;
	case MT_FUNC_ZALLOC:
		kind = MT_KIND_CALLOC;
		break;
	case MT_FUNC_MALLOCN:
		size = st->arg0 * st->arg1;
		break;
	case MT_FUNC_CALLOC:
		kind = MT_KIND_CALLOC;
		size = st->arg0 * st->arg1;
		break;
	case MT_FUNC_ALIGNED_ALLOC:
		kind = MT_KIND_ALIGNED_ALLOC;
		size = st->arg1;
		break;
	case MT_FUNC_POSIX_MEMALIGN:
		/* The pointer comes back through the out-parameter; the return value is an errno. */
		addr = 0;
		if ((int)ret == 0 && bpf_probe_read_user(&addr, sizeof(addr), (void *)st->arg0) != 0)
			addr = 0;
		kind = MT_KIND_ALIGNED_ALLOC;
		size = st->arg2;
		break;
	case MT_FUNC_REALLOC:
	case MT_FUNC_REALLOCARRAY:
		size = st->func == MT_FUNC_REALLOC ? st->arg1 : st->arg1 * st->arg2;
		if (!ret) {
			if (size == 0 && st->arg0)
				emit(MT_KIND_FREE, st->arg0, 0, 0, 0); /* realloc(p, 0) frees p */
			return 0;
		}
		if (st->arg0) {
			kind = MT_KIND_REALLOC;
			old_addr = st->arg0;
			flags = MT_FLAG_OLD_ADDR;
		}
		break;
	default:
		return 0;
	}
	if (addr)
		emit_allocation(ctx, kind, addr, size, old_addr, flags);
	return 0;
}

/* ---- the timeline's records (docs/FORMATS.md): exec's text, RSS ---- */

/* An exec's path and arguments, copied once before they are cut into records. */
struct mt_exec_scratch {
	char path[MT_EXEC_PATH_MAX + MT_EXEC_TEXT_BYTES];
	char args[MT_EXEC_ARGS_MAX + MT_EXEC_TEXT_BYTES];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mt_exec_scratch);
} exec_scratch SEC(".maps");

/*
 * Sends `text[0, len)` as MT_KIND_EXEC_TEXT records through the events ring, the route the
 * MT_KIND_EXEC before them took, so user space finds them in order behind it. At least one
 * record even for an empty text: the arguments' last piece is what completes an exec.
 */
struct exec_text_walk {
	const char *text;
	__u64 ts, ids;
	__u32 len, part, flags;
};

/* One piece of an exec text (bpf_loop's callback, verified once however long the text). */
static int emit_exec_piece(__u32 i, void *ctx)
{
	struct exec_text_walk *w = ctx;
	__u32 off = i * MT_EXEC_TEXT_BYTES;
	if (off && off >= w->len)
		return 1;
	if (off > MT_EXEC_ARGS_MAX - MT_EXEC_TEXT_BYTES)
		return 1;
	struct mt_record *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		count(MT_COUNTER_DROPPED);
		return 1;
	}
	r->timestamp = w->ts;
	bpf_probe_read_kernel(&r->addr, 8, w->text + off);
	bpf_probe_read_kernel(&r->old_addr, 8, w->text + off + 8);
	bpf_probe_read_kernel(&r->stack_hash, 8, w->text + off + 16);
	r->size_kind = mt_pack_size_kind(mt_exec_text_size(w->part, w->len, off), MT_KIND_EXEC_TEXT, w->flags);
	r->pid = w->ids >> 32;
	r->tid = (__u32)w->ids;
	__u64 fill = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	bpf_ringbuf_submit(r, fill < wakeup_bytes ? BPF_RB_NO_WAKEUP : 0);
	note_fill(0, fill);
	return 0;
}

/*
 * Sends `text[0, len)` as MT_KIND_EXEC_TEXT records through the events ring, the route the
 * MT_KIND_EXEC before them took, so user space finds them in order behind it. At least one
 * record even for an empty text: the arguments' last piece is what completes an exec. A
 * bpf_loop: 6.1's verifier gave up on the unrolled walk of 4 KiB (over 1 M instructions).
 */
static __always_inline void emit_exec_text(const char *text, __u32 len, __u32 max, __u32 part, __u32 flags,
					   __u64 ts, __u64 ids)
{
	struct exec_text_walk w = {.text = text, .ts = ts, .ids = ids, .len = len, .part = part, .flags = flags};
	bpf_loop((max + MT_EXEC_TEXT_BYTES - 1) / MT_EXEC_TEXT_BYTES, emit_exec_piece, &w, 0);
}

/* The exec that just happened in the current process: its path and its new image's argv. */
static __always_inline void emit_exec_texts(struct linux_binprm *bprm)
{
	__u32 zero = 0;
	struct mt_exec_scratch *s = bpf_map_lookup_elem(&exec_scratch, &zero);
	if (!s)
		return;
	__u64 ts = bpf_ktime_get_ns(), ids = current_ids();
	long plen = bpf_probe_read_kernel_str(s->path, MT_EXEC_PATH_MAX, BPF_CORE_READ(bprm, filename));
	__u32 path_len = plen > 1 ? plen - 1 : 0; /* without its NUL */
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 start = BPF_CORE_READ(task, mm, arg_start), end = BPF_CORE_READ(task, mm, arg_end);
	__u64 len = end > start ? end - start : 0;
	__u32 flags = 0;
	if (len > MT_EXEC_ARGS_MAX) {
		len = MT_EXEC_ARGS_MAX;
		flags = MT_FLAG_TEXT_CUT;
	}
	if (len && bpf_probe_read_user(s->args, len, (void *)start) != 0)
		len = 0;
	emit_exec_text(s->path, path_len, MT_EXEC_PATH_MAX, MT_EXEC_PATH, 0, ts, ids);
	emit_exec_text(s->args, len, MT_EXEC_ARGS_MAX, MT_EXEC_ARGS, flags, ts, ids);
}

/* ---- process life ---- */

/* The process, just held for `reason` before running code of its own, resumes with these
 * registers (hold.h). */
static __always_inline void watch_unrun(struct task_struct *task, __u32 tgid, __u32 reason)
{
	struct mt_held *h = bpf_map_lookup_elem(&held, &tgid);
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	__u32 r = mt_hold_reason_index(reason);
	if (!h || !regs || r >= MT_HOLD_REASONS)
		return;
	h->unrun_ip = 0; /* no half-written watch is ever compared */
	h->unrun_sp = BPF_CORE_READ(regs, sp);
	h->unrun_since = h->since_ns[r];
	h->unrun_reason = reason;
	h->unrun_ip = BPF_CORE_READ(regs, ip);
}

/*
 * A thread of a process held before it ran stops (it takes its SIGSTOP): if it stops anywhere
 * but where it was held, someone else's SIGCONT let it run before its probes or its new code's
 * probes existed. Watched once: the first stop settles it.
 */
SEC("tp_btf/signal_deliver")
int BPF_PROG(on_signal_deliver, int sig, struct kernel_siginfo *info, struct k_sigaction *ka)
{
	if (sig != SIGSTOP)
		return 0;
	__u32 tgid = current_tgid();
	struct mt_held *h = tgid ? bpf_map_lookup_elem(&held, &tgid) : NULL;
	__u32 *w = tgid ? hold_word(tgid) : NULL;
	if (!h || !w || !h->unrun_ip)
		return 0;
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (regs && mt_hold_ran_unheld(h, *(volatile __u32 *)w, BPF_CORE_READ(regs, ip), BPF_CORE_READ(regs, sp))) {
		count(MT_COUNTER_HOLDS_ESCAPED);
		h->unrun_ip = 0; /* counted once */
	}
	return 0;
}

/*
 * A forked child inherits its parent's breakpoints but not its parent's links, whose filter
 * names the parent: it would run unrecorded. Hold it before it first runs and tell user space,
 * which attaches the child's own links and releases it.
 */
static __always_inline void hold_for_probes(struct task_struct *parent, struct task_struct *child, __u32 child_tgid)
{
	if (!hold_process(child, child_tgid, MT_HOLD_SPAWN, false)) {
		count(MT_COUNTER_SPAWN_UNSTOPPED);
		return;
	}
	watch_unrun(child, child_tgid, MT_HOLD_SPAWN);
	struct mt_spawn spawn = {
		.pid = child_tgid,
		.parent = ns_tgid(parent),
		.start_boottime = BPF_CORE_READ(child, group_leader, start_boottime),
		.hold = MT_HOLD_SPAWN,
	};
	/* Lost notices are found by user space's scan of the held index. */
	if (bpf_ringbuf_output(&spawns, &spawn, sizeof(spawn), BPF_RB_FORCE_WAKEUP) != 0)
		count(MT_COUNTER_SPAWNS_DROPPED);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	if (BPF_CORE_READ(parent, tgid) == BPF_CORE_READ(child, tgid))
		return 0; /* a new thread */
	__u32 parent_tgid = ns_tgid(parent);
	__u32 child_tgid = ns_tgid(child);
	if (!parent_tgid || !child_tgid || !bpf_map_lookup_elem(&tracked, &parent_tgid))
		return 0; /* not ours */
	__u32 shared = MT_TRACKED_SHARED; /* until user space gives it links of its own */
	bpf_map_update_elem(&tracked, &child_tgid, &shared, BPF_ANY);
	/* A reused pid starts with no pause: whatever a dead process's straggler left ends here. */
	end_holds(child_tgid);
	bpf_map_delete_elem(&held, &child_tgid);
	/* The child maps what its parent maps: the same unwind tables, until it execs. */
	struct mt_unwind_process *maps = bpf_map_lookup_elem(&unwind_procs, &parent_tgid);
	if (maps)
		bpf_map_update_elem(&unwind_procs, &child_tgid, maps, BPF_ANY);
	else
		bpf_map_delete_elem(&unwind_procs, &child_tgid);
	/* And the same Python runtime at the same address (python_walk.h). */
	struct mt_python_proc *py = bpf_map_lookup_elem(&python_procs, &parent_tgid);
	if (py)
		bpf_map_update_elem(&python_procs, &child_tgid, py, BPF_ANY);
	else
		bpf_map_delete_elem(&python_procs, &child_tgid);
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
	__u32 tgid = current_tgid();
	bpf_map_delete_elem(&maps_known, &tgid); /* a new image: its mappings must be read again */
	bpf_map_delete_elem(&unwind_procs, &tgid); /* and described again, while it is held below */
	bpf_map_delete_elem(&python_procs, &tgid);
	bpf_map_delete_elem(&exec_watch, &tgid); /* user space watches the new image if it maps the loader */
	struct thread_state *st = state(false);
	if (st)
		st->image_allocated = 0; /* the only thread left: others start with none */
	emit(MT_KIND_EXEC, 0, 0, 0, 0);
	emit_exec_texts(bprm);
	/* Its executable (a static one holds its allocator) is probed before its first instruction. */
	if (!hold_for_new_code(MT_CODE_EXEC))
		return 0;
	watch_unrun(task, tgid, MT_HOLD_MODULE);
	struct mt_held *h = bpf_map_lookup_elem(&held, &tgid);
	if (h && old_pid != BPF_CORE_READ(task, tgid)) /* old_pid: the exec'ing thread's, global */
		h->thread_exec_since = h->since_ns[mt_hold_reason_index(MT_HOLD_MODULE)];
	return 0;
}

/*
 * A process ends with its last thread, whichever that is: its main thread may end first
 * (pthread_exit leaves it a zombie while the others run on), and an exec from another thread
 * ends the main thread while the process goes on in the new image under the same pid.
 * signal->live counts the threads not yet in do_exit, and is decremented before this
 * tracepoint: 0 only for the last one.
 */
static __always_inline bool last_thread(struct task_struct *task)
{
	return BPF_CORE_READ(task, signal, live.counter) == 0;
}

/* The process's exit status as wait() reports it: the group's on a group exit, else the thread's. */
static __always_inline __u64 exit_status(struct task_struct *task)
{
	struct signal_struct *sig = BPF_CORE_READ(task, signal);
	if (BPF_CORE_READ(sig, flags) & SIGNAL_GROUP_EXIT)
		return (__u32)BPF_CORE_READ(sig, group_exit_code);
	return (__u32)BPF_CORE_READ(task, exit_code);
}

/*
 * The process's last image mapped the loader and its hook never held it: its libraries were
 * never examined. Counted unless the loader could not have reached its hook at RT_CONSISTENT: a
 * process killed by a signal, the loader's own failure (exit code 127: a library missing), or
 * a hook seen at RT_ADD only (ldd: the loader lists the libraries and exits before they run);
 * and unless an allocator probe applied in the image: its allocator was probed all the same
 * (links on the same C library its parent mapped), so nothing of it went unrecorded.
 */
static __always_inline void loader_hook_settle(__u32 tgid, __u64 status)
{
	__u32 *w = bpf_map_lookup_elem(&exec_watch, &tgid);
	if (!w)
		return;
	__u32 bits = *w;
	bpf_map_delete_elem(&exec_watch, &tgid);
	if (!(bits & MT_EXEC_WATCH_LOADER) || (bits & (MT_EXEC_WATCH_HELD | MT_EXEC_WATCH_ALLOCATED)) ||
	    (status & 0x7f) || ((status >> 8) & 0xff) == 127)
		return;
	if ((bits & MT_EXEC_WATCH_HOOK) && !(bits & MT_EXEC_WATCH_UNHELD))
		return;
	count(MT_COUNTER_LOADER_HOOKS_MISSED);
	if (bits & MT_EXEC_WATCH_UNHELD)
		count(MT_COUNTER_LOADER_MISSED_UNHELD);
	else if (bits & MT_EXEC_WATCH_TRAPPED)
		count(MT_COUNTER_LOADER_MISSED_NO_HOOK);
	else if (bits & MT_EXEC_WATCH_REJECTED)
		count(MT_COUNTER_LOADER_MISSED_REJECTED);
	else
		count(MT_COUNTER_LOADER_MISSED_UNTRAPPED);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *task)
{
	if (!last_thread(task))
		return 0; /* the process goes on in its other threads */
	__u32 tgid = ns_tgid(task);
	if (!tgid || !bpf_map_lookup_elem(&tracked, &tgid))
		return 0;
	/* A process that dies while held must not be signalled later. */
	end_holds(tgid);
	bpf_map_delete_elem(&held, &tgid);
	bpf_map_delete_elem(&maps_known, &tgid);
	bpf_map_delete_elem(&unwind_procs, &tgid);
	bpf_map_delete_elem(&python_procs, &tgid);
	bpf_map_delete_elem(&tracked, &tgid);
	__u64 status = exit_status(task);
	loader_hook_settle(tgid, status);
	emit_record(MT_KIND_EXIT, 0, status, 0, 0, false, 0); /* no SIGSTOP to a dying process */
	return 0;
}

#define SEND_SIG_PRIV 1UL
#define TRACE_SIGNAL_IGNORED 1
#define SI_KERNEL 0x80
#define SIGCHLD 17
#define CLD_CONTINUED 6
/* The si_value of a RESTOP's SIGSTOP (hold.h), which tells it from every other SIGSTOP. */
#define MT_RESTOP_TAG 0x706f747365726d74ULL

/* RESTOPs need bpf_send_signal_task (Linux 6.13+), whichever probes serve the processes. */
static __always_inline bool can_signal_task(void)
{
	return signal_task;
}

static __always_inline bool is_restop(struct kernel_siginfo *info)
{
	unsigned long raw = (unsigned long)info;
	return raw && raw != SEND_SIG_PRIV && BPF_CORE_READ(info, si_code) == SI_KERNEL &&
	       (__u64)BPF_CORE_READ(info, _sifields._rt._sigval.sival_ptr) == MT_RESTOP_TAG;
}

/* A RESTOP's SIGSTOP landed (or, to a process already exiting, was ignored): one less on its way. */
static __always_inline void restop_landed(__u32 *w)
{
	__u32 old = *(volatile __u32 *)w;
	for (int i = 0; i < 8 && mt_hold_restops(old); i++) {
		__u32 seen = __sync_val_compare_and_swap(w, old, mt_hold_restop_landed(old));
		if (seen == old)
			return;
		old = seen;
	}
}

/*
 * One RESTOP claimed in the hold word `w` (hold.h), with `take` (a reason taken with it, or 0).
 * false: none may be (no reason held, no room to count one more, or the word kept changing).
 * `was`: the word the claim replaced.
 */
static __always_inline bool claim_restop(__u32 *w, __u32 take, __u32 *was)
{
	__u32 old = *(volatile __u32 *)w, next = 0;
	for (int i = 0; i < 8; i++) {
		if (!mt_hold_restop_claim(old, take, &next))
			break;
		__u32 seen = __sync_val_compare_and_swap(w, old, next);
		if (seen == old) {
			*was = old;
			return true;
		}
		old = seen;
	}
	*was = old;
	return false;
}

/*
 * Someone else's SIGCONT to a process memtrack holds cancelled the hold's SIGSTOP (a shell, a
 * supervisor, a parent continuing its new child): stop it again now, before its threads get
 * back to code that is not probed yet. Sent from here, under the target's siglock, the SIGSTOP
 * goes through irq_work as soon as the lock is released; the word counts it until it lands
 * (hold.h), so no release can send its SIGCONT before it. A pause for new probes or new code
 * that cannot be restored is counted: the run then says allocations may be missing.
 */
static __always_inline void restop(struct task_struct *task, __u32 *w)
{
	__u32 old = *(volatile __u32 *)w;
	if (!mt_hold_reasons(old))
		return; /* no pause of ours was cancelled */
	if (holds_closed()) {
		count(MT_COUNTER_HOLDS_BROKEN);
		return; /* memtrack is resuming everything for good */
	}
	bool claimed = can_signal_task() && claim_restop(w, 0, &old);
	if (!claimed && !mt_hold_reasons(old))
		return; /* its release cleared the last reason meanwhile: nothing was broken */
	count(MT_COUNTER_HOLDS_BROKEN);
	if (claimed) {
		if (bpf_send_signal_task(task, SIGSTOP, PIDTYPE_TGID, MT_RESTOP_TAG) == 0) {
			count(MT_COUNTER_HOLDS_RESTOPPED);
			return;
		}
		restop_landed(w); /* never sent */
	}
	if (old & (MT_HOLD_SPAWN | MT_HOLD_MODULE))
		count(MT_COUNTER_HOLDS_UNRESTORED);
}

/*
 * memtrack's SIGCONT (a pause ended) may land on a SIGSTOP someone else sent after memtrack read
 * the hold word, and cancel it. This runs once the SIGCONT took effect, under the target's
 * siglock, after the SIGSTOP's own signal_generate set USER_STOP: the mark is current. The
 * SIGSTOP sent again from here goes through irq_work as soon as the siglock is released, so the
 * threads the SIGCONT woke find it pending before they get back to user code. HoldRelease sends
 * its own SIGSTOP after such a SIGCONT too, tens of microseconds later: all that kernels without
 * bpf_send_signal_task get.
 */
static __always_inline void stop_again_if_user_stopped(struct task_struct *task)
{
	if (!can_signal_task())
		return;
	__u32 tgid = ns_tgid(task);
	__u32 *w = tgid ? hold_word(tgid) : NULL;
	if (w && (*(volatile __u32 *)w & MT_HOLD_USER_STOP) && bpf_map_lookup_elem(&tracked, &tgid))
		bpf_send_signal_task(task, SIGSTOP, PIDTYPE_TGID, 0);
}

/*
 * A RESTOP (claimed by the caller in `w`, the current process's word) sent by the current thread
 * to its own process, with bpf_send_signal, which every kernel has (bpf_send_signal_task, for
 * another process, is 6.13+). Called with interrupts enabled it sends at once; with them
 * disabled (under a siglock at signal_generate) it goes through irq_work on this CPU, which
 * runs as soon as they are enabled again, before this thread can get back to user code. Either
 * way its SIGSTOP carries no tag (SEND_SIG_PRIV, like every SIGSTOP BPF sends the current
 * thread), so the thread counts itself in `self_restops` before the send and that SIGSTOP's own
 * signal_generate, which names the sending thread, finds the count: the RESTOP has landed then,
 * not before (a release waits for it, hold.h). The kernel's own SEND_SIG_PRIV SIGSTOP (a ptrace
 * attach) would be taken for it only if it named this very thread within the microseconds the
 * irq_work waits. The closed flag is read after the claim, as a sender's is (hold_process): the
 * final pass waits for RESTOPs claimed before the close, and none is sent after it. Returns
 * whether it was sent; one not sent is taken back.
 */
static __always_inline bool send_self_restop(__u32 *w)
{
	__u32 *mark = bpf_task_storage_get(&self_restops, bpf_get_current_task_btf(), 0,
					   BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (mark && !holds_closed()) {
		*mark += 1;
		if (bpf_send_signal(SIGSTOP) == 0)
			return true;
		*mark -= 1;
	}
	restop_landed(w); /* never sent */
	return false;
}

/*
 * The held process stops itself again (restop_continued_self). One not sent is not counted
 * unrestored: the SIGCONT's sender counted it already where it could not send one of its own
 * (restop).
 */
static __always_inline void self_restop(__u32 *w)
{
	__u32 old = 0;
	if (claim_restop(w, 0, &old) && send_self_restop(w))
		count(MT_COUNTER_HOLDS_RESTOPPED_SELF);
}

#define SIGNAL_CLD_CONTINUED 0x20 /* linux/sched/signal.h: continued from a group stop, parent not told yet */
#define SA_NOCLDSTOP 1
#define SIG_IGN_HANDLER 1UL

/*
 * Whether a held process (`reasons`) that this SIGCONT continued stops itself again before it
 * runs user code of its own: at its next record above the mark (a pause for pressure alone), or,
 * continued from a full stop, at the CLD_CONTINUED notice to its parent (restop_continued_self),
 * which is sent unless the parent ignores SIGCHLD or asked for no stop notices. One that had not
 * taken its SIGSTOP yet (a new child the SIGCONT reached first) sends no notice: it needs the
 * sender's RESTOP. Runs after the SIGCONT took effect (signal_generate), so the flag is this
 * SIGCONT's.
 */
static __always_inline bool stops_itself(struct task_struct *task, __u32 reasons)
{
	if (reasons == MT_HOLD_PRESSURE)
		return true;
	if (!reasons || !(BPF_CORE_READ(task, signal, flags) & SIGNAL_CLD_CONTINUED))
		return false;
	struct sighand_struct *sh = BPF_CORE_READ(task, real_parent, sighand);
	if (!sh)
		return false;
	unsigned long handler = (unsigned long)BPF_CORE_READ(sh, action[SIGCHLD - 1].sa.sa_handler);
	unsigned long flags = BPF_CORE_READ(sh, action[SIGCHLD - 1].sa.sa_flags);
	return handler != SIG_IGN_HANDLER && !(flags & SA_NOCLDSTOP);
}

/*
 * The current process sent a SIGCONT that ended `target`'s pause (`reasons`), one the target
 * restores by itself (stops_itself): the sender is paused too (hold.h), for pressure when that
 * was the pause (until the rings are low again), CONTINUER otherwise (until the target holds no
 * reason: ProcessHolds). Without it a process continuing another over and over (a shell's loop, a
 * supervisor, a parent) let a writer run on through a full ring (dropped 51-1090 records in 4 of
 * 4 runs of `lifecycle sigcont-busy`), and cancelled a new child's stops faster than they came
 * back, until one reached user code before its probes existed. The SIGSTOP is the sender's own:
 * one program run sends one signal through irq_work (bpf_send_signal keeps a single one per CPU
 * and refuses a second with EBUSY), so the target gets no RESTOP from here. false: the sender is
 * not a tracked process other than the target, or could not be paused (then the target gets the
 * RESTOP instead).
 */
/* The current process's tgid when it is a tracked process other than `target`, else 0. */
static __always_inline __u32 tracked_other_than(__u32 target)
{
	__u32 tgid = current_tgid();
	return tgid && tgid != target && bpf_map_lookup_elem(&tracked, &tgid) ? tgid : 0;
}

static __always_inline bool pause_continuer(__u32 target, __u32 reasons)
{
	__u32 tgid = tracked_other_than(target);
	if (!tgid)
		return false;
	const __u32 reason = reasons == MT_HOLD_PRESSURE ? MT_HOLD_PRESSURE : MT_HOLD_CONTINUER;
	__u32 *w = hold_word(tgid);
	struct mt_held *h = held_entry(bpf_get_current_task_btf(), tgid);
	if (!w || !h) {
		count(MT_COUNTER_HOLD_FAILED);
		return false;
	}
	if (reason == MT_HOLD_CONTINUER)
		h->continued = target; /* before the claim: a release that sees the reason sees it */
	__u32 old = 0;
	if (!claim_restop(w, reason, &old)) {
		count(MT_COUNTER_HOLD_FAILED);
		return false;
	}
	if (!(old & reason))
		pause_taken(h, reason);
	if (!send_self_restop(w))
		return false;
	count(MT_COUNTER_CONTINUERS_PAUSED);
	return true;
}

/* A SIGSTOP BPF sent the current thread landed (signal_generate, `task` the sender): if it was
 * that thread's self_restop, one RESTOP less on its way. */
static __always_inline void self_restop_landed(struct task_struct *task)
{
	__u32 *mark = bpf_task_storage_get(&self_restops, task, 0, 0);
	if (!mark || !*mark)
		return;
	*mark -= 1;
	__u32 tgid = ns_tgid(task);
	__u32 *w = tgid ? hold_word(tgid) : NULL;
	if (w)
		restop_landed(w);
}

/* The current process's hold word when it is tracked and holds one of `reasons`. */
static __always_inline __u32 *held_self(__u32 reasons)
{
	__u32 tgid = current_tgid();
	__u32 *w = tgid ? hold_word(tgid) : NULL;
	if (!w || !(*(volatile __u32 *)w & reasons) || !bpf_map_lookup_elem(&tracked, &tgid))
		return NULL;
	return w;
}

/*
 * A stopped process continued by someone else's SIGCONT tells its parent (SIGCHLD,
 * CLD_CONTINUED) on its own way back to user space, before it looks at its signals again: a
 * RESTOP sent from here lands before it gets there, so it never reaches user code. (The RESTOP
 * the SIGCONT's sender sent may come later than that.) Not covered: a parent that ignores
 * SIGCHLD or set SA_NOCLDSTOP gets no notice, and a process the SIGCONT catches before it took
 * its SIGSTOP was never stopped, so it notifies nobody.
 */
static __always_inline void restop_continued_self(struct kernel_siginfo *info)
{
	unsigned long raw = (unsigned long)info;
	if (!raw || raw == SEND_SIG_PRIV || BPF_CORE_READ(info, si_code) != CLD_CONTINUED)
		return;
	__u32 *w = held_self(MT_HOLD_REASON_MASK);
	if (w)
		self_restop(w);
}

/*
 * Senders whose SIGCONT broke a hold the held process does not restore by itself (a new child
 * the SIGCONT reached before its first stop, a stop still pending): the held process got the
 * RESTOP, the one signal that program run could send, and the sender owes a pause (the held
 * process's tgid), taken where it resumes after the system call (after_syscall). Without it a
 * sender continuing a new child over and over cancelled each RESTOP before the child took it,
 * hundreds of times a child, until one reached user code before its probes existed.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u32);
} owed_pauses SEC(".maps");

/* The current thread's SIGCONT broke `target`'s hold, which got a RESTOP: it pauses once back. */
static __always_inline void owe_pause(__u32 target)
{
	if (!tracked_other_than(target))
		return; /* pause_continuer would refuse it: no storage for it */
	__u32 *owed = bpf_task_storage_get(&owed_pauses, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (owed)
		*owed = target;
}

/* Back from the system call that sent it: the pause owed, unless the held process's pause ended. */
static __always_inline void pay_owed_pause(void)
{
	__u32 *owed = bpf_task_storage_get(&owed_pauses, bpf_get_current_task_btf(), 0, 0);
	if (!owed || !*owed)
		return;
	__u32 target = *owed;
	*owed = 0;
	__u32 *tw = hold_word(target);
	__u32 reasons = tw ? mt_hold_reasons(*(volatile __u32 *)tw) : 0;
	if (reasons)
		pause_continuer(target, reasons);
}

/* The current process's `held` entry (its tgid in *tgid) while a watch_unrun watch is set: the
 * one lookup most runs of stop_first_run's callers (other processes) pay. */
static __always_inline struct mt_held *watched_self(__u32 *tgid)
{
	*tgid = current_tgid();
	struct mt_held *h = *tgid ? bpf_map_lookup_elem(&held, tgid) : NULL;
	return h && h->unrun_ip ? h : NULL;
}

/*
 * The current process, held before it ran (watch_unrun), is about to run its first instruction,
 * (ip, sp) its registers: someone else's SIGCONT cancelled the hold's SIGSTOP before the process
 * took it. A new child the SIGCONT reached first notifies nobody (restop_continued_self), and
 * its sender's RESTOP comes through irq_work, which a child running on another CPU can outrun.
 * It stops itself here, from its own context, where bpf_send_signal sends at once (no irq_work).
 * `step`: how far past ip it stops (a uprobe steps the instruction it sits on first; 0 on the
 * way back to user space). The watch moves there, not away: a SIGCONT that cancels this SIGSTOP
 * before it is taken lets the process run on, and the stop that comes later is an escape.
 */
static __always_inline void stop_first_run(__u32 tgid, struct mt_held *h, __u64 ip, __u64 sp, __u64 step)
{
	__u32 *w = hold_word(tgid);
	if (!w || !mt_hold_first_run(h, *(volatile __u32 *)w, ip, sp))
		return;
	__u32 old = 0;
	if (!claim_restop(w, 0, &old) || !send_self_restop(w))
		return; /* released meanwhile, or no room: the watch judges its stop */
	h->unrun_ip += step;
	count(MT_COUNTER_HOLDS_CAUGHT_AT_START);
}

/*
 * MT_FUNC_AFTER_SYSCALL: where a process resumes in user space after a system call that matters
 * to its holds (ObjectProbes: with the entry probes). Runs for any process the link traps in
 * (no probe_applies): what it does is for held processes and tracked senders only.
 * - After kill (MT_COOKIE_AFTER_SIGNAL): a sender pays the pause it owes (owe_pause).
 * - At the loader's or a static executable's entry: a new image's first instruction (an exec
 *   clears the process's rseq registration, so on_rseq_update does not see it).
 */
static __always_inline void after_syscall(struct pt_regs *ctx, __u64 cookie)
{
	if (cookie & MT_COOKIE_AFTER_SIGNAL) {
		pay_owed_pause();
		return;
	}
	__u32 tgid = 0;
	struct mt_held *h = watched_self(&tgid);
	if (h)
		stop_first_run(tgid, h, PT_REGS_IP(ctx), PT_REGS_SP(ctx), MT_COOKIE_AFTER_LENGTH(cookie));
}

/*
 * A task's way back to user space after it was switched out, migrated or signalled, when it has
 * registered rseq (glibc does for every thread): a new child's first one too (its scheduler
 * marks it migrated when it first wakes, and a fork child keeps its parent's rseq), and each one
 * after someone else's SIGCONT continued it. Only where new children are held (per-process links):
 * attached by BpfSession then.
 */
SEC("tp_btf/rseq_update")
int BPF_PROG(on_rseq_update, struct task_struct *t)
{
	/* Nearly every run is some other task's: one lookup, before the registers are read. */
	__u32 tgid = 0;
	struct mt_held *h = watched_self(&tgid);
	struct pt_regs *regs = h ? (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf()) : NULL;
	if (regs)
		stop_first_run(tgid, h, BPF_CORE_READ(regs, ip), BPF_CORE_READ(regs, sp), 0);
	return 0;
}

/*
 * Someone else's SIGSTOP or SIGCONT to a tracked process (hold.h's USER_STOP): a process stopped
 * by its user, its shell or itself stays stopped when its pause ends. memtrack's own signals
 * (its SIGCONTs and the SIGSTOP after one) are the protocol's; BPF's SIGSTOPs are the kernel's
 * (SEND_SIG_PRIV from bpf_send_signal_thread, SI_KERNEL from bpf_send_signal_task), while a
 * process's sends carry SI_USER, SI_TKILL or SI_QUEUE (codes <= 0). Job-control stops (SIGTSTP
 * and co.) are not followed: whether one stops the process depends on its handlers and its
 * process group, and one that did not would keep a paused process stopped for good.
 */
SEC("tp_btf/signal_generate")
int BPF_PROG(on_signal, int sig, struct kernel_siginfo *info, struct task_struct *task, int group, int result)
{
	if (sig == SIGCHLD) {
		restop_continued_self(info);
		return 0;
	}
	if (sig != SIGSTOP && sig != SIGCONT)
		return 0;
	if (sig == SIGSTOP && (unsigned long)info == SEND_SIG_PRIV) {
		self_restop_landed(task);
		return 0;
	}
	if (sig == SIGSTOP && is_restop(info)) {
		__u32 tgid = ns_tgid(task);
		__u32 *w = tgid ? hold_word(tgid) : NULL;
		if (w)
			restop_landed(w);
		return 0;
	}
	if ((bpf_get_current_pid_tgid() >> 32) == memtrack_tgid) {
		if (sig == SIGCONT)
			stop_again_if_user_stopped(task);
		return 0;
	}
	if (sig == SIGSTOP) {
		unsigned long raw = (unsigned long)info;
		if (raw == SEND_SIG_PRIV || result == TRACE_SIGNAL_IGNORED)
			return 0;
		if (raw && BPF_CORE_READ(info, si_code) > 0)
			return 0;
	}
	__u32 tgid = ns_tgid(task);
	if (!tgid || !bpf_map_lookup_elem(&tracked, &tgid))
		return 0;
	__u32 *w = hold_word(tgid);
	if (!w)
		return 0;
	if (sig == SIGSTOP) {
		__sync_fetch_and_or(w, MT_HOLD_USER_STOP);
	} else {
		__sync_fetch_and_and(w, ~MT_HOLD_USER_STOP);
		/* Where the process stops itself again, the one signal this run may send pauses the
		 * sender (pause_continuer); elsewhere it is the process's RESTOP, and the sender pauses
		 * once back from its system call (owe_pause). */
		__u32 reasons = mt_hold_reasons(*(volatile __u32 *)w);
		if (stops_itself(task, reasons) && pause_continuer(tgid, reasons)) {
			count(MT_COUNTER_HOLDS_BROKEN);
		} else {
			restop(task, w);
			if (reasons)
				owe_pause(tgid);
		}
	}
	return 0;
}

/*
 * Run once by user space (BPF_PROG_TEST_RUN, so `current` is memtrack) before anything is
 * attached: memtrack's pid namespace is the deepest of its own pid's.
 */
SEC("raw_tp")
int find_pidns(void *ctx)
{
	struct task_struct *self = bpf_get_current_task_btf();
	struct pid *pid = BPF_CORE_READ(self, thread_pid);
	__u32 level = BPF_CORE_READ(pid, level);
	if (level > 32)
		return 1;
	struct upid up = {};
	__u64 at = (__u64)pid + bpf_core_field_offset(struct pid, numbers) + level * bpf_core_type_size(struct upid);
	if (bpf_probe_read_kernel(&up, sizeof(up), (void *)at) != 0)
		return 1;
	pidns_addr = (__u64)up.ns;
	pidns_level = level;
	memtrack_tgid = BPF_CORE_READ(self, tgid);
	return 0;
}

/*
 * RSS for the timeline (rss.h says when a record is written). The tracepoint fires for whichever
 * mm changed, from whichever task changed it (a fault: the process itself; reclaim: kswapd), so
 * the process is the mm's owner. Records are written for tracked processes only, and not while
 * the process tears its memory down at exit (its live count is 0 by then).
 */
const volatile bool record_rss = true;
const volatile __u64 rss_granularity = 1 << 20;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 16);
	__type(key, __u32);
	__type(value, struct mt_rss_sent);
} rss_sent SEC(".maps");

/* Linux before 6.2 kept the counters as atomics, not per-CPU counters. */
struct mm_rss_stat___atomic {
	atomic_long_t count[MT_RSS_MEMBERS];
};
struct mm_struct___atomic {
	struct mm_rss_stat___atomic rss_stat;
};

#define MT_PAGE_SHIFT 12

/* The mm's counters as the kernel reads them for /proc (the per-CPU counters' shared value). */
static __always_inline void read_rss(struct mm_struct *mm, __u64 out[MT_RSS_MEMBERS])
{
	__s64 v[MT_RSS_MEMBERS] = {};
	if (bpf_core_type_exists(struct mm_rss_stat___atomic)) {
		struct mm_struct___atomic *old = (void *)mm;
		v[0] = BPF_CORE_READ(old, rss_stat.count[0].counter);
		v[1] = BPF_CORE_READ(old, rss_stat.count[1].counter);
		v[2] = BPF_CORE_READ(old, rss_stat.count[2].counter);
		v[3] = BPF_CORE_READ(old, rss_stat.count[3].counter);
	} else {
		v[0] = BPF_CORE_READ(mm, rss_stat[0].count);
		v[1] = BPF_CORE_READ(mm, rss_stat[1].count);
		v[2] = BPF_CORE_READ(mm, rss_stat[2].count);
		v[3] = BPF_CORE_READ(mm, rss_stat[3].count);
	}
	for (int m = 0; m < MT_RSS_MEMBERS; m++)
		out[m] = v[m] > 0 ? (__u64)v[m] << MT_PAGE_SHIFT : 0;
}

SEC("tp_btf/rss_stat")
int BPF_PROG(on_rss, struct mm_struct *mm, int member)
{
	if (!record_rss)
		return 0;
	struct task_struct *owner = NULL;
	if (bpf_core_field_exists(mm->owner))
		owner = BPF_CORE_READ(mm, owner);
	if (!owner) {
		struct task_struct *self = bpf_get_current_task_btf();
		if (BPF_CORE_READ(self, mm) != mm)
			return 0;
		owner = self;
	}
	if (BPF_CORE_READ(owner, signal, live.counter) == 0)
		return 0; /* exiting: its memory goes, the exit's record says how much it held */
	__u32 tgid = ns_tgid(owner);
	if (!tgid || !bpf_map_lookup_elem(&tracked, &tgid))
		return 0;
	__u64 now[MT_RSS_MEMBERS];
	read_rss(mm, now);
	struct mt_rss_sent *sent = bpf_map_lookup_elem(&rss_sent, &tgid);
	if (!sent) {
		struct mt_rss_sent zero = {};
		bpf_map_update_elem(&rss_sent, &tgid, &zero, BPF_NOEXIST);
		sent = bpf_map_lookup_elem(&rss_sent, &tgid);
		if (!sent)
			return 0;
	} else if (!mt_rss_moved(sent, now, rss_granularity)) {
		return 0;
	}
	/* Two threads may both decide to write: two records, never a missed one. */
	for (int m = 0; m < MT_RSS_MEMBERS; m++)
		sent->bytes[m] = now[m];
	struct mt_record *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		count(MT_COUNTER_DROPPED);
		return 0;
	}
	r->timestamp = bpf_ktime_get_ns();
	r->addr = now[MT_RSS_ANON];
	r->old_addr = now[MT_RSS_FILE];
	r->stack_hash = now[MT_RSS_SHMEM];
	r->size_kind = mt_pack_size_kind(now[MT_RSS_SWAP], MT_KIND_RSS, 0);
	r->pid = tgid;
	r->tid = (__u32)member;
	__u64 fill = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	bpf_ringbuf_submit(r, fill < wakeup_bytes ? BPF_RB_NO_WAKEUP : 0);
	note_fill(0, fill);
	return 0;
}

/*
 * A process's RSS high-water mark, when its last thread exits: the kernel folds its mm's mark
 * into signal->maxrss (what getrusage's ru_maxrss reports: the highest over the process's life,
 * across execs) before this tracepoint. Attached ahead of on_exit, which forgets the process.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit_rss, struct task_struct *task)
{
	if (!record_rss || !last_thread(task))
		return 0; /* other threads run on */
	__u32 tgid = ns_tgid(task);
	if (!tgid)
		return 0;
	bool seen = bpf_map_delete_elem(&rss_sent, &tgid) == 0;
	if (!seen && !bpf_map_lookup_elem(&tracked, &tgid))
		return 0;
	struct mt_record *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		count(MT_COUNTER_DROPPED);
		return 0;
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->timestamp = bpf_ktime_get_ns();
	r->size_kind = mt_pack_size_kind(BPF_CORE_READ(task, signal, maxrss) << MT_PAGE_SHIFT, MT_KIND_RSS_PEAK, 0);
	r->pid = tgid;
	r->tid = ns_ids(task);
	__u64 fill = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	bpf_ringbuf_submit(r, fill < wakeup_bytes ? BPF_RB_NO_WAKEUP : 0);
	note_fill(0, fill);
	return 0;
}
