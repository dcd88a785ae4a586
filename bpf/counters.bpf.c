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

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 nr_events = 0;
const volatile __u32 nr_cpus = 1;
const volatile __u32 filter_mode = SP_FILTER_NONE;
/* Bit i: counter i may be multiplexed, so read it with its times. */
const volatile __u32 times_mask = 0;

static __always_inline bool wanted(__u32 pid, __u32 tid)
{
	__u32 key = filter_mode == SP_FILTER_PID ? pid : tid;

	return filter_mode == SP_FILTER_NONE || bpf_map_lookup_elem(&filter, &key);
}

/* comm is read by the caller: tp_btf may load it directly, raw_tp must probe-read it. */
static __always_inline int on_switch(__u32 prev_tid, __u32 prev_pid, const char *prev_comm,
				     bool direct, __u32 next_tid)
{
	__u32 zero = 0, cpu = bpf_get_smp_processor_id();
	__u64 ts = bpf_ktime_get_ns();
	struct bpf_perf_event_value now;
	struct sp_counts *c = NULL;
	struct sp_snap *s;

	s = bpf_map_lookup_elem(&snap, &zero);
	if (!s)
		return 0;
	/*
	 * Close the outgoing slice.  The snapshot should name prev; where it
	 * does not, a switch into prev went untraced (seen on a kernel that
	 * hides its own agent's switches from tracepoints).  The time since the
	 * last switch seen here is then the best estimate of prev's slice, and
	 * far better than dropping it; the gap is counted and reported.
	 */
	if (s->valid && s->tid != prev_tid)
		stat_inc(SP_STAT_SWITCH_GAP);
	if (s->valid && wanted(prev_pid, prev_tid)) {
		c = bpf_map_lookup_elem(&counts, &prev_tid);
		if (!c) {
			struct sp_counts fresh = { .pid = prev_pid };

			if (bpf_map_update_elem(&counts, &prev_tid, &fresh, BPF_NOEXIST) &&
			    !bpf_map_lookup_elem(&counts, &prev_tid))
				stat_inc(SP_STAT_COUNTS_FULL);
			c = bpf_map_lookup_elem(&counts, &prev_tid);
		}
		if (c) {
			/* exec renames a thread: keep the latest name. */
			if (direct)
				__builtin_memcpy(c->comm, prev_comm, SP_COMM_LEN);
			else
				bpf_probe_read_kernel_str(c->comm, SP_COMM_LEN, prev_comm);
			c->oncpu_ns += ts - s->ts;
			c->switches++;
		}
	}
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
		if (c)
			c->value[i] += now.counter - s->value[i];
		s->value[i] = now.counter;
	}
	s->ts = ts;
	s->tid = next_tid;
	s->valid = 1;
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(prev->pid, prev->tgid, prev->comm, true, next->pid);
}

/* The raw_tp twin for kernels without tp_btf (before 5.5). */
SEC("raw_tp/sched_switch")
int BPF_PROG(switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(BPF_CORE_READ(prev, pid), BPF_CORE_READ(prev, tgid), prev->comm, false,
			 BPF_CORE_READ(next, pid));
}
