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
/* Its frame is large: the walk inline (ehframe.bpf.h, EH_WALK_FN). */
#define EH_WALK_INLINE
#include "maps.bpf.h"
#include "helpers.bpf.h"
#include "core_shims.bpf.h"

/*
 * A block's user chain, kept per thread with what proves it (every stack
 * word its walk read): a thread that blocks again where it blocked before
 * reuses the chain's id when its registers and those words are the same.
 * The walk is a function of the registers, the process's slice of
 * mappings (whose generation never names other mappings), the rows and
 * the words it read, each read's address a function of what came before:
 * the same inputs give the same chain, so a reused chain is never one the
 * walk would not have given.  Anything else a walk reads (a mapping from
 * the kernel's vmas, a frame-pointer step, a fault, a uretprobe's return
 * instance, Python or Java frames) makes its chain one not kept.  The same
 * sp and return address alone would not do: a caller further up may differ
 * at the same depth (tests/integration/test_kept.py's blocks).
 */
#define OFF_KEEP_WORDS 64
/* The words are read again a page at a time (one read costs about what one word's does). */
#define OFF_KEEP_PAGE 4096

struct off_kept {
	__u64 ip, sp, bp, ss;
	__u32 pid, gen;
	__u32 nw;	/* words in addr/val */
	__u32 stop, n;	/* the walk's end and its frames, counted again at each reuse */
	__s32 ustack;	/* the chain's id in offustacks, which nothing deletes */
	__u64 addr[OFF_KEEP_WORDS], val[OFF_KEEP_WORDS];
};

/* Per thread, its last block's chain (task storage: freed with the thread, no size to guess). */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct off_kept);
} offkeep SEC(".maps");

/* Per CPU: the words the walk in progress read, and a page of a kept chain's stack read again. */
struct off_log {
	__u32 n, unsure;
	__u64 addr[OFF_KEEP_WORDS], val[OFF_KEEP_WORDS];
	__u8 buf[OFF_KEEP_PAGE + 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct off_log);
} offkeep_log SEC(".maps");

/* Set by user space where the kernel has task storage and the program is tp_btf. */
const volatile bool keep_chains = false;

static __always_inline void off_note_read(__u64 addr, __u64 val)
{
	__u32 zero = 0, i;
	struct off_log *l = bpf_map_lookup_elem(&offkeep_log, &zero);

	if (!keep_chains || !l)
		return;
	i = l->n;
	if (i >= OFF_KEEP_WORDS) {
		l->unsure = 1;
		return;
	}
	l->addr[i & (OFF_KEEP_WORDS - 1)] = addr;
	l->val[i & (OFF_KEEP_WORDS - 1)] = val;
	l->n = i + 1;
}

static __always_inline void off_note_unsure(void)
{
	__u32 zero = 0;
	struct off_log *l = bpf_map_lookup_elem(&offkeep_log, &zero);

	if (keep_chains && l)
		l->unsure = 1;
}

#define EH_NOTE_READ(addr, val) off_note_read(addr, val)
#define EH_NOTE_UNSURE() off_note_unsure()
#include "ehframe.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define TASK_INTERRUPTIBLE 0x1
#define TASK_UNINTERRUPTIBLE 0x2
#define PF_KTHREAD 0x00200000
#define TASK_DEAD 0x80
/* This program and bpf_trace_run4 sit on top of every kernel stack taken here; __schedule is the first frame worth naming. */
#define KSTACK_SKIP 2

const volatile bool cpu_filter = false;
const volatile __u64 thresh_ns = 0;
const volatile __u64 ring_size = 0;
/* --call-graph ehframe: user chains unwound by the tables, which the sampling program's maps hold. */
const volatile bool eh_user = false;
/* The kernel's sched_switch passes prev_state (5.18+): set from its BTF. */
const volatile bool has_prev_state = false;
/*
 * record --sched, and --off-cpu: every switch-out is a record, preemptions
 * (state 0) too, each carrying the thread's run_delay then, so that user
 * space can tell each block's run-queue tail from the next block's (the
 * split of spans it did not mark).  --sched alone takes no stacks; with
 * --off-cpu a short block is also summed, and its record goes alone.
 */
const volatile bool sched_mode = false;
const volatile bool want_stacks = true;

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

#include "offkstack.bpf.h"

/* User chains unwound by the tables (eh_user); sized with --off-cpu-entries. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct sp_eh_chain);
} offustacks SEC(".maps");

/* New chains with Python frames, for the recorder to name them while their process lives; sized from user space. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
} offpy_rb SEC(".maps");

/* Per CPU: the chain being stored (too large for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_eh_chain);
} offustack_scratch SEC(".maps");

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

/* -p/-t, then -C. */
static __always_inline bool wanted(__u32 pid, __u32 tid)
{
	if (!filter_keeps(pid, tid))
		return false;
	if (cpu_filter) {
		__u32 cpu = bpf_get_smp_processor_id();
		__u8 *on = bpf_map_lookup_elem(&offcpu_cpus, &cpu);

		return on && *on;
	}
	return true;
}

static __always_inline void emit(const struct sp_offcpu_start *st, __u32 tid, __u64 now, __u64 dur, __u32 flags)
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
	ev->run_delay = st->run_delay;
	ev->waker = st->waker;
	ev->flags = flags;
	ev->pad = 0;
	bpf_ringbuf_submit(ev, ring_wakeup_flag(&offcpu_rb, ring_size));
}

/* Ends the block `st` of thread `tid` at `end`: written alone if long, else summed. */
static __always_inline void block_end(const struct sp_offcpu_start *st, __u32 tid, __u32 pid, __u64 end)
{
	struct sp_offcpu_key key;
	struct sp_offcpu_val *v, fresh;
	__u64 dur = end - st->ts;

	if (dur >= thresh_ns || (sched_mode && !want_stacks)) {
		emit(st, tid, end, dur, 0);
		return;
	}
	/* The switch's record for the split; the block, if it is one, summed below. */
	if (sched_mode)
		emit(st, tid, end, dur, SP_OFFCPU_EV_SCHED_ONLY);
	if (!st->state)
		return;
	key = (struct sp_offcpu_key){ .pid = pid, .tid = tid, .kstack = st->kstack, .ustack = st->ustack,
				      .state = st->state };
	v = bpf_map_lookup_elem(&offagg, &key);
	if (v) {
		/* Another CPU may add to the same thread's key only after this switch-in: no race, but cheap. */
		__sync_fetch_and_add(&v->ns, dur);
		__sync_fetch_and_add(&v->count, 1);
		return;
	}
	fresh = (struct sp_offcpu_val){ .ns = dur, .count = 1 };
	if (bpf_map_update_elem(&offagg, &key, &fresh, BPF_NOEXIST)) {
		v = bpf_map_lookup_elem(&offagg, &key);
		if (v) {
			__sync_fetch_and_add(&v->ns, dur);
			__sync_fetch_and_add(&v->count, 1);
		} else {
			stat_inc(SP_STAT_OFFCPU_AGG_FULL);
			emit(st, tid, end, dur, 0);
		}
	}
}

static __always_inline void switch_in(__u32 tid, __u32 pid, __u64 now)
{
	struct sp_offcpu_start *st = bpf_map_lookup_elem(&offstart, &tid);

	if (!st)
		return;
	/* A TID reused by another process cannot inherit a start: never a wrong duration. */
	if (st->pid != pid || now < st->ts)
		stat_inc(SP_STAT_OFFCPU_STALE);
	else
		block_end(st, tid, pid, now);
	bpf_map_delete_elem(&offstart, &tid);
}

/*
 * A thread leaving the CPU while its start is still in the map came back
 * without the tracepoint showing it: seen here a few times a minute under
 * load, with bpftrace's tracepoint missing the same switch-ins while the
 * thread's sched_info.pcount shows they happened.  The block ended when the
 * thread last began to run: now less the CPU time it has had since it was
 * picked (the scheduler sets prev_sum_exec_runtime at each pick, and brought
 * sum_exec_runtime up to date before this tracepoint).  That end is late by
 * the interrupt and steal time of that run, microseconds, where dropping the
 * block lost all of it.  Returns after removing the start.
 */
static __always_inline void hidden_return(__u32 tid, __u32 pid, __u64 ran, __u64 now)
{
	struct sp_offcpu_start *st = bpf_map_lookup_elem(&offstart, &tid);

	if (!st)
		return;
	/* An RT thread's prev_sum_exec_runtime is not kept: a run longer than the gap means no estimate. */
	if (st->pid != pid || now < st->ts || ran > now - st->ts) {
		stat_inc(SP_STAT_OFFCPU_UNSEEN);
	} else {
		stat_inc(SP_STAT_OFFCPU_HIDDEN);
		block_end(st, tid, pid, now - ran);
	}
	bpf_map_delete_elem(&offstart, &tid);
}

/* FNV-1a over the chain, a frame a step. */
static long chain_hash_step(__u32 i, void *unused)
{
	__u32 zero = 0;
	struct sp_eh_chain *c = bpf_map_lookup_elem(&offustack_scratch, &zero);

	if (!c || i >= c->nr)
		return 1;
	/* Bounded where the verifier sees it: the compiler may merge it with the check above. */
	barrier_var(i);
	if (i >= SP_EH_MAX_FRAMES)
		return 1;
	c->hash = (c->hash ^ c->ips[i]) * 0x100000001b3ull;
	return 0;
}

/*
 * The user chain of the thread leaving, unwound by the tables, as an id of
 * offustacks (like bpf_get_stackid's); negative when none.  Equal chains
 * get one id: the first free or equal of four slots from the hash.
 */
static __always_inline __s32 eh_stackid(void)
{
	__u32 zero = 0, id, n;
	struct sp_eh_sample *s = bpf_map_lookup_elem(&eh_scratch, &zero);
	struct sp_eh_chain *c = bpf_map_lookup_elem(&offustack_scratch, &zero), *old;
	struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero);
	struct py_walk *py = bpf_map_lookup_elem(&py_walks, &zero);
	bool python;

	if (!s || !c || !w || !py)
		return -1;
	n = eh_unwind_user(0, 0);
	python = py_walk && w->py && py->placed;
	if (n < 2)
		return -1;
	c->nr = n - 1;
	c->pad = 0;
	c->hash = 0xcbf29ce484222325ull;
	__builtin_memcpy(c->ips, &s->ips[1], sizeof(c->ips));
	bpf_loop(SP_EH_MAX_FRAMES, chain_hash_step, NULL, 0);
	for (int k = 0; k < 4; k++) {
		id = (__u32)(c->hash + k) & 0x7fffffff;
		/* A thread mostly blocks where it blocked before: a lookup finds it without the bucket lock an update takes. */
		old = bpf_map_lookup_elem(&offustacks, &id);
		if (old && old->hash == c->hash && old->nr == c->nr)
			return id;
		if (old)
			continue;
		if (!bpf_map_update_elem(&offustacks, &id, c, BPF_NOEXIST)) {
			if (python) {
				__u64 pt = bpf_get_current_pid_tgid();
				struct sp_offcpu_pychain r = { .pid = pt >> 32, .tid = (__u32)pt, .id = id };

				/* Read at the next drain: no wakeup of its own (a lost one only costs names). */
				bpf_ringbuf_output(&offpy_rb, &r, sizeof(r), BPF_RB_NO_WAKEUP);
			}
			return id;
		}
		old = bpf_map_lookup_elem(&offustacks, &id);
		if (old && old->hash == c->hash && old->nr == c->nr)
			return id;
	}
	return -1;
}

/* The kept chain's id if it is proven the one a walk would give now, else -1. */
static __always_inline __s32 kept_stackid(struct off_kept *k, struct task_struct *task, struct pt_regs *regs)
{
	__u32 zero = 0, pid = task->tgid, nw = k->nw;
	struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero);
	struct off_log *l = bpf_map_lookup_elem(&offkeep_log, &zero);
	__u64 *f, a, x, base = 0, len = 0;

	if (!w || !l || k->ustack < 0 || k->ip != regs->ip || k->sp != regs->sp || k->bp != regs->bp ||
	    k->pid != pid || k->ss != task->mm->start_stack)
		return -1;
	eh_proc_facts(w, pid, k->ss);
	if (!(w->c_flags & EH_C_SLICE) || (w->c_flags & (EH_C_PY | EH_C_HS)) || w->c_gen != k->gen || eh_vma_only)
		return -1;
	/* The words lie up the stack from sp, mostly on its page: a read from each page's first to its end. */
	for (__u32 i = 0; i < OFF_KEEP_WORDS; i++) {
		if (i >= nw)
			break;
		a = k->addr[i];
		if (a - base >= len || a - base + 8 > len) {
			if ((a & (OFF_KEEP_PAGE - 1)) > OFF_KEEP_PAGE - 8) {
				/* A word across two pages: read alone. */
				if (bpf_probe_read_user(&x, 8, (void *)a) || x != k->val[i])
					return -1;
				continue;
			}
			base = k->sp <= a && (k->sp ^ a) < OFF_KEEP_PAGE ? k->sp : a;
			len = OFF_KEEP_PAGE - (base & (OFF_KEEP_PAGE - 1));
			if (len < 8 || len > OFF_KEEP_PAGE || bpf_probe_read_user(l->buf, len, (void *)base))
				return -1;
		}
		if (*(__u64 *)&l->buf[(a - base) & (OFF_KEEP_PAGE - 1)] != k->val[i])
			return -1;
	}
	/* Counted as the walk would have counted it. */
	eh_stat(SP_EH_CHAINS);
	eh_stat(k->stop && k->stop < SP_EH_STAT_MAX ? k->stop : SP_EH_STOP_DEPTH);
	f = bpf_map_lookup_elem(&eh_stats, &(__u32){ SP_EH_FRAMES });
	if (f)
		*f += k->n;
	return k->ustack;
}

/* The blocking thread's user chain by the tables: its last block's when proven the same, else walked (and kept). */
static __always_inline __s32 eh_block_stackid(bool keep)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 zero = 0, nw;
	struct off_log *l = bpf_map_lookup_elem(&offkeep_log, &zero);
	struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero);
	struct pt_regs *regs;
	struct off_kept *k;
	__s32 id;

	if (!keep || !keep_chains || !l || !w || !task->mm || (task->flags & EH_PF_KTHREAD))
		return eh_stackid();
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!regs)
		return eh_stackid();
	k = bpf_task_storage_get(&offkeep, task, 0, 0);
	if (k) {
		id = kept_stackid(k, task, regs);
		if (id >= 0)
			return id;
	}
	l->n = 0;
	l->unsure = 0;
	id = eh_stackid();
	nw = l->n;
	if (id < 0 || l->unsure || nw > OFF_KEEP_WORDS || !(w->c_flags & EH_C_SLICE) ||
	    (w->c_flags & (EH_C_PY | EH_C_HS)) || !w->maps_nr)
		return id;
	if (!k)
		k = bpf_task_storage_get(&offkeep, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!k)
		return id;
	k->ip = regs->ip;
	k->sp = regs->sp;
	k->bp = regs->bp;
	k->ss = task->mm->start_stack;
	k->pid = task->tgid;
	k->gen = w->c_gen;
	k->nw = nw;
	k->stop = w->stop;
	k->n = w->n > SP_EH_MAX_FRAMES ? SP_EH_MAX_FRAMES : w->n;
	__builtin_memcpy(k->addr, l->addr, sizeof(k->addr));
	__builtin_memcpy(k->val, l->val, sizeof(k->val));
	k->ustack = id;
	return id;
}

/* Runs as prev: the stacks taken here are the sleeping thread's. */
static __always_inline void switch_out(void *ctx, __u32 tid, __u32 pid, __u32 state, __u64 rd, __u64 now, bool keep)
{
	struct sp_offcpu_start st;

	if (!wanted(pid, tid))
		return;
	__builtin_memset(&st.waker, 0, sizeof(st.waker));
	st.pid = pid;
	st.cpu = bpf_get_smp_processor_id();
	st.pad = 0;
	st.state = state & (TASK_INTERRUPTIBLE | TASK_UNINTERRUPTIBLE);
	st.run_delay = rd;
	/* A preemption is no block: its record needs no stacks. */
	if (want_stacks && st.state) {
		/* The user chain first: it tells which of the thread's kept kernel chains to try. */
		st.ustack = eh_user ? eh_block_stackid(keep)
				    : bpf_get_stackid(ctx, &offstacks, BPF_F_USER_STACK | BPF_F_FAST_STACK_CMP);
		if (st.ustack < 0)
			stat_inc(SP_STAT_OFFCPU_USTACK);
		st.kstack = keep && keep_kchains ? offk_stackid(ctx, st.ustack)
						 : bpf_get_stackid(ctx, &offstacks, KSTACK_SKIP | BPF_F_FAST_STACK_CMP);
		if (st.kstack < 0)
			stat_inc(SP_STAT_OFFCPU_KSTACK);
	} else {
		st.kstack = st.ustack = -2; /* -ENOENT: none taken */
	}
	st.ts = now;
	if (bpf_map_update_elem(&offstart, &tid, &st, BPF_ANY))
		stat_inc(SP_STAT_OFFCPU_NOSLOT);
}

/*
 * One switch: prev's block, if it blocks, and next's end of block.  `state`
 * is the tracepoint's prev_state where the kernel passes it (5.18+): read
 * from the task instead, it can already be TASK_WAKING when a waker on
 * another CPU got in between the dequeue and this tracepoint, and the block
 * would be missed (seen here twice in 25 s under load).
 */
static __always_inline void on_switch(void *ctx, bool preempt, __u32 prev_tid, __u32 prev_pid, __u32 flags,
				      __u32 state, __u64 ran, __u64 rd, __u32 next_tid, __u32 next_pid, bool keep)
{
	/*
	 * One stamp for both ends: taken after prev's stacks, next's block
	 * would end late by the stack walk (about 10 us here), and each block
	 * would be that much too long.
	 */
	__u64 now = bpf_ktime_get_ns();

	if (prev_tid && !(flags & PF_KTHREAD)) {
		hidden_return(prev_tid, prev_pid, ran, now);
		/* A preempted thread is runnable whatever its state says: not a block. */
		if (sched_mode && (state & TASK_DEAD) && !preempt && wanted(prev_pid, prev_tid)) {
			/*
			 * Its last switch-out: it never comes back, so no block, but
			 * its run_delay now is what tells the reader its previous
			 * block's wait for the CPU.  A record of no length.
			 */
			struct sp_offcpu_start last = { .ts = now, .pid = prev_pid, .kstack = -2, .ustack = -2,
							.cpu = bpf_get_smp_processor_id(), .run_delay = rd };

			emit(&last, prev_tid, now, 0, 0);
		} else if (preempt || !(state & (TASK_INTERRUPTIBLE | TASK_UNINTERRUPTIBLE))) {
			/* Runnable: in the run queue until it is picked again (--sched only). */
			if (sched_mode)
				switch_out(ctx, prev_tid, prev_pid, 0, rd, now, keep);
		} else {
			switch_out(ctx, prev_tid, prev_pid, state, rd, now, keep);
		}
	}
	switch_in(next_tid, next_pid, now);
}

SEC("tp_btf/sched_switch")
int offcpu_btf(__u64 *ctx)
{
	struct task_struct *prev = (void *)ctx[1], *next = (void *)ctx[2];
	__u32 state = switch_prev_state(has_prev_state, ctx, prev);

	on_switch(ctx, ctx[0], prev->pid, prev->tgid, prev->flags, state,
		  prev->se.sum_exec_runtime - prev->se.prev_sum_exec_runtime, sched_mode ? task_run_delay(prev) : 0,
		  next->pid, next->tgid, true);
	return 0;
}

/* The raw_tp twin for kernels without tp_btf (before 5.5). */
SEC("raw_tp/sched_switch")
int offcpu_raw(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *prev = (void *)ctx->args[1], *next = (void *)ctx->args[2];
	__u32 state = switch_prev_state(has_prev_state, ctx->args, prev);

	on_switch(ctx, ctx->args[0], BPF_CORE_READ(prev, pid), BPF_CORE_READ(prev, tgid), BPF_CORE_READ(prev, flags),
		  state, BPF_CORE_READ(prev, se.sum_exec_runtime) - BPF_CORE_READ(prev, se.prev_sum_exec_runtime),
		  sched_mode ? task_run_delay(prev) : 0, BPF_CORE_READ(next, pid), BPF_CORE_READ(next, tgid), false);
	return 0;
}

/* ---- who woke it (sched_waking, in the waker's context) ---- */

/* This program and bpf_trace_run1 sit on top of the waker's kernel stack. */
#define WAKE_KSTACK_SKIP 2

/*
 * The first waking of a block the switch program is timing: only threads
 * it keeps a start for (so -p, -t and -C apply), and no new map entries,
 * so a wakeup storm cannot fill anything.
 *
 * An interrupt's waking runs on whatever task it interrupted.  In_interrupt()
 * needs the per-CPU preempt_count, which BPF reaches only as a typed ksym,
 * and the verifier finds its address through kallsyms: not on kernels
 * without CONFIG_KALLSYMS_ALL, this VM's among them.  So both stacks and the
 * current task are taken in every context, and user space, which knows
 * the interrupt entry points, tells an interrupt from the kernel stack and
 * drops the rest (offcpu.c, classify_waker).
 */
static __always_inline void on_waking(void *ctx, __u32 wakee)
{
	struct sp_offcpu_start *st = bpf_map_lookup_elem(&offstart, &wakee);
	struct sp_waker *w;
	__u64 id;

	if (!st || st->waker.ctx)
		return;
	w = &st->waker;
	w->ts = bpf_ktime_get_ns();
	w->ctx = SP_WAKER_TASK;
	w->kstack = bpf_get_stackid(ctx, &offstacks, WAKE_KSTACK_SKIP | BPF_F_FAST_STACK_CMP);
	if (w->kstack < 0)
		stat_inc(SP_STAT_WAKER_KSTACK);
	id = bpf_get_current_pid_tgid();
	w->pid = id >> 32;
	w->tid = (__u32)id;
	bpf_get_current_comm(w->comm, sizeof(w->comm));
	/*
	 * Unwound as the blocked thread's chain is, into the same map, which user
	 * space reads by eh_user.  Safe to share the switch program's scratch:
	 * both run with interrupts off (ttwu holds pi_lock), so neither nests in
	 * the other on a CPU.
	 */
	w->ustack = eh_user ? eh_stackid()
			    : bpf_get_stackid(ctx, &offstacks, BPF_F_USER_STACK | BPF_F_FAST_STACK_CMP);
	if (w->ustack < 0)
		stat_inc(SP_STAT_WAKER_USTACK);
}

SEC("tp_btf/sched_waking")
int waking_btf(__u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];

	on_waking(ctx, p->pid);
	return 0;
}

/* The raw_tp twin for kernels without tp_btf (before 5.5). */
SEC("raw_tp/sched_waking")
int waking_raw(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *p = (void *)ctx->args[0];

	on_waking(ctx, BPF_CORE_READ(p, pid));
	return 0;
}
