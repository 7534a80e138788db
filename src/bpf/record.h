/* SPDX-License-Identifier: MIT */
/*
 * The records the BPF side writes into its rings, shared by the kernel programs and user space.
 * Fixed-width fields only; src/format/Record.hpp static_asserts the size and every offset so a
 * mismatch fails the build, not a run. Bump MT_RECORD_VERSION on any layout change.
 */
#ifndef MEMTRACK_RECORD_H
#define MEMTRACK_RECORD_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#define MT_RECORD_VERSION 1

/* Kinds of event. The first eight map one to one onto the artifact's `type` names. */
enum mt_kind {
	MT_KIND_MALLOC = 1,
	MT_KIND_FREE = 2,
	MT_KIND_REALLOC = 3,
	MT_KIND_CALLOC = 4,
	MT_KIND_ALIGNED_ALLOC = 5,
	MT_KIND_MMAP = 6,
	MT_KIND_MUNMAP = 7,
	MT_KIND_BRK = 8,
	/* Process life: kept out of the MemtrackArtifact. */
	MT_KIND_FORK = 16, /* addr = child pid */
	MT_KIND_EXEC = 17,
	MT_KIND_EXIT = 18, /* size = exit code */
	/*
	 * The timeline's records (docs/FORMATS.md), also kept out of the artifact. RSS: pid is the
	 * process whose memory it is (not always the current one), tid the counter that moved
	 * (mt_rss_member); addr = anon, old_addr = file, stack_hash = shmem, size = swap, in bytes.
	 */
	MT_KIND_RSS = 19,
	MT_KIND_RSS_PEAK = 20, /* size = the process's RSS high-water mark in bytes, at its exit */
	/*
	 * One piece of an exec's text, right after its MT_KIND_EXEC (same pid, same timestamp):
	 * MT_EXEC_TEXT_BYTES bytes in addr, old_addr, stack_hash (in that order), where size says
	 * which text (mt_exec_part), its whole length and this piece's offset in it. Every exec
	 * sends its path's pieces, then its arguments' (NUL-separated, as the kernel keeps them),
	 * at least one piece each: the arguments' last piece completes the exec.
	 */
	MT_KIND_EXEC_TEXT = 21,
};

enum mt_exec_part {
	MT_EXEC_PATH = 0, /* the path exec was given (linux_binprm's filename) */
	MT_EXEC_ARGS = 1, /* argv as the new image sees it: arg_start..arg_end of its memory */
};
#define MT_EXEC_TEXT_BYTES 24
#define MT_EXEC_PATH_MAX 256
#define MT_EXEC_ARGS_MAX 4096 /* longer argument lists are cut: MT_FLAG_TEXT_CUT */
static inline __u64 mt_exec_text_size(__u32 part, __u32 total, __u32 offset)
{
	return ((__u64)(part & 0xff) << 40) | ((__u64)(total & 0xfffff) << 20) | (offset & 0xfffff);
}
#define MT_EXEC_TEXT_PART(size) ((__u32)((size) >> 40) & 0xff)
#define MT_EXEC_TEXT_TOTAL(size) ((__u32)((size) >> 20) & 0xfffff)
#define MT_EXEC_TEXT_OFFSET(size) ((__u32)(size)&0xfffff)

/* Which mm counter an RSS record's move came from: the kernel's MM_* order. */
enum mt_rss_member {
	MT_RSS_FILE = 0,
	MT_RSS_ANON = 1,
	MT_RSS_SWAP = 2,
	MT_RSS_SHMEM = 3,
	MT_RSS_MEMBERS = 4,
};

/* jemalloc's mallocx flags (jemalloc.h): log2 of the alignment in the low bits, and zeroing. */
#define MT_MALLOCX_LG_ALIGN_MASK 0x3fu
#define MT_MALLOCX_ZERO 0x40u

/* Bits of mt_record.flags. */
#define MT_FLAG_OLD_ADDR 0x1u /* old_addr is known (Realloc) */
#define MT_FLAG_TEXT_CUT 0x2u /* MT_KIND_EXEC_TEXT: the text was longer than its maximum */

/*
 * 48 bytes, so one record costs 56 bytes of ring with the kernel's 8-byte header. `size_kind`
 * packs the size (low 48 bits: no allocation or mapping can exceed the 47-bit user address space)
 * with the kind (bits 48-55) and flags (bits 56-63); use the accessors below.
 */
struct mt_record {
	__u64 timestamp; /* CLOCK_MONOTONIC ns */
	__u64 addr;
	__u64 size_kind;
	__u64 old_addr;   /* Realloc: the pointer passed in, when MT_FLAG_OLD_ADDR */
	__u64 stack_hash; /* 0: no stack captured */
	__u32 pid;        /* thread group id */
	__u32 tid;
};

#define MT_SIZE_BITS 48
#define MT_SIZE_MASK ((((__u64)1) << MT_SIZE_BITS) - 1)

static inline __u64 mt_pack_size_kind(__u64 size, __u32 kind, __u32 flags)
{
	return (size & MT_SIZE_MASK) | ((__u64)(kind & 0xff) << 48) | ((__u64)(flags & 0xff) << 56);
}
static inline __u64 mt_record_size(const struct mt_record *r) { return r->size_kind & MT_SIZE_MASK; }
static inline __u32 mt_record_kind(const struct mt_record *r) { return (r->size_kind >> 48) & 0xff; }
static inline __u32 mt_record_flags(const struct mt_record *r) { return (r->size_kind >> 56) & 0xff; }

/*
 * Which allocator function a uprobe sits on: the low byte of the BPF cookie. A probe placed past
 * the entry (ProbePlacement) never sits after a push, so the stack pointer it sees is the entry's.
 */
enum mt_func {
	MT_FUNC_MALLOC = 1,
	MT_FUNC_CALLOC,
	MT_FUNC_REALLOC,
	MT_FUNC_REALLOCARRAY,
	MT_FUNC_ALIGNED_ALLOC, /* aligned_alloc, memalign: (alignment, size) */
	MT_FUNC_POSIX_MEMALIGN,
	MT_FUNC_VALLOC, /* valloc, pvalloc: (size) */
	MT_FUNC_FREE,
	MT_FUNC_NEW,         /* every operator new/new[] without alignment: (size, ...) */
	MT_FUNC_NEW_ALIGNED, /* operator new/new[] with std::align_val_t: (size, alignment, ...) */
	MT_FUNC_DELETE,      /* every operator delete/delete[]: (ptr, ...) */
	MT_FUNC_MALLOCX,        /* jemalloc's mallocx(size, flags): alignment and zeroing in flags */
	MT_FUNC_MALLOC_ALIGNED, /* (size, alignment, ...): mi_malloc_aligned, mi_zalloc_aligned */
	MT_FUNC_CALLOC_ALIGNED, /* (count, size, alignment): mi_calloc_aligned */
	MT_FUNC_ZALLOC,         /* (size), zeroed: mi_zalloc; recorded as a Calloc */
	MT_FUNC_MALLOCN,        /* (count, size), not zeroed: mi_mallocn; recorded as a Malloc */
	/*
	 * Allocator housekeeping that is no call of the program's (glibc's per-thread cache teardown
	 * at thread exit): entered like an allocation, so what it calls is nested, and records nothing.
	 */
	MT_FUNC_INTERNAL,
	/* The C library's memory-mapping wrappers (the first is MT_FUNC_FIRST_MAPPING). */
	MT_FUNC_MMAP,   /* mmap, mmap64: (addr, len, prot, ...) */
	MT_FUNC_MUNMAP, /* (addr, len) */
	MT_FUNC_MREMAP, /* (old_addr, old_len, new_len, ...) */
	MT_FUNC_BRK,    /* brk, also what sbrk calls: (addr) -> 0 */
	MT_FUNC_DLOPEN, /* dlopen, dlmopen: new code, the process's mappings must be read again */
	/*
	 * The dynamic loader's debugger hook (_dl_debug_state), called after it maps objects and
	 * before their initializers run: the process is held (MT_HOLD_MODULE) while user space probes
	 * the new objects.
	 */
	MT_FUNC_LOADER,
	/*
	 * Where a process resumes after a system call that matters to its holds (a new image at the
	 * loader's or a static executable's entry, a sender after kill's):
	 * no call of the process's; memtrack.bpf.c's after_syscall. Bits 8-15 of the cookie: the
	 * length of the instruction probed (a process stopped there stops right after it).
	 */
	MT_FUNC_AFTER_SYSCALL,
};
#define MT_FUNC_FIRST_MAPPING MT_FUNC_MMAP

#define MT_COOKIE(func) ((__u64)(func))
/* Set on the probes of a link filtered to one process: the kernel ran the program for it only. */
#define MT_COOKIE_OWN_LINK (1ULL << 16)
/*
 * Bits 17-28: where the function's first three arguments are at the probed instruction, 4 bits
 * each (enum mt_arg_reg). At the entry they are the ABI's registers, shifted by one for
 * mimalloc's mi_heap_* (the heap comes first); a probe placed past a register copy finds an
 * argument in the copy (mimalloc's malloc moves its size from rdi to rsi).
 */
enum mt_arg_reg {
	MT_REG_RDI, MT_REG_RSI, MT_REG_RDX, MT_REG_RCX, MT_REG_R8, MT_REG_R9, MT_REG_RAX, MT_REG_RBX,
	MT_REG_RBP, MT_REG_R10, MT_REG_R11, MT_REG_R12, MT_REG_R13, MT_REG_R14, MT_REG_R15,
	MT_REG_COUNT,
};
#define MT_COOKIE_ARGS 3
#define MT_COOKIE_ARG_SHIFT(a) (17 + 4 * (a))
#define MT_COOKIE_WITH_ARG(a, reg) (((__u64)(reg)&0xf) << MT_COOKIE_ARG_SHIFT(a))
#define MT_COOKIE_ARG_REG(c, a) ((__u32)(((c) >> MT_COOKIE_ARG_SHIFT(a)) & 0xf))

/* Values of the `tracked` map: how a tracked process's allocator probes reach it. */
#define MT_TRACKED_SHARED 1 /* through the shared (unfiltered) links */
#define MT_TRACKED_OWN 2    /* through links of its own; the shared ones must ignore it */
/*
 * Values of the `exec_watch` map (tgid -> bits, from an exec to the exit): what became of the
 * loader's hook in an image that maps the loader, so one whose hook never held is counted
 * (MT_COUNTER_LOADER_HOOKS_MISSED) instead of running unrecorded in silence.
 */
#define MT_EXEC_WATCH_LOADER 0x1   /* user space, at the exec's release: the image maps the loader */
#define MT_EXEC_WATCH_TRAPPED 0x2  /* a mapping or loader probe applied in it */
#define MT_EXEC_WATCH_REJECTED 0x4 /* a shared link's mapping or loader probe trapped in it, not applied */
#define MT_EXEC_WATCH_HOOK 0x8     /* the loader's hook trapped, in any state */
#define MT_EXEC_WATCH_HELD 0x10    /* the hook at RT_CONSISTENT took the new-code hold */
#define MT_EXEC_WATCH_UNHELD 0x20  /* the hook at RT_CONSISTENT found the hold taken already */
#define MT_EXEC_WATCH_ALLOCATED 0x40 /* an allocator probe applied in it: its allocator is probed */
/*
 * MT_FUNC_LOADER: bits 32-63 hold the signed distance from the probed instruction to the
 * loader's `_r_debug` (0: unknown), whose r_state says which change the hook announces.
 */
#define MT_COOKIE_WITH_DISTANCE(d) (((__u64)(__u32)(__s32)(d)) << 32)
#define MT_COOKIE_DISTANCE(c) ((__s32)((c) >> 32))
#define MT_R_DEBUG_STATE_OFFSET 24 /* struct r_debug: r_version, r_map, r_brk, then r_state */
#define MT_RT_CONSISTENT 0
#define MT_COOKIE_FUNC(c) ((__u32)((c)&0xff))
/* MT_FUNC_AFTER_SYSCALL: the probed instruction's length; a signal function's site (a sender). */
#define MT_COOKIE_WITH_AFTER_LENGTH(len) (((__u64)(len)&0xff) << 8)
#define MT_COOKIE_AFTER_LENGTH(c) ((__u32)(((c) >> 8) & 0xff))
#define MT_COOKIE_AFTER_SIGNAL (1ULL << 32)

/*
 * A distinct call stack, sent once on the stacks ring the first time its hash is seen; events
 * carry only the hash. Variable length: `nr` return addresses follow, innermost first (frame 0
 * is the return address into the allocator's caller).
 */
#define MT_MAX_FRAMES 127
#define MT_STACK_NEW_MAPS 0x1u /* first stack since the process started, exec'd or mapped code */
#define MT_STACK_HELD 0x2u     /* this record holds its process (MT_HOLD_SNAPSHOT) until answered:
				  its mappings read (NEW_MAPS), its Python frames' code objects read */
/* With NEW_MAPS: all the process mapped since its last snapshot, the loader mapped in dlopen. */
#define MT_STACK_LOADER_CODE 0x4u
/*
 * Python frames whose code objects user space has all read before (python.h, python_codes) and
 * that still hold the fields it read: not held for them; named from what was read then.
 */
#define MT_STACK_PY_KNOWN 0x8u

struct mt_stack_record {
	__u64 hash;
	__u32 pid;
	__u16 nr;
	__u16 flags;
	__u64 ips[MT_MAX_FRAMES];
};
#define MT_STACK_HEADER_BYTES 16

/* Index of the per-CPU counters the BPF side keeps (map `counters`). */
enum mt_counter {
	MT_COUNTER_DROPPED = 0,  /* failed ring reservations: must stay 0 */
	MT_COUNTER_NESTED,       /* allocator calls made inside another one, not recorded */
	MT_COUNTER_STALE_FRAME,  /* outer call never returned (exception, longjmp): state reset */
	MT_COUNTER_STACKS_CAPTURED, /* allocation events that carry a stack hash */
	MT_COUNTER_STACKS_SENT,     /* stack records written to the stacks ring */
	MT_COUNTER_STACK_ERRORS,    /* bpf_get_stack failed: the event has no stack */
	MT_COUNTER_STACKS_DROPPED,  /* stack records the stacks ring had no room for: must stay 0 */
	MT_COUNTER_SIGNAL_FAILED,   /* a SIGSTOP the kernel refused: the process ran on */
	MT_COUNTER_SPAWN_UNSTOPPED, /* new processes that could not be held: may lose events */
	MT_COUNTER_SPAWNS_DROPPED,  /* spawn notices the spawns ring had no room for (found by scan) */
	MT_COUNTER_HOLD_SIGNALS,    /* SIGSTOPs sent (pressure re-sends one per record above the mark) */
	MT_COUNTER_HOLD_FAILED,     /* pauses not taken: no hold word, a full `held` index, contention */
	/* Pauses begun, one counter per reason (index mt_hold_reason_index, hold.h). */
	MT_COUNTER_HOLDS_TAKEN,
	/* Pauses ended by the process's exit (or a reused pid's fresh start), per reason. */
	MT_COUNTER_HOLDS_EXITED = MT_COUNTER_HOLDS_TAKEN + 5, /* MT_HOLD_REASONS (hold.h) */
	/* The CFI stack walk (unwind.h): frames by how they were found, walks by how they ended. */
	MT_COUNTER_UNWIND_CFI_FRAMES = MT_COUNTER_HOLDS_EXITED + 5, /* callers found from a row */
	MT_COUNTER_UNWIND_FP_FRAMES,  /* callers found by frame pointer: no row covers the pc */
	MT_COUNTER_UNWIND_NO_TABLES,  /* walks in a process with no tables loaded (all by frame pointer) */
	MT_COUNTER_UNWIND_COMPLETE,   /* walks that reached the outermost frame (or a null return address) */
	MT_COUNTER_UNWIND_TRUNCATED,  /* walks cut at max_frames */
	MT_COUNTER_UNWIND_UNSUPPORTED,/* walks ended at a rule the walker cannot follow */
	MT_COUNTER_UNWIND_READ_FAILED,/* walks ended at an unreadable stack slot */
	MT_COUNTER_UNWIND_BAD_FRAME,  /* walks ended at a frame that did not move up the stack */
	MT_COUNTER_UNWIND_CHAINS_MATCHED, /* walks answered by the thread's previous one (chain_cache.h) */
	MT_COUNTER_UNWIND_CHAINS_CHANGED, /* walks that started as the previous one but read other words */
	MT_COUNTER_SELF_TRAPS, /* memtrack's own allocator calls trapped by a shared link: must stay 0 */
	MT_COUNTER_UNWIND_ROW_MISSES, /* frames whose row the per-CPU row cache did not hold: searched */
	MT_COUNTER_UNWIND_SPLICED,    /* walks that took the rest of their frames from a kept walk */
	MT_COUNTER_UNWIND_SPLICED_FRAMES, /* the frames they took */
	MT_COUNTER_UNWIND_CHAINS_KNOWN, /* matched walks whose stack user space had: no seen_stacks lookup */
	MT_COUNTER_STACKS_UNCLAIMED, /* new stacks sent without a claimed seen_stacks way (CPUs raced for it) */
	MT_COUNTER_HOLDS_BROKEN,     /* someone else's SIGCONTs that ended a pause of memtrack's */
	MT_COUNTER_HOLDS_RESTOPPED,  /* of those, the pauses BPF stopped again at once (hold.h: RESTOP) */
	MT_COUNTER_HOLDS_UNRESTORED, /* pauses for probes or new code that could not be: must stay 0 */
	MT_COUNTER_HOLDS_ESCAPED,    /* processes held before they ran that ran all the same: must stay 0 */
	MT_COUNTER_HOLDS_RESTOPPED_SELF, /* RESTOPs a held process sent itself from its own context */
	MT_COUNTER_CONTINUERS_PAUSED, /* senders paused because their SIGCONT ended a pause (hold.h) */
	MT_COUNTER_HOLDS_CAUGHT_AT_START, /* processes held before they ran, stopped before their first instruction */
	/*
	 * Exec'd images that map the loader and exited normally without its hook ever holding them
	 * (their libraries were never probed): must stay 0. Then, by what the exec_watch bits say:
	 */
	MT_COUNTER_LOADER_HOOKS_MISSED,
	MT_COUNTER_LOADER_MISSED_UNTRAPPED, /* no mapping or loader probe ran for the image */
	MT_COUNTER_LOADER_MISSED_REJECTED,  /* only shared links trapped in it, and did not apply */
	MT_COUNTER_LOADER_MISSED_UNHELD,    /* its hook at RT_CONSISTENT found the new-code hold taken */
	MT_COUNTER_LOADER_MISSED_NO_HOOK,   /* the loader's mapping probes ran, its hook never trapped */
	/* time_parts only: nanoseconds spent in each part of the allocation return program, summed. */
	MT_COUNTER_PART_EVENTS,          /* allocation events timed */
	MT_COUNTER_PART_WALK_NS,         /* the stack walk (CFI rows or bpf_get_stack) */
	MT_COUNTER_PART_HASH_NS,         /* hashing the frames and looking the hash up */
	MT_COUNTER_PART_STACK_RECORD_NS, /* a new stack's record: reserve, write, submit, mark seen */
	MT_COUNTER_PART_EVENT_RECORD_NS, /* the event record: reserve, fill, submit, the fill check */
	MT_COUNTER_MAX,
};

/*
 * A process BPF holds until user space has probed it, sent on the `spawns` ring: a new process
 * of the tracked tree (hold MT_HOLD_SPAWN: its own links, filtered to it), or new code in one
 * (MT_HOLD_MODULE, at exec and at the loader's debugger hook: the objects it now maps).
 */
struct mt_spawn {
	__u32 pid;
	__u32 parent; /* MT_HOLD_SPAWN: the parent's tgid; 0 otherwise */
	__u64 start_boottime;
	__u32 hold;   /* the MT_HOLD_* reason taken */
	__u32 source; /* MT_HOLD_MODULE: what made the new code (mt_code_source); 0 otherwise */
};

enum mt_code_source {
	MT_CODE_EXEC = 1,   /* a new image: its executable and the loader are mapped, no library yet */
	MT_CODE_LOADER = 2, /* the loader's hook: objects mapped (or unmapped), not yet initialized */
};

#endif
