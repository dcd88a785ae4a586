/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A thread's time off CPU, for record --sched: one sample of
 * SCHED_EVENT_NAME (names.h) per switch-out of a watched thread, stamped
 * with its switch-in, period the ns off CPU, pid/tid the thread's, and a
 * RAW struct sched_rec: the state it left in (0 runnable: preempted or
 * yielding, 1 S, 2 D) and its sched_info.run_delay at the switch-out.
 *
 * The run-queue wait of a block is the tail of it (the thread was woken,
 * then waited to be picked), and the kernel adds it to run_delay only at
 * the pick, after the tracepoint: so a block's run-queue time is the next
 * block's run_delay less its own, which the reader takes.
 */
#ifndef SP_SCHED_CODEC_H
#define SP_SCHED_CODEC_H

#include <linux/types.h>

#define SCHED_REC_MAGIC 0x48435353u /* "SSCH" in a little-endian file */
#define SCHED_HAS_RUN_DELAY 1	    /* flags: the kernel keeps sched_info, run_delay is its figure */

/* The RAW payload, version 1, host byte order. */
struct sched_rec {
	__u32 magic;
	__u16 version; /* 1 */
	__u16 size;    /* bytes written: a reader takes what it knows */
	__u32 state;   /* 0 runnable, 1 S, 2 D */
	__u32 flags;
	__u64 run_delay; /* ns, cumulative, at the switch-out */
};

/* A sched sample's RAW into out: 0, or -EINVAL when it holds none this reader knows. */
int sched_rec_decode(const void *raw, __u32 raw_size, struct sched_rec *out);

#endif
