/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A source of records for the recorder's one loop (record.c): the perf
 * rings' samples, the spans, off-CPU blocks, OTel contexts, span counters.
 *
 * Each source is made by its constructor from the recording's context
 * (struct rec_ctx), which leaves *out NULL when the options do not ask for
 * it.  The recorder then calls, in the order of its list:
 *
 *   attrs    declare the attrs of the source's records (before the header)
 *   start    attach and enable (after every attrs, before the side-band)
 *   fds      the fds that wake the loop when the source has records
 *   poll_ms  how soon it needs the next pass, given the loop's own period
 *   drain    write what is ready; a round ends after every source drained
 *   stop     stop producing (every stop, then the last drain)
 *   finish   write what remains, stamped end_ns or earlier
 *   meta     add what it knows to a file's header features (each file, with
 *            --switch-output)
 *   stats    say, once, what was lost or skipped
 *   free     accepts NULL
 *
 * Every hook but free may be NULL.  Records reach the writer one way: the
 * source writes whole perf records with pd_writer__write().  A new source
 * is one file with its constructor and one line in record.c's list.
 */
#ifndef SP_REC_SOURCE_H
#define SP_REC_SOURCE_H

#include <stdbool.h>
#include <linux/types.h>

#include "record_opts.h"

struct pd_writer;
struct sample_bpf;
struct dso_set;
struct buildid_cache;
struct counter_set;
struct otel_record;
struct sp_features;
struct run;
struct target;
struct perf_event_attr;
struct pd_meta;

struct rec_source {
	const char *name;
	int (*attrs)(struct rec_source *s, struct pd_writer *w);
	int (*start)(struct rec_source *s);
	int (*fds)(struct rec_source *s, int *fds, int max);
	int (*poll_ms)(struct rec_source *s, int idle_ms);
	/* Records written (a count, or any positive number when it does not count), or -errno. */
	long (*drain)(struct rec_source *s, struct pd_writer *w);
	void (*stop)(struct rec_source *s);
	int (*finish)(struct rec_source *s, struct pd_writer *w, __u64 end_ns);
	/* record_opts.window_sums: what it sums up to end_ns, written at a window's end; 0 or -errno. */
	int (*window_end)(struct rec_source *s, struct pd_writer *w, __u64 end_ns);
	/* 0, or -errno: what it added may then be short; the file is written all the same. */
	int (*meta)(struct rec_source *s, struct pd_meta *m);
	void (*stats)(struct rec_source *s);
	void (*free)(struct rec_source *s);
	void *priv;
	__u64 spans; /* spans written, for the summary; makes_spans says the source writes any */
	bool makes_spans;
};

/* What the sources of one recording share. */
struct u64_map;

struct rec_ctx {
	const struct record_opts *o;
	const struct int_list *online;	 /* the online CPUs */
	const struct sp_features *feat;	 /* probed when something needs it (spans), else NULL */
	const struct span_spec *specs;	 /* --span, resolved on this machine */
	struct sample_bpf *skel;	 /* the sampling program: its threads map is everyone's */
	struct dso_set *dsos;		 /* files mapped, for the build ids at the end */
	struct buildid_cache *bcache;	 /* containers' files */
	struct jit_maps *jits;		 /* containers' JITs' /tmp/perf-PID.map */
	struct run *run;		 /* -- CMD */
	struct target *target;		 /* -p, -t, or CMD's tree: the BPF filter every program shares */
	struct counter_set *cs;		 /* span counters, from the counters source */
	struct otel_record *otel;	 /* from the otel source: the rings tell it of execs, mmaps, exits */
	struct py_frames *py;		 /* from the samples source (ehframe): Python frames into addresses */
	/* The tracking event (the first sampling event): side-band records take its layout. */
	const struct perf_event_attr *track_attr;
	__u64 track_id;
	__u64 round_ns;			 /* CLOCK_MONOTONIC at the last FINISHED_ROUND */
	/*
	 * At the one before: perf may have sorted and delivered every record
	 * up to here, so none written from now on may be older.
	 */
	__u64 sorted_ns;
	/* The rings' figures, for the summary and the header. */
	__u64 samples, lost, first_ns, last_ns;
	/*
	 * tid -> samples and tid -> pid, counted from the records when no
	 * program counts them (samples_source: no filter, spans or --otel; or
	 * ehframe without spans or --otel, eh_counts_records); NULL when the
	 * sampling program's threads map holds them.
	 */
	struct u64_map *thread_samples, *thread_pids;
};

/*
 * --call-graph ehframe with neither spans nor --otel, the only readers of
 * a thread's entry in the threads map: the sampling program makes none
 * (sample.bpf.c's eh_threads) and the records are counted instead.
 */
static inline bool eh_counts_records(const struct record_opts *o)
{
	return o->ehframe && !o->nr_spans && !o->otel;
}

typedef int (*rec_source_new_fn)(struct rec_source **out, struct rec_ctx *ctx);

/* One allocation for a source and its private part; NULL and errno on failure. */
struct rec_source *rec_source__alloc(const char *name, size_t priv_size);
void rec_source__free(struct rec_source *s);

/*
 * A figure of a source's stats hook: a count said, when it is not 0, as
 * "N text" at its level (a loss the user can act on is a warning), or as
 * a detail: "  N text" on stderr, under a -v line the caller wrote.
 */
struct rec_figure {
	__u64 n;
	enum { REC_DEBUG, REC_INFO, REC_WARN, REC_DETAIL } level;
	const char *text;
};
void rec_source_say(const struct rec_figure *f, size_t nr);
/* REC_SAY({ n, REC_WARN, "text" }, ...): the figures given, in order. */
#define REC_SAY(...)                                                        \
	rec_source_say((const struct rec_figure[]){ __VA_ARGS__ },          \
		       sizeof((const struct rec_figure[]){ __VA_ARGS__ }) / \
			       sizeof(struct rec_figure))

/* The sources, one file each (source_*.c). */
int counters_source__new(struct rec_source **out, struct rec_ctx *ctx);
int samples_source__new(struct rec_source **out, struct rec_ctx *ctx);
int spans_source__new(struct rec_source **out, struct rec_ctx *ctx);
int otel_source__new(struct rec_source **out, struct rec_ctx *ctx);
int offcpu_source__new(struct rec_source **out, struct rec_ctx *ctx);

#endif
