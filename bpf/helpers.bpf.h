/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every program does the same way: count an event for user space,
 * apply -p/-t, and tell a BPF ring when to wake its reader.  Include after
 * the SP_WANT_* defines (maps.bpf.h).
 */
#ifndef SP_HELPERS_BPF_H
#define SP_HELPERS_BPF_H

#include "maps.bpf.h"

/* One more of an event user space reports (enum sp_stat). */
static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += 1; /* per-CPU slot: no atomic needed */
}

#ifdef SP_WANT_FILTER_MAP
/* -p or -t (enum sp_filter_mode): SP_FILTER_NONE removes the test at load. */
const volatile __u32 filter_mode = SP_FILTER_NONE;

/* Whether -p/-t keep thread tid of process pid: `filter` holds the pids, or the tids, to keep. */
static __always_inline bool filter_keeps(__u32 pid, __u32 tid)
{
	__u32 key;

	if (filter_mode == SP_FILTER_NONE)
		return true;
	key = filter_mode == SP_FILTER_PID ? pid : tid;
	return bpf_map_lookup_elem(&filter, &key);
}
#endif

/*
 * The flag to submit a record to a BPF ring with: wake the reader only once
 * the ring is half full.  A wakeup per record costs more than the record,
 * and the recorder drains every ring on a timer anyway (the loop's 100 ms,
 * or a source's own), with ring_buffer__consume: epoll never fires for a
 * record sent without a wakeup.  Half full, a burst could fill the ring
 * before that timer, so the reader is woken.  `size`: the ring's size in
 * bytes, from a setting where user space gives one (cheaper than asking
 * the ring).
 */
static __always_inline __u64 ring_wakeup_flag(void *ring, __u64 size)
{
	return bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) > size / 2 ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

#endif
