/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Span sources (record --span SPEC): parsing, resolution and the BPF
 * program set that marks span boundaries (bpf/spans.bpf.c).
 *
 *   kprobe:FUNC[@kprobe|fentry|auto]   kprobe/kretprobe, else fentry/fexit
 *   uprobe:PATH:FUNC                   uprobe/uretprobe; PATH may be a library name
 *   syscall:NAME                       syscalls/sys_enter_NAME and sys_exit_NAME
 *   tracepoint:CAT:BEGIN,CAT:END       any two tracepoints, same thread
 */
#ifndef SP_SPANS_H
#define SP_SPANS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "spanperf_abi.h"

struct target;

enum span_kind { SPAN_KPROBE, SPAN_UPROBE, SPAN_SYSCALL, SPAN_TRACEPOINT };
enum kprobe_mode { KMODE_AUTO, KMODE_KPROBE, KMODE_FENTRY };

struct span_spec {
	char text[256];		/* as given */
	enum span_kind kind;
	enum kprobe_mode kmode;
	char name[128];		/* what the span is called: FUNC, NAME or BEGIN */
	char path[PATH_MAX];	/* uprobe: as given, then resolved */
	char func[128];		/* kprobe, uprobe */
	char cat[2][64], ev[2][80]; /* begin and end tracepoints */
	__u64 offset;		/* uprobe: the function's file offset */
	int source;		/* enum sp_span_source, chosen by resolve */
	int sysnr;		/* syscall: its number, for the raw_syscalls fallback */
	bool raw_syscall;	/* syscall: on raw_syscalls, filtered by sysnr */
};

/* Syntax only: pure, for tests and fuzzing.  err names the spec. */
int span_spec_parse(const char *s, struct span_spec *sp, char *err, size_t errlen);

struct sp_features;
/*
 * Makes a parsed spec attachable here: finds the uprobe's file and
 * function, checks that the tracepoints exist, picks kprobe or fentry, and
 * puts syscall spans on raw_syscalls where their tracepoints are missing
 * (or raw_syscalls is true).
 */
int span_spec_resolve(struct span_spec *sp, const struct sp_features *f, bool raw_syscalls, char *err,
		      size_t errlen);
/* A syscall's number on this architecture, or -1. */
int syscall_nr(const char *name);


struct span_set_opts {
	const struct span_spec *specs;
	int nr;
	__u64 min_ns;
	__u32 nr_counters;		      /* span counters, in the order of the names */
	__u8 ctr_kind[SP_MAX_COUNTERS];	      /* enum sp_span_ctr */
	__u8 ctr_slot[SP_MAX_COUNTERS];
	int counters_fd, snap_fd, counts_fd; /* from the counters program */
	int threads_fd;			      /* from the sampling program */
	struct target *target;		      /* -p, -t, CMD's tree (record/target.h), or NULL: every thread */
	__u64 ring_bytes;
	bool sched_split;		      /* each span carries the split of its wall time */
};

struct span_stats {
	__u64 lost, too_deep, unmatched, short_dropped, nostack, unfinished;
};

struct span_set;
typedef int (*span_fn)(void *ctx, const struct sp_span_ev *ev);

int span_set__open(struct span_set **out, const struct span_set_opts *o, char *err, size_t errlen);
int span_set__attach(struct span_set *s, char *err, size_t errlen);
/* Calls fn for each finished span waiting in the ring; 0 or -errno. */
int span_set__consume(struct span_set *s, span_fn fn, void *ctx);
int span_set__ring_fd(const struct span_set *s);
void span_set__stats(struct span_set *s, struct span_stats *st);
void span_set__free(struct span_set *s);

#endif
