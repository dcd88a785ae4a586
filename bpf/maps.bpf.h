/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Maps that several BPF programs share, declared once.  User space passes
 * one program's maps to the next by fd (bpf_map__reuse_fd), which needs
 * the definitions to match exactly; here they cannot drift apart.  A
 * program defines the SP_WANT_* it uses before including this.
 */
#ifndef SP_MAPS_BPF_H
#define SP_MAPS_BPF_H

#include "spanperf_abi.h"

#ifdef SP_WANT_THREADS_MAP
/* Per-thread sample totals of sample.bpf.c; sized with --max-threads. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct sp_thread);
} threads SEC(".maps");
#endif

#ifdef SP_WANT_COUNTER_MAPS
/* The counting events, at index event * nr_cpus + cpu; sized from user space. */
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} counters SEC(".maps");

/* Per CPU: the counters when the running thread came in. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_snap);
} snap SEC(".maps");

/* Per-thread counter totals; sized with --max-threads. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct sp_counts);
} counts SEC(".maps");

/*
 * The thread's time on CPU since its snapshot: what a switch-out adds to
 * oncpu_ns, and what a span adds while the thread runs.
 *
 * Normally it is the time since the snapshot (`now - s->ts`).  But this
 * VM's kernel hides one task's switches from tracepoints (bpftrace's miss
 * them too): a thread can leave and come back, on this CPU or another,
 * between two traced switches.  The time since the snapshot then holds its
 * sleep or another task's run, and a run of its own elsewhere is never
 * closed.  Its switch count tells (`nsw`, nvcsw + nivcsw as of its
 * switch-in; the kernel raises it before the switch-out's tracepoint), or
 * the snapshot names another thread.  Then the scheduler's own account is
 * used: its sum_exec_runtime (`sum`) since the last time oncpu_ns was added
 * to (c->sum_seen), which closes every run in between wherever it was.
 * Without that mark (the thread's first slice), its CPU time since the
 * snapshot if the snapshot is its own, else since its last pick (`ran`).
 * Where nothing was hidden but the account exceeds the stamps by more than
 * SP_UNCLOSED_NS, a run went unclosed, and the account is taken.  (The two
 * differ by a few us a slice anyway: a woken thread is charged from the
 * start of the __schedule that picks it, before the tracepoint.)  `*odd`
 * says the stamps were not used.
 */
static __always_inline __u64 oncpu_since_snap(const struct sp_snap *s, const struct sp_counts *c, __u32 tid,
					      __u64 nsw, __u64 sum, __u64 ran, __u64 now, bool *odd)
{
	__u64 gap = now > s->ts ? now - s->ts : 0, est;
	bool hidden = s->tid != tid || nsw != s->nsw;

	if (c && c->sum_seen && sum >= c->sum_seen) {
		est = sum - c->sum_seen;
		*odd = hidden || est > gap + SP_UNCLOSED_NS;
		return *odd ? est : gap;
	}
	*odd = hidden;
	if (!hidden)
		return gap;
	est = s->tid == tid ? sum - s->sum : ran;
	return est < gap ? est : gap;
}

/*
 * The length of the block (S or D) thread `tid` last left the CPU for,
 * without its wait on the run queue, once the thread runs again (at its
 * next switch-out, or at a span edge).  From the switch-out the block and
 * the wait together last until the thread's switch-in, the CPU's snapshot
 * if it is the thread's own (s->ts); the wait is what the scheduler added
 * to its run_delay since (one arrival).  If switches went untraced in
 * between, several arrivals and runs are in there: the CPU time it had
 * since (sum less this run less out_sum) comes off too, the switch-in is
 * taken as now less this run (`ran`), and *est says so.  Where clocks
 * disagree by a few us the block is clipped at 0.
 */
static __always_inline __u64 block_settle(const struct sp_counts *c, const struct sp_snap *s, __u32 tid, __u64 nsw,
					  __u64 rd, __u64 sum, __u64 ran, __u64 now, bool *est)
{
	__u64 in, off, wait, runs = 0;

	*est = false;
	if (!c->out_ts)
		return 0;
	if (s && s->valid && s->tid == tid && s->nsw == nsw && s->ts >= c->out_ts) {
		in = s->ts;
	} else {
		*est = true;
		in = now - ran;
		if (sum - ran > c->out_sum)
			runs = sum - ran - c->out_sum;
	}
	off = in > c->out_ts ? in - c->out_ts : 0;
	wait = (rd > c->out_rd ? rd - c->out_rd : 0) + runs;
	return off > wait ? off - wait : 0;
}
#endif

#ifdef SP_WANT_FILTER_MAP
/* -p or -t: the pids or tids to keep; sized from user space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
} filter SEC(".maps");
#endif

/* Every program's own: events user space reports (enum sp_stat, summed by bpf_percpu_sum). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SP_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/*
 * The runqueue t is on, whose clock and task clock are as its last update
 * left them.  Reached through the task's cfs_rq (CONFIG_FAIR_GROUP_SCHED),
 * as the per-CPU `runqueues` needs kallsyms with CONFIG_KALLSYMS_ALL.
 * NULL where there is no such path.
 */
static __always_inline struct rq *task_rq_of(struct task_struct *t)
{
	if (!bpf_core_field_exists(t->se.cfs_rq))
		return NULL;
	return BPF_CORE_READ(t, se.cfs_rq, rq);
}

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += 1; /* per-CPU slot: no atomic needed */
}

#endif
