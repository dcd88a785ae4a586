/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CO-RE shims: every read of a kernel field that moved, or that some
 * kernels or configs lack, written once and named for the change it
 * bridges.  Each test is a CO-RE relocation (bpf_core_field_exists) or a
 * setting user space read from the kernel's BTF: a constant at load, so
 * the verifier removes the branch not taken and a shim costs what the read
 * it picks costs.
 */
#ifndef SP_CORE_SHIMS_BPF_H
#define SP_CORE_SHIMS_BPF_H

#include <bpf/bpf_core_read.h>

/*
 * task_struct::state became `unsigned int __state` in 5.14, commit
 * 2f064a59a11f ("sched: Change task_struct::state"); the old field, for
 * the kernels before it.
 */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline __u32 task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

/*
 * The state sched_switch's prev left the CPU in.  5.18 passes the one the
 * scheduler acted on as an argument, commit fa2c3254d7cf ("sched/tracing:
 * Don't re-read p->state when emitting sched_switch event"), placed last by
 * 9c2136be0878 ("sched/tracing: Append prev_state to tp args instead"): the
 * tracepoint's fourth of `args` (tp_btf's ctx, raw_tp's ctx->args).  Before
 * it, the task's own, as it is by now.  A tracepoint's arity is no CO-RE
 * relocation: `has_arg` is a setting user space took from the kernel's BTF.
 * args[3] is read inside the branch, never passed by value: where the
 * kernel has no such argument the read is then dead code, which the
 * verifier does not look at, rather than a read past the arguments.
 */
static __always_inline __u32 switch_prev_state(bool has_arg, const __u64 *args, struct task_struct *prev)
{
	return has_arg ? (__u32)args[3] : task_state(prev);
}

/*
 * sched_info (run_delay: the task's time waiting on a run queue) exists
 * only with CONFIG_SCHED_INFO, which SCHEDSTATS and TASK_DELAY_ACCT select.
 * Without it run_delay reads 0, and user space, which probes the config,
 * splits the time by the counters program's stamps instead.
 */
static __always_inline bool task_has_sched_info(struct task_struct *t)
{
	return bpf_core_field_exists(t->sched_info);
}

/* run_delay through a probe read: for any task pointer (raw_tp's). */
static __always_inline __u64 task_run_delay(struct task_struct *t)
{
	if (task_has_sched_info(t))
		return BPF_CORE_READ(t, sched_info.run_delay);
	return 0;
}

/* run_delay by a direct load, no helper call: for a BTF pointer (tp_btf's, bpf_get_current_task_btf's). */
static __always_inline __u64 task_run_delay_btf(struct task_struct *t)
{
	return task_has_sched_info(t) ? t->sched_info.run_delay : 0;
}

/*
 * The runqueue t is on, whose clock and task clock are as its last update
 * left them.  Reached through the task's cfs_rq, which exists only with
 * CONFIG_FAIR_GROUP_SCHED, as the per-CPU `runqueues` needs kallsyms with
 * CONFIG_KALLSYMS_ALL.  NULL where there is no such path.
 */
static __always_inline struct rq *task_rq_of(struct task_struct *t)
{
	if (!bpf_core_field_exists(t->se.cfs_rq))
		return NULL;
	return BPF_CORE_READ(t, se.cfs_rq, rq);
}

#endif
