/* SPDX-License-Identifier: MIT */
/*
 * When a process's RSS is worth a timeline record: the rule compiled into the BPF program and
 * into the unit tests (tests/unit/test_rss_rule.cpp).
 *
 * The kernel's rss_stat tracepoint fires on every change of a process's memory counters: each
 * page fault, each unmapped page. A record per change would cost more than the faults, so a
 * record is written when some counter has moved, since the last record, by at least
 * max(granularity, its last recorded value / 64): small processes are followed to the
 * granularity (1 MiB by default), large ones to 1/64 of their size (a 4 GiB heap to 64 MiB).
 * A granularity of 0 records every change of a counter's value. A record that showed no memory
 * at all (the first one of a new image, often: its pages are still in the per-CPU parts of the
 * counters, which the kernel folds into the shared value in batches) is followed by one at the
 * next change, whatever its size, so a small process is never shown empty while it holds
 * memory. The exact high-water mark comes separately, at exit.
 */
#ifndef MEMTRACK_RSS_H
#define MEMTRACK_RSS_H

#ifndef __bpf__
#include <linux/types.h>
#include <stdbool.h>
#endif

#include "record.h"

#define MT_RSS_FRACTION_SHIFT 6 /* 1/64 */

/* The counters last recorded for one process, in bytes (mt_rss_member order). */
struct mt_rss_sent {
	__u64 bytes[MT_RSS_MEMBERS];
};

static inline bool mt_rss_moved(const struct mt_rss_sent *sent, const __u64 now[MT_RSS_MEMBERS], __u64 granularity)
{
	bool empty = true;
	for (int m = 0; m < MT_RSS_MEMBERS; m++)
		if (sent->bytes[m])
			empty = false;
	for (int m = 0; m < MT_RSS_MEMBERS; m++) {
		__u64 was = sent->bytes[m];
		__u64 d = now[m] > was ? now[m] - was : was - now[m];
		if (!granularity || empty) {
			if (d)
				return true;
			continue;
		}
		__u64 step = was >> MT_RSS_FRACTION_SHIFT;
		if (step < granularity)
			step = granularity;
		if (d >= step)
			return true;
	}
	return false;
}

#endif
