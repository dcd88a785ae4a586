/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A perf.data read back, as perf's session and machine layers do it: the
 * attrs classified by what their records carry, one timeline of threads and
 * processes, and every sample and span handed, decoded, to a consumer.
 *
 * The file is read once, in file order.  The timeline comes from the
 * side-band: COMM (names, and exec), FORK and EXIT, MMAP and MMAP2, taken
 * as they come.  A thread takes its creator's name at the fork; a
 * process forked without exec starts with a copy of its parent's maps (the
 * symbolizer keeps them); an exec ends both.  Lookups are by time, so pid
 * reuse and samples that come before their side-band resolve as perf would.
 * Samples and spans wait, as perf's ordered events do, until the writer's
 * FINISHED_ROUNDs say every record up to their time is read (forks and
 * execs are applied then, in time order), and go to the consumers in file
 * order.
 *
 * The profile (report's tables, folded stacks, flame graphs and pprof), the
 * span join (report --spans, annotate) and the off-CPU time per span are
 * consumers; several share one pass and one symbolizer.
 *
 * A live session reads a recording as it is made (live/ feeds it what the
 * recorder writes): the same pass, record by record, in memory; what has been
 * delivered is let go.  Consumers come and go while it runs (a window of top
 * is a profile added at the window's start and ended at its end), and the
 * timeline and the symbolizer live on: each process and file is read once.
 */
#ifndef SP_SESSION_H
#define SP_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "hash.h"
#include "otel_pctx.h"
#include "perf_data.h"
#include "span_codec.h"
#include "symbols.h"

/* What an attr's records are. */
enum sess_kind {
	SESS_SAMPLING,	   /* on-CPU samples: cycles, cpu-clock, any -e event */
	SESS_OFFCPU,	   /* offcpu-time: period is ns off CPU */
	SESS_WAKER,	   /* spanperf:waker: who ended an off-CPU block (offcpu.h) */
	SESS_SCHED,	   /* spanperf-sched: every time off CPU of a thread, and how (sched_codec.h) */
	SESS_SPAN,	   /* spanperf:NAME: one span per record */
	SESS_SPAN_COUNTERS, /* names the spans' counters; no records */
	SESS_OTEL_PROCESS, /* spanperf-otel-process: a process's OTEP 4719 context, read at open */
	SESS_OTHER,	   /* ours, of a kind this reader does not know: skipped */
};

struct sess_sample {
	const struct pd_event *ev; /* the record, its attr and the decoded sample */
	enum sess_kind kind;
	int attr;		   /* index into the reader's attrs */
	bool kernel;		   /* the sample ip is a kernel address */
	const char *comm;	   /* the thread's name at the sample's time; never NULL */
};

struct sess_span {
	const struct pd_event *ev;
	const char *name; /* the span source's name */
	struct span_rec rec;
};

/*
 * A consumer: each callback may be NULL.  finish comes after the last
 * record, when every process context (written at the end of a recording)
 * and every name is known.  A non-zero return stops the pass and is returned.
 */
struct session_ops {
	int (*sample)(void *ctx, const struct sess_sample *s);
	int (*span)(void *ctx, const struct sess_span *s);
	int (*finish)(void *ctx);
};

struct session {
	struct pd_reader *rd;
	struct symbolizer *sym;
	enum sess_kind *kind; /* per attr */
	int first_sampling;   /* the first sampling attr, -1 if none */
	char *span_counters[SP_MAX_COUNTERS]; /* what a span's counters[k] is */
	int nr_span_counters;
	__u64 lost;	      /* from LOST and LOST_SAMPLES records (all of them once the pass is done) */
	__u64 forks, execs;   /* new processes and execs seen (likewise) */
	struct otel_pctx *pctx; /* process contexts, the latest of each pid */
	size_t nr_pctx, cap_pctx;
	struct u64_map pctx_idx; /* pid -> index + 1 */
	__u64 pctx_bad;		 /* records that did not decode */
	/*
	 * Samples the filter's lists refused (session_opts.filter), which
	 * perf's tables count in their total: on-CPU, and off-CPU (ns).
	 */
	__u64 filtered_samples, filtered_period, off_filtered_samples, off_filtered_period;
	__u64 filtered_spans; /* spans the filter left out (all of them: a file with spans can show none) */
	void *priv;
};

struct report_filter;

struct session_opts {
	const char *root; /* where symbol files are looked up, NULL for / */
	bool any_owner;	  /* report --force (perf's -f): the file and /tmp/perf-PID.map files of any owner */
	/*
	 * report's --comms, --pids, --tids, --dsos, --symbols and --time
	 * (report_filter.h), applied here for every consumer: a sample is
	 * delivered if its thread, process, comm, sampled dso and symbol, and
	 * time pass; a waker sample goes with the block it follows; a span by
	 * its own comm, pid, tid and end time (its record's).  NULL: none.
	 * Must outlive the session.
	 */
	const struct report_filter *filter;
};

/*
 * Opens the file and classifies its attrs; no record is read yet.  o: NULL
 * for the defaults.  On error, err names the file.
 */
int session__open(struct session **out, const char *path, const struct session_opts *o, char *err, size_t errlen);

struct session_live_opts {
	const char *name; /* what messages call the recording */
	const struct report_filter *filter; /* as session_opts' (top's --comms...); its --time is not */
	/* The symbolizer's tables kept loaded over session__trim (symbolizer__keep_tables); 0: all */
	size_t keep_tables, keep_syms;
};
/* A session fed the records of a recording as they are written (session__feed), under these attrs. */
int session__open_live(struct session **out, const struct pd_attr *attrs, int nr_attrs,
		       const struct session_live_opts *o, char *err, size_t errlen);
void session__free(struct session *s);

/* Adds a consumer (before its first record; ops must outlive it); 0 or -ENOMEM. */
int session__add_consumer(struct session *s, const struct session_ops *ops, void *ctx);
/* The consumer of ctx, after its finish if asked (whose error it returns), takes no more records. */
int session__end_consumer(struct session *s, void *ctx, bool finish);
/*
 * The one pass: every sample and span, in file order, to every consumer in
 * the order they were added, then their finish.  Stops at a consumer's
 * error; on the file's (or memory's), err names the file and record.
 */
int session__run(struct session *s, char *err, size_t errlen);
/* One consumer and the pass, for readers with one consumer. */
int session__process(struct session *s, const struct session_ops *ops, void *ctx, char *err, size_t errlen);

/*
 * The pass in parts, for a live session: records (whole, or any part of
 * them) as they are written; flush delivers every record queued, as at the
 * end of a file (a window's end); end is the recording's end (then every
 * consumer's finish).  Errors as session__run's.
 */
int session__feed(struct session *s, const void *p, size_t n, char *err, size_t errlen);
int session__flush(struct session *s, char *err, size_t errlen);
int session__end(struct session *s, char *err, size_t errlen);
/*
 * Between windows: the symbolizer's tables over its bound are unloaded
 * (symbolizer__trim).  What an ended consumer took from the symbolizer
 * stays valid until the next trim.
 */
void session__trim(struct session *s);

/* The filter the session applies (session_opts.filter), or NULL. */
const struct report_filter *session__filter(const struct session *s);
/* The name of tid at time t, NULL if the file never named it. */
const char *session__comm(struct session *s, __u32 tid, __u64 t);
/* The process of tid (its latest), or -1. */
__s64 session__pid_of(struct session *s, __u32 tid);
/*
 * pid's OTEP 4719 context as recorded (the latest), or NULL: its attribute
 * keys print as numbers.  Complete only in a consumer's finish and after:
 * a recording writes them at its end.
 */
const struct otel_pctx *session__otel_process(struct session *s, __u32 pid);

#endif
