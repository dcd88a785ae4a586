/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What this kernel offers, probed once before anything is loaded, and the
 * choice taken for each need, as `spanperf probe` prints them (the table of
 * needs and fallbacks in docs/spanperf-probe.md).
 */
#ifndef SP_KERNEL_FEATURES_H
#define SP_KERNEL_FEATURES_H

#include <stdbool.h>
#include <stdio.h>

struct sp_features {
	bool btf;
	int pmu_err;	    /* 0: hardware cycles open; else -errno */
	int kprobe_err;	    /* 0: a kprobe attached */
	int fentry_err;	    /* 0: an fentry program loaded and attached */
	int tp_btf_err;
	int raw_tp_err;
	bool perf_event_prog;
	bool ringbuf;
	bool task_storage;
	bool uprobe;	    /* the uprobe PMU exists */
	bool use_clockid;   /* events can stamp with CLOCK_MONOTONIC */
	int tracefs_err;    /* 0: tracefs is usable at tracefs_path */
	bool tracefs_mounted; /* we mounted it */
	bool syscall_tps;   /* events/syscalls exists in tracefs */
	bool sched_info;    /* CONFIG_SCHED_INFO: threads' run_delay (/proc/self/schedstat) */
	bool sched_waking;  /* the sched_waking tracepoint is in the kernel's BTF (who woke a block) */
	bool sched_accounts; /* task_struct.sched_info in the BTF, and sched_info kept (the split's first choice) */
	bool split_stamps;  /* the split from stamps: no accounts, or SPANPERF_SCHED_SPLIT=stamps */
	char tracefs_path[64];
};

/* Probes everything; never fails, every finding is in f. */
void features_probe(struct sp_features *f);
/* Loads and attaches one program of bpf/calibrate.bpf.c by name: 0 or -errno. */
int features_try_attach(const char *prog);
/* How many arguments the tracepoint passes to BPF, from the kernel's BTF: n or -errno. */
int features_tp_nargs(const char *tp);
/* Finds tracefs, mounting it (as root) where it is not: 0 or -errno. */
int features_tracefs(char *path, size_t len, bool *mounted);
/*
 * The span split's method (features_split_stamps): the scheduler's accounts
 * where task_struct has sched_info in the kernel's BTF (CO-RE reads it)
 * and the kernel keeps it (CONFIG_SCHED_INFO: /proc/self/schedstat), else
 * stamps at sched_switch and sched_wakeup.  SPANPERF_SCHED_SPLIT=stamps
 * forces the stamps (tests compare the two; "accounts" is the default).
 */
bool features_sched_accounts(void);
bool features_split_stamps(void);
/* The `spanperf probe` report: each feature and the choice per need. */
void features_print(const struct sp_features *f, FILE *out);

#endif
