/* SPDX-License-Identifier: MIT */
/*
 * The consumer benchmark's synthetic records (bench/consumer_throughput): shared by the BPF
 * program that writes them (ring_feed.bpf.c) and the harness that checks the artifact, so the
 * check can recompute every field but the timestamp from the record's sequence number.
 *
 * Record 2p allocates, record 2p+1 frees the same address. Allocations cycle through malloc,
 * calloc and realloc (with old_addr) over 8 processes of 4 threads and 1024 call stacks, with
 * sizes from 16 B to ~1 MiB, so the encoder meets every map shape and integer width it meets
 * in a real run.
 */
#ifndef MEMTRACK_RING_FEED_H
#define MEMTRACK_RING_FEED_H

#include "bpf/record.h"

/* BPF_PROG_TEST_RUN's ctx_in for the `feed` program. */
struct ring_feed_args {
	__u64 first;        /* sequence number of the first record of this run */
	__u32 count;        /* records to write */
	__u32 pad;
	__u64 wakeup_bytes; /* below this fill, submit without waking the consumer (as memtrack) */
};

/* Everything of record `seq` but its timestamp. */
static inline void ring_feed_fill(struct mt_record *r, __u64 seq)
{
	const __u64 pair = seq >> 1;
	const __u64 mix = pair * 0x9e3779b97f4a7c15ull;
	const __u32 pid = 4000 + (__u32)(pair & 7);

	r->pid = pid;
	r->tid = pid + (__u32)((pair >> 3) & 3);
	r->addr = 0x7f3a00000000ull + ((pair & 0xffffff) << 6);
	r->old_addr = 0;
	if (seq & 1) {
		r->size_kind = mt_pack_size_kind(0, MT_KIND_FREE, 0);
		r->stack_hash = 0;
		return;
	}
	__u64 size = 16 + ((mix >> 52) & 0xfff);
	if ((pair & 63) == 5)
		size = (1ull << 20) + (mix >> 44); /* now and then a large one: wider integers */
	__u32 kind = MT_KIND_MALLOC, flags = 0;
	if ((pair & 15) == 3) {
		kind = MT_KIND_REALLOC;
		flags = MT_FLAG_OLD_ADDR;
		r->old_addr = r->addr - 0x1000;
	} else if ((pair & 15) == 7) {
		kind = MT_KIND_CALLOC;
	}
	r->size_kind = mt_pack_size_kind(size, kind, flags);
	r->stack_hash = (((pair & 1023) + 1) * 0xff51afd7ed558ccdull) | 1; /* never 0: "no stack" */
}

#endif
