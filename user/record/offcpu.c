// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "kallsyms.h"
#include "kernel_features.h"
#include "libbpf_setup.h"
#include "log.h"
#include "offcpu.h"
#include "offcpu.skel.h"
#include "perf_sample.h"

struct offcpu_set {
	struct offcpu_bpf *skel;
	struct bpf_link *link;
	struct ring_buffer *rb;
	const char *hook;
	struct perf_event_attr attr;
	offcpu_write_fn fn;
	void *ctx;
	int err;		/* the first write error inside the ring callback */
	__u64 chain[2 * SP_OFFCPU_STACK_DEPTH + 2];
	__u64 iter_start, iter_end; /* __traceiter_sched_switch, when found */
	struct offcpu_stats st;
};

void offcpu__attr(struct perf_event_attr *a)
{
	/* As perf's --off-cpu: a software BPF-output event, CALLCHAIN in the sample. */
	*a = (struct perf_event_attr){
		.type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_BPF_OUTPUT, .size = sizeof(*a),
		.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			       PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN,
		.sample_period = 1, .sample_id_all = 1, .use_clockid = 1, .clockid = CLOCK_MONOTONIC,
		.disabled = 1,
	};
}

/* A stack map entry into chain[n..]; how many frames. */
static __u32 read_stack(struct offcpu_set *s, __s32 id, __u64 *out)
{
	__u64 ips[SP_OFFCPU_STACK_DEPTH];
	__u32 key = id, n = 0;

	if (id < 0 || bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.offstacks), &key, ips))
		return 0;
	while (n < SP_OFFCPU_STACK_DEPTH && ips[n])
		n++;
	memcpy(out, ips, n * sizeof(*out));
	return n;
}

/* One offcpu-time sample: period = ns off CPU, the kernel chain then the user chain. */
static int write_sample(struct offcpu_set *s, __u32 pid, __u32 tid, __u32 cpu, __u64 time, __u64 ns,
			__s32 kstack, __s32 ustack, bool sum)
{
	struct pd_sample smp = { .id = OFFCPU_ID, .pid = pid, .tid = tid, .cpu = cpu, .time = time, .period = ns,
				 .cpu_res = sum ? OFFCPU_RES_SUM : 0 };
	char buf[sizeof(struct perf_event_header) + 128 + sizeof(s->chain)];
	__u32 n = 0, k;
	__u16 misc = PERF_RECORD_MISC_USER;
	long len;

	k = read_stack(s, kstack, s->chain + 1);
	/*
	 * With more than one program on sched_switch the kernel goes through
	 * the tracepoint's iterator, one frame more than the BPF side skips.
	 */
	if (k && s->chain[1] >= s->iter_start && s->chain[1] < s->iter_end)
		memmove(s->chain + 1, s->chain + 2, --k * sizeof(*s->chain));
	if (k) {
		s->chain[0] = PD_CONTEXT_KERNEL;
		n = k + 1;
		misc = PERF_RECORD_MISC_KERNEL;
	}
	k = read_stack(s, ustack, s->chain + n + 1);
	/*
	 * As the kernel's own chains: at most 127 frames in all (the markers
	 * apart).  perf 6.1 overruns a stack buffer on longer ones, which a
	 * user stack walked through code without frame pointers can give.
	 */
	if (n && k > SP_OFFCPU_STACK_DEPTH - (n - 1))
		k = SP_OFFCPU_STACK_DEPTH - (n - 1);
	if (k) {
		s->chain[n] = PD_CONTEXT_USER;
		n += k + 1;
	}
	if (!n)
		s->st.nostack_ids++;
	/* perf takes the sample ip as the chain's first frame. */
	smp.ip = n ? s->chain[1] : 0;
	smp.callchain_nr = n;
	smp.callchain = s->chain;
	len = pd_sample_write(buf, sizeof(buf), &s->attr, misc, &smp);
	if (len < 0)
		return len;
	s->st.ns += ns;
	return s->fn(s->ctx, buf, len);
}

static int on_ring(void *ctx, void *data, size_t size)
{
	struct offcpu_set *s = ctx;
	const struct sp_offcpu_event *ev = data;
	int e;

	if (size < sizeof(*ev) || s->err)
		return 0;
	e = write_sample(s, ev->pid, ev->tid, ev->cpu, ev->end_ns, ev->dur_ns, ev->kstack, ev->ustack, false);
	if (e)
		s->err = e;
	else
		s->st.samples++;
	return 0;
}

struct iter_find {
	__u64 start, end;
	bool next; /* the symbol after it ends it */
};

static int find_iter(void *ctx, __u64 addr, char type, const char *name, size_t len)
{
	static const char want[] = "__traceiter_sched_switch";
	struct iter_find *f = ctx;

	(void)type;
	if (f->next && addr > f->start) {
		f->end = addr;
		f->next = false;
	}
	if (len == sizeof(want) - 1 && !memcmp(name, want, len)) {
		f->start = addr;
		f->next = true;
	}
	return 0;
}

/* Where the tracepoint iterator is; nothing is stripped if kallsyms hides it. */
static void locate_iter(struct offcpu_set *s)
{
	struct iter_find f = {};
	char *text = NULL;
	size_t len;

	if (!kallsyms_read_proc(&text, &len))
		kallsyms_parse(text, len, find_iter, &f);
	free(text);
	if (f.start && f.end > f.start) {
		s->iter_start = f.start;
		s->iter_end = f.end;
	}
}

int offcpu__open(struct offcpu_set **out, const struct offcpu_opts *o, char *err, size_t errlen)
{
	struct offcpu_set *s;
	__u64 ring = 4096;
	int nr_cpus = libbpf_num_possible_cpus(), e;
	bool raw_tp;

	*out = NULL;
	if (nr_cpus <= 0)
		return set_errorf(err, errlen, nr_cpus, "cannot count the possible CPUs: %s", strerror(-nr_cpus));
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	offcpu__attr(&s->attr);
	locate_iter(s);
	/* tp_btf (5.5+) reads task fields directly; raw_tp is the older twin. */
	raw_tp = o->prefer_raw_tp || features_try_attach("calib_tp_btf") != 0;
	s->skel = offcpu_bpf__open();
	if (!s->skel) {
		e = -errno;
		set_errorf(err, errlen, e, "cannot open the off-CPU BPF object: %s", strerror(-e));
		goto cleanup;
	}
	bpf_program__set_autoload(s->skel->progs.offcpu_btf, !raw_tp);
	bpf_program__set_autoload(s->skel->progs.offcpu_raw, raw_tp);
	s->hook = raw_tp ? "raw_tp" : "tp_btf";
	/* The ring holds at least `entries` blocks: a power of two of pages. */
	while (ring < o->entries * (sizeof(struct sp_offcpu_event) + 8))
		ring <<= 1;
	s->skel->rodata->filter_mode = o->filter_mode;
	s->skel->rodata->cpu_filter = o->cpus && o->cpus->n;
	s->skel->rodata->thresh_ns = o->thresh_ns;
	s->skel->rodata->ring_size = ring;
	/* sched_switch(preempt, prev, next, prev_state) since 5.18. */
	s->skel->rodata->has_prev_state = features_tp_nargs("sched_switch") >= 4;
	bpf_map__set_max_entries(s->skel->maps.offcpu_rb, ring);
	bpf_map__set_max_entries(s->skel->maps.offstart, o->max_threads);
	bpf_map__set_max_entries(s->skel->maps.offstacks, o->entries);
	bpf_map__set_max_entries(s->skel->maps.offagg, o->entries);
	bpf_map__set_max_entries(s->skel->maps.offcpu_cpus, nr_cpus);
	bpf_map__set_max_entries(s->skel->maps.filter, o->filter && o->filter->n ? o->filter->n : 1);
	e = offcpu_bpf__load(s->skel);
	if (e) {
		set_errorf(err, errlen, e, "cannot load the off-CPU BPF program (%s): %s", s->hook, libbpf_explain(e));
		goto cleanup;
	}
	for (int i = 0; o->filter && i < o->filter->n; i++) {
		__u32 key = o->filter->v[i];
		__u8 one = 1;

		if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.filter), &key, &one, BPF_ANY)) {
			e = -errno;
			set_errorf(err, errlen, e, "cannot fill the off-CPU filter map: %s", strerror(-e));
			goto cleanup;
		}
	}
	for (int i = 0; o->cpus && i < o->cpus->n; i++) {
		__u32 key = o->cpus->v[i];
		__u8 one = 1;

		if (key < (__u32)nr_cpus &&
		    bpf_map_update_elem(bpf_map__fd(s->skel->maps.offcpu_cpus), &key, &one, BPF_ANY)) {
			e = -errno;
			set_errorf(err, errlen, e, "cannot fill the off-CPU CPU map: %s", strerror(-e));
			goto cleanup;
		}
	}
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.offcpu_rb), on_ring, s, NULL);
	if (!s->rb) {
		e = -errno;
		set_errorf(err, errlen, e, "cannot read the off-CPU ring buffer: %s", strerror(-e));
		goto cleanup;
	}
	*out = s;
	return 0;
cleanup:
	offcpu__free(s);
	return e;
}

int offcpu__attach(struct offcpu_set *s, char *err, size_t errlen)
{
	struct bpf_program *p = strcmp(s->hook, "tp_btf") ? s->skel->progs.offcpu_raw : s->skel->progs.offcpu_btf;

	s->link = bpf_program__attach(p);
	if (!s->link)
		return set_errorf(err, errlen, -errno, "cannot attach the off-CPU program (%s sched_switch): %s",
				  s->hook, strerror(errno));
	return 0;
}

int offcpu__ring_fd(const struct offcpu_set *s)
{
	return ring_buffer__epoll_fd(s->rb);
}

int offcpu__consume(struct offcpu_set *s, offcpu_write_fn fn, void *ctx, __u64 *n)
{
	__u64 before = s->st.samples;
	int e;

	s->fn = fn;
	s->ctx = ctx;
	e = ring_buffer__consume(s->rb);
	*n = s->st.samples - before;
	if (s->err)
		return s->err;
	return e < 0 ? e : 0;
}

static bool thread_alive(__u32 pid, __u32 tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%u/task/%u", pid, tid);
	return access(path, F_OK) == 0;
}

int offcpu__finish(struct offcpu_set *s, __u64 end_ns, offcpu_write_fn fn, void *ctx)
{
	int agg = bpf_map__fd(s->skel->maps.offagg), start = bpf_map__fd(s->skel->maps.offstart);
	struct sp_offcpu_key key, next, *prev = NULL;
	__u32 tid, ntid, *ptid = NULL;
	__u64 n;
	int e;

	/* Detached first, so that the maps hold still while they are read. */
	bpf_link__destroy(s->link);
	s->link = NULL;
	e = offcpu__consume(s, fn, ctx, &n);
	if (e)
		return e;
	while (!bpf_map_get_next_key(agg, prev, &next)) {
		struct sp_offcpu_val v;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(agg, &key, &v) || !v.ns)
			continue;
		e = write_sample(s, key.pid, key.tid, 0, end_ns, v.ns, key.kstack, key.ustack, v.count > 1);
		if (e)
			return e;
		s->st.sums++;
		s->st.summed += v.count;
	}
	/*
	 * Threads still asleep: what is known is their time off CPU up to the
	 * end.  A start whose thread is gone can only be one whose switch-in
	 * was never seen: its duration is unknown, so it is dropped, counted.
	 */
	while (!bpf_map_get_next_key(start, ptid, &ntid)) {
		struct sp_offcpu_start st;

		tid = ntid;
		ptid = &tid;
		if (bpf_map_lookup_elem(start, &tid, &st))
			continue;
		if (!thread_alive(st.pid, tid) || st.ts > end_ns) {
			s->st.exited++;
			continue;
		}
		e = write_sample(s, st.pid, tid, st.cpu, end_ns, end_ns - st.ts, st.kstack, st.ustack, false);
		if (e)
			return e;
		s->st.open_at_end++;
	}
	return 0;
}

void offcpu__stats(struct offcpu_set *s, struct offcpu_stats *st)
{
	int fd = bpf_map__fd(s->skel->maps.stats);

	*st = s->st;
	st->lost = bpf_percpu_sum(fd, SP_STAT_OFFCPU_LOST);
	st->noslot = bpf_percpu_sum(fd, SP_STAT_OFFCPU_NOSLOT);
	st->agg_full = bpf_percpu_sum(fd, SP_STAT_OFFCPU_AGG_FULL);
	st->kstack = bpf_percpu_sum(fd, SP_STAT_OFFCPU_KSTACK);
	st->ustack = bpf_percpu_sum(fd, SP_STAT_OFFCPU_USTACK);
	st->stale = bpf_percpu_sum(fd, SP_STAT_OFFCPU_STALE);
	st->unseen = bpf_percpu_sum(fd, SP_STAT_OFFCPU_UNSEEN);
	st->hidden = bpf_percpu_sum(fd, SP_STAT_OFFCPU_HIDDEN);
}

const char *offcpu__hook(const struct offcpu_set *s)
{
	return s->hook;
}

bool offcpu__has_prev_state(const struct offcpu_set *s)
{
	return s->skel->rodata->has_prev_state;
}

int offcpu__prog_fd(const struct offcpu_set *s)
{
	return bpf_program__fd(strcmp(s->hook, "tp_btf") ? s->skel->progs.offcpu_raw : s->skel->progs.offcpu_btf);
}

void offcpu__free(struct offcpu_set *s)
{
	if (!s)
		return;
	bpf_link__destroy(s->link);
	ring_buffer__free(s->rb);
	offcpu_bpf__destroy(s->skel);
	free(s);
}
