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
#include "orctables.h"
#include "kernel_features.h"
#include "libbpf_setup.h"
#include "log.h"
#include "offcpu.h"
#include "offcpu.skel.h"
#include "perf_sample.h"
#include "pyframes.h"
#include "target.h"
#include "util.h"
#include "sched_codec.h"
#include "waker_codec.h"

struct offcpu_set {
	struct offcpu_bpf *skel;
	struct bpf_link *link;
	struct ring_buffer *rb;
	const char *hook;
	struct perf_event_attr attr, waker_attr, sched_attr;
	struct bpf_link *waking;
	bool wakers;		/* the waking program is loaded: each block names its waker */
	bool offcpu, sched;	/* which records are written: offcpu-time, spanperf-sched */
	bool run_delay;		/* the kernel keeps sched_info (CO-RE) */
	offcpu_write_fn fn;
	void *ctx;
	int err;		/* the first write error inside the ring callback */
	__u64 chain[2 * SP_OFFCPU_STACK_DEPTH + 2];
	__u64 iter_start, iter_end; /* __traceiter_sched_switch, when found */
	struct orc_tables orc;	    /* where kernel chains are kept (offkstack.bpf.h) */
	struct irq_range *irq;	    /* interrupt entry points, by address (classify_waker) */
	size_t nr_irq, cap_irq;
	/*
	 * The stack map's entries as read, by id.  An id names one stack for
	 * good: the map hashes a stack to its bucket and, without
	 * BPF_F_REUSE_STACKID, never replaces it, and nothing deletes.  Each
	 * block and its waker take up to four stacks, mostly the same ones
	 * again: a lookup each fell behind a ring of 40,000 blocks a second.
	 */
	struct cached_stack *cache;
	__u32 cache_n;
	bool eh;		    /* user chains in offustacks */
	struct py_frames *py;	    /* their Python entries rewritten, or NULL */
	const __u64 *sorted_ns;	    /* offcpu_opts */
	bool stamp_late;
	struct target *target;
	int (*outsider)(void *arg, __u32 pid, __u64 time);
	void *outsider_arg;
	/*
	 * Chains whose Python entries were not all named at their first
	 * reading: read again at each consume while their thread is still
	 * blocked in them, up to PY_RETRIES times.  A chain is named only when
	 * it is new, and a block that lasts the run is written after the exit,
	 * when nothing is left to read: a drain whose failed reads were spent
	 * (FAILS_PER_DRAIN) lost a sleeper's whole block so (issue 45).
	 */
	struct py_retry *py_retry;
	size_t nr_py_retry, cap_py_retry;
	struct offcpu_stats st;
};

struct py_retry {
	struct sp_offcpu_pychain r;
	__u32 tries;
	__u32 gen; /* its process's image when first named: another image's memory names nothing of it */
};

/* A chain's tries at naming (one a consume, about 100 ms apart when idle), and the chains waiting at most. */
#define PY_RETRIES 64
#define PY_RETRY_MAX 1024

/*
 * The functions through which an interrupt enters (x86), and so what a
 * waker's kernel stack says about the context it woke in: a softirq's
 * frames sit above the hardirq exit that ran it, so the first match from
 * the top decides.
 */
static const struct {
	const char *name;
	bool prefix;
	__u8 ctx;
} irq_entries[] = {
	{ "handle_softirqs", false, SP_WAKER_SOFTIRQ }, { "__do_softirq", false, SP_WAKER_SOFTIRQ },
	{ "do_softirq", false, SP_WAKER_SOFTIRQ },	 { "run_ksoftirqd", false, SP_WAKER_SOFTIRQ },
	{ "asm_sysvec_", true, SP_WAKER_HARDIRQ },	 { "sysvec_", true, SP_WAKER_HARDIRQ },
	{ "__sysvec_", true, SP_WAKER_HARDIRQ },	 { "asm_common_interrupt", false, SP_WAKER_HARDIRQ },
	{ "common_interrupt", false, SP_WAKER_HARDIRQ }, { "__common_interrupt", false, SP_WAKER_HARDIRQ },
	{ "irq_exit_rcu", false, SP_WAKER_HARDIRQ },	 { "__irq_exit_rcu", false, SP_WAKER_HARDIRQ },
	{ "asm_exc_nmi", false, SP_WAKER_NMI },		 { "exc_nmi", false, SP_WAKER_NMI },
	{ "default_do_nmi", false, SP_WAKER_NMI },
};

struct irq_range {
	__u64 start, end;
	__u8 ctx;
};

struct ksym_find {
	struct offcpu_set *s;
	__u64 start, end;
	bool next;	  /* the symbol after __traceiter_sched_switch ends it */
	size_t open_irq;  /* irq ranges from here on still wait for their end */
	int err;
};

static int find_syms(void *ctx, __u64 addr, char type, const char *name, size_t len)
{
	static const char want[] = "__traceiter_sched_switch";
	struct ksym_find *f = ctx;
	struct offcpu_set *s = f->s;

	if (f->next && addr > f->start) {
		f->end = addr;
		f->next = false;
	}
	for (; f->open_irq < s->nr_irq && addr > s->irq[f->open_irq].start; f->open_irq++)
		s->irq[f->open_irq].end = addr;
	if (len == sizeof(want) - 1 && !memcmp(name, want, len)) {
		f->start = addr;
		f->next = true;
	}
	if (type != 't' && type != 'T')
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(irq_entries); i++) {
		size_t n = strlen(irq_entries[i].name);

		if (irq_entries[i].prefix ? len < n || memcmp(name, irq_entries[i].name, n)
					  : len != n || memcmp(name, irq_entries[i].name, n))
			continue;
		if (array_reserve((void **)&s->irq, &s->cap_irq, s->nr_irq, sizeof(*s->irq))) {
			f->err = -ENOMEM;
			return -ENOMEM;
		}
		s->irq[s->nr_irq++] = (struct irq_range){ .start = addr, .end = addr, .ctx = irq_entries[i].ctx };
		break;
	}
	return 0;
}

static int cmp_irq(const void *a, const void *b)
{
	const struct irq_range *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

/*
 * Where the tracepoint iterator and the interrupt entries are; nothing is
 * stripped, and no waker taken for an interrupt, if kallsyms hides them.
 */
static void locate_syms(struct offcpu_set *s)
{
	struct ksym_find f = { .s = s };
	char *text = NULL;
	size_t len;

	if (!kallsyms_read_proc(&text, &len))
		kallsyms_parse(text, len, find_syms, &f);
	free(text);
	if (f.start && f.end > f.start) {
		s->iter_start = f.start;
		s->iter_end = f.end;
	}
	sort_n(s->irq, s->nr_irq, sizeof(*s->irq), cmp_irq);
}

/* The interrupt context ip is the entry of, 0 if none. */
static __u8 irq_ctx_of(const struct offcpu_set *s, __u64 ip)
{
	size_t lo = SP_PARTITION(s->nr_irq, i, s->irq[i].start <= ip);

	return lo && ip < s->irq[lo - 1].end ? s->irq[lo - 1].ctx : 0;
}

/*
 * A waker's context from its kernel chain (chain[1..n-1] after the kernel
 * marker): an interrupt if an entry point is on it, and then the frames
 * from past the entry on (the interrupted task's) are cut, *n shortened.
 */
static __u32 classify_waker(const struct offcpu_set *s, const __u64 *chain, __u32 *n)
{
	__u32 i, ctx = 0;

	for (i = 1; i < *n && chain[i] < PD_CONTEXT_MAX && !ctx; i++)
		ctx = irq_ctx_of(s, chain[i]);
	if (!ctx)
		return SP_WAKER_TASK;
	/* i is past the first entry frame: the entry's own callers are entries too. */
	while (i < *n && chain[i] < PD_CONTEXT_MAX && irq_ctx_of(s, chain[i]))
		i++;
	*n = i;
	return ctx;
}

void offcpu__attr(struct perf_event_attr *a)
{
	/* As perf's --off-cpu: CALLCHAIN in the sample. */
	pd_bpf_output_attr(a, PERF_SAMPLE_CALLCHAIN);
}

void offcpu__waker_attr(struct perf_event_attr *a)
{
	offcpu__attr(a);
	a->sample_type |= PERF_SAMPLE_RAW;
}

void offcpu__sched_attr(struct perf_event_attr *a)
{
	offcpu__attr(a);
	a->sample_type = (a->sample_type & ~PERF_SAMPLE_CALLCHAIN) | PERF_SAMPLE_RAW;
}

struct cached_stack {
	__u64 *ips; /* NULL: not read yet */
	__u32 n;
};
/* An offustacks entry into out; how many frames. */
static __u32 read_eh_stack(struct offcpu_set *s, __s32 id, __u64 *out)
{
	struct sp_eh_chain c;
	__u32 key = id;

	if (id < 0 || bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.offustacks), &key, &c) || c.nr > SP_EH_MAX_FRAMES)
		return 0;
	memcpy(out, c.ips, c.nr * sizeof(*out));
	return c.nr;
}

/* A stack map entry into chain[n..]; how many frames. */
static __u32 read_stack(struct offcpu_set *s, __s32 id, __u64 *out)
{
	__u64 ips[SP_OFFCPU_STACK_DEPTH];
	__u32 key = id, n = 0;
	struct cached_stack *c = id >= 0 && (__u32)id < s->cache_n ? &s->cache[id] : NULL;

	if (c && c->ips) {
		memcpy(out, c->ips, c->n * sizeof(*out));
		return c->n;
	}
	if (id < 0 || bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.offstacks), &key, ips))
		return 0;
	while (n < SP_OFFCPU_STACK_DEPTH && ips[n])
		n++;
	memcpy(out, ips, n * sizeof(*out));
	/* Out of memory only costs the next lookup. */
	if (c && n && (c->ips = malloc(n * sizeof(*c->ips)))) {
		memcpy(c->ips, ips, n * sizeof(*c->ips));
		c->n = n;
	}
	return n;
}

/*
 * The kernel chain then the user chain of two stack map ids into s->chain,
 * with perf's context markers; how many entries.  *kernel: it starts with
 * kernel frames.
 */
static __u32 build_chain(struct offcpu_set *s, __s32 kstack, __s32 ustack, bool *kernel)
{
	__u32 n = 0, k;

	*kernel = false;
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
		*kernel = true;
	}
	k = s->eh ? read_eh_stack(s, ustack, s->chain + n + 1) : read_stack(s, ustack, s->chain + n + 1);
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
	return n;
}

/*
 * A chain with Python frames, new in offustacks: its code objects named now,
 * while the process lives (the block, or the sum, may be written only once
 * it is gone), the records that name them written; *whole: every entry named.
 */
static int name_pychain(struct offcpu_set *s, const struct sp_offcpu_pychain *r, bool *whole)
{
	__u64 chain[SP_EH_MAX_FRAMES];
	__u32 n = read_eh_stack(s, r->id, chain), before = n;
	int e;

	*whole = true;
	if (!n)
		return 0;
	e = py_frames__rewrite(s->py, r->pid, r->tid, now_ns(CLOCK_MONOTONIC), chain, &n, ARRAY_SIZE(chain), s->fn,
			       s->ctx);
	/* A Python chain's entries map one to one onto named slots: fewer out than in is one left unnamed. */
	*whole = e || n >= before;
	return e;
}

/*
 * Whether r's thread is blocked in r's chain now: its frames then hold
 * their code objects, which cannot have been freed and their addresses
 * reused by others, so a name read late is still the chain's.
 */
static bool still_blocked(const struct offcpu_set *s, const struct sp_offcpu_pychain *r)
{
	struct sp_offcpu_start st;

	return !bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.offstart), &r->tid, &st) && st.pid == r->pid &&
	       st.ustack == r->id;
}

static void retry_later(struct offcpu_set *s, const struct sp_offcpu_pychain *r, __u32 tries)
{
	if (tries >= PY_RETRIES || s->nr_py_retry >= PY_RETRY_MAX ||
	    array_reserve((void **)&s->py_retry, &s->cap_py_retry, s->nr_py_retry, sizeof(*s->py_retry)))
		return;
	s->py_retry[s->nr_py_retry++] = (struct py_retry){ .r = *r, .tries = tries, .gen = py_frames__gen(s->py, r->pid) };
	s->st.py_retried += !tries;
}

static int on_pychain(void *ctx, void *data, size_t size)
{
	struct offcpu_set *s = ctx;
	const struct sp_offcpu_pychain *r = data;
	bool whole;
	int e;

	if (size < sizeof(*r) || s->err || !s->py || !s->fn)
		return 0;
	e = name_pychain(s, r, &whole);
	if (e)
		s->err = e;
	else if (!whole)
		retry_later(s, r, 0);
	s->st.py_chains++;
	return 0;
}

/* The chain's Python entries, for process pid, into addresses (the records that name them written first). */
static int python_frames(struct offcpu_set *s, __u32 pid, __u32 tid, __u64 time, __u32 *n)
{
	__u32 m = *n;
	int e;

	if (!s->py || !py_frames_any(s->chain, m))
		return 0;
	e = py_frames__rewrite(s->py, pid, tid, time, s->chain, &m, ARRAY_SIZE(s->chain), s->fn, s->ctx);
	/* A user part whose every entry went leaves its marker alone: dropped too. */
	if (!e && m && s->chain[m - 1] == PD_CONTEXT_USER)
		m--;
	*n = m;
	return e;
}

/* One offcpu-time sample: period = ns off CPU, the kernel chain then the user chain. */
static int write_sample(struct offcpu_set *s, __u32 pid, __u32 tid, __u32 cpu, __u64 time, __u64 ns,
			__s32 kstack, __s32 ustack, __u32 res)
{
	struct pd_sample smp = { .id = OFFCPU_ID, .pid = pid, .tid = tid, .cpu = cpu, .time = time, .period = ns,
				 .cpu_res = res };
	char buf[sizeof(struct perf_event_header) + 128 + sizeof(s->chain)];
	bool kernel;
	__u32 n = build_chain(s, kstack, ustack, &kernel);
	long len;
	int e = python_frames(s, pid, tid, time, &n);

	if (e)
		return e;
	if (!n)
		s->st.nostack_ids++;
	/* perf takes the sample ip as the chain's first frame. */
	smp.ip = n ? s->chain[1] : 0;
	smp.callchain_nr = n;
	smp.callchain = s->chain;
	len = pd_sample_write(buf, sizeof(buf), &s->attr, kernel ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER,
			      &smp);
	if (len < 0)
		return len;
	s->st.ns += ns;
	return s->fn(s->ctx, buf, len);
}

/* One spanperf-sched sample: see sched_codec.h. */
static int write_sched(struct offcpu_set *s, const struct sp_offcpu_event *ev, __u64 time, __u32 res)
{
	struct sched_rec rec = { .magic = SCHED_REC_MAGIC, .version = 1, .size = sizeof(rec), .state = ev->state,
				 .flags = s->run_delay ? SCHED_HAS_RUN_DELAY : 0, .run_delay = ev->run_delay };
	/* RAW is a u32 size and the payload, padded so that the record stays 8-byte aligned. */
	char raw[sizeof(rec) + 4] = {};
	struct pd_sample smp = { .id = SCHED_ID, .pid = ev->pid, .tid = ev->tid, .cpu = ev->cpu, .cpu_res = res,
				 .time = time, .period = ev->dur_ns, .raw = raw, .raw_size = sizeof(raw) };
	char buf[sizeof(struct perf_event_header) + 128 + sizeof(raw)];
	long len;

	memcpy(raw, &rec, sizeof(rec));
	len = pd_sample_write(buf, sizeof(buf), &s->sched_attr, PERF_RECORD_MISC_KERNEL, &smp);
	if (len < 0)
		return len;
	s->st.sched++;
	return s->fn(s->ctx, buf, len);
}

/* The waker sample of the block `ev` just written: see offcpu.h. */
static int write_waker(struct offcpu_set *s, const struct sp_offcpu_event *ev, __u64 time, __u32 res)
{
	const struct sp_waker *w = &ev->waker;
	struct waker_rec rec = {
		.magic = WAKER_REC_MAGIC, .version = 1, .size = sizeof(rec), .wakee_pid = ev->pid,
		.wakee_tid = ev->tid, .block_end_ns = ev->end_ns, .wake_ns = w->ts, .ctx = w->ctx,
	};
	struct pd_sample smp = { .id = OFFCPU_WAKER_ID, .pid = w->pid, .tid = w->tid, .cpu = ev->cpu,
				 .cpu_res = res, .time = time, .period = ev->dur_ns, .raw = &rec };
	char buf[sizeof(struct perf_event_header) + 192 + sizeof(rec) + sizeof(s->chain)];
	bool kernel;
	__u32 n;
	long len;

	if (!w->ctx) {
		s->st.waker_none++;
		return 0;
	}
	n = build_chain(s, w->kstack, w->ustack, &kernel);
	len = w->ctx == SP_WAKER_TASK ? python_frames(s, w->pid, w->tid, time, &n) : 0;
	if (len)
		return len;
	if (!kernel)
		s->st.waker_unclassified++;
	else
		rec.ctx = classify_waker(s, s->chain, &n);
	if (rec.ctx == SP_WAKER_TASK) {
		/* A thread's: who it is. */
		memcpy(rec.comm, w->comm, sizeof(rec.comm));
		rec.comm[sizeof(rec.comm) - 1] = 0;
		/* Outside the target, its process was never synthesized: named now, before it. */
		if (s->outsider && w->pid &&
		    !target__has(s->target, s->target->mode == SP_FILTER_TID ? w->tid : w->pid)) {
			int e = s->outsider(s->outsider_arg, w->pid, time);

			if (e)
				return e;
		}
	} else {
		/* An interrupt has no thread: the task it interrupted is not the waker. */
		smp.pid = smp.tid = 0;
		s->st.waker_irq++;
	}
	smp.ip = n ? s->chain[1] : 0;
	smp.callchain_nr = n;
	smp.callchain = s->chain;
	/* RAW is a u32 size and the payload, padded so that the record stays 8-byte aligned. */
	smp.raw_size = sizeof(rec) + 4;
	{
		char raw[sizeof(rec) + 4] = {};

		memcpy(raw, &rec, sizeof(rec));
		smp.raw = raw;
		len = pd_sample_write(buf, sizeof(buf), &s->waker_attr,
				      kernel ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER, &smp);
	}
	if (len < 0)
		return len;
	s->st.wakers++;
	return s->fn(s->ctx, buf, len);
}

/*
 * When a block's records are stamped.  At its end, unless that is older
 * than what perf may have sorted already (*sorted_ns): a block whose
 * switch-in was hidden is found at the thread's next switch-out
 * (offcpu.bpf.c's hidden_return), which a thread running alone may not do
 * for many rounds.  Such a block is stamped the whole microseconds after
 * its end that reach the floor, and says how many in OFFCPU_RES_LATE, so
 * that a reader takes its end back to the nanosecond.  0, or -ERANGE for a
 * block too late to say so (over half an hour), counted and not written.
 */
static int stamp(struct offcpu_set *s, const struct sp_offcpu_event *ev, __u64 *time, __u32 *res)
{
	__u64 floor = s->stamp_late ? now_ns(CLOCK_MONOTONIC) : s->sorted_ns ? *s->sorted_ns : 0, us;

	*time = ev->end_ns;
	*res = 0;
	if (ev->end_ns >= floor)
		return 0;
	us = (floor - ev->end_ns + 999) / 1000;
	if (us > OFFCPU_RES_LATE_MAX_US) {
		s->st.too_late++;
		return -ERANGE;
	}
	*time = ev->end_ns + us * 1000;
	*res = (__u32)us << OFFCPU_RES_LATE_SHIFT;
	s->st.late++;
	return 0;
}

static int on_ring(void *ctx, void *data, size_t size)
{
	struct offcpu_set *s = ctx;
	const struct sp_offcpu_event *ev = data;
	__u64 time;
	__u32 res;
	int e = 0;

	if (size < sizeof(*ev) || s->err || stamp(s, ev, &time, &res))
		return 0;
	if (s->sched)
		e = write_sched(s, ev, time, res);
	/* A preemption (state 0) is a wait for a CPU, no block: --sched's alone. */
	if (!e && s->offcpu && ev->state && !(ev->flags & SP_OFFCPU_EV_SCHED_ONLY)) {
		e = write_sample(s, ev->pid, ev->tid, ev->cpu, time, ev->dur_ns, ev->kstack, ev->ustack, res);
		if (!e && s->wakers)
			e = write_waker(s, ev, time, res);
		if (!e)
			s->st.samples++;
	}
	if (e)
		s->err = e;
	return 0;
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
	offcpu__waker_attr(&s->waker_attr);
	offcpu__sched_attr(&s->sched_attr);
	s->offcpu = !o->no_offcpu;
	s->sched = o->sched;
	s->sorted_ns = o->sorted_ns;
	s->stamp_late = o->stamp_late;
	s->target = o->target;
	s->outsider = o->target ? o->outsider : NULL;
	s->outsider_arg = o->outsider_arg;
	locate_syms(s);
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
	s->wakers = !o->no_wakers && s->offcpu;
	bpf_program__set_autoload(s->skel->progs.waking_btf, s->wakers && !raw_tp);
	bpf_program__set_autoload(s->skel->progs.waking_raw, s->wakers && raw_tp);
	s->hook = raw_tp ? "raw_tp" : "tp_btf";
	/* The ring holds at least `entries` blocks: a power of two of pages. */
	while (ring < o->entries * (sizeof(struct sp_offcpu_event) + 8))
		ring <<= 1;
	s->skel->rodata->filter_mode = o->target ? o->target->mode : SP_FILTER_NONE;
	s->skel->rodata->cpu_filter = o->cpus && o->cpus->n;
	s->skel->rodata->thresh_ns = o->thresh_ns;
	s->skel->rodata->ring_size = ring;
	/* sched_switch(preempt, prev, next, prev_state) since 5.18. */
	s->skel->rodata->has_prev_state = features_tp_nargs("sched_switch") >= 4;
	s->skel->rodata->sched_mode = s->sched;
	s->skel->rodata->want_stacks = s->offcpu;
	/* The file is there exactly when the kernel keeps sched_info (CONFIG_SCHED_INFO). */
	s->run_delay = access("/proc/self/schedstat", R_OK) == 0;
	bpf_map__set_max_entries(s->skel->maps.offcpu_rb, ring);
	bpf_map__set_max_entries(s->skel->maps.offstart, o->max_threads);
	bpf_map__set_max_entries(s->skel->maps.offstacks, o->entries);
	/* The kernel rounds a stack map's buckets up to a power of two: ids go that far. */
	for (s->cache_n = 1; s->cache_n < o->entries && s->cache_n < (1u << 30); s->cache_n <<= 1)
		;
	s->cache = calloc(s->cache_n, sizeof(*s->cache));
	if (!s->cache) {
		e = -ENOMEM;
		goto cleanup;
	}
	bpf_map__set_max_entries(s->skel->maps.offagg, o->entries);
	bpf_map__set_max_entries(s->skel->maps.offustacks, o->eh ? o->entries : 1);
	bpf_map__set_max_entries(s->skel->maps.offpy_rb, o->eh && o->eh->py_procs >= 0 ? 65536 : 4096);
	s->skel->rodata->eh_user = !!o->eh;
	s->eh = !!o->eh;
	/*
	 * Blocks' user chains kept per thread (offcpu.bpf.c) need task storage
	 * (5.11+), which only the tp_btf program asks for.  Elsewhere the map
	 * is a one-entry array the verifier never sees used.
	 */
	if (o->eh && !raw_tp && libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) == 1) {
		s->skel->rodata->keep_chains = true;
	} else {
		bpf_map__set_type(s->skel->maps.offkeep, BPF_MAP_TYPE_ARRAY);
		bpf_map__set_map_flags(s->skel->maps.offkeep, 0);
		bpf_map__set_max_entries(s->skel->maps.offkeep, 1);
	}
	if (o->eh) {
		e = bpf_map__reuse_fd(s->skel->maps.eh_rows, o->eh->rows) ?:
		    bpf_map__reuse_fd(s->skel->maps.eh_pages, o->eh->pages) ?:
		    bpf_map__reuse_fd(s->skel->maps.eh_maps, o->eh->maps) ?:
		    bpf_map__reuse_fd(s->skel->maps.eh_procs, o->eh->procs) ?:
		    bpf_map__reuse_fd(s->skel->maps.eh_gen, o->eh->gen) ?:
		    bpf_map__reuse_fd(s->skel->maps.eh_files, o->eh->files) ?:
		    /* A process younger than the recorder's read of it blocks with the mappings its exec noted. */
		    bpf_map__reuse_fd(s->skel->maps.eh_fresh, o->eh->fresh);
		/* Python frames as the samples have them: the same layouts, one count of the walks. */
		if (!e && o->eh->py_procs >= 0)
			e = bpf_map__reuse_fd(s->skel->maps.py_procs, o->eh->py_procs) ?:
			    bpf_map__reuse_fd(s->skel->maps.py_stats, o->eh->py_stats);
		/* Java frames likewise (JVMs are found with the Python processes). */
		if (!e && o->eh->hs_procs >= 0) {
			e = bpf_map__reuse_fd(s->skel->maps.hs_procs, o->eh->hs_procs) ?:
			    bpf_map__reuse_fd(s->skel->maps.hs_stats, o->eh->hs_stats);
			s->skel->rodata->hs_walk = !e;
		} else {
			bpf_map__set_max_entries(s->skel->maps.hs_procs, 1);
		}
		if (!e && o->eh->py_procs >= 0) {
			s->skel->rodata->py_walk = true;
			s->py = o->py;
		} else {
			bpf_map__set_max_entries(s->skel->maps.py_procs, 1);
		}
		if (e) {
			set_errorf(err, errlen, e, "cannot share the unwind tables with the off-CPU program: %s",
				   strerror(-e));
			goto cleanup;
		}
	} else {
		bpf_map__set_max_entries(s->skel->maps.eh_rows, 1);
		bpf_map__set_max_entries(s->skel->maps.eh_pages, 1);
		bpf_map__set_max_entries(s->skel->maps.eh_maps, 1);
		bpf_map__set_max_entries(s->skel->maps.eh_procs, 1);
		bpf_map__set_max_entries(s->skel->maps.eh_files, 1);
		bpf_map__set_max_entries(s->skel->maps.eh_fresh, 1);
		bpf_map__set_max_entries(s->skel->maps.py_procs, 1);
		bpf_map__set_max_entries(s->skel->maps.hs_procs, 1);
	}
	/* Kernel chains kept per thread (offkstack.bpf.h): tp_btf, task storage and the ORC tables. */
	if (s->offcpu && !raw_tp && !orc_tables_find(&s->orc) &&
	    libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) == 1) {
		s->skel->rodata->keep_kchains = true;
		s->skel->rodata->orc_ip_tab = s->orc.ip;
		s->skel->rodata->orc_tab = s->orc.rules;
		s->skel->rodata->orc_n = s->orc.n;
		s->skel->rodata->ktext_lo = s->orc.stext;
		s->skel->rodata->ktext_hi = s->orc.etext;
	} else {
		bpf_map__set_type(s->skel->maps.offkkeep, BPF_MAP_TYPE_ARRAY);
		bpf_map__set_map_flags(s->skel->maps.offkkeep, 0);
		bpf_map__set_max_entries(s->skel->maps.offkkeep, 1);
		bpf_map__set_max_entries(s->skel->maps.offk_rules, 1);
	}
	bpf_map__set_max_entries(s->skel->maps.offcpu_cpus, nr_cpus);
	e = target__prepare(o->target, s->skel->obj, s->skel->maps.filter);
	if (e) {
		set_errorf(err, errlen, e, "cannot share the BPF filter with the off-CPU program: %s", strerror(-e));
		goto cleanup;
	}
	e = libbpf_load_skel(s->skel->skeleton, "off-CPU");
	if (e) {
		set_errorf(err, errlen, e, "cannot load the off-CPU BPF program (%s): %s", s->hook, libbpf_explain(e));
		goto cleanup;
	}
	e = target__loaded(o->target, s->skel->obj, s->skel->maps.filter);
	if (e) {
		set_errorf(err, errlen, e, "cannot fill the off-CPU filter map: %s", strerror(-e));
		goto cleanup;
	}
	if (o->cpus && (e = bpf_map_mark(bpf_map__fd(s->skel->maps.offcpu_cpus), o->cpus->v, o->cpus->n, nr_cpus))) {
		set_errorf(err, errlen, e, "cannot fill the off-CPU CPU map: %s", strerror(-e));
		goto cleanup;
	}
	e = bpf_ring_open(&s->rb, bpf_map__fd(s->skel->maps.offcpu_rb), on_ring, s, "off-CPU ring buffer", err, errlen);
	if (e)
		goto cleanup;
	/* Before the blocks: a block's chain is named when it is new, which may be in the same drain. */
	if (s->py && ring_buffer__add(s->rb, bpf_map__fd(s->skel->maps.offpy_rb), on_pychain, s)) {
		e = -errno;
		set_errorf(err, errlen, e, "cannot read the off-CPU Python ring buffer: %s", strerror(-e));
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
	if (!s->wakers)
		return 0;
	p = strcmp(s->hook, "tp_btf") ? s->skel->progs.waking_raw : s->skel->progs.waking_btf;
	s->waking = bpf_program__attach(p);
	if (!s->waking)
		return set_errorf(err, errlen, -errno, "cannot attach the waker program (%s sched_waking): %s",
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
	if (s->nr_py_retry && s->py) {
		size_t k = 0, nr = s->nr_py_retry;
		bool whole;

		for (size_t i = 0; i < nr && !s->err; i++) {
			struct py_retry *q = &s->py_retry[i];

			if (!q->gen || py_frames__gen(s->py, q->r.pid) != q->gen || !still_blocked(s, &q->r))
				continue;
			e = name_pychain(s, &q->r, &whole);
			if (e)
				s->err = e;
			else if (whole)
				s->st.py_renamed++;
			else if (q->tries + 1 < PY_RETRIES)
				s->py_retry[k++] = (struct py_retry){ .r = q->r, .tries = q->tries + 1, .gen = q->gen };
		}
		s->nr_py_retry = k;
	}
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

int offcpu__sums(struct offcpu_set *s, __u64 end_ns, offcpu_write_fn fn, void *ctx)
{
	int agg = bpf_map__fd(s->skel->maps.offagg);
	__u32 left = bpf_map__max_entries(s->skel->maps.offagg);
	struct sp_offcpu_key key;
	struct sp_offcpu_val v;
	__u64 n;
	int e = offcpu__consume(s, fn, ctx, &n);

	/*
	 * Each key from the start again, as the last was taken out; bounded by
	 * the map's size, as blocks keep ending meanwhile.  Out with its value
	 * at once: a block that ends after it starts a new sum for the next
	 * window, never one added to a sum already written.  (A block whose
	 * program found the sum just before it went out adds to the element
	 * taken out: that one block is lost, in a window of a few instructions.)
	 */
	while (!e && left-- && !bpf_map_get_next_key(agg, NULL, &key)) {
		if (bpf_map_lookup_and_delete_elem(agg, &key, &v))
			break;
		if (!v.ns)
			continue;
		e = write_sample(s, key.pid, key.tid, 0, end_ns, v.ns, key.kstack, key.ustack,
				 v.count > 1 ? OFFCPU_RES_SUM : 0);
		s->st.sums++;
		s->st.summed += v.count;
	}
	return e;
}

int offcpu__finish(struct offcpu_set *s, __u64 end_ns, offcpu_write_fn fn, void *ctx)
{
	int agg = bpf_map__fd(s->skel->maps.offagg), start = bpf_map__fd(s->skel->maps.offstart);
	struct sp_offcpu_key key, next, *prev = NULL;
	__u32 tid, ntid, *ptid = NULL;
	__u64 n;
	int e;

	/* Detached first, so that the maps hold still while they are read. */
	bpf_link__destroy(s->waking);
	s->waking = NULL;
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
		e = write_sample(s, key.pid, key.tid, 0, end_ns, v.ns, key.kstack, key.ustack,
				 v.count > 1 ? OFFCPU_RES_SUM : 0);
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
		if (s->sched) {
			struct sp_offcpu_event ev = { .end_ns = end_ns, .dur_ns = end_ns - st.ts, .pid = st.pid, .tid = tid,
						      .cpu = st.cpu, .state = st.state, .run_delay = st.run_delay };

			e = write_sched(s, &ev, end_ns, 0);
			if (e)
				return e;
		}
		if (!s->offcpu || !st.state)
			continue;
		e = write_sample(s, st.pid, tid, st.cpu, end_ns, end_ns - st.ts, st.kstack, st.ustack, 0);
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
	st->eh_chains = bpf_percpu_sum(bpf_map__fd(s->skel->maps.eh_stats), SP_EH_CHAINS);
	st->eh_complete = bpf_percpu_sum(bpf_map__fd(s->skel->maps.eh_stats), SP_EH_STOP_END);
	st->stale = bpf_percpu_sum(fd, SP_STAT_OFFCPU_STALE);
	st->unseen = bpf_percpu_sum(fd, SP_STAT_OFFCPU_UNSEEN);
	st->hidden = bpf_percpu_sum(fd, SP_STAT_OFFCPU_HIDDEN);
	st->waker_kstack = bpf_percpu_sum(fd, SP_STAT_WAKER_KSTACK);
	st->waker_ustack = bpf_percpu_sum(fd, SP_STAT_WAKER_USTACK);
	fd = bpf_map__fd(s->skel->maps.offk_stats);
	st->kchain_hits = bpf_percpu_sum(fd, SP_OFFK_HIT);
	st->kchain_misses = bpf_percpu_sum(fd, SP_OFFK_MISS);
	st->kchain_kept = bpf_percpu_sum(fd, SP_OFFK_KEPT);
}

bool offcpu__sched(const struct offcpu_set *s)
{
	return s->sched;
}

bool offcpu__offcpu(const struct offcpu_set *s)
{
	return s->offcpu;
}

bool offcpu__wakers(const struct offcpu_set *s)
{
	return s->wakers;
}

int offcpu__waking_prog_fd(const struct offcpu_set *s)
{
	if (!s->wakers)
		return -ENOENT;
	return bpf_program__fd(strcmp(s->hook, "tp_btf") ? s->skel->progs.waking_raw : s->skel->progs.waking_btf);
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
	bpf_link__destroy(s->waking);
	bpf_link__destroy(s->link);
	ring_buffer__free(s->rb);
	offcpu_bpf__destroy(s->skel);
	free(s->irq);
	for (__u32 i = 0; s->cache && i < s->cache_n; i++)
		free(s->cache[i].ips);
	free(s->cache);
	free(s->py_retry);
	free(s);
}
