// SPDX-License-Identifier: GPL-2.0
/*
 * Spans: a probe pair marks the start and end of a span on a thread.
 *
 * At each boundary the program reads the thread's running totals: from the
 * counters program's per-TID map plus the slice it is in (the map alone is
 * stale mid-slice), and its sample count from the sampling program's map.
 * The begin pushes them on the thread's span stack (task-local storage);
 * the end pops, subtracts, and sends the span to user space.
 *
 * One program per boundary kind and per --span index, generated below:
 * the index is a constant in each, so no attach cookie (5.15+) is needed.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#define SP_WANT_THREADS_MAP
#define SP_WANT_COUNTER_MAPS
#define SP_WANT_FILTER_MAP
#include "maps.bpf.h"
#include "helpers.bpf.h"
#include "core_shims.bpf.h"
#include "sched_time.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 nr_cpus = 1;
const volatile __u32 nr_span_counters = 0;
const volatile __u8 span_ctr_kind[SP_MAX_COUNTERS] = {};
const volatile __u8 span_ctr_slot[SP_MAX_COUNTERS] = {};
const volatile __u8 span_source[SP_MAX_SPANS] = {};
/* Syscall number -> --span index + 1, for syscall spans on raw_syscalls. */
const volatile __u8 sys_span[SP_MAX_SYSCALLS] = {};
const volatile __u64 min_ns = 0;
const volatile __u64 ring_size = 0;
/* Spans carry the split of their wall time (read_sched); off: record --no-sched-split. */
const volatile bool sched_split = true;
/* The split by the counters program's stamps, not the scheduler's accounts (counters.bpf.c). */
const volatile bool split_stamps = false;

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sp_stack);
} stacks SEC(".maps");

/* Sized from user space. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
} spans_rb SEC(".maps");

/*
 * Where the thread's time went, as running totals at `now` (a span takes
 * their deltas): its CPU time, its waits on the run queue and its time in
 * D.  The wall time less the first two is off CPU, the D part blocked and
 * the rest asleep.
 *
 * The scheduler's sum_exec_runtime is brought up to date only at switches
 * and ticks: mid-slice it lags by up to a tick (4 ms at HZ=250).  The time
 * since, on the task clock it is kept in, is that clock now less the
 * thread's se.exec_start, as the kernel's own task_sched_runtime() adds it.
 * The clock now is the runqueue's task clock as its last update left it
 * (every tick and scheduler event on this CPU), plus the time since on
 * the runqueue's clock, which is sched_clock: bpf_ktime_get_ns() less the
 * offset the counters program takes at a switch every 100 ms (sp_snap.koff).  The
 * runqueue is the task's cfs_rq's (CONFIG_FAIR_GROUP_SCHED; the per-CPU
 * `runqueues` needs CONFIG_KALLSYMS_ALL).  Without it, bpf_ktime_get_ns()
 * less the task clock's own offset at the switch (sp_snap.xoff), which
 * steal time moves (CONFIG_PARAVIRT_TIME_ACCOUNTING leaves it out of the
 * task clock): in a VM, a span that began after a steal and switched
 * before its end was short of that steal in CPU and long in sleep (seen
 * here under load: a 2 ms call with 0.85 ms asleep).  Without a
 * snapshot, the account as it stands.  run_delay is exact here:
 * the scheduler adds each wait when the thread arrives, and it is running.
 * Time in D is the counters program's, plus the block it last left if it
 * has not switched out since (block_settle).  Without CONFIG_SCHED_INFO
 * (or with split_stamps) all of it comes from the counters program's stamps
 * at sched_switch and sched_wakeup.
 */
/* How far sum_exec_runtime may lag at an edge: two ticks at HZ=100. */
#define SP_ACCOUNT_LAG_MAX 20000000ull

static __always_inline void read_sched(struct task_struct *task, const struct sp_counts *c, const struct sp_snap *s,
				       __u32 tid, __u64 nsw, __u64 oncpu_stamps, __u64 now, struct sp_sched_split *out)
{
	__u64 sum = task->se.sum_exec_runtime, ran = sum - task->se.prev_sum_exec_runtime, rd = 0;
	bool est;

	if (split_stamps || !task_has_sched_info(task)) {
		/*
		 * The counters program's stamps (stamps_switch_out): the thread
		 * runs now, so nothing is open unless its switch-in went
		 * untraced, and then it began to run `ran` ago, as there.
		 */
		__u64 in = now > ran ? now - ran : 0;

		out->how = SP_SCHED_WAKE_STAMPS;
		out->on_ns = oncpu_stamps;
		out->runq_ns = 0;
		out->blocked_ns = 0;
		if (c) {
			out->runq_ns = c->runq_ns;
			if (c->wait_ts && in > c->wait_ts)
				out->runq_ns += in - c->wait_ts;
			out->blocked_ns = c->blocked_ns;
			if (c->out_ts && c->out_state == SP_BLOCK_D && in > c->out_ts)
				out->blocked_ns += in - c->out_ts;
		}
		out->pad = 0;
		return;
	}
	{
		__u64 clk = s && s->valid ? now - s->xoff : 0, exec = task->se.exec_start, rclock, rtask;
		struct rq *rq = s && s->valid && s->koff ? task_rq_of(task) : NULL;

		if (rq) {
			rclock = BPF_CORE_READ(rq, clock);
			rtask = BPF_CORE_READ(rq, clock_task);
			if (rtask >= exec) {
				__u64 knows = now - s->koff;

				clk = rtask + (knows > rclock ? knows - rclock : 0);
			}
		}
		rd = task->sched_info.run_delay; /* it exists (tested above); a BTF pointer: a direct load */
		out->how = SP_SCHED_ACCOUNTS;
		/* A figure beyond a few ticks is no lag: an offset gone stale. */
		out->on_ns = sum + (clk > exec && clk - exec < SP_ACCOUNT_LAG_MAX ? clk - exec : 0);
	}
	out->runq_ns = rd;
	out->blocked_ns = 0;
	if (c) {
		out->blocked_ns = c->blocked_ns;
		if (c->out_ts && c->out_state == SP_BLOCK_D)
			out->blocked_ns += block_settle(c, s, tid, nsw, rd, sum, ran, now, &est);
	}
	out->pad = 0;
}

/* The thread's running totals now: what the map holds plus the open slice; its counts entry, if any. */
static __always_inline struct sp_counts *read_totals(__u32 tid, __u64 now, __u64 *out, __u64 *samples,
						     struct sp_sched_split *sched)
{
	__u32 zero = 0, cpu = bpf_get_smp_processor_id();
	struct sp_counts *c = bpf_map_lookup_elem(&counts, &tid);
	struct sp_snap *s = bpf_map_lookup_elem(&snap, &zero);
	struct sp_thread *t = bpf_map_lookup_elem(&threads, &tid);
	/*
	 * This thread runs now, so the CPU's open slice is its own, as the
	 * counters program will close it at its switch-out (oncpu_since_snap).
	 */
	bool cur = s && s->valid, odd = false;
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 nsw = task->nvcsw + task->nivcsw;
	__u64 slice = cur ? oncpu_since_snap(s, c, tid, nsw, task->se.sum_exec_runtime,
					     task->se.sum_exec_runtime - task->se.prev_sum_exec_runtime, now, &odd)
			  : 0;

	for (__u32 k = 0; k < SP_MAX_COUNTERS; k++) {
		__u8 kind = span_ctr_kind[k];
		__u32 slot = span_ctr_slot[k] & (SP_MAX_COUNTERS - 1);
		__u64 v = 0;

		if (k >= nr_span_counters)
			break;
		if (kind == SP_CTR_ONCPU) {
			v = (c ? c->oncpu_ns : 0) + slice;
		} else if (kind == SP_CTR_SWITCHES) {
			v = c ? c->switches : 0;
		} else if (kind == SP_CTR_COUNTER || kind == SP_CTR_CLOCK) {
			v = c ? c->value[slot] : 0;
			if (cur) {
				__u64 x = bpf_perf_event_read(&counters, slot * nr_cpus + cpu);

				if (x < (__u64)-4095 && x >= s->value[slot]) {
					__u64 d = x - s->value[slot];

					v += kind == SP_CTR_CLOCK && odd ? slice : d;
				}
			}
		}
		out[k] = v;
	}
	*samples = t ? t->samples : 0;
	if (sched_split)
		read_sched(task, c, s, tid, nsw, (c ? c->oncpu_ns : 0) + slice, now, sched);
	else
		*sched = (struct sp_sched_split){};
	return c;
}

/*
 * Tells the counters program how many spans the thread has open: it keeps
 * time in S and D only for threads inside one.  c is the thread's entry as
 * read_totals found it; it is made here if the thread has not switched out
 * yet (its fields all 0 but the pid).
 */
static __always_inline void mark_in_span(struct sp_counts *c, __u32 depth)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;

	if (!sched_split)
		return;
	if (!c && depth) {
		struct sp_counts fresh = { .pid = id >> 32 };

		bpf_map_update_elem(&counts, &tid, &fresh, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&counts, &tid);
	}
	if (c)
		c->in_span = depth;
}

/* -p, -t, -- CMD: the spans of the target's threads only (the others' ends find no stack). */
static __always_inline bool span_wanted(void)
{
	__u64 id = bpf_get_current_pid_tgid();

	return filter_keeps(id >> 32, (__u32)id);
}

static __always_inline int span_begin(__u32 idx, __u64 ip)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct sp_stack *st;
	struct sp_frame *f;
	__u32 d;

	if (!span_wanted())
		return 0;
	st = bpf_task_storage_get(&stacks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st) {
		stat_inc(SP_STAT_SPANS_NOSTACK);
		return 0;
	}
	d = st->depth;
	st->depth = d + 1;
	if (d >= SP_SPAN_DEPTH) {
		stat_inc(SP_STAT_SPANS_TOO_DEEP);
		return 0;
	}
	f = &st->f[d & (SP_SPAN_DEPTH - 1)];
	f->idx = idx;
	f->ip = ip;
	f->start = bpf_ktime_get_ns();
	mark_in_span(read_totals((__u32)bpf_get_current_pid_tgid(), f->start, f->counters, &f->samples, &f->sched),
		     d + 1);
	return 0;
}

/* Sends the span of frame f ending now; the thread's counts entry, if any. */
static __always_inline struct sp_counts *emit(struct sp_frame *f, __u64 now, __u32 depth, __u8 flags)
{
	__u64 id = bpf_get_current_pid_tgid(), samples, cur[SP_MAX_COUNTERS] = {};
	struct sp_sched_split sched;
	struct sp_span_ev *ev;
	struct sp_counts *c;
	struct sp_span *out;

	c = read_totals((__u32)id, now, cur, &samples, &sched);
	ev = bpf_ringbuf_reserve(&spans_rb, sizeof(*ev), 0);
	if (!ev) {
		stat_inc(SP_STAT_SPANS_LOST);
		return c;
	}
	/* Totals that went backwards (a frame from before the thread's entry was made) give 0, not 2^64. */
	ev->sched.on_ns = sched.on_ns > f->sched.on_ns ? sched.on_ns - f->sched.on_ns : 0;
	ev->sched.runq_ns = sched.runq_ns > f->sched.runq_ns ? sched.runq_ns - f->sched.runq_ns : 0;
	ev->sched.blocked_ns = sched.blocked_ns > f->sched.blocked_ns ? sched.blocked_ns - f->sched.blocked_ns : 0;
	ev->sched.how = sched.how;
	ev->sched.pad = 0;
	out = &ev->span;
	out->start_ns = f->start;
	out->end_ns = now;
	out->ip = f->ip;
	out->samples = samples - f->samples;
	for (__u32 k = 0; k < SP_MAX_COUNTERS; k++)
		out->counters[k] = cur[k] - f->counters[k];
	out->pid = id >> 32;
	out->tid = (__u32)id;
	out->cpu = bpf_get_smp_processor_id();
	out->idx = f->idx;
	out->depth = depth;
	out->flags = flags;
	out->source = span_source[f->idx & (SP_MAX_SPANS - 1)];
	__builtin_memset(out->pad, 0, sizeof(out->pad));
	bpf_ringbuf_submit(ev, ring_wakeup_flag(&spans_rb, ring_size));
	return c;
}

static __always_inline int span_end(__u32 idx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct sp_stack *st = bpf_task_storage_get(&stacks, task, 0, 0);
	struct sp_frame *f;
	__u64 now;
	__u32 d;

	if (!span_wanted())
		return 0;
	if (!st || !st->depth) {
		stat_inc(SP_STAT_SPANS_UNMATCHED);
		return 0;
	}
	d = --st->depth;
	if (d >= SP_SPAN_DEPTH)
		return 0; /* a frame too deep to keep: counted at its begin */
	f = &st->f[d & (SP_SPAN_DEPTH - 1)];
	if (f->idx != idx) {
		/*
		 * Not the innermost span: a return was lost (longjmp, or a begin
		 * dropped).  Unwind to the nearest open span of this kind.
		 */
		__u32 k;

		for (k = 0; k < SP_SPAN_DEPTH; k++) {
			if (k >= d || st->f[(d - 1 - k) & (SP_SPAN_DEPTH - 1)].idx == idx)
				break;
		}
		stat_inc(SP_STAT_SPANS_UNMATCHED);
		if (k >= d) {
			st->depth = d + 1; /* no such span open: leave the stack as it was */
			return 0;
		}
		d = d - 1 - k;
		st->depth = d;
		f = &st->f[d & (SP_SPAN_DEPTH - 1)];
	}
	now = bpf_ktime_get_ns();
	if (now - f->start < min_ns) {
		__u32 tid = (__u32)bpf_get_current_pid_tgid();

		stat_inc(SP_STAT_SPANS_SHORT);
		mark_in_span(bpf_map_lookup_elem(&counts, &tid), d);
		return 0;
	}
	mark_in_span(emit(f, now, d, 0), d);
	return 0;
}

/* A thread that exits inside spans: they end with it, marked unfinished. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(span_exit, struct task_struct *p)
{
	struct sp_stack *st = bpf_task_storage_get(&stacks, bpf_get_current_task_btf(), 0, 0);
	__u64 now = bpf_ktime_get_ns();
	__u32 d;

	if (!st || !st->depth)
		return 0;
	stat_inc(SP_STAT_SPANS_UNFINISHED);
	d = st->depth;
	for (__u32 k = 0; k < SP_SPAN_DEPTH; k++) {
		if (k >= d)
			break;
		if (d - 1 - k < SP_SPAN_DEPTH)
			emit(&st->f[(d - 1 - k) & (SP_SPAN_DEPTH - 1)], now, d - 1 - k, SP_SPAN_UNFINISHED);
	}
	st->depth = 0;
	return 0;
}

/*
 * Syscall spans where the syscalls/sys_enter_X tracepoints are missing (no
 * tracefs, or no CONFIG_FTRACE_SYSCALLS): one pair on raw_syscalls for all
 * of them, which runs on every syscall and keeps the marked numbers.  Only
 * sys_enter is given the number; sys_exit would have to read it from the
 * registers, in a field each architecture names its own way (orig_ax on
 * x86), so the enter leaves it in the thread's span stack for the exit.
 */
static __always_inline int sys_span_idx(long nr)
{
	if (nr < 0 || nr >= SP_MAX_SYSCALLS)
		return -1;
	return (int)sys_span[nr & (SP_MAX_SYSCALLS - 1)] - 1;
}

SEC("raw_tp/sys_enter")
int BPF_PROG(sys_span_enter, struct pt_regs *regs, long id)
{
	int idx = sys_span_idx(id);
	struct sp_stack *st;

	if (idx < 0)
		return 0;
	span_begin(idx, 0);
	st = bpf_task_storage_get(&stacks, bpf_get_current_task_btf(), 0, 0);
	if (st)
		st->syscall = id + 1;
	return 0;
}

/* Exits of syscalls entered before the recording began have no number here, and no span. */
SEC("raw_tp/sys_exit")
int BPF_PROG(sys_span_exit, struct pt_regs *regs, long ret)
{
	struct sp_stack *st = bpf_task_storage_get(&stacks, bpf_get_current_task_btf(), 0, 0);
	int idx;

	if (!st || !st->syscall)
		return 0;
	idx = sys_span_idx((long)st->syscall - 1);
	st->syscall = 0;
	return idx < 0 ? 0 : span_end(idx);
}

/* A kprobe or uprobe pair: the same program text, each kind its own section. */
#define SPAN_PROBE_PAIR(N, kind, retkind)                                    \
	SEC(#kind)                                                           \
	int BPF_KPROBE(kind##_begin_##N)                                     \
	{                                                                    \
		return span_begin(N, PT_REGS_IP(ctx));                       \
	}                                                                    \
	SEC(#retkind)                                                        \
	int BPF_KRETPROBE(kind##_end_##N)                                    \
	{                                                                    \
		return span_end(N);                                          \
	}

#define SPAN_PROGS(N)                                                        \
	SPAN_PROBE_PAIR(N, uprobe, uretprobe)                                \
	SPAN_PROBE_PAIR(N, kprobe, kretprobe)                                \
	/* fentry/fexit targets are set from user space before load. */     \
	SEC("fentry")                                                        \
	int BPF_PROG(fentry_begin_##N)                                       \
	{                                                                    \
		return span_begin(N, 0);                                     \
	}                                                                    \
	SEC("fexit")                                                         \
	int BPF_PROG(fexit_end_##N)                                          \
	{                                                                    \
		return span_end(N);                                          \
	}                                                                    \
	SEC("tracepoint")                                                    \
	int tp_begin_##N(void *ctx)                                          \
	{                                                                    \
		return span_begin(N, 0);                                     \
	}                                                                    \
	SEC("tracepoint")                                                    \
	int tp_end_##N(void *ctx)                                            \
	{                                                                    \
		return span_end(N);                                          \
	}

SPAN_PROGS(0)
SPAN_PROGS(1)
SPAN_PROGS(2)
SPAN_PROGS(3)
SPAN_PROGS(4)
SPAN_PROGS(5)
SPAN_PROGS(6)
SPAN_PROGS(7)
