// SPDX-License-Identifier: GPL-2.0
/*
 * The floor of the overhead benchmarks: an empty program on the same
 * sampling events.  Returning 0 tells perf to drop the sample, so what
 * remains is the sampling interrupt and the BPF dispatch.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("perf_event")
int floor_prog(void *ctx)
{
	return 0;
}

/* Floors for span costs: empty programs on the same probe pairs. */
SEC("tracepoint")
int floor_tp(void *ctx)
{
	return 0;
}

SEC("uprobe")
int floor_uprobe(void *ctx)
{
	return 0;
}
