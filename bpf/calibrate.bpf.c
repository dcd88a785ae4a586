// SPDX-License-Identifier: GPL-2.0
/*
 * Calibration programs: kernel_features.c loads and attaches one at a time
 * (the others set to autoload=false) to learn what this kernel allows
 * before the real programs are chosen.  Nothing here runs for long.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

/* kprobes need CONFIG_KPROBES; the attach, not the load, tells. */
SEC("kprobe/vfs_read")
int BPF_KPROBE(calib_kprobe)
{
	return 0;
}

/* fentry needs BTF and trampolines (5.5+, x86); lockdown or LSMs may refuse. */
SEC("fentry/vfs_read")
int BPF_PROG(calib_fentry)
{
	return 0;
}

/* BTF-typed tracepoints (5.5+). */
SEC("tp_btf/sched_switch")
int BPF_PROG(calib_tp_btf)
{
	return 0;
}

/* Raw tracepoints (4.17+): the fallback for tp_btf. */
SEC("raw_tp/sched_switch")
int calib_raw_tp(void *ctx)
{
	return 0;
}
