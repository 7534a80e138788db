/* SPDX-License-Identifier: MIT */
/*
 * Unwind tables shared by user space (which compiles each object's DWARF CFI into rows) and the
 * BPF stack walker (which follows them from an allocator's return up to the thread's start).
 *
 * One row per change of the rule that finds the caller's frame, sorted by pc; a row holds from
 * its pc up to the next row's. pc is an ELF virtual address of the object (p_vaddr space, as in
 * its symbol table), so one table serves every process that maps the object; a process's
 * mapping gives the bias (load address - vaddr). The return address is always at CFA - 8 (the
 * x86-64 call pushes it): a rule that puts it elsewhere is MT_CFA_UNSUPPORTED.
 */
#ifndef MEMTRACK_UNWIND_H
#define MEMTRACK_UNWIND_H

#ifndef __bpf__
#include <linux/types.h>
#endif

/* Low nibble of mt_unwind_row.kind: how the CFA (the caller's stack pointer) is found. */
enum mt_cfa_type {
	MT_CFA_NONE = 0,        /* no CFI covers this pc: the walk steps by frame pointer (counted) */
	MT_CFA_RSP = 1,         /* CFA = rsp + cfa_off */
	MT_CFA_RBP = 2,         /* CFA = rbp + cfa_off */
	MT_CFA_PLT = 3,         /* CFA = rsp + cfa_off, + 8 when (pc & 15) >= rbp_off8 (a .plt stub) */
	MT_CFA_END = 4,         /* the return address is undefined: the outermost frame (_start, clone) */
	MT_CFA_UNSUPPORTED = 5, /* a rule the walker cannot follow (expression, other register): stop */
};

/* High nibble of mt_unwind_row.kind: where the caller's rbp is. */
enum mt_rbp_rule {
	MT_RBP_SAME = 0,      /* unchanged: still in rbp */
	MT_RBP_AT_CFA = 1,    /* saved at CFA + 8 * rbp_off8 */
	MT_RBP_UNDEFINED = 2, /* lost (the walk goes on; a frame-pointer step after it cannot) */
};

struct mt_unwind_row {
	__u32 pc;      /* first vaddr of this rule */
	__u16 cfa_off; /* CFA = base + cfa_off (bytes) */
	__u8 kind;     /* mt_cfa_type | mt_rbp_rule << 4 */
	__s8 rbp_off8; /* MT_RBP_AT_CFA: offset / 8; MT_CFA_PLT: the pc & 15 threshold */
};

static inline __u8 mt_unwind_kind(__u32 cfa_type, __u32 rbp_rule)
{
	return (__u8)((cfa_type & 0xf) | ((rbp_rule & 0xf) << 4));
}
static inline __u32 mt_unwind_cfa_type(const struct mt_unwind_row *r) { return r->kind & 0xf; }
static inline __u32 mt_unwind_rbp_rule(const struct mt_unwind_row *r) { return r->kind >> 4; }

/* Slots per CPU of the walker's row cache (a power of two); the map has this many per CPU. */
#define MT_ROW_CACHE_SLOTS 4096

/* Executable mappings described per process; a process with more falls back for the rest. */
#define MT_UNWIND_MAPPINGS 256

/* One executable file mapping of a process, and the rows of the object it maps. */
struct mt_unwind_mapping {
	__u64 start;     /* first address */
	__u64 end;       /* one past the last */
	__u64 bias;      /* load address - vaddr: vaddr = pc - bias */
	__u32 row_first; /* the object's first row in unwind_rows */
	__u32 row_count; /* 0: the object has no table (walked by frame pointer) */
};

/* A process's executable mappings, sorted by start, never overlapping (value of unwind_procs). */
struct mt_unwind_process {
	__u32 count;
	__u32 generation; /* new for every description user space writes: keys the walker's row cache */
	struct mt_unwind_mapping maps[MT_UNWIND_MAPPINGS];
};

#endif
