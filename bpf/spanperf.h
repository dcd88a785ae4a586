/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ABI shared by the BPF programs and the user-space loader: map value
 * layouts and limits.  Only __u32/__u64 types, so that both sides agree on
 * the layout without including each other's headers.
 */
#ifndef SPANPERF_H
#define SPANPERF_H

#define SP_COMM_LEN 16

/* -p and -t filters, applied in BPF before a sample reaches perf's ring. */
enum sp_filter_mode {
	SP_FILTER_NONE = 0,
	SP_FILTER_PID = 1, /* match the thread group id (process) */
	SP_FILTER_TID = 2, /* match the thread id */
};

/*
 * Per-thread totals, the value of the `threads` map keyed by TID.  The
 * sampling program fills samples/period; later programs (counters, spans)
 * read the same entry at span boundaries.
 */
struct sp_thread {
	__u64 samples;
	__u64 period;
	__u32 pid;
	__u32 flags;
	char comm[SP_COMM_LEN];
};

/* Counters per run; the per-thread entries hold this many slots. */
#define SP_MAX_COUNTERS 8

/*
 * Per-thread counter totals, the value of the `counts` map keyed by TID:
 * the sum of the counters' deltas over the thread's time slices, with the
 * enabled and running times perf uses to scale multiplexed counters.
 */
struct sp_counts {
	__u64 value[SP_MAX_COUNTERS];
	__u64 enabled[SP_MAX_COUNTERS];	/* only for counters read with times */
	__u64 running[SP_MAX_COUNTERS];
	__u64 oncpu_ns;			/* the thread's time on CPU, from switch stamps */
	__u32 pid;
	__u32 flags;
	char comm[SP_COMM_LEN];
};

/* Per CPU: the counters as they were when the running thread came in. */
struct sp_snap {
	__u64 value[SP_MAX_COUNTERS];
	__u64 enabled[SP_MAX_COUNTERS];
	__u64 running[SP_MAX_COUNTERS];
	__u64 ts;   /* bpf_ktime_get_ns() at the switch */
	__u32 tid;  /* the thread on this CPU since the snapshot */
	__u32 valid;
};

/* Indexes into the per-CPU `stats` array: events the loader must report. */
enum sp_stat {
	SP_STAT_SAMPLES = 0,	  /* samples accepted by the filter */
	SP_STAT_FILTERED,	  /* samples dropped by -p/-t */
	SP_STAT_THREADS_FULL,	  /* a new thread found the threads map full */
	SP_STAT_COUNTS_FULL,	  /* a time slice lost: the counts map was full */
	SP_STAT_READ_ERR,	  /* bpf_perf_event_read_value failed */
	SP_STAT_SWITCH_GAP,	  /* a switch-in was never traced (the CPU's snapshot names another thread) */
	SP_STAT_MAX,
};

#endif /* SPANPERF_H */
