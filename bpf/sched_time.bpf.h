/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a thread's time went between the scheduler's events: on CPU since
 * the CPU's snapshot (struct sp_snap), and in the block (S or D) it last
 * left the CPU for.  The counters program closes both at each switch, the
 * spans program reads them mid-slice at a span's edges: one arithmetic for
 * both, so that a span's split adds up to what stat reports.
 */
#ifndef SP_SCHED_TIME_BPF_H
#define SP_SCHED_TIME_BPF_H

#include "spanperf_abi.h"

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
