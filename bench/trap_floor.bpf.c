// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The trap floor: empty programs for the allocator probes. Attached where memtrack attaches its
 * own (bench/trap_floor.c), they cost what a uprobe hit costs and nothing more: the kernel's
 * breakpoint trap, instruction emulation or single-step, and an empty BPF program run.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("uprobe")
int floor_entry(void *ctx)
{
	return 0;
}

SEC("uretprobe")
int floor_return(void *ctx)
{
	return 0;
}
