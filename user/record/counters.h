/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Counters per thread, aggregated in BPF at context switches (bpf/counters).
 *
 * Every event that needs a counter read goes through here: it is opened on
 * every CPU, put in a PERF_EVENT_ARRAY, and read by the sched_switch
 * program, which adds each thread's delta to its entry in a per-TID map.
 * `stat` shows the result; span annotation reads the same maps.
 */
#ifndef SP_COUNTERS_H
#define SP_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "events.h"
#include "parse.h"
#include "spanperf_abi.h"

struct target;

struct counters_opts {
	bool no_native;			 /* read task-clock from a counter too (tests) */
	bool native_switches;		 /* count context-switches in BPF (spans: no read) */
	const struct event_spec *evs;
	int nr_evs;			 /* at most SP_MAX_COUNTERS */
	const struct int_list *cpus;	 /* online CPUs */
	struct target *target;		 /* -p, -t, CMD's tree (record/target.h), or NULL: every thread */
	__u64 max_threads;
	bool prefer_raw_tp;		 /* force the raw_tp twin (tests) */
	bool sched_split;		 /* keep each thread's time in S and D (spans, stat's sleep/blocked) */
};

#define COUNTER_UNSUPPORTED (-1)
#define COUNTER_NATIVE (-2) /* task-clock: the thread's time on CPU, no counter read */
#define COUNTER_NATIVE_SWITCHES (-3) /* context-switches: slices ended, counted in BPF */
#define COUNTER_NATIVE_RUN_DELAY (-4) /* run-delay: sched_info.run_delay, read at switches */
#define COUNTER_NATIVE_SLEEP (-5)     /* sleep: time in S, from switch-outs (struct sp_counts) */
#define COUNTER_NATIVE_BLOCKED (-6)   /* blocked: time in D, the same way */

/* One event: where its values are, or why it cannot be counted here. */
struct counter_event {
	struct event_spec spec;
	int slot;	       /* index in the BPF arrays, or one of the two above */
	bool with_times;       /* may be multiplexed: read with enabled/running */
	bool is_clock;	       /* cpu-clock or task-clock read as a counter: counts ns */
	int err;	       /* -errno of perf_event_open when unsupported */
	char why[160];	       /* one sentence when unsupported */
};

/* A thread's totals as read back, indexed like the events. */
struct thread_counts {
	__u32 tid, pid;
	char comm[SP_COMM_LEN];
	__u64 oncpu_ns, switches;
	__u64 run_delay_ns, sleep_ns, blocked_ns; /* with sched_split */
	__u64 cgroup_id; /* v2, where it last ran */
	__u64 value[SP_MAX_COUNTERS], enabled[SP_MAX_COUNTERS], running[SP_MAX_COUNTERS];
};

struct counter_set;

int counters__open(struct counter_set **out, const struct counters_opts *o, char *err, size_t errlen);
/* Attaches the switch program, then enables the events. */
int counters__start(struct counter_set *s);
/* Disables the events: every reading after this is frozen. */
int counters__stop(struct counter_set *s);
/*
 * Per-thread totals: the map's entries plus the time slice each CPU is in
 * right now.  *out is allocated; free() it.
 */
int counters__read(struct counter_set *s, struct thread_counts **out, int *n);
/*
 * The whole-host totals per event: the counters' own sums, as perf stat -a
 * reads them; native task-clock sums the threads (threads from
 * counters__read).
 */
int counters__read_totals(struct counter_set *s, const struct thread_counts *t, int n,
			  __u64 *value, __u64 *enabled, __u64 *running);
const struct counter_event *counters__events(const struct counter_set *s, int *n);
/*
 * Time slices lost to a full map, failed reads, and switches the
 * tracepoint never showed (the thread seen leaving is given its run since its
 * last pick, by the scheduler's account: see oncpu_since_snap in bpf/sched_time.bpf.h).
 */
void counters__losses(struct counter_set *s, __u64 *full, __u64 *read_err, __u64 *gaps);
/* -- CMD: processes of the command's tree the filter was too full to follow. */
__u64 counters__target_full(const struct counter_set *s);
/*
 * The split's method (true: stamps at sched_switch and sched_wakeup), and
 * what its stamps missed: blocks and waits ended by the thread's run time
 * (switches untraced), and switch-outs to S or D that no wakeup ended.
 */
bool counters__split_stamps(const struct counter_set *s, __u64 *hidden, __u64 *nowake);
/* "tp_btf" or "raw_tp": which switch hook was attached. */
const char *counters__hook(const struct counter_set *s);
/* Memory the kernel holds per tracked thread (the counts map's, divided). */
__u64 counters__bytes_per_thread(const struct counter_set *s);
int counters__counts_map_fd(const struct counter_set *s);
/* The maps span programs share: the counter array, the per-CPU snapshot, the counts. */
void counters__map_fds(const struct counter_set *s, int *counters, int *snap, int *counts);
/*
 * A map of the shape of the sampling program's per-thread map
 * (bpf/maps.bpf.h: threads), for span programs run without that program
 * (stat --serve --span): they find no thread in it, so their spans count
 * no samples.  Made at the first call and closed with the set: its fd, or
 * -errno.
 */
int counters__threads_stand_in(struct counter_set *s);
void counters__free(struct counter_set *s);

#endif
