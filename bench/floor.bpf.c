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

/*
 * The floor of reading a thread's TLS from its sampling interrupt: one
 * 8-byte user read at its thread pointer (glibc's TCB starts with a
 * pointer to itself, so the word is always mapped).  Any reader of OTEP
 * 4947 context pays at least this per sample; record --otel is compared
 * with it.
 */
SEC("perf_event")
int floor_tls(void *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 fsbase = task->thread.fsbase, word = 0;

	if (fsbase && task->mm)
		bpf_probe_read_user(&word, sizeof(word), (void *)fsbase);
	return word == 1;
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
