/* SPDX-License-Identifier: GPL-2.0 */
/*
 * record --otel: the user-space half of reading OTEP 4947 thread context.
 * It finds the processes that publish otel_thread_ctx_v1 (at start, then
 * new and exec'ed ones on each tick), hands the sampling program a recipe
 * per process, and turns the contexts BPF saw end into spans of the source
 * `otel` in the perf.data: one span per run of samples with the same
 * context on a thread, from its first sample to its last plus one period.
 */
#ifndef SP_OTEL_RECORD_H
#define SP_OTEL_RECORD_H

#include <stdbool.h>
#include <linux/perf_event.h>
#include <linux/types.h>

#include "parse.h"
#include "perf_data.h"

struct bpf_map;
struct otel_record;

/* Sizes the sampling program's otel maps, between open and load: the least when off. */
void otel_record_size_maps(struct bpf_map *recipes, struct bpf_map *events, bool on);

struct otel_record_opts {
	int recipes_fd, threads_fd, events_fd, stats_fd;
	__u32 *gen; /* the sampling program's otel_gen, bumped after each change to the recipes */
	/*
	 * CLOCK_MONOTONIC when the recorder last ended a round: perf may have
	 * sorted and let go of everything older, so a span that ended before
	 * it (its thread idle since its last sample) is stamped then instead.
	 */
	const __u64 *round_ns;
	const struct int_list *pids; /* -p: only these; NULL: every process (or target's) */
	const struct target *target; /* -- CMD: CMD's tree only (record/target.h), else NULL */
	int cmd_pid;		     /* -- CMD's pid, watched at every tick; 0 if none */
	__u64 period_ns;	     /* the sampling interval: a span ends one after its last sample */
	const struct perf_event_attr *attr; /* the span attr layout */
	__u16 idx;			    /* the otel span attr's index (id SPAN_ID_BASE + idx) */
	__u64 pctx_id;			    /* the spanperf-otel-process attr's id (same layout as attr) */
	/*
	 * What a span's counters[k] is in the file (the spanperf-counters attr):
	 * the only names a publisher's counter deltas are taken under (see
	 * otel_record.c's final_counters).  nr_ctr 0: none are taken.
	 */
	const char *const *ctr_names;
	int nr_ctr;
};

int otel_record__new(struct otel_record **out, const struct otel_record_opts *o);
/* Finds processes new since the last full scan (one a second), exec'ed ones and the command's. */
int otel_record__tick(struct otel_record *r, __u64 now);
/*
 * A COMM record with PERF_RECORD_MISC_COMM_EXEC went by as the rings were
 * copied: pid is queued, only, and looked at from the next tick on for a
 * short while, so that a process that execs a publisher (and may live less
 * than a scan's second) is read from its start.  Accepts NULL.
 */
void otel_record__exec(struct otel_record *r, int pid);
/*
 * An MMAP2 record of an executable file mapping went by: queued, and in the
 * next tick, if the file defines otel_thread_ctx_v1 (each path is read
 * once), pid is watched as an exec'ed one is.  Accepts NULL.
 */
void otel_record__mmap(struct otel_record *r, int pid, const char *path);
/*
 * Right after the command was let go: waits, up to timeout_ns, until it
 * publishes and its recipe is in place, so that its first spans are not
 * missed.  -ETIMEDOUT if not by then (later ticks go on looking).
 */
int otel_record__await_cmd(struct otel_record *r, __u64 timeout_ns);
/*
 * A PERF_RECORD_EXIT of tid, stamped time, went by as the rings were copied:
 * queued only; the next consume writes its open context as a span, in the
 * EXIT's round, ending at the EXIT at the latest.  Accepts NULL.
 */
void otel_record__exit(struct otel_record *r, __u32 tid, __u64 time);
/* The context ring's fd: it wakes the reader when the ring is half full. */
int otel_record__ring_fd(const struct otel_record *r);
/* Writes to w the spans whose context ended; how many, or -errno. */
long otel_record__consume(struct otel_record *r, struct pd_writer *w);
/* At the end: the contexts still open become spans too. */
long otel_record__flush(struct otel_record *r, struct pd_writer *w);
/* What was found and what could not be read, for the record summary. */
void otel_record__report(struct otel_record *r);
__u64 otel_record__spans(const struct otel_record *r);
void otel_record__free(struct otel_record *r);

#endif
