/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a span's wall time went: on CPU (its task-clock), off CPU (the
 * offcpu-time blocks of its thread that overlap it, clipped to it), and the
 * stacks it blocked in, heaviest first.  A consumer of the session beside
 * the span join (report --spans, annotate).
 *
 * Only blocks written one by one carry their interval ([time - period,
 * time]); sums of short blocks (marked by the writer, see offcpu.h) have
 * none and are left out, counted.  record --off-cpu with --span writes
 * every block one by one.
 */
#ifndef SP_SPAN_WALL_H
#define SP_SPAN_WALL_H

#include <stdbool.h>
#include <linux/types.h>

#include "session.h"
#include "span_codec.h"
#include "spans_view.h"

struct span_wall;

int span_wall__new(struct span_wall **out, struct session *s);
/* Takes an offcpu-time, spanperf:waker or spanperf-sched sample; others are ignored. */
int span_wall__add(struct span_wall *w, const struct sess_sample *ss);
/* After the last sample: sorts the blocks by thread and time. */
int span_wall__finish(struct span_wall *w);
/* The file has offcpu-time samples at all (else off-CPU fields are null). */
bool span_wall__recorded(const struct span_wall *w);
/* Nanoseconds tid spent off CPU inside [start, end]. */
__u64 span_wall__off_ns(struct span_wall *w, __u32 tid, __u64 start, __u64 end);
/*
 * The split of a span of `wall` ns (struct span_split) from the scheduler's
 * accounts its record carries (struct span_sched); false where the record
 * has none (then *x is untouched).
 */
bool span_split_of(const struct span_sched *sched, __u64 wall, struct span_split *x);
/* The file has spanperf-sched records (record --sched). */
bool span_wall__has_sched(const struct span_wall *w);
/*
 * The split of tid's [start, end] from the file's spanperf-sched records
 * (every time the thread was off CPU, how it left, and its run_delay then):
 * each record's run-queue tail, its sleep or D head, and the rest of the
 * interval on CPU.  False where the file has none of those records, or
 * one inside the interval has no known run-queue tail (the thread's last,
 * or a kernel without sched_info).
 */
bool span_wall__sched_split(struct span_wall *w, __u32 tid, __u64 start, __u64 end, struct span_split *x);
/* The file names each block's waker (spanperf:waker samples). */
bool span_wall__has_wakers(const struct span_wall *w);

#define SPAN_WALL_TOP 3	    /* blocking stacks, and wakers, a span shows */
#define SPAN_WALL_FRAMES 64 /* frames shown of each */

/* A blocking stack, or a waker's, by name from the leaf, context markers left out. */
struct span_wall_stack {
	const char *frame[SPAN_WALL_FRAMES]; /* the symbolizer's names */
	__u32 nr;
	__u64 ns; /* of the span's time off CPU */
	/* A waker's: */
	const char *comm; /* the span_wall's; "[hardirq]" and the like for an interrupt */
	__u32 tid;
	bool task;	  /* a task woke it, not an interrupt: it may have been in a span then */
	__u64 wake_ns;	  /* when */
};
/* The stacks tid blocked in inside [start, end], heaviest first, in out[SPAN_WALL_TOP]; how many. */
int span_wall__off_top(struct span_wall *w, __u32 tid, __u64 start, __u64 end, struct span_wall_stack *out);
/*
 * Who ended those blocks, by the time of the blocks inside [start, end],
 * heaviest first, in out[SPAN_WALL_TOP]; how many (none where the file has
 * no wakers).
 */
int span_wall__woken_by(struct span_wall *w, __u32 tid, __u64 start, __u64 end, struct span_wall_stack *out);
/* The heaviest blocking stack's first frame in user code (else its leaf), or NULL. */
const char *span_wall__top_frame(struct span_wall *w, __u32 tid, __u64 start, __u64 end);
/* Sums of short blocks that no span could be given. */
__u64 span_wall__unjoinable(const struct span_wall *w);
void span_wall__free(struct span_wall *w);

#endif
