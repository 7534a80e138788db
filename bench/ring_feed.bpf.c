// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The consumer benchmark's producer: run through BPF_PROG_TEST_RUN by
 * bench/consumer_throughput, it writes `count` records (bench/ring_feed.h) into its ring with
 * bpf_loop, reserving and submitting each one as memtrack's alloc_return does, so the consumer
 * reads a ring filled the way the kernel fills it.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "ring_feed.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The loader sets the size (--ring-size) before loading. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} ring SEC(".maps");

/* Failed reservations: the harness keeps the ring from filling, so this must stay 0. */
__u64 dropped = 0;

struct loop_ctx {
	__u64 first;
	__u64 wakeup_bytes;
};

static long write_one(__u32 i, void *data)
{
	struct loop_ctx *c = data;
	struct mt_record *r = bpf_ringbuf_reserve(&ring, sizeof(*r), 0);

	if (!r) {
		__sync_fetch_and_add(&dropped, 1);
		return 0;
	}
	ring_feed_fill(r, c->first + i);
	r->timestamp = bpf_ktime_get_ns();
	__u64 wake = 0;
	if (c->wakeup_bytes && bpf_ringbuf_query(&ring, BPF_RB_AVAIL_DATA) < c->wakeup_bytes)
		wake = BPF_RB_NO_WAKEUP;
	bpf_ringbuf_submit(r, wake);
	return 0;
}

SEC("syscall")
int feed(struct ring_feed_args *args)
{
	/* bpf_loop's context must live on the stack. */
	struct loop_ctx c = { .first = args->first, .wakeup_bytes = args->wakeup_bytes };

	bpf_loop(args->count, write_one, &c, 0);
	return 0;
}
