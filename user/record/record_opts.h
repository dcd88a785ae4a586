/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What `spanperf record` asks for, filled from argv by cmd/ (or by top and
 * --pprof-dir from their own options): the recorder (record.h) reads it,
 * and so does each source (source.h), which is why it stands apart from
 * the recorder that makes the sources.
 */
#ifndef SP_RECORD_OPTS_H
#define SP_RECORD_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "span_sources.h"
#include "parse.h"

struct pd_sink;

/* --off-cpu-entries, unless given: --off-cpu's BPF maps. */
#define RECORD_OFFCPU_ENTRIES 16384

struct record_opts {
	struct int_list pids, tids, cpus;
	bool all_cpus;		/* -a: the whole host, -- CMD too (only while CMD runs) */
	uint64_t freq, period;	/* one of them; freq defaults to 999 */
	const char *events;	/* -e, NULL: cycles with cpu-clock fallback */
	bool callgraph;		/* -g or --call-graph */
	/* --call-graph dwarf[,SIZE]: user registers and SIZE bytes of user stack, 0 for fp */
	uint32_t dwarf_stack;
	bool ehframe;		/* --call-graph ehframe: user chains unwound in BPF from .eh_frame tables */
	bool ehframe_auto;	/* -g: ehframe where this kernel has what it needs, else fp (said at -v) */
	const char **spans;	/* --span, repeatable, as given */
	int nr_spans;
	struct span_spec *specs; /* the --span texts parsed, nr_spans of them */
	uint64_t span_min_us;
	const char *span_counters; /* what spans carry; task-clock,context-switches by default */
	uint64_t span_buffer_kb;   /* the span ring, a power of two */
	bool raw_tp;		   /* --raw-tp: raw tracepoints where there is a choice */
	bool otel;		   /* --otel: read OTEP 4947 thread context at each sample */
	bool offcpu;		   /* --off-cpu */
	bool sched;		   /* --sched: every switch-out of the threads watched (sched_codec.h) */
	int64_t offcpu_thresh_ms;  /* --off-cpu-thresh, -1 when not given */
	uint64_t offcpu_entries;   /* --off-cpu-entries: stacks and sums kept in BPF */
	bool no_sched_split;	   /* --no-sched-split: spans without runq/sleep/blocked (bench's baseline) */
	bool no_wakers;		   /* --no-wakers: off-CPU blocks without their wakers */
	double duration;	/* -d, 0: until CMD exits or a signal */
	const char *output;	/* -o; NULL with a sink: no file */
	uint64_t mmap_pages;	/* -m, per CPU */
	uint64_t max_threads;
	bool no_buildid_cache;	/* -N: keep no copies of files the report could not find */
	bool perf_cache;	/* --perf-cache: enter the copies in perf's ~/.debug too */
	/*
	 * --switch-output[=signal|SIZE|TIME]: a new file on SIGUSR2, past
	 * switch_size bytes of data or every switch_ns, each named as perf
	 * names them (OUTPUT.YYYYMMDDHHMMSScc); --switch-max-files keeps the
	 * newest N (0: all).
	 */
	bool switch_output;
	/*
	 * Each --switch-output window ends with its own off-CPU sums (short
	 * blocks summed in BPF), not the last window with the whole run's:
	 * the agent's windows, whose threads' names a live session forgets a
	 * window after they exit.
	 */
	bool window_sums;
	uint64_t switch_size, switch_ns, switch_max_files;
	const char *pprof_dir; /* --pprof-dir: a pprof profile of each file, named FILE.pb.gz (live/) */
	/*
	 * The records as they are written, to a reader in memory (live/: top,
	 * --pprof-dir): the attrs at the start, then every record in the order
	 * the file gets them, once each (the side-band synthesized again for
	 * each --switch-output file goes to the files alone).  NULL: none.
	 */
	const struct pd_sink *sink;
	/*
	 * Called at the end of each --switch-output window, the last one too,
	 * once every record of it went to the sink: with the file completed,
	 * or NULL without one (output NULL: the window is every switch_ns).
	 * Nonzero ends the recording as a signal would.
	 */
	int (*on_switch)(const char *path, void *arg);
	/*
	 * on_pass, if set, is called after each pass of the loop (with
	 * on_switch_arg), and wake_fd (unless -1) wakes the loop too: top's
	 * keys.  Nonzero ends the recording.
	 */
	int (*on_pass)(void *arg);
	int wake_fd;
	void *on_switch_arg;
	char **cmd;		/* after --, NULL-terminated: without -a, -p, -t or -C, CMD and its children only */
	int verbose;
};

/* record's defaults: what `spanperf record` with no option does (-F 999, -o perf.data, ...). */
void record_opts_defaults(struct record_opts *o);
void record_opts_free(struct record_opts *o);
/* The --span texts parsed into o->specs, at most SP_MAX_SPANS (less --otel's): 0, or -errno said in err. */
int record_opts_parse_specs(struct record_opts *o, char *err, size_t errlen);

#endif
