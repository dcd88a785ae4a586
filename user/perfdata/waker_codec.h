/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Who ended an off-CPU block, in a perf.data: record --off-cpu writes one
 * sample of OFFCPU_WAKER_EVENT_NAME (names.h) per block written one by one,
 * right after its offcpu-time sample and stamped the same.  Its pid/tid and
 * CALLCHAIN are the waker's (0/0 and a kernel chain only for interrupts),
 * its period the block's ns, and its RAW (struct waker_rec) names the
 * block: the wakee's tid and the block's end, the offcpu-time sample's time.
 */
#ifndef SP_WAKER_CODEC_H
#define SP_WAKER_CODEC_H

#include <linux/types.h>

#include "spanperf_abi.h"

#define WAKER_REC_MAGIC 0x4b574b53u /* "SKWK" in a little-endian file */

/* The RAW payload, version 1, host byte order. */
struct waker_rec {
	__u32 magic;
	__u16 version; /* 1 */
	__u16 size;    /* bytes written: a reader takes what it knows */
	__u32 wakee_pid, wakee_tid;
	__u64 block_end_ns; /* CLOCK_MONOTONIC, the wakee's switch-in */
	__u64 wake_ns;	    /* the waking */
	__u32 ctx;	    /* enum sp_waker_ctx */
	__u32 pad;
	char comm[SP_COMM_LEN]; /* the waker's as it woke; "" for interrupts */
};

/* A waker sample's RAW into out: 0, or -EINVAL when it holds none this reader knows. */
int waker_rec_decode(const void *raw, __u32 raw_size, struct waker_rec *out);
/* "[hardirq]", "[softirq]" or "[nmi]" for an interrupt's wakeup, else NULL. */
const char *waker_ctx_name(__u32 ctx);

#endif
