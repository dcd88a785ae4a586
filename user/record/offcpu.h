/* SPDX-License-Identifier: GPL-2.0 */
/*
 * record --off-cpu: time threads spend blocked, with the stack that blocked
 * (bpf/offcpu.bpf.c on sched_switch), written as perf writes it: samples
 * of an event named "offcpu-time" whose period is the nanoseconds off CPU,
 * with a kernel + user CALLCHAIN, in the form perf 6.1 reads.
 *
 * Blocks at or above the threshold become one sample each, stamped with the
 * switch-in; shorter ones are summed in BPF per (thread, stacks, state) and
 * written at the end, one sample per sum, stamped with the end.
 */
#ifndef SP_OFFCPU_H
#define SP_OFFCPU_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/perf_event.h>
#include <linux/types.h>

#include "names.h"
#include "parse.h"
#include "spanperf_abi.h"

struct target;

/* perf's default --off-cpu-thresh. */
#define OFFCPU_DEFAULT_THRESH_MS 500

/* --call-graph ehframe: the sampling program's unwind tables, which the off-CPU program shares. */
struct offcpu_eh_fds {
	int rows, pages, maps, procs, files;
	int gen; /* bumped by the sampling side at each change to procs or py_procs */
	int fresh; /* new processes' mappings, noted at their exec and mmaps (eh_fresh) */
	int py_procs, py_stats; /* Python processes' layouts and the walk's counts; -1: no Python frames */
	int hs_procs, hs_stats; /* JVMs' layouts and the Java steps' counts; -1: no Java frames */
};

struct py_frames;

struct offcpu_opts {
	const struct int_list *cpus;	/* -C, or NULL for every CPU */
	struct target *target;		/* -p, -t, CMD's tree (record/target.h), or NULL: every thread */
	/*
	 * A waker outside the target: called once before its first waker
	 * sample, so that the side-band of its process (which was not
	 * synthesized) precedes it and its stack is named.  0, or -errno.
	 */
	int (*outsider)(void *arg, __u32 pid, __u64 time);
	void *outsider_arg;
	__u64 max_threads;		/* threads off CPU at once */
	__u64 entries;			/* stacks and sums kept in BPF; the ring holds as many blocks */
	__u64 thresh_ns;
	bool prefer_raw_tp;
	bool no_wakers;			/* leave out the sched_waking program (bench: its cost alone) */
	const struct offcpu_eh_fds *eh; /* user chains by the tables, else NULL (the kernel's frame pointers) */
	struct py_frames *py;		/* their Python entries into addresses (eh's py_procs), or NULL */
	bool sched;			/* --sched: every switch-out as a spanperf-sched sample */
	bool no_offcpu;			/* --sched without --off-cpu: no offcpu-time, no stacks */
	/* No record stamped before *sorted_ns (what perf may have sorted already; NULL: none). */
	const __u64 *sorted_ns;
	/*
	 * Every block stamped as if found late, at the drain (tests: the
	 * hidden switch-ins that make them come a few times a minute under load).
	 */
	bool stamp_late;
};

struct offcpu_stats {
	__u64 samples;	   /* written, one by one */
	__u64 sums;	   /* written at the end, one per (thread, stacks, state) */
	__u64 summed;	   /* blocks in those sums */
	__u64 open_at_end; /* blocks still going at the end, written up to the end */
	__u64 exited;	   /* starts of threads gone at the end: dropped */
	__u64 lost, noslot, agg_full, kstack, ustack, stale, unseen, hidden, nostack_ids;
	__u64 late, too_late; /* blocks stamped after their end (OFFCPU_RES_LATE), or left out */
	__u64 ns;	   /* every sample's period summed */
	__u64 sched;	   /* spanperf-sched samples */
	__u64 wakers, waker_irq, waker_none, waker_kstack, waker_ustack, waker_unclassified;
	__u64 eh_chains, eh_complete; /* ehframe: user chains unwound, and those that reached the outermost frame */
	__u64 py_chains;   /* chains with Python frames named as they were first stored */
	__u64 py_retried, py_renamed; /* of those, not named whole at first; named whole at a later consume */
	/* Kernel chains: reused as proven, taken by the kernel and tried, kept (offkstack.bpf.h). */
	__u64 kchain_hits, kchain_misses, kchain_kept;
};

/* Writes a finished record to the file. */
typedef int (*offcpu_write_fn)(void *ctx, const void *rec, size_t n);

struct offcpu_set;

int offcpu__open(struct offcpu_set **out, const struct offcpu_opts *o, char *err, size_t errlen);
int offcpu__attach(struct offcpu_set *s, char *err, size_t errlen);
/* The attr every off-CPU sample has. */
void offcpu__attr(struct perf_event_attr *a);
/* The waker samples' attr (waker_codec.h). */
void offcpu__waker_attr(struct perf_event_attr *a);
/* The spanperf-sched samples' attr (sched_codec.h). */
void offcpu__sched_attr(struct perf_event_attr *a);
/* Which records the set writes. */
bool offcpu__sched(const struct offcpu_set *s);
bool offcpu__offcpu(const struct offcpu_set *s);
/* For poll(): readable when the ring is half full. */
int offcpu__ring_fd(const struct offcpu_set *s);
/* Writes the blocks in the ring; *n is how many. */
int offcpu__consume(struct offcpu_set *s, offcpu_write_fn fn, void *ctx, __u64 *n);
/*
 * Detaches, then writes what is left: the ring, the sums (stamped end_ns)
 * and the blocks still going (cut at end_ns).
 */
int offcpu__finish(struct offcpu_set *s, __u64 end_ns, offcpu_write_fn fn, void *ctx);
/*
 * The sums so far, stamped end_ns, taken out of the map as they are
 * written, the programs still attached: a window's own (the agent's
 * windows, record_opts.window_sums).
 */
int offcpu__sums(struct offcpu_set *s, __u64 end_ns, offcpu_write_fn fn, void *ctx);
void offcpu__stats(struct offcpu_set *s, struct offcpu_stats *st);
/* "tp_btf" or "raw_tp". */
const char *offcpu__hook(const struct offcpu_set *s);
/* Whether the kernel's sched_switch passes prev_state, which the program then uses. */
bool offcpu__has_prev_state(const struct offcpu_set *s);
/* Cumulative BPF run time and runs of the switch program (bpf_stats, for bench). */
int offcpu__prog_fd(const struct offcpu_set *s);
/* Each block names its waker (the sched_waking program is loaded). */
bool offcpu__wakers(const struct offcpu_set *s);
/* The sched_waking program's fd (bpf_stats), -ENOENT without it. */
int offcpu__waking_prog_fd(const struct offcpu_set *s);
void offcpu__free(struct offcpu_set *s);

#endif
