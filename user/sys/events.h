/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Event names to perf_event_attr: generic hardware and cache events,
 * software events, raw rNNNN, PMU sysfs forms (cpu/event=0x3c,umask=0/ and
 * the events each PMU exports), counted tracepoints, and :u/:k modifiers.
 * One parser serves `record -e` and `stat -e`.
 */
#ifndef SP_EVENTS_H
#define SP_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/perf_event.h>

#define EV_NAME_LEN 128

enum ev_kind {
	EV_HW,
	EV_CACHE,
	EV_SW,
	EV_RAW,
	EV_PMU,
	EV_TRACEPOINT,
	EV_SCHED, /* a thread's scheduler account, counted in BPF at switches: stat only, never opened */
};

/* EV_SCHED's configs. */
enum {
	EV_SCHED_RUN_DELAY, /* time runnable, waiting for a CPU (sched_info.run_delay) */
	EV_SCHED_SLEEP,	    /* time asleep (S) */
	EV_SCHED_BLOCKED,   /* time blocked (D, uninterruptible, I/O included) */
};

struct event_spec {
	char name[EV_NAME_LEN];	  /* perf-style name with modifiers, e.g. "cycles:u" */
	enum ev_kind kind;
	struct perf_event_attr attr; /* type, config, config1/2 and exclude_* only */
	const char *unit;	  /* "msec" for the clocks, as perf stat prints them */
};

/* Where PMUs and tracepoints are looked up; tests point these at fixtures. */
void events_set_roots(const char *sysfs_pmu_dir, const char *tracefs_dir);
const char *events_tracefs_dir(void);

/* Parses one event.  On error fills err with one sentence naming the input. */
int event_parse(const char *s, struct event_spec *ev, char *err, size_t errlen);
/*
 * Parses a comma-separated list; commas inside pmu/.../ terms do not split.
 * *evs is allocated; free it with free().
 */
int event_list_parse(const char *s, struct event_spec **evs, int *n, char *err, size_t errlen);

/* The default sampling event and its fallback when the PMU is hidden. */
void event_default_cycles(struct event_spec *ev);
void event_cpu_clock(struct event_spec *ev);
/*
 * The sampling part of an attr that record and the library's samplers both
 * open: their one sample layout (identifier, ip, tid, time, cpu, period),
 * freq samples a second or one every period events, disabled until
 * enabled, sample_id_all, and CLOCK_MONOTONIC, bpf_ktime_get_ns's clock.
 * The event (type, config) and anything more are the caller's.
 */
void event_sampling_attr(struct perf_event_attr *a, bool freq, __u64 n);
/* True for the errnos that mean "no PMU here" (EOPNOTSUPP, ENOENT, ENODEV, EINVAL, EACCES). */
bool event_errno_means_no_pmu(int err);

/* Iterates over the built-in names, for `spanperf list`. */
struct event_name {
	const char *name;
	enum ev_kind kind;
};
const struct event_name *events_builtin(size_t *n);

#endif
