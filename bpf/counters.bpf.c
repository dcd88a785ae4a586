// SPDX-License-Identifier: GPL-2.0
/*
 * Per-thread counters on context switches.
 *
 * Each counting event is open on every CPU and sits in `counters` at
 * index event * nr_cpus + cpu.  At every switch the program reads each
 * counter once: the reading closes the outgoing thread's time slice (its
 * delta since the per-CPU snapshot goes into its `counts` entry) and opens
 * the incoming thread's (the reading becomes the new snapshot).
 *
 * Cost decides the helpers (bpf_stats, per switch, on the project's VM):
 * bpf_perf_event_read_value costs about 230 ns, bpf_perf_event_read 130.
 * Only counters the kernel may multiplex (hardware ones) need the enabled
 * and running times that _value returns; for the others the thread's time
 * on CPU, from one bpf_ktime_get_ns per switch, is both.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#define SP_WANT_COUNTER_MAPS
#define SP_WANT_FILTER_MAP
#include "maps.bpf.h"
#include "helpers.bpf.h"
#include "core_shims.bpf.h"
#include "sched_time.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 nr_events = 0;
const volatile __u32 nr_cpus = 1;
/* Bit i: counter i may be multiplexed, so read it with its times. */
const volatile __u32 times_mask = 0;
/* Bit i: counter i counts ns (cpu-clock): after untraced switches, the slice's own figure. */
const volatile __u32 clock_mask = 0;
/*
 * Spans, or stat's run-delay, sleep and blocked: keep threads' time in S
 * and D (struct sp_counts, block_settle).  A few loads and stores on the
 * entry this program updates anyway; off, the code is removed at load.
 * For spans only the threads inside one (sp_counts.in_span, which the
 * spans program keeps) pay even that; stat's columns want every thread
 * (split_all).
 */
const volatile bool sched_split = false;
const volatile bool split_all = false;
/* The kernel's sched_switch passes prev_state (5.18+): set from its BTF. */
const volatile bool has_prev_state = false;
/*
 * The split by stamps (struct sp_counts.runq_ns): where the kernel keeps no
 * sched_info, or forced (SPANPERF_SCHED_SPLIT=stamps).  Needs sched_split;
 * the sched_wakeup programs load only then.
 */
const volatile bool split_stamps = false;
/* bpf_ktime_get_ns() when counting began, set by user space: threads born since wait from 0. */
__u64 t0_ns = 0;

#define TASK_INTERRUPTIBLE 0x1
#define TASK_UNINTERRUPTIBLE 0x2
#define TASK_NOLOAD 0x400

/*
 * The outgoing thread's last block ends here (it ran since), and a new one
 * begins if it leaves to sleep: preempted, it is runnable, and its wait is
 * the run queue's (run_delay), whatever its state says.
 */
static __always_inline void split_switch(struct sp_counts *c, const struct sp_snap *s, __u32 tid, __u64 nsw,
					 bool preempt, __u32 state, __u64 rd, __u64 sum, __u64 ran, __u64 now)
{
	bool est;
	__u64 b = block_settle(c, s, tid, nsw, rd, sum, ran, now, &est);

	if (c->out_ts) {
		if (est)
			stat_inc(SP_STAT_SPLIT_HIDDEN);
		if (c->out_state == SP_BLOCK_D)
			c->blocked_ns += b;
		else
			c->slept_ns += b;
	}
	c->run_delay = rd;
	c->out_ts = 0;
	if (preempt || !(state & (TASK_INTERRUPTIBLE | TASK_UNINTERRUPTIBLE)))
		return;
	c->out_ts = now;
	c->out_rd = rd;
	c->out_sum = sum;
	c->out_state = (state & TASK_UNINTERRUPTIBLE) && !(state & TASK_NOLOAD) ? SP_BLOCK_D : SP_BLOCK_SLEEP;
}

/*
 * The stamp method's switch-out of a thread whose time is kept: a wait for
 * the CPU begins if it leaves runnable (preempted, yielding), a block if it
 * leaves to sleep, which its wakeup ends (on_wakeup).  What is still open
 * from before was missed: a wait whose switch-in went untraced ends when
 * the thread was picked, `ran` ago (the scheduler's prev_sum_exec_runtime
 * marks the pick), and so does a block whose wakeup and switch-in did.
 */
static __always_inline void stamps_switch_out(struct sp_counts *c, bool preempt, __u32 state, __u64 ran, __u64 now)
{
	__u64 in = now > ran ? now - ran : 0;

	if (c->wait_ts) {
		stat_inc(SP_STAT_SPLIT_HIDDEN);
		c->runq_ns += in > c->wait_ts ? in - c->wait_ts : 0;
		c->wait_ts = 0;
	}
	if (c->out_ts) {
		stat_inc(SP_STAT_SPLIT_HIDDEN);
		if (c->out_state == SP_BLOCK_D)
			c->blocked_ns += in > c->out_ts ? in - c->out_ts : 0;
		else
			c->slept_ns += in > c->out_ts ? in - c->out_ts : 0;
		c->out_ts = 0;
	}
	/* stat's run-delay reads it: the stamps' own figure. */
	c->run_delay = c->runq_ns;
	if (preempt || !(state & (TASK_INTERRUPTIBLE | TASK_UNINTERRUPTIBLE))) {
		c->wait_ts = now;
		return;
	}
	c->out_ts = now;
	c->out_state = (state & TASK_UNINTERRUPTIBLE) && !(state & TASK_NOLOAD) ? SP_BLOCK_D : SP_BLOCK_SLEEP;
}

/*
 * The stamp method's switch-in: the wait for the CPU ends.  A block still
 * open here was never asleep: the scheduler found a signal pending at the
 * switch-out and left it runnable (the tracepoint still says S), so no
 * wakeup came, and its time was in the run queue.
 */
static __always_inline void stamps_switch_in(__u32 tid, __u64 now)
{
	struct sp_counts *c = bpf_map_lookup_elem(&counts, &tid);
	__u64 from;

	if (!c || !(c->wait_ts || c->out_ts))
		return;
	from = c->wait_ts ?: c->out_ts;
	if (!c->wait_ts)
		stat_inc(SP_STAT_SPLIT_NOWAKE);
	c->runq_ns += now > from ? now - from : 0;
	c->run_delay = c->runq_ns;
	c->wait_ts = c->out_ts = 0;
}

/*
 * A new thread's first entry, zero but for what counts_new sets and then
 * clears: a map value rather than a struct on on_switch's stack, which
 * is full.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_counts);
} fresh_counts SEC(".maps");

/*
 * What a switch gives on_switch of its two threads, read by the caller:
 * tp_btf may load the fields directly, raw_tp must probe-read them.
 */
struct switch_ev {
	const char *prev_comm;	 /* copied by on_switch: directly if `direct`, else by probe read */
	__u64 prev_nsw;		 /* nvcsw + nivcsw */
	__u64 prev_sum;		 /* se.sum_exec_runtime */
	__u64 prev_ran;		 /* its run since its last pick: less se.prev_sum_exec_runtime */
	__u64 prev_rd;		 /* run_delay, where the split by the scheduler's accounts wants it */
	__u64 prev_born;	 /* start_time */
	__u64 next_nsw, next_sum, next_exec_start;
	__u32 prev_tid, prev_pid;
	__u32 prev_state;	 /* where the split wants it (switch_prev_state) */
	__u32 next_tid;
	bool preempt, direct;
};

/*
 * A new entry for the outgoing thread, at its first switch-out: `tid` is
 * the key (on the stack, as map keys must be).  NULL when the map is full.
 */
static __always_inline struct sp_counts *counts_new(const __u32 *tid, const struct switch_ev *e)
{
	struct sp_counts *fresh;
	__u32 zero = 0;

	fresh = bpf_map_lookup_elem(&fresh_counts, &zero);
	if (fresh) {
		/* run-delay counts from here, or from birth for a thread born since (start_time is CLOCK_MONOTONIC). */
		fresh->pid = e->prev_pid;
		fresh->run_delay0 = e->prev_born >= t0_ns ? 0 : e->prev_rd;
		if (bpf_map_update_elem(&counts, tid, fresh, BPF_NOEXIST) && !bpf_map_lookup_elem(&counts, tid))
			stat_inc(SP_STAT_COUNTS_FULL);
		fresh->pid = 0;
		fresh->run_delay0 = 0;
	}
	return bpf_map_lookup_elem(&counts, tid);
}

/*
 * Closes the outgoing thread's slice in c, its entry: its time on CPU by
 * the stamps or, where switches went untraced, by the scheduler's account
 * (oncpu_since_snap), such slices counted and reported; and its block, if
 * it leaves for one.  Returns that time; *odd: the account gave it.
 */
static __always_inline __u64 close_slice(const struct switch_ev *e, __u32 tid, struct sp_counts *c,
					 const struct sp_snap *s, __u64 ts, bool *odd)
{
	__u64 slice = oncpu_since_snap(s, c, tid, e->prev_nsw - 1, e->prev_sum, e->prev_ran, ts, odd);

	if (*odd)
		stat_inc(SP_STAT_SWITCH_GAP);
	/* exec renames a thread: keep the latest name. */
	if (e->direct)
		__builtin_memcpy(c->comm, e->prev_comm, SP_COMM_LEN);
	else
		bpf_probe_read_kernel_str(c->comm, SP_COMM_LEN, e->prev_comm);
	if (sched_split && split_stamps && (split_all || c->in_span))
		stamps_switch_out(c, e->preempt, e->prev_state, e->prev_ran, ts);
	else if (sched_split && (split_all || c->in_span))
		split_switch(c, s, tid, e->prev_nsw - 1, e->preempt, e->prev_state, e->prev_rd, e->prev_sum, e->prev_ran,
			     ts);
	else if (sched_split)
		c->out_ts = c->wait_ts = 0; /* a block of a span that has ended: its edge settled it */
	c->oncpu_ns += slice;
	c->sum_seen = e->prev_sum;
	/* Still prev's context at sched_switch: the cgroup it ran this slice in. */
	c->cgroup_id = bpf_get_current_cgroup_id();
	c->switches++;
	return slice;
}

/*
 * Reads each counter once: its delta since the snapshot goes to the
 * outgoing thread's entry (c, NULL if it is not kept), the reading becomes
 * the snapshot.  Counters of ns (cpu-clock) take the slice where the
 * scheduler's account gave it (odd); the others have no such account and
 * keep the CPU's delta.
 */
static __always_inline void read_counters(struct sp_snap *s, struct sp_counts *c, __u32 cpu, __u64 slice, bool odd)
{
	struct bpf_perf_event_value now;

	for (__u32 i = 0; i < SP_MAX_COUNTERS; i++) {
		__u32 idx = i * nr_cpus + cpu;

		if (i >= nr_events)
			break;
		if (times_mask & (1u << i)) {
			if (bpf_perf_event_read_value(&counters, idx, &now, sizeof(now))) {
				stat_inc(SP_STAT_READ_ERR);
				continue;
			}
			if (c) {
				c->enabled[i] += now.enabled - s->enabled[i];
				c->running[i] += now.running - s->running[i];
			}
			s->enabled[i] = now.enabled;
			s->running[i] = now.running;
		} else {
			now.counter = bpf_perf_event_read(&counters, idx);
			/* Errors come back as negative errnos in the value. */
			if (now.counter >= (__u64)-4095) {
				stat_inc(SP_STAT_READ_ERR);
				continue;
			}
		}
		if (c) {
			__u64 d = now.counter - s->value[i];

			c->value[i] += odd && (clock_mask & (1u << i)) ? slice : d;
		}
		s->value[i] = now.counter;
	}
}

/* The incoming thread's slice opens: the snapshot becomes its. */
static __always_inline void open_slice(const struct switch_ev *e, struct sp_snap *s, __u64 ts)
{
	if (sched_split && split_stamps)
		stamps_switch_in(e->next_tid, ts);
	s->ts = ts;
	s->tid = e->next_tid;
	s->nsw = e->next_nsw;
	s->sum = e->next_sum;
	s->xoff = ts - e->next_exec_start;
	s->valid = 1;
}

/* One switch: the outgoing thread's slice closes, if it is kept (-p/-t), and the incoming thread's opens. */
static __always_inline int on_switch(const struct switch_ev *e)
{
	__u32 zero = 0, cpu = bpf_get_smp_processor_id();
	__u64 ts = bpf_ktime_get_ns();
	struct sp_counts *c = NULL;
	struct sp_snap *s;
	bool odd = false;
	__u64 slice = 0;
	__u32 prev_tid = e->prev_tid, prev_pid = e->prev_pid; /* prev_tid: the counts key */

	s = bpf_map_lookup_elem(&snap, &zero);
	if (!s)
		return 0;
	if (s->valid && filter_keeps(prev_pid, prev_tid)) {
		c = bpf_map_lookup_elem(&counts, &prev_tid);
		if (!c)
			c = counts_new(&prev_tid, e);
		if (c)
			slice = close_slice(e, prev_tid, c, s, ts, &odd);
	}
	read_counters(s, c, cpu, slice, odd);
	open_slice(e, s, ts);
	return 0;
}

#define SP_KOFF_EVERY_NS 100000000ull

/*
 * The snapshot's koff, from the runqueue's clock that the switch has just
 * brought up to date: taken before on_switch, whose stack is full.
 */
static __always_inline void snap_koff(struct task_struct *next)
{
	__u64 clock = 0, now;
	__u32 zero = 0;
	struct sp_snap *s;
	struct rq *rq;

	if (!sched_split || split_stamps)
		return;
	s = bpf_map_lookup_elem(&snap, &zero);
	/* s->ts: the last switch's time, near enough to now for this. */
	if (!s || (s->koff_ts && s->ts - s->koff_ts < SP_KOFF_EVERY_NS))
		return;
	rq = task_rq_of(next);
	if (rq)
		clock = BPF_CORE_READ(rq, clock);
	now = bpf_ktime_get_ns();
	s->koff = clock && clock < now ? now - clock : 0;
	s->koff_ts = now;
}

SEC("tp_btf/sched_switch")
int switch_btf(__u64 *ctx)
{
	struct task_struct *prev = (void *)ctx[1], *next = (void *)ctx[2];

	snap_koff(next);
	/* What no split wants is dead code, removed at load. */
	return on_switch(&(struct switch_ev){
		.prev_tid = prev->pid,
		.prev_pid = prev->tgid,
		.prev_comm = prev->comm,
		.direct = true,
		.prev_nsw = prev->nvcsw + prev->nivcsw,
		.prev_sum = prev->se.sum_exec_runtime,
		.prev_ran = prev->se.sum_exec_runtime - prev->se.prev_sum_exec_runtime,
		.preempt = ctx[0],
		.prev_state = sched_split ? switch_prev_state(has_prev_state, ctx, prev) : 0,
		.prev_rd = sched_split && !split_stamps ? task_run_delay_btf(prev) : 0,
		.prev_born = prev->start_time,
		.next_tid = next->pid,
		.next_nsw = next->nvcsw + next->nivcsw,
		.next_sum = next->se.sum_exec_runtime,
		.next_exec_start = next->se.exec_start,
	});
}

/* The raw_tp twin for kernels without tp_btf (before 5.5). */
SEC("raw_tp/sched_switch")
int switch_raw(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *prev = (void *)ctx->args[1], *next = (void *)ctx->args[2];

	snap_koff(next);
	return on_switch(&(struct switch_ev){
		.prev_tid = BPF_CORE_READ(prev, pid),
		.prev_pid = BPF_CORE_READ(prev, tgid),
		.prev_comm = prev->comm,
		.direct = false,
		.prev_nsw = BPF_CORE_READ(prev, nvcsw) + BPF_CORE_READ(prev, nivcsw),
		.prev_sum = BPF_CORE_READ(prev, se.sum_exec_runtime),
		.prev_ran = BPF_CORE_READ(prev, se.sum_exec_runtime) - BPF_CORE_READ(prev, se.prev_sum_exec_runtime),
		.preempt = ctx->args[0],
		.prev_state = sched_split ? switch_prev_state(has_prev_state, ctx->args, prev) : 0,
		.prev_rd = sched_split && !split_stamps ? task_run_delay(prev) : 0,
		.prev_born = BPF_CORE_READ(prev, start_time),
		.next_tid = BPF_CORE_READ(next, pid),
		.next_nsw = BPF_CORE_READ(next, nvcsw) + BPF_CORE_READ(next, nivcsw),
		.next_sum = BPF_CORE_READ(next, se.sum_exec_runtime),
		.next_exec_start = BPF_CORE_READ(next, se.exec_start),
	});
}

/*
 * The stamp method's wakeups (split_stamps only): a kept thread's block
 * ends, its wait for the CPU begins.  sched_wakeup fires once the thread is
 * on a run queue, under that queue's lock, so before its switch-in there.
 */
static __always_inline void on_wakeup(__u32 tid)
{
	struct sp_counts *c = bpf_map_lookup_elem(&counts, &tid);
	__u64 now, b;

	if (!c || !c->out_ts)
		return;
	now = bpf_ktime_get_ns();
	b = now > c->out_ts ? now - c->out_ts : 0;
	if (c->out_state == SP_BLOCK_D)
		c->blocked_ns += b;
	else
		c->slept_ns += b;
	c->out_ts = 0;
	c->wait_ts = now;
}

SEC("tp_btf/sched_wakeup")
int wakeup_btf(__u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];

	on_wakeup(p->pid);
	return 0;
}

/* The raw_tp twin for kernels without tp_btf (before 5.5). */
SEC("raw_tp/sched_wakeup")
int wakeup_raw(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *p = (void *)ctx->args[0];

	on_wakeup(BPF_CORE_READ(p, pid));
	return 0;
}
