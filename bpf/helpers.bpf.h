/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every program does the same way: count an event for user space,
 * apply -p/-t/-- CMD (and follow CMD's tree), and tell a BPF ring when to
 * wake its reader.  Include after vmlinux.h, libbpf's bpf_tracing.h and
 * bpf_core_read.h, and the SP_WANT_* defines (maps.bpf.h).
 */
#ifndef SP_HELPERS_BPF_H
#define SP_HELPERS_BPF_H

#include "maps.bpf.h"

/*
 * The word (or 4 bytes) at p, in one load.  Written as *(__u64 *)&buf[off]
 * over a byte array, clang reads it a byte at a time: 8 loads and 14 shifts
 * and ors (4 and 6), each of them also a step of the verifier's wherever
 * the read is reached.  x86 loads unaligned words, and the verifier lets it
 * (it insists on alignment only where the CPU has no efficient unaligned
 * access).  The memory clobber keeps the load after the writes to the
 * buffer (a helper's read into it) that come before it.
 */
static __always_inline __u64 sp_load_u64(const void *p)
{
	__u64 v;

	asm volatile("%0 = *(u64 *)(%1 + 0)" : "=r"(v) : "r"(p) : "memory");
	return v;
}

static __always_inline __u32 sp_load_u32(const void *p)
{
	__u32 v;

	asm volatile("%0 = *(u32 *)(%1 + 0)" : "=r"(v) : "r"(p) : "memory");
	return v;
}

/* One more of an event user space reports (enum sp_stat). */
static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += 1; /* per-CPU slot: no atomic needed */
}

#ifdef SP_WANT_FILTER_MAP
/* -p, -t or -- CMD (enum sp_filter_mode): SP_FILTER_NONE removes the test at load. */
const volatile __u32 filter_mode = SP_FILTER_NONE;
/*
 * SP_FILTER_TREE: a process whose last thread exits is deleted from the
 * filter at once (stat, which reads no records of it), or marked
 * SP_TARGET_GONE for user space to delete once it has read the process's
 * side-band (record: a short-lived child's mmaps are read after it is gone).
 */
const volatile bool target_drop_at_exit = false;

/*
 * Whether the filter keeps thread tid of process pid: `filter` holds the
 * pids (-p, and CMD's tree, gone processes too until user space deletes
 * them: their last samples come from exit), or the tids (-t), to keep.
 */
static __always_inline bool filter_keeps(__u32 pid, __u32 tid)
{
	__u32 key;

	if (filter_mode == SP_FILTER_NONE)
		return true;
	key = filter_mode == SP_FILTER_TID ? tid : pid;
	return bpf_map_lookup_elem(&filter, &key);
}

/*
 * -- CMD follows CMD's tree as perf's inherited events do: a new process
 * joins when the one that forked it is in.  Threads need nothing (the
 * filter is by process), nor does exec (the pid stays).  A process forked
 * outside takes its pid out: the pid may have been a gone target's.  Every
 * fork on the host costs one lookup and one delete of a missing key.
 */
static __always_inline void target_fork(__u32 parent_tgid, __u32 child_pid, __u32 child_tgid)
{
	__u8 live = SP_TARGET_LIVE;

	if (filter_mode != SP_FILTER_TREE || child_pid != child_tgid)
		return;
	if (!bpf_map_lookup_elem(&filter, &parent_tgid)) {
		bpf_map_delete_elem(&filter, &child_tgid);
		return;
	}
	if (bpf_map_update_elem(&filter, &child_tgid, &live, BPF_ANY))
		stat_inc(SP_STAT_TARGET_FULL);
}

/* A thread exits; group_dead: it was its process's last. */
static __always_inline void target_exit(__u32 tgid, bool group_dead)
{
	__u8 *v;

	if (filter_mode != SP_FILTER_TREE || !group_dead)
		return;
	v = bpf_map_lookup_elem(&filter, &tgid);
	if (!v)
		return;
	if (target_drop_at_exit)
		bpf_map_delete_elem(&filter, &tgid);
	else
		*v = SP_TARGET_GONE;
}

/*
 * The target programs, in every object that has the filter map, loaded in
 * the one that owns it (record/target.c picks the twin): "?" leaves them
 * out unless asked for.  sched_process_fork runs in the parent; at
 * sched_process_exit the signal struct's live count is already down, so 0
 * says the process is gone (group_dead, which 6.16 passes, is not on 5.x).
 */
SEC("?tp_btf/sched_process_fork")
int BPF_PROG(target_fork_btf, struct task_struct *parent, struct task_struct *child)
{
	target_fork(parent->tgid, child->pid, child->tgid);
	return 0;
}

/* The raw_tp twins, for kernels without tp_btf (before 5.5). */
SEC("?raw_tp/sched_process_fork")
int target_fork_raw(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *parent = (void *)ctx->args[0], *child = (void *)ctx->args[1];

	target_fork(BPF_CORE_READ(parent, tgid), BPF_CORE_READ(child, pid), BPF_CORE_READ(child, tgid));
	return 0;
}

SEC("?tp_btf/sched_process_exit")
int BPF_PROG(target_exit_btf, struct task_struct *p)
{
	target_exit(p->tgid, BPF_CORE_READ(p, signal, live.counter) == 0);
	return 0;
}

SEC("?raw_tp/sched_process_exit")
int target_exit_raw(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *p = (void *)ctx->args[0];

	target_exit(BPF_CORE_READ(p, tgid), BPF_CORE_READ(p, signal, live.counter) == 0);
	return 0;
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
