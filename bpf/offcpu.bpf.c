// SPDX-License-Identifier: GPL-2.0
/*
 * Off-CPU time (record --off-cpu), on sched_switch.
 *
 * A thread that leaves the CPU to sleep (interruptible or uninterruptible,
 * not preempted) gets its switch-out time and its kernel and user stacks in
 * a map keyed by its TID.  When it is switched in again, wherever that is,
 * the difference is its time off CPU.  Keying by thread, not by CPU, is what
 * keeps a thread that wakes on another CPU from being given the time of
 * whatever last slept there (the per-CPU bookkeeping bug seen in a peer).
 *
 * Blocks at or above the threshold go to user space one by one; shorter ones
 * are summed per (thread, stacks, state) in BPF and read at the end, as perf
 * does.  A short block that finds the sum map full is sent alone instead.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#define SP_WANT_FILTER_MAP
#include "maps.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define TASK_INTERRUPTIBLE 0x1
#define TASK_UNINTERRUPTIBLE 0x2
#define PF_KTHREAD 0x00200000
/* This program and bpf_trace_run4 sit on top of every kernel stack taken here; __schedule is the first frame worth naming. */
#define KSTACK_SKIP 2

const volatile __u32 filter_mode = SP_FILTER_NONE;
const volatile bool cpu_filter = false;
const volatile __u64 thresh_ns = 0;
const volatile __u64 ring_size = 0;

/* TID -> how it left; sized with --max-threads. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct sp_offcpu_start);
} offstart SEC(".maps");

/* Kernel and user stacks; sized with --off-cpu-entries. */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, SP_OFFCPU_STACK_DEPTH * sizeof(__u64));
} offstacks SEC(".maps");

/* Short blocks summed; sized with --off-cpu-entries. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct sp_offcpu_key);
	__type(value, struct sp_offcpu_val);
} offagg SEC(".maps");

/* Long blocks, one by one; sized from user space. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
} offcpu_rb SEC(".maps");

/* -C: 1 for the CPUs to watch; sized to the possible CPUs. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u8);
} offcpu_cpus SEC(".maps");

/* Compiled against kernels before 5.14, where the field was `state`. */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline __u32 task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

static __always_inline bool wanted(__u32 pid, __u32 tid)
{
	__u32 key = filter_mode == SP_FILTER_PID ? pid : tid;

	if (filter_mode != SP_FILTER_NONE && !bpf_map_lookup_elem(&filter, &key))
		return false;
	if (cpu_filter) {
		__u32 cpu = bpf_get_smp_processor_id();
		__u8 *on = bpf_map_lookup_elem(&offcpu_cpus, &cpu);

		return on && *on;
	}
	return true;
}

/* Wake the reader only when the ring is half full: a wakeup per block would cost more than the block. */
static __always_inline __u64 wakeup_flag(void)
{
	return bpf_ringbuf_query(&offcpu_rb, BPF_RB_AVAIL_DATA) > ring_size / 2 ? BPF_RB_FORCE_WAKEUP
										: BPF_RB_NO_WAKEUP;
}

static __always_inline void emit(const struct sp_offcpu_start *st, __u32 tid, __u64 now, __u64 dur)
{
	struct sp_offcpu_event *ev = bpf_ringbuf_reserve(&offcpu_rb, sizeof(*ev), 0);

	if (!ev) {
		stat_inc(SP_STAT_OFFCPU_LOST);
		return;
	}
	ev->end_ns = now;
	ev->dur_ns = dur;
	ev->pid = st->pid;
	ev->tid = tid;
	ev->cpu = st->cpu;
	ev->state = st->state;
	ev->kstack = st->kstack;
	ev->ustack = st->ustack;
	bpf_ringbuf_submit(ev, wakeup_flag());
}

static __always_inline void switch_in(__u32 tid, __u32 pid)
{
	struct sp_offcpu_start *st = bpf_map_lookup_elem(&offstart, &tid);
	struct sp_offcpu_key key;
	struct sp_offcpu_val *v, fresh;
	__u64 now, dur;

	if (!st)
		return;
	now = bpf_ktime_get_ns();
	/* A TID reused by another process cannot inherit a start: never a wrong duration. */
	if (st->pid != pid || now < st->ts) {
		stat_inc(SP_STAT_OFFCPU_STALE);
		bpf_map_delete_elem(&offstart, &tid);
		return;
	}
	dur = now - st->ts;
	if (dur >= thresh_ns) {
		emit(st, tid, now, dur);
		goto out;
	}
	key = (struct sp_offcpu_key){ .pid = pid, .tid = tid, .kstack = st->kstack, .ustack = st->ustack,
				      .state = st->state };
	v = bpf_map_lookup_elem(&offagg, &key);
	if (v) {
		/* Another CPU may add to the same thread's key only after this switch-in: no race, but cheap. */
		__sync_fetch_and_add(&v->ns, dur);
		__sync_fetch_and_add(&v->count, 1);
		goto out;
	}
	fresh = (struct sp_offcpu_val){ .ns = dur, .count = 1 };
	if (bpf_map_update_elem(&offagg, &key, &fresh, BPF_NOEXIST)) {
		v = bpf_map_lookup_elem(&offagg, &key);
		if (v) {
			__sync_fetch_and_add(&v->ns, dur);
			__sync_fetch_and_add(&v->count, 1);
		} else {
			stat_inc(SP_STAT_OFFCPU_AGG_FULL);
			emit(st, tid, now, dur);
		}
	}
out:
	bpf_map_delete_elem(&offstart, &tid);
}

/* Runs as prev: the stacks taken here are the sleeping thread's. */
static __always_inline void switch_out(void *ctx, __u32 tid, __u32 pid, __u32 state, __u32 flags)
{
	struct sp_offcpu_start st;

	if (!tid || (flags & PF_KTHREAD) || !(state & (TASK_INTERRUPTIBLE | TASK_UNINTERRUPTIBLE)))
		return;
	if (!wanted(pid, tid))
		return;
	st.pid = pid;
	st.cpu = bpf_get_smp_processor_id();
	st.pad = 0;
	st.state = state & (TASK_INTERRUPTIBLE | TASK_UNINTERRUPTIBLE);
	st.kstack = bpf_get_stackid(ctx, &offstacks, KSTACK_SKIP | BPF_F_FAST_STACK_CMP);
	if (st.kstack < 0)
		stat_inc(SP_STAT_OFFCPU_KSTACK);
	st.ustack = bpf_get_stackid(ctx, &offstacks, BPF_F_USER_STACK | BPF_F_FAST_STACK_CMP);
	if (st.ustack < 0)
		stat_inc(SP_STAT_OFFCPU_USTACK);
	st.ts = bpf_ktime_get_ns();
	if (!bpf_map_update_elem(&offstart, &tid, &st, BPF_NOEXIST))
		return;
	/*
	 * A start is still there: the tracepoint never showed this thread
	 * coming back (switches it hides), so the old block's length is
	 * unknown.  It is dropped, counted, and this one replaces it.
	 */
	if (bpf_map_lookup_elem(&offstart, &tid))
		stat_inc(SP_STAT_OFFCPU_UNSEEN);
	if (bpf_map_update_elem(&offstart, &tid, &st, BPF_ANY))
		stat_inc(SP_STAT_OFFCPU_NOSLOT);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	/* A preempted thread is runnable whatever its state says: not a block. */
	if (!preempt)
		switch_out(ctx, prev->pid, prev->tgid, task_state(prev), prev->flags);
	switch_in(next->pid, next->tgid);
	return 0;
}

/* The raw_tp twin for kernels without tp_btf (before 5.5). */
SEC("raw_tp/sched_switch")
int BPF_PROG(offcpu_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	if (!preempt)
		switch_out(ctx, BPF_CORE_READ(prev, pid), BPF_CORE_READ(prev, tgid), task_state(prev),
			   BPF_CORE_READ(prev, flags));
	switch_in(BPF_CORE_READ(next, pid), BPF_CORE_READ(next, tgid));
	return 0;
}
