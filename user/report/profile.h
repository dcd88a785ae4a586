/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A perf.data read back as a profile, a consumer of the session: every
 * sample's stack symbolized (each distinct address of each address space
 * resolved once), and identical (thread, comm, stack) samples folded into
 * one entry with a count and a period sum.  All report outputs (table,
 * folded, flame graph, pprof) read this.
 */
#ifndef SP_PROFILE_H
#define SP_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "hash.h"
#include "otel_join.h"
#include "perf_data.h"
#include "symbols.h"
#include "util.h"

struct session;
struct profile_builder;

/* One function of one dso: the unit of every output. */
/* An unnamed frame at address 0 (a sample with no frame), kept apart from 0, "named". */
#define PFUNC_UNKNOWN_AT_ZERO (~0ull)

struct pfunc {
	const char *name; /* "[unknown]" when unresolved */
	const char *dso;  /* short name */
	const char *path; /* as mapped */
	const char *build_id;
	int dso_id;
	bool kernel;
	/*
	 * Where no symbol covers the address: the address as perf report shows
	 * it in the sym column (dso-relative in a file, else as sampled), so
	 * that each such address is its own row, as there; 0 otherwise.
	 */
	__u64 unknown_addr;	/* PFUNC_UNKNOWN_AT_ZERO for address 0 */
	__u64 start, end; /* the symbol's extent in its file, when named (perf's sym sort compares these) */
	bool inlined;	  /* a function inlined at the address (profile_opts.inline_frames): name from DWARF */
	/*
	 * What folded stacks, flame graphs and pprof call it, when not the
	 * name: "NAME (inlined)" as perf script prints it, or DSO+0xOFFSET
	 * for an unnamed user frame (--unknown-offsets).  Pooled: one pointer per text.
	 */
	const char *label;
};

static inline const char *pfunc_text(const struct pfunc *f)
{
	return f->label ? f->label : f->name;
}

/* The sym column's text: the name, or "0x%016llx" of an unknown address, as perf report prints it. */
const char *pfunc_sym(const struct pfunc *f, char *buf, size_t len);

/*
 * One resolved frame: a function, and the address it was at (for pprof).
 * Inlined functions are frames of their own at the same address, before
 * (leafward of) the function they were inlined into, as perf 6.1 shows them.
 */
struct pframe {
	__u32 func;
	__u64 ip;
	const char *srcline; /* "file.c:LINE" (profile_opts.srclines), else NULL; the call site for outer frames */
};

struct pstack {
	__u32 pid, tid;
	const char *comm;
	__u32 nr;	      /* frames, leaf first */
	struct pframe *frames;
	__u64 count, period;
	struct otel_ids otel; /* the OTel context the samples ran in (record --otel); NULLs: none */
	const char *span_prefix; /* --span-prefix: the spans around the samples, "a;b", else NULL */
	/*
	 * Off-CPU stacks of files with spanperf:waker samples: who ended the
	 * blocks (its comm, or "[hardirq]"...) and its stack, leaf first;
	 * NULL and 0 where not known.
	 */
	const char *waker;
	__u32 nr_waker;
	struct pframe *waker_frames;
};

/*
 * Which frames get their inlined functions as frames of their own.  perf
 * 6.1 shows them by default, but only in chains it unwound with DWARF
 * (fp chains gained them in 6.2 and lost them in 6.5, for speed):
 * INLINE_DWARF is that default; --inline asks for them everywhere.
 */
enum profile_inline { INLINE_DWARF, INLINE_NONE, INLINE_ALL };

/* How stacks are read: filled by cmd/ from report's options. */
struct profile_opts {
	const char *root; /* where symbol files are looked up, NULL for / */
	/*
	 * report --html, speedscope: keep each sample's time and stack in ticks;
	 * the stacks are then not split by OTel context, so that each tick names one.
	 */
	bool timeline;
	/* report --folded --span-prefix: on-CPU stacks split by the spans given by profile__add_prefix_span */
	bool span_prefix;
	enum profile_inline inline_frames; /* --inline, --no-inline; perf 6.1's default */
	bool srclines;			 /* --sort srcline, or pprof's lines */
	bool full_srcline;		 /* srclines with the whole path */
	bool unknown_offsets;		 /* --unknown-offsets: unnamed user frames as DSO+0xOFFSET */
	/*
	 * Only the sampled address of each sample, as perf report's table
	 * without -g: no chain resolved, no stack copy unwound.
	 */
	bool leaf_only;
};

struct profile {
	struct pfunc *funcs;
	size_t nr_funcs;
	struct pstack *stacks;	/* on-CPU: the sampling events */
	size_t nr_stacks;
	/* When the stacks are split by OTel context or span: the stacks as sampled, owning the frames */
	struct pstack *sampled;
	size_t nr_sampled;
	__u64 samples, period;
	/* Off-CPU (offcpu-time samples, period = ns blocked); offcpu_view.h shows them. */
	struct pstack *off_stacks;
	size_t nr_off_stacks;
	__u64 off_samples, off_period;
	__u64 lost;	       /* from LOST records */
	/*
	 * What report's --comms, --pids, --tids, --dsos and --symbols left
	 * out (session_opts.filter): in the total that a table's percentages
	 * are of, as perf report's (its --percentage absolute); off-CPU's in ns.
	 */
	__u64 filtered_samples, filtered_period, off_filtered_samples, off_filtered_period;
	bool callchains;       /* any sample carried one */
	const char *event;     /* the sampling event's name */
	bool event_is_clock;   /* period is in nanoseconds */
	__u64 sample_freq;     /* for estimating time from counts otherwise */
	__u64 first_ns, last_ns;
	struct session *sess;
	struct symbolizer *sym; /* the session's */
	struct pd_reader *rd;	/* the session's */
	struct otel_join *otel; /* owns the otel ids' strings; NULL without otel spans */
	struct unwinder *unwinder; /* for --call-graph dwarf files, else NULL */
	struct profile_builder *b; /* while the pass runs */
	/* profile_opts.timeline: every sample in file order, with its time; else NULL. */
	struct ptick *ticks;
	size_t nr_ticks;
	bool own_sess;		   /* profile__load's: freed with the profile */
	struct strpool wakers;	   /* the stacks' waker names */
	bool has_wakers;	   /* the file names the wakers of its off-CPU blocks */
	struct srclines *src;	   /* with inline frames or srclines, else NULL */
	struct profile_opts opts;
	struct strpool labels;	    /* pfunc labels */
};

/* The samples and the period a table's percentages are of: those shown and those the filter left out. */
static inline __u64 profile_total_samples(const struct profile *p)
{
	return p->samples + p->filtered_samples;
}

static inline __u64 profile_total_period(const struct profile *p)
{
	return p->period + p->filtered_period;
}

/* A sample on the timeline (report --html, speedscope): its stack, and when. */
struct ptick {
	__u64 time;
	__u64 period; /* off-CPU: ns blocked, ending at time */
	__u32 tid;
	__u32 stack;  /* into stacks, or off_stacks when off */
	bool off;
	bool sum;     /* off-CPU: a sum of short blocks, with no interval of its own */
};

/*
 * A profile built by the session's one pass: registers itself as a
 * consumer of sess (which must outlive it), before session__run, or in a
 * live session at a window's start (session__end_consumer with finish ends
 * it, then profile__finish).  0 or -errno.
 */
int profile__new(struct profile **out, struct session *sess, const struct profile_opts *o);
/*
 * With span_prefix, after the pass: a span whose label (copied) goes before
 * the stacks of the samples of tid inside [start, end]; 0 or -ENOMEM.
 */
int profile__add_prefix_span(struct profile *p, __u32 tid, __u64 start, __u64 end, const char *label);
/* After the pass (and the prefix spans): each on-CPU stack split by its OTel context and spans. 0 or -ENOMEM. */
int profile__finish(struct profile *p);
/*
 * A window's end in a live session, once every record of it was delivered
 * (session__flush): with keep, the consumer's finish and profile__finish;
 * without, it only takes no more records (free it then).  0 or -errno.
 */
int profile__end(struct profile *p, bool keep);
/*
 * Opens path, reads every sample in one pass; on error err names the file
 * and record.  root: where symbol files are looked up, NULL for /.
 */
int profile__load(struct profile **out, const char *path, const char *root, char *err, size_t errlen);
void profile__free(struct profile *p);

#endif
