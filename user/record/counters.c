// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "counters.h"
#include "counters.skel.h"
#include "fileio.h"
#include "hash.h"
#include "kernel_features.h"
#include "libbpf_setup.h"
#include "parse.h"
#include "perf_events.h"
#include "target.h"
#include "util.h"

struct counter_set {
	struct counters_bpf *skel;
	struct bpf_link *link;
	struct bpf_link *wakeup; /* the stamp method's sched_wakeup program, else NULL */
	struct counter_event ev[SP_MAX_COUNTERS];
	int nr_ev, nr_slots;
	int *fds;		/* nr_slots x nr_online, -1 where closed */
	struct int_list cpus;	/* online CPUs the events are on */
	int nr_cpus;		/* possible CPUs: the BPF arrays' stride */
	const char *hook;
	struct target *target;
	__u64 stop_ns;		/* CLOCK_MONOTONIC at counters__stop, 0 while running */
	__u32 times_mask;
	__u32 clock_mask;
	int threads_fd;		/* counters__threads_stand_in's map, -1 until asked for */
};

static int *fd_at(struct counter_set *s, int slot, int cpu_idx)
{
	return &s->fds[slot * s->cpus.n + cpu_idx];
}

static void explain_unsupported(struct counter_event *e)
{
	int err = -e->err;

	if ((e->spec.kind == EV_HW || e->spec.kind == EV_CACHE || e->spec.kind == EV_RAW) &&
	    event_errno_means_no_pmu(err))
		snprintf(e->why, sizeof(e->why), "%s: not supported here (%s: no hardware PMU, as in most VMs)",
			 e->spec.name, strerror(err));
	else
		snprintf(e->why, sizeof(e->why), "%s: not supported here (perf_event_open: %s)", e->spec.name,
			 strerror(err));
}

static bool is_task_clock(const struct event_spec *ev)
{
	return ev->attr.type == PERF_TYPE_SOFTWARE && ev->attr.config == PERF_COUNT_SW_TASK_CLOCK &&
	       !ev->attr.exclude_user && !ev->attr.exclude_kernel;
}

/* Opens one event on every CPU; an unsupported event is marked, not an error. */
static int open_event(struct counter_set *s, struct counter_event *e, const struct counters_opts *o,
		      char *err, size_t errlen)
{
	struct perf_event_attr a = e->spec.attr;
	int slot = s->nr_slots;
	bool no_native = o->no_native;

	if (e->spec.kind == EV_SCHED) {
		static const int slot_of[] = { [EV_SCHED_RUN_DELAY] = COUNTER_NATIVE_RUN_DELAY,
					       [EV_SCHED_SLEEP] = COUNTER_NATIVE_SLEEP,
					       [EV_SCHED_BLOCKED] = COUNTER_NATIVE_BLOCKED };

		e->slot = slot_of[a.config < ARRAY_SIZE(slot_of) ? a.config : 0];
		e->is_clock = true;
		/* Only spans read slots; theirs is the split in every record (runq_ns, sleep_ns, blocked_ns). */
		snprintf(e->why, sizeof(e->why), "%s: spans carry it as their runq_ns, sleep_ns and blocked_ns",
			 e->spec.name);
		return 0;
	}
	if (o->native_switches && a.type == PERF_TYPE_SOFTWARE && a.config == PERF_COUNT_SW_CONTEXT_SWITCHES &&
	    !a.exclude_user && !a.exclude_kernel) {
		e->slot = COUNTER_NATIVE_SWITCHES;
		return 0;
	}
	/*
	 * task-clock is the thread's time on CPU, which the switch program
	 * stamps anyway: no counter read (a test checks it against cpu-clock).
	 */
	if (is_task_clock(&e->spec) && !no_native) {
		e->slot = COUNTER_NATIVE;
		return 0;
	}
	/* Only PMU counters are multiplexed; software ones always run. */
	e->with_times = e->spec.kind != EV_SW && e->spec.kind != EV_TRACEPOINT;

	a.size = sizeof(a);
	a.disabled = 1;
	a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	for (int i = 0; i < s->cpus.n; i++) {
		int fd = sys_perf_event_open(&a, -1, s->cpus.v[i], -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			int e2 = -errno;

			for (int j = 0; j < i; j++) {
				close(*fd_at(s, slot, j));
				*fd_at(s, slot, j) = -1;
			}
			if (i == 0) {
				e->slot = COUNTER_UNSUPPORTED;
				e->err = e2;
				explain_unsupported(e);
				return 0;
			}
			snprintf(err, errlen, "cannot count %s on CPU %d: %s", e->spec.name, s->cpus.v[i],
				 strerror(-e2));
			return e2;
		}
		*fd_at(s, slot, i) = fd;
	}
	e->slot = slot;
	if (e->with_times)
		s->times_mask |= 1u << slot;
	/* Clocks count time, so untraced switches can be taken out of them (oncpu_since_snap). */
	e->is_clock = a.type == PERF_TYPE_SOFTWARE &&
		      (a.config == PERF_COUNT_SW_CPU_CLOCK || a.config == PERF_COUNT_SW_TASK_CLOCK);
	if (e->is_clock)
		s->clock_mask |= 1u << slot;
	s->nr_slots++;
	return 0;
}

int counters__open(struct counter_set **out, const struct counters_opts *o, char *err, size_t errlen)
{
	struct counter_set *s;
	bool raw_tp;
	int e;

	*out = NULL;
	if (o->nr_evs > SP_MAX_COUNTERS) {
		snprintf(err, errlen, "%d events asked for; at most %d can be counted in one run",
			 o->nr_evs, SP_MAX_COUNTERS);
		return -E2BIG;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->threads_fd = -1;
	s->nr_cpus = libbpf_num_possible_cpus();
	s->target = o->target;
	s->cpus.v = malloc(o->cpus->n * sizeof(int));
	s->fds = malloc(SP_MAX_COUNTERS * o->cpus->n * sizeof(int));
	if (!s->cpus.v || !s->fds || s->nr_cpus <= 0) {
		e = -ENOMEM;
		goto cleanup;
	}
	memcpy(s->cpus.v, o->cpus->v, o->cpus->n * sizeof(int));
	s->cpus.n = o->cpus->n;
	for (int i = 0; i < SP_MAX_COUNTERS * s->cpus.n; i++)
		s->fds[i] = -1;
	for (int i = 0; i < o->nr_evs; i++) {
		s->ev[i].spec = o->evs[i];
		e = open_event(s, &s->ev[i], o, err, errlen);
		if (e)
			goto cleanup;
		s->nr_ev++;
	}
	/* tp_btf (5.5+) reads task fields directly; raw_tp is the older twin. */
	raw_tp = o->prefer_raw_tp || features_try_attach("calib_tp_btf") != 0;
	s->skel = counters_bpf__open();
	if (!s->skel) {
		e = -errno;
		snprintf(err, errlen, "cannot open the counters BPF object: %s", strerror(-e));
		goto cleanup;
	}
	bpf_program__set_autoload(s->skel->progs.switch_btf, !raw_tp);
	bpf_program__set_autoload(s->skel->progs.switch_raw, raw_tp);
	s->hook = raw_tp ? "raw_tp" : "tp_btf";
	s->skel->rodata->nr_events = s->nr_slots;
	s->skel->rodata->nr_cpus = s->nr_cpus;
	s->skel->rodata->filter_mode = o->target ? o->target->mode : SP_FILTER_NONE;
	s->skel->rodata->target_drop_at_exit = o->target && o->target->drop_at_exit;
	s->skel->rodata->times_mask = s->times_mask;
	s->skel->rodata->clock_mask = s->clock_mask;
	s->skel->rodata->sched_split = o->sched_split;
	for (int i = 0; i < s->nr_ev; i++)
		s->skel->rodata->split_all |= s->ev[i].spec.kind == EV_SCHED;
	s->skel->rodata->sched_split |= s->skel->rodata->split_all;
	/* Without the scheduler's accounts (or forced), the split from stamps, which wakeups end. */
	s->skel->rodata->split_stamps = s->skel->rodata->sched_split && features_split_stamps();
	bpf_program__set_autoload(s->skel->progs.wakeup_btf, s->skel->rodata->split_stamps && !raw_tp);
	bpf_program__set_autoload(s->skel->progs.wakeup_raw, s->skel->rodata->split_stamps && raw_tp);
	/* sched_switch(preempt, prev, next, prev_state) since 5.18. */
	s->skel->rodata->has_prev_state = features_tp_nargs("sched_switch") >= 4;
	bpf_map__set_max_entries(s->skel->maps.counters, SP_MAX(1, s->nr_slots * s->nr_cpus));
	bpf_map__set_max_entries(s->skel->maps.counts, o->max_threads);
	e = target__prepare(o->target, s->skel->obj, s->skel->maps.filter);
	if (e) {
		snprintf(err, errlen, "cannot share the BPF filter with the counters program: %s", strerror(-e));
		goto cleanup;
	}
	e = libbpf_load_skel(s->skel->skeleton, "counters");
	if (e) {
		snprintf(err, errlen, "cannot load the counters BPF program (%s): %s", s->hook, libbpf_explain(e));
		goto cleanup;
	}
	e = target__loaded(o->target, s->skel->obj, s->skel->maps.filter);
	if (e) {
		snprintf(err, errlen, "cannot fill the counters program's filter: %s", strerror(-e));
		goto cleanup;
	}
	for (int slot = 0; slot < s->nr_slots; slot++)
		for (int i = 0; i < s->cpus.n; i++) {
			__u32 key = slot * s->nr_cpus + s->cpus.v[i];

			if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.counters), &key, fd_at(s, slot, i), BPF_ANY)) {
				e = -errno;
				snprintf(err, errlen, "cannot place a counter in the BPF array: %s", strerror(-e));
				goto cleanup;
			}
		}
	*out = s;
	return 0;
cleanup:
	counters__free(s);
	return e;
}

static int for_each_fd(struct counter_set *s, unsigned long req)
{
	for (int i = 0; i < s->nr_slots * s->cpus.n; i++)
		if (s->fds[i] >= 0 && ioctl(s->fds[i], req, 0))
			return -errno;
	return 0;
}

int counters__start(struct counter_set *s)
{
	struct bpf_program *p = strcmp(s->hook, "tp_btf") ? s->skel->progs.switch_raw : s->skel->progs.switch_btf;

	s->skel->bss->t0_ns = now_ns(CLOCK_MONOTONIC);
	s->link = bpf_program__attach(p);
	if (!s->link)
		return -errno;
	if (s->skel->rodata->split_stamps) {
		p = strcmp(s->hook, "tp_btf") ? s->skel->progs.wakeup_raw : s->skel->progs.wakeup_btf;
		s->wakeup = bpf_program__attach(p);
		if (!s->wakeup)
			return -errno;
	}
	return for_each_fd(s, PERF_EVENT_IOC_ENABLE);
}

int counters__stop(struct counter_set *s)
{
	int e = for_each_fd(s, PERF_EVENT_IOC_DISABLE);

	/* The open slices end here, for the native clock as for the counters. */
	s->stop_ns = now_ns(CLOCK_MONOTONIC);
	return e;
}

struct reading {
	__u64 value, enabled, running;
};

static int read_fd(int fd, struct reading *r)
{
	ssize_t n = read(fd, r, sizeof(*r));

	if (n != sizeof(*r))
		return n < 0 ? -errno : -EIO;
	return 0;
}

static void thread_identity(struct thread_counts *t)
{
	char path[64], buf[4096];
	char *p;

	t->pid = t->tid;
	if (t->tid == 0) {
		strcpy(t->comm, "swapper");
		return;
	}
	snprintf(path, sizeof(path), "/proc/%u/status", t->tid);
	if (read_file_str(path, buf, sizeof(buf)))
		return;
	p = strstr(buf, "\nTgid:");
	if (p)
		t->pid = strtoul(p + 6, NULL, 10);
	if (!strncmp(buf, "Name:", 5)) {
		p = buf + 5;
		while (*p == '\t' || *p == ' ')
			p++;
		snprintf(t->comm, sizeof(t->comm), "%.*s", (int)strcspn(p, "\n"), p);
	}
}

static bool user_wanted(const struct counter_set *s, const struct thread_counts *t)
{
	return target__has(s->target, s->target && s->target->mode == SP_FILTER_TID ? t->tid : t->pid);
}

/* Grows v by one zeroed entry for tid; returns its index or -ENOMEM. */
static int add_thread(struct thread_counts **v, int *cnt, int *cap, struct u64_map *idx, __u32 tid)
{
	uint64_t *slot;

	if (*cnt == *cap) {
		struct thread_counts *nv = realloc(*v, (*cap *= 2) * sizeof(**v));

		if (!nv)
			return -ENOMEM;
		*v = nv;
	}
	slot = u64_map_get(idx, tid, true);
	if (!slot)
		return -ENOMEM;
	memset(&(*v)[*cnt], 0, sizeof(**v));
	(*v)[*cnt].tid = tid;
	*slot = *cnt;
	return (*cnt)++;
}

/* Raw per-slot sums become per-event figures: natives and time-less counters take oncpu. */
static void to_events(const struct counter_set *s, struct thread_counts *t, const __u64 *val,
		      const __u64 *ena, const __u64 *run)
{
	for (int k = 0; k < s->nr_ev; k++) {
		const struct counter_event *e = &s->ev[k];

		if (e->slot == COUNTER_NATIVE) {
			t->value[k] = t->enabled[k] = t->running[k] = t->oncpu_ns;
		} else if (e->slot == COUNTER_NATIVE_SWITCHES) {
			t->value[k] = t->switches;
			t->enabled[k] = t->running[k] = t->oncpu_ns;
		} else if (e->slot <= COUNTER_NATIVE_RUN_DELAY && e->slot >= COUNTER_NATIVE_BLOCKED) {
			t->value[k] = e->slot == COUNTER_NATIVE_RUN_DELAY ? t->run_delay_ns
				      : e->slot == COUNTER_NATIVE_SLEEP	   ? t->sleep_ns
									   : t->blocked_ns;
			t->enabled[k] = t->running[k] = t->oncpu_ns;
		} else if (e->slot >= 0) {
			t->value[k] = val[e->slot];
			t->enabled[k] = e->with_times ? ena[e->slot] : t->oncpu_ns;
			t->running[k] = e->with_times ? run[e->slot] : t->oncpu_ns;
		} else {
			t->value[k] = t->enabled[k] = t->running[k] = 0;
		}
	}
}

/* Makes room for entry i of the raw sums, parallel to the threads. */
static int raw_room(struct sp_counts **raw, int cap)
{
	struct sp_counts *nr = realloc(*raw, cap * sizeof(**raw));

	if (!nr)
		return -ENOMEM;
	*raw = nr;
	return 0;
}

/*
 * The scheduler's account of a thread, from /proc: its sum_exec_runtime
 * (schedstat's first field) and, with nsw, its nvcsw + nivcsw.  0, or -errno
 * once the thread is gone.
 */
static int thread_sched(__u32 tid, __u64 *sum, __u64 *nsw)
{
	char path[64], line[128];
	unsigned long long v, a = 0, b = 0;
	FILE *f;
	int got = 0;

	snprintf(path, sizeof(path), "/proc/%u/schedstat", tid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	got = fscanf(f, "%llu", &v) == 1;
	fclose(f);
	if (!got)
		return -EINVAL;
	*sum = v;
	if (!nsw)
		return 0;
	snprintf(path, sizeof(path), "/proc/%u/status", tid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	got = 0;
	while (fgets(line, sizeof(line), f)) {
		got += sscanf(line, "voluntary_ctxt_switches: %llu", &a) == 1;
		got += sscanf(line, "nonvoluntary_ctxt_switches: %llu", &b) == 1;
	}
	fclose(f);
	*nsw = a + b;
	return got == 2 ? 0 : -EINVAL;
}

/* A reading of every thread in progress: the map's closed slices, then what is still open. */
struct readout {
	struct thread_counts *v;
	struct sp_counts *raw; /* per-slot sums, parallel to v */
	int cnt, cap;
	struct u64_map idx;    /* tid -> index in v */
	__u64 *open;	       /* per online CPU: the open slice added, and to whom (0: none) */
	__u32 *open_tid;
	bool stale;	       /* a CPU's snapshot was of a thread that left unseen */
};

static void readout_free(struct readout *ro)
{
	free(ro->v);
	free(ro->raw);
	free(ro->open);
	free(ro->open_tid);
	u64_map_free(&ro->idx);
}

/* A row for tid, its sums zeroed; its index, or -ENOMEM. */
static int readout_add(struct readout *ro, __u32 tid)
{
	int cap = ro->cap, i = add_thread(&ro->v, &ro->cnt, &ro->cap, &ro->idx, tid);

	/* Only when v grew: a realloc per row is quadratic where realloc always copies (ASan). */
	if (i < 0 || ((ro->cap != cap || !ro->raw) && raw_room(&ro->raw, ro->cap)))
		return -ENOMEM;
	memset(&ro->raw[i], 0, sizeof(ro->raw[i]));
	return i;
}

/* The slices the switch program closed: one row per thread in the map. */
static int read_closed(struct counter_set *s, struct readout *ro)
{
	int mfd = bpf_map__fd(s->skel->maps.counts);
	__u32 key, next, *prev = NULL;

	while (!bpf_map_get_next_key(mfd, prev, &next)) {
		struct sp_counts c;
		int i;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(mfd, &key, &c))
			continue;
		i = readout_add(ro, key);
		if (i < 0)
			return i;
		ro->raw[i] = c;
		ro->v[i].pid = c.pid;
		ro->v[i].oncpu_ns = c.oncpu_ns;
		ro->v[i].switches = c.switches;
		/* run_delay as of its last switch-out, since the thread was first seen: the wait it arrived with counts in. */
		ro->v[i].run_delay_ns = c.run_delay > c.run_delay0 ? c.run_delay - c.run_delay0 : 0;
		ro->v[i].sleep_ns = c.slept_ns;
		ro->v[i].blocked_ns = c.blocked_ns;
		ro->v[i].cgroup_id = c.cgroup_id;
		memcpy(ro->v[i].comm, c.comm, SP_COMM_LEN);
		ro->v[i].comm[SP_COMM_LEN - 1] = 0;
	}
	return 0;
}

/* The row of the thread a CPU's snapshot names: -ENOENT if the filter does not want it. */
static int snap_thread(const struct counter_set *s, struct readout *ro, __u32 tid)
{
	uint64_t *slot = u64_map_get(&ro->idx, tid, false);
	struct thread_counts fresh = { .tid = tid };
	int t;

	if (slot)
		return *slot;
	thread_identity(&fresh);
	if (!user_wanted(s, &fresh))
		return -ENOENT;
	t = readout_add(ro, tid);
	if (t < 0)
		return t;
	ro->v[t].pid = fresh.pid;
	memcpy(ro->v[t].comm, fresh.comm, SP_COMM_LEN);
	return t;
}

/* Each CPU's open time slice: the map only learns of it at the next switch. */
static int read_open(struct counter_set *s, struct readout *ro, __u64 now)
{
	size_t snap_sz = (sizeof(struct sp_snap) + 7) & ~7ul;
	char *snaps = malloc(snap_sz * s->nr_cpus);
	__u32 zero = 0;
	__u64 sum, nsw;
	int e = 0;

	if (!snaps)
		return -ENOMEM;
	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.snap), &zero, snaps)) {
		e = -errno;
		goto cleanup;
	}
	for (int i = 0; i < s->cpus.n; i++) {
		const struct sp_snap *sn = (const void *)(snaps + snap_sz * s->cpus.v[i]);
		int t = sn->valid ? snap_thread(s, ro, sn->tid) : -ENOENT;

		if (t == -ENOENT)
			continue;
		if (t < 0) {
			e = t;
			goto cleanup;
		}
		/*
		 * The snapshot's thread may have left through a switch the
		 * tracepoint hid: its switch count moved.  This CPU's open
		 * slice is then someone else's, whom the account below finds.
		 */
		if (!thread_sched(sn->tid, &sum, &nsw) && nsw != sn->nsw) {
			ro->stale = true;
			continue;
		}
		if (now > sn->ts) {
			ro->open[i] = now - sn->ts;
			ro->open_tid[i] = sn->tid;
		}
		ro->v[t].oncpu_ns += ro->open[i];
		for (int k = 0; k < s->nr_slots; k++) {
			struct reading r;

			if (read_fd(*fd_at(s, k, i), &r))
				continue;
			/* A slice that started before the snapshot was taken reads as 0. */
			if (r.value >= sn->value[k])
				ro->raw[t].value[k] += r.value - sn->value[k];
			if (r.enabled >= sn->enabled[k])
				ro->raw[t].enabled[k] += r.enabled - sn->enabled[k];
			if (r.running >= sn->running[k])
				ro->raw[t].running[k] += r.running - sn->running[k];
		}
	}
cleanup:
	free(snaps);
	return e;
}

/*
 * A thread that came in through a hidden switch runs, or ran, with no
 * slice open for it: the scheduler's account since its last credited
 * slice says how long (oncpu_since_snap, bpf/sched_time.bpf.h, with the same
 * SP_UNCLOSED_NS of slack).  The cpu-clock counters take the same figure.
 * A /proc read per thread costs about 9 us: it is done where a snapshot
 * was stale, and for the totals at the end.  Elsewhere a hidden run is
 * credited by the program at the thread's next traced switch-out, so
 * an interval may show it late but never loses it.
 */
static void add_hidden_runs(const struct counter_set *s, struct readout *ro)
{
	__u64 sum;

	for (int i = 0; i < ro->cnt && (ro->stale || s->stop_ns); i++) {
		__u64 run, seen = 0;

		if (!ro->raw[i].sum_seen || thread_sched(ro->v[i].tid, &sum, NULL) || sum < ro->raw[i].sum_seen)
			continue;
		for (int c = 0; c < s->cpus.n; c++)
			seen += ro->open_tid[c] == ro->v[i].tid ? ro->open[c] : 0;
		run = sum - ro->raw[i].sum_seen;
		if (run <= seen + SP_UNCLOSED_NS)
			continue;
		ro->v[i].oncpu_ns += run - seen;
		for (int k = 0; k < s->nr_slots; k++)
			if (s->clock_mask & (1u << k))
				ro->raw[i].value[k] += run - seen;
	}
}

/*
 * At the end, a thread still off CPU has been since its switch-out (its
 * wait for a CPU, if woken, included): the program settles a block only at
 * the thread's next switch-out.  Only at the end, so that -I's intervals
 * never go backwards when the block settles.
 */
static void add_open_blocks(const struct counter_set *s, struct readout *ro, __u64 now)
{
	for (int i = 0; i < ro->cnt && s->stop_ns; i++) {
		bool running = false;

		for (int c = 0; c < s->cpus.n; c++)
			running |= ro->open_tid[c] == ro->v[i].tid;
		if (!ro->raw[i].out_ts || running || now < ro->raw[i].out_ts)
			continue;
		if (ro->raw[i].out_state == SP_BLOCK_D)
			ro->v[i].blocked_ns += now - ro->raw[i].out_ts;
		else
			ro->v[i].sleep_ns += now - ro->raw[i].out_ts;
	}
}

int counters__read(struct counter_set *s, struct thread_counts **out, int *n)
{
	struct readout ro = { .cap = 64 };
	__u64 now = s->stop_ns ?: now_ns(CLOCK_MONOTONIC);
	int e;

	*out = NULL;
	*n = 0;
	ro.v = malloc(ro.cap * sizeof(*ro.v));
	ro.raw = malloc(ro.cap * sizeof(*ro.raw));
	ro.open = calloc(s->cpus.n, sizeof(*ro.open));
	ro.open_tid = calloc(s->cpus.n, sizeof(*ro.open_tid));
	if (!ro.v || !ro.raw || !ro.open || !ro.open_tid) {
		e = -ENOMEM;
		goto cleanup;
	}
	e = read_closed(s, &ro) ?: read_open(s, &ro, now);
	if (e)
		goto cleanup;
	add_hidden_runs(s, &ro);
	add_open_blocks(s, &ro, now);
	for (int i = 0; i < ro.cnt; i++)
		to_events(s, &ro.v[i], ro.raw[i].value, ro.raw[i].enabled, ro.raw[i].running);
	*out = ro.v;
	*n = ro.cnt;
	ro.v = NULL;
cleanup:
	readout_free(&ro);
	return e;
}

int counters__read_totals(struct counter_set *s, const struct thread_counts *t, int n,
			  __u64 *value, __u64 *enabled, __u64 *running)
{
	__u64 val[SP_MAX_COUNTERS] = {}, ena[SP_MAX_COUNTERS] = {}, run[SP_MAX_COUNTERS] = {};
	struct thread_counts all = {};

	for (int k = 0; k < s->nr_slots; k++)
		for (int i = 0; i < s->cpus.n; i++) {
			struct reading r;
			int e = read_fd(*fd_at(s, k, i), &r);

			if (e)
				return e;
			val[k] += r.value;
			ena[k] += r.enabled;
			run[k] += r.running;
		}
	for (int i = 0; i < n; i++) {
		all.oncpu_ns += t[i].oncpu_ns;
		all.switches += t[i].switches;
		all.run_delay_ns += t[i].run_delay_ns;
		all.sleep_ns += t[i].sleep_ns;
		all.blocked_ns += t[i].blocked_ns;
	}
	to_events(s, &all, val, ena, run);
	/* A whole-host counter runs all the time on every CPU: its own times are the truth. */
	for (int k = 0; k < s->nr_ev; k++) {
		value[k] = all.value[k];
		enabled[k] = s->ev[k].slot >= 0 ? ena[s->ev[k].slot] : all.enabled[k];
		running[k] = s->ev[k].slot >= 0 ? run[s->ev[k].slot] : all.running[k];
	}
	return 0;
}

const struct counter_event *counters__events(const struct counter_set *s, int *n)
{
	*n = s->nr_ev;
	return s->ev;
}

void counters__losses(struct counter_set *s, __u64 *full, __u64 *read_err, __u64 *gaps)
{
	int fd = bpf_map__fd(s->skel->maps.stats);

	*gaps = bpf_percpu_sum(fd, SP_STAT_SWITCH_GAP);
	*full = bpf_percpu_sum(fd, SP_STAT_COUNTS_FULL);
	*read_err = bpf_percpu_sum(fd, SP_STAT_READ_ERR);
}

bool counters__split_stamps(const struct counter_set *s, __u64 *hidden, __u64 *nowake)
{
	int fd = bpf_map__fd(s->skel->maps.stats);

	*hidden = bpf_percpu_sum(fd, SP_STAT_SPLIT_HIDDEN);
	*nowake = bpf_percpu_sum(fd, SP_STAT_SPLIT_NOWAKE);
	return s->skel->rodata->split_stamps;
}

__u64 counters__target_full(const struct counter_set *s)
{
	return s->target ? target__full(s->target, bpf_map__fd(s->skel->maps.stats)) : 0;
}

const char *counters__hook(const struct counter_set *s)
{
	return s->hook;
}

void counters__map_fds(const struct counter_set *s, int *counters, int *snap, int *counts)
{
	*counters = bpf_map__fd(s->skel->maps.counters);
	*snap = bpf_map__fd(s->skel->maps.snap);
	*counts = bpf_map__fd(s->skel->maps.counts);
}

int counters__threads_stand_in(struct counter_set *s)
{
	/* One entry: the span programs only look threads up in it, and find none. */
	if (s->threads_fd < 0) {
		s->threads_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "threads", sizeof(__u32), sizeof(struct sp_thread), 1,
					       NULL);
		if (s->threads_fd < 0)
			return -errno;
	}
	return s->threads_fd;
}

int counters__counts_map_fd(const struct counter_set *s)
{
	return bpf_map__fd(s->skel->maps.counts);
}

__u64 counters__bytes_per_thread(const struct counter_set *s)
{
	char path[64], buf[1024], *p;
	__u64 memlock;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", counters__counts_map_fd(s));
	if (read_file_str(path, buf, sizeof(buf)))
		return 0;
	p = strstr(buf, "memlock:");
	if (!p)
		return 0;
	memlock = strtoull(p + 8, NULL, 10);
	return memlock / bpf_map__max_entries(s->skel->maps.counts);
}

void counters__free(struct counter_set *s)
{
	if (!s)
		return;
	bpf_link__destroy(s->wakeup);
	bpf_link__destroy(s->link);
	if (s->threads_fd >= 0)
		close(s->threads_fd);
	for (int i = 0; s->fds && i < s->nr_slots * s->cpus.n; i++)
		if (s->fds[i] >= 0)
			close(s->fds[i]);
	counters_bpf__destroy(s->skel);
	free(s->fds);
	int_list_free(&s->cpus);
	free(s);
}
