// SPDX-License-Identifier: GPL-2.0
/*
 * The samples source: per-CPU sampling events, each with the sampling
 * program as a filter in front of perf's ring (none where it would only
 * count samples per thread: the records count them); the rings' records are
 * copied to the perf.data as they are (the zero-copy ring path), with what
 * they tell (execs, mappings, exits) passed to the build-id cache and OTel.
 * With --call-graph ehframe the program builds the samples itself, user
 * chains unwound from the unwind tables (ehsource.h), and perf's rings
 * carry only the side-band, which also keeps those tables current.
 */
#include <errno.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/libbpf.h>

#include "buildid.h"
#include "buildid_cache.h"
#include "jit_maps.h"
#include "ehsource.h"
#include "events.h"
#include "fileio.h"
#include "hash.h"
#include "libbpf_setup.h"
#include "log.h"
#include "otel_record.h"
#include "parse.h"
#include "perf_data.h"
#include "perf_events.h"
#include "py_names.h"
#include "pyframes.h"
#include "sbuf.h"
#include "source.h"
#include "target.h"
#include "util.h"
#include "sample.skel.h"

struct samples {
	struct rec_ctx *ctx;
	struct event_spec *evs;
	int nr_evs;
	struct pe_set **sets;
	struct pe_ring *rings;
	int nr_rings;
	struct pd_writer *w;  /* during a drain */
	struct sbuf pending;  /* records of ours to follow the ring's chunk: see buildid_cache.h */
	long time_off;	      /* offset of TIME in our SAMPLE records, -1 if none */
	struct eh_source *eh; /* --call-graph ehframe */
	struct py_frames *py; /* and Python frames: their entries into addresses of the symbol file */
	struct perf_event_attr names_attr; /* spanperf-python */
	__u64 *eh_copy;	      /* a sample whose Python entries are rewritten (the ring's is read-only) */
	/*
	 * No program on the events: without a filter, spans or --otel it would
	 * only count samples per thread, which the records tell as well, so a
	 * sample costs what the kernel's own path costs, as with perf.
	 */
	bool no_prog;
	bool tree; /* -- CMD: the rings' side-band is CMD's tree's only (on_tree_record) */
	long tid_off; /* offset of TID in our SAMPLE records */
	__u64 sb_ns;  /* when the rings' side-band was last read to its end (CLOCK_MONOTONIC, as samples) */
	struct u64_map tid_samples, tid_pids;
};

/* The sample layout every sampling event shares; side-band bits on the first. */
static void build_attr(const struct record_opts *o, const struct event_spec *ev, bool tracking,
		       struct perf_event_attr *a)
{
	*a = ev->attr;
	a->size = sizeof(*a);
	/* Its clock is the one the spans applications write are stamped on too. */
	event_sampling_attr(a, o->freq, o->freq ? o->freq : o->period);
	/* ehframe: BPF writes the samples, chains and all; the kernel's are never written. */
	if (o->callgraph && !o->ehframe)
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
	if (o->dwarf_stack) {
		/*
		 * As perf: the kernel part of the chain from the kernel, the user
		 * part unwound later from the registers and the stack copy.
		 */
		a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		a->exclude_callchain_user = 1;
		a->sample_regs_user = PD_X86_64_DWARF_REGS;
		a->sample_stack_user = o->dwarf_stack;
	}
	a->watermark = 1;
	a->wakeup_watermark = o->mmap_pages * sysconf(_SC_PAGESIZE) / 2;
	if (tracking) {
		a->mmap = a->mmap2 = a->comm = a->comm_exec = a->task = 1;
		/* perf's unwinder reads .eh_frame_hdr through the data maps. */
		a->mmap_data = !!o->dwarf_stack;
	}
}

static int max_sample_rate(void)
{
	char buf[32];
	uint64_t v;

	if (read_file_str("/proc/sys/kernel/perf_event_max_sample_rate", buf, sizeof(buf)) ||
	    parse_u64(buf, &v, 1, 1 << 30))
		return 0;
	return v;
}

static int parse_events(struct samples *s)
{
	const struct record_opts *o = s->ctx->o;
	char err[256];
	int e;

	if (!o->events) {
		s->evs = calloc(1, sizeof(*s->evs));
		if (!s->evs)
			return -ENOMEM;
		s->nr_evs = 1;
		event_default_cycles(&s->evs[0]);
		return 0;
	}
	e = event_list_parse(o->events, &s->evs, &s->nr_evs, err, sizeof(err));
	if (e)
		pr_err("%s", err);
	return e;
}

/* Each event as it will be opened, tried on one CPU: what cannot be sampled is said by name. */
static int resolve_events(struct samples *s, int test_cpu)
{
	const struct record_opts *o = s->ctx->o;
	int e = parse_events(s);

	if (e)
		return e;
	/* The kernel's rate limit gives EINVAL, which would read as "no PMU". */
	if (o->freq && max_sample_rate() && o->freq > (uint64_t)max_sample_rate()) {
		pr_err("-F %llu is above the kernel's limit kernel.perf_event_max_sample_rate=%d",
		       (unsigned long long)o->freq, max_sample_rate());
		return -EINVAL;
	}
	for (int i = 0; i < s->nr_evs; i++) {
		struct event_spec *ev = &s->evs[i];
		struct perf_event_attr a;

		if (ev->kind == EV_SCHED) {
			pr_err("-e %s: a thread's scheduler account, counted by 'spanperf stat', cannot be sampled", ev->name);
			return -EINVAL;
		}
		/* cycles falls back to cpu-clock where the PMU is hidden, as in most VMs. */
		if (ev->attr.type == PERF_TYPE_HARDWARE && ev->attr.config == PERF_COUNT_HW_CPU_CYCLES) {
			e = pe_try_open(&ev->attr, test_cpu);
			if (e && event_errno_means_no_pmu(e)) {
				pr_info("%s is not available here (%s: no hardware PMU, as in most VMs); sampling cpu-clock instead",
					ev->name, strerror(-e));
				event_cpu_clock(ev);
			}
		}
		build_attr(o, ev, false, &a);
		e = pe_try_open(&a, test_cpu);
		if (e) {
			pr_err("cannot sample event '%s': %s", ev->name, strerror(-e));
			return e;
		}
	}
	return 0;
}

/* One ring per CPU, on the first event; the others write into it. */
static int map_rings(struct samples *s)
{
	const struct record_opts *o = s->ctx->o;
	int e;

	s->rings = calloc(s->sets[0]->nr, sizeof(*s->rings));
	if (!s->rings)
		return -ENOMEM;
	for (int j = 0; j < s->sets[0]->nr; j++) {
		struct pe_cpu *c = &s->sets[0]->ev[j];

		e = pe_ring__map(&s->rings[j], c->fd, c->cpu, o->mmap_pages);
		if (e) {
			pr_err("cannot map a %llu-page ring on CPU %d: %s (try a smaller -m)",
			       (unsigned long long)o->mmap_pages, c->cpu, strerror(-e));
			return e;
		}
		s->nr_rings++;
		for (int i = 1; i < s->nr_evs; i++)
			for (int k = 0; k < s->sets[i]->nr; k++)
				if (s->sets[i]->ev[k].cpu == c->cpu) {
					e = pe_ring__redirect(&s->rings[j], s->sets[i]->ev[k].fd);
					if (e)
						return e;
				}
	}
	return 0;
}

static int open_events(struct samples *s, const struct int_list *cpus)
{
	const struct record_opts *o = s->ctx->o;
	int e;

	s->sets = calloc(s->nr_evs, sizeof(*s->sets));
	if (!s->sets)
		return -ENOMEM;
	for (int i = 0; i < s->nr_evs; i++) {
		struct perf_event_attr a;

		build_attr(o, &s->evs[i], i == 0, &a);
		e = pe_set__open(&s->sets[i], &a, cpus);
		if (e) {
			pr_err("cannot open event '%s' on every CPU: %s", s->evs[i].name, strerror(-e));
			return e;
		}
	}
	e = map_rings(s);
	if (e)
		return e;
	/* on_record peeks at each sample's time; the codec knows where it is. */
	s->time_off = pd_sample_offset(&s->sets[0]->attr, PERF_SAMPLE_TIME);
	s->ctx->track_attr = &s->sets[0]->attr;
	s->ctx->track_id = s->sets[0]->ev[0].id;
	return 0;
}

static int samples_attrs(struct rec_source *src, struct pd_writer *w)
{
	struct samples *s = src->priv;
	int e = 0;

	for (int i = 0; i < s->nr_evs && !e; i++) {
		__u64 *ids;

		e = pe_set__ids(s->sets[i], &ids);
		if (e)
			return e;
		struct perf_event_attr a = s->sets[i]->attr;

		/* ehframe: the samples BPF writes carry the chain that the kernel's attr does not ask for. */
		if (s->eh)
			a.sample_type |= PERF_SAMPLE_CALLCHAIN;
		e = pd_writer__add_attr(w, &a, s->evs[i].name, ids, s->sets[i]->nr);
		free(ids);
	}
	if (!e && s->py) {
		__u64 id = PY_NAMES_ID;

		e = pd_writer__add_attr(w, &s->names_attr, PY_NAMES_EVENT_NAME, &id, 1);
	}
	return e;
}

/*
 * Attach, then enable.  libbpf's attach already enables each event (after
 * the program is on it, which is the order that matters); the explicit
 * enable keeps that true for any attach path that does not.
 */
static int samples_start(struct rec_source *src)
{
	struct samples *s = src->priv;
	int e;

	for (int i = 0; i < s->nr_evs; i++) {
		e = s->eh	 ? eh_source_attach(s->sets[i], s->ctx->skel)
		    : s->no_prog ? 0
				 : pe_set__attach(s->sets[i], s->ctx->skel->progs.on_sample);
		if (e) {
			pr_err("cannot attach the sampling program to '%s': %s", s->evs[i].name,
			       libbpf_explain(e));
			return e;
		}
		e = pe_set__enable(s->sets[i]);
		if (e) {
			pr_err("cannot enable '%s': %s", s->evs[i].name, strerror(-e));
			return e;
		}
	}
	eh_source__started(s->eh);
	return 0;
}

static int samples_poll_ms(struct rec_source *src, int idle_ms)
{
	struct samples *s = src->priv;

	return eh_source__poll_ms(s->eh, idle_ms);
}

static int samples_fds(struct rec_source *src, int *fds, int max)
{
	struct samples *s = src->priv;
	int n = 0;

	for (int i = 0; i < s->nr_rings && n < max; i++)
		fds[n++] = s->sets[0]->ev[i].fd;
	if (s->eh && n < max)
		fds[n++] = eh_source__fd(s->eh);
	return n;
}

/*
 * A container's (or a deleted) file: now, while the process lives, its build
 * id and a copy; then the same mapping once more in the build-id form, right
 * after the ring's chunk, so that both perf and report know which file it
 * was.  Failures are counted by the cache, never fatal.
 */
static void note_foreign(struct samples *s, const struct pd_sideband *r)
{
	const struct perf_event_attr *attr = &s->sets[0]->attr;
	const struct pd_mmap *m = &r->mmap;
	struct pd_sideband again = { .type = PERF_RECORD_MMAP2, .misc = PERF_RECORD_MISC_USER,
				     .sample_id = r->sample_id };
	char buf[PATH_MAX + 256];
	long n;

	again.mmap = (struct pd_mmap){ .pid = m->pid, .tid = m->tid, .start = m->start, .len = m->len,
				       .pgoff = m->pgoff, .prot = m->prot, .flags = m->flags, .filename = m->filename };
	if (!buildid_cache__note(s->ctx->bcache, m->pid, m->start, m->start + m->len, m->filename,
				 m->build_id_size ? 0 : m->maj, m->build_id_size ? 0 : m->min,
				 m->build_id_size ? 0 : m->ino, again.mmap.build_id, &again.mmap.build_id_size))
		return;
	dso_set__add_foreign(s->ctx->dsos, m->filename, again.mmap.build_id, again.mmap.build_id_size);
	n = pd_sideband_write(buf, sizeof(buf), attr, &again);
	if (n > 0)
		sbuf_add(&s->pending, buf, n);
}

static void note_sample(struct rec_ctx *ctx, __u64 t)
{
	if (!ctx->samples++ || t < ctx->first_ns)
		ctx->first_ns = t;
	if (t > ctx->last_ns)
		ctx->last_ns = t;
}

static int write_rec(void *w, const void *p, size_t n);

/* A sample of the thread whose pid and tid are at pt, where no program counts them (rec_ctx's thread_samples). */
static void count_thread(struct samples *s, const void *pt)
{
	__u32 v[2]; /* pid, tid */
	uint64_t *n, *pid;

	memcpy(v, pt, sizeof(v));
	n = u64_map_get(&s->tid_samples, v[1], true);
	pid = u64_map_get(&s->tid_pids, v[1], true);
	if (n)
		(*n)++;
	if (pid)
		*pid = v[0];
}

/* What a record tells before it is copied as it is. */
static int on_record(void *priv, const struct perf_event_header *h)
{
	struct samples *s = priv;
	struct rec_ctx *ctx = s->ctx;
	struct pd_sideband r;
	__u64 v;
	int e;

	if (h->type == PERF_RECORD_SAMPLE) {
		if (s->no_prog && s->tid_off >= 0 && h->size >= s->tid_off + 8)
			count_thread(s, (const char *)h + s->tid_off);
		if (s->time_off >= 0 && h->size >= s->time_off + 8) {
			memcpy(&v, (const char *)h + s->time_off, 8);
			note_sample(ctx, v);
		}
		return 0;
	}
	/* Every event of the rings shares the first's sample_id layout. */
	if (pd_sideband_parse(&s->sets[0]->attr, h, h->size, &r))
		return 0;
	eh_source__sideband(s->eh, &r);
	switch (r.type) {
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
		ctx->lost += r.lost.lost;
		break;
	case PERF_RECORD_COMM:
		if (r.misc & PERF_RECORD_MISC_COMM_EXEC) {
			buildid_cache__exec(ctx->bcache, r.comm.pid);
			otel_record__exec(ctx->otel, r.comm.pid);
		}
		break;
	case PERF_RECORD_EXIT:
		if (ctx->otel)
			otel_record__exit(ctx->otel, r.task.tid, r.task.time);
		if (r.task.pid == r.task.tid)
			jit_maps__exit(ctx->jits, r.task.pid);
		break;
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_MMAP:
		/* Build ids are for code: data maps (mmap_data) have none worth a read. */
		if (r.misc & PERF_RECORD_MISC_MMAP_DATA)
			break;
		if (r.type == PERF_RECORD_MMAP2 && !pd_misc_kernel(r.misc) && (r.mmap.prot & PROT_EXEC)) {
			if (jit_maps__anon(r.mmap.filename))
				jit_maps__note(ctx->jits, r.mmap.pid);
			e = py_frames__mmap(ctx->py, r.mmap.pid, r.mmap.start, r.mmap.len, r.sample_id.time, write_rec,
					    s->w);
			if (e)
				return e;
			note_foreign(s, &r);
			otel_record__mmap(ctx->otel, r.mmap.pid, r.mmap.filename);
		}
		return dso_set__add(ctx->dsos, r.mmap.filename);
	}
	return 0;
}

/*
 * -- CMD: whether a side-band record is of CMD's tree.  The rings' side-band
 * is the whole host's (the events are per CPU); the rest of it is dropped
 * here, before anything reads the files it names.  A fork is kept by its
 * parent too: the child joins the filter just after its FORK record is
 * written.  The tree's exits are told to the target, which lets the process
 * go once everything it wrote before is read.
 */
static bool of_tree(struct samples *s, const struct pd_sideband *r)
{
	struct target *t = s->ctx->target;

	switch (r->type) {
	case PERF_RECORD_COMM:
		return target__has(t, r->comm.pid);
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		return pd_misc_kernel(r->misc) || target__has(t, r->mmap.pid);
	case PERF_RECORD_FORK:
		return target__has(t, r->task.pid) || target__has(t, r->task.ppid);
	case PERF_RECORD_EXIT:
		if (!target__has(t, r->task.pid))
			return false;
		target__exited(t, r->task.pid);
		return true;
	default:
		return true; /* LOST, THROTTLE...: the recording's own */
	}
}

/* -- CMD: records one by one, the tree's only (the samples are, by BPF). */
static int on_tree_record(void *priv, const struct perf_event_header *h)
{
	struct samples *s = priv;
	struct pd_sideband r;
	int e;

	if (h->type != PERF_RECORD_SAMPLE && !pd_sideband_parse(&s->sets[0]->attr, h, h->size, &r) && !of_tree(s, &r))
		return 0;
	e = on_record(priv, h);
	return e ?: pd_writer__write(s->w, h, h->size);
}

static int on_chunk(void *priv, const void *p, size_t n)
{
	struct samples *s = priv;

	return pd_writer__write(s->w, p, n);
}

static int write_rec(void *w, const void *p, size_t n)
{
	return pd_writer__write(w, p, n);
}

/*
 * on_sample_eh's layout (ehframe.bpf.h's struct sp_eh_sample):
 * IDENTIFIER|IP|TID|TIME|CPU|PERIOD, then the chain's nr and entries.
 */
#define EH_IP_OFF 16u
#define EH_PID_OFF 24u
#define EH_NR_OFF 56u
#define EH_IPS_OFF 64u
#define EH_SAMPLE_MAX 4096

/* A sample with Python entries: copied, rewritten (the names it needs written first), then written. */
static int write_py_sample(struct samples *s, const struct perf_event_header *h, __u64 t)
{
	struct perf_event_header *c = (struct perf_event_header *)s->eh_copy;
	__u64 *ips = (__u64 *)((char *)c + EH_IPS_OFF), nr;
	__u32 pid, tid, n, leaf = 0;
	bool py_leaf;
	int e;

	memcpy(&nr, (const char *)h + EH_NR_OFF, 8);
	if (h->size > EH_SAMPLE_MAX || nr > (h->size - EH_IPS_OFF) / 8)
		return pd_writer__write(s->w, h, h->size);
	memcpy(c, h, h->size);
	memcpy(&pid, (const char *)h + 24, 4);
	memcpy(&tid, (const char *)h + 28, 4);
	/* A sample in user mode whose own frame (the eval loop) became a Python frame. */
	while (leaf < nr && ips[leaf] != PD_CONTEXT_USER)
		leaf++;
	leaf++;
	py_leaf = (c->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER && leaf < nr &&
		  ((ips[leaf] & SP_PY_TAG_MASK) == SP_PY_TAG || (ips[leaf] & SP_PY_TAG_MASK) == SP_HS_TAG);
	n = nr;
	e = py_frames__rewrite(s->py, pid, tid, t, ips, &n, (EH_SAMPLE_MAX - EH_IPS_OFF) / 8, write_rec, s->w);
	if (e)
		return e;
	/* Its IP is that frame's too: perf report without -g, and report's top functions, name a sample by it. */
	if (py_leaf && leaf < n)
		memcpy((char *)c + EH_IP_OFF, &ips[leaf], 8);
	/* Entries dropped or inlined frames added: the record shrinks or grows by as many words. */
	c->size = c->size - nr * 8 + (__u64)n * 8;
	nr = n;
	memcpy((char *)c + EH_NR_OFF, &nr, 8);
	return pd_writer__write(s->w, c, c->size);
}

static long drain_rings(struct samples *s);

/* An ehframe sample, in the file's layout already (but for its Python entries). */
static int on_eh_sample(void *priv, const struct perf_event_header *h)
{
	struct samples *s = priv;
	__u64 t, nr;

	memcpy(&t, (const char *)h + s->time_off, 8);
	note_sample(s->ctx, t);
	if (s->ctx->thread_samples == &s->tid_samples)
		count_thread(s, (const char *)h + EH_PID_OFF);
	memcpy(&nr, (const char *)h + EH_NR_OFF, 8);
	if (s->py && h->size >= EH_IPS_OFF && nr <= (h->size - EH_IPS_OFF) / 8 &&
	    py_frames_any((const __u64 *)((const char *)h + EH_IPS_OFF), nr)) {
		/*
		 * Taken after the side-band was read: the process may have mapped
		 * over its Python frames' region since (py_frames__mmap), and a
		 * sample named by the old one would fall in the new mapping.  The
		 * rings again first; the tables' flush and a long consume of a
		 * starved recorder left 358 of 2,096 samples so (issue 42).
		 */
		if (t > s->sb_ns) {
			long n = drain_rings(s);

			if (n < 0)
				return n;
		}
		return write_py_sample(s, h, t);
	}
	return pd_writer__write(s->w, h, h->size);
}

/* Every ring to its end: the side-band of everything that happened before now is known after it. */
static long drain_rings(struct samples *s)
{
	long any = 0;

	s->sb_ns = now_ns(CLOCK_MONOTONIC);
	for (int i = 0; i < s->nr_rings; i++) {
		long n = s->tree ? pe_ring__drain(&s->rings[i], on_tree_record, NULL, s)
				 : pe_ring__drain(&s->rings[i], on_record, on_chunk, s);

		if (n < 0)
			return n;
		any += n;
		if (s->pending.len) {
			int e = s->pending.err ?: pd_writer__write(s->w, s->pending.p, s->pending.len);

			s->pending.len = 0;
			if (e)
				return e;
		}
	}
	return any;
}

static long samples_drain(struct rec_source *src, struct pd_writer *w)
{
	struct samples *s = src->priv;
	long any;

	s->w = w;
	any = drain_rings(s);
	if (any < 0)
		return any;
	/* After the side-band that may have changed the tables; stamped before now, as the rings' are. */
	py_frames__drain(s->py);
	if (s->eh) {
		long n = eh_source__drain(s->eh);

		if (n < 0)
			return n;
		any += n;
	}
	return any;
}

static int samples_meta(struct rec_source *src, struct pd_meta *m)
{
	struct samples *s = src->priv;

	/* The file's Python symbols, before its header; a next file (--switch-output) names its own. */
	py_frames__end_file(s->py, true);
	return eh_source__meta(s->eh, m);
}

static void samples_stats(struct rec_source *src)
{
	struct samples *s = src->priv;

	eh_source__report(s->eh, sp_verbose);
	if (sp_verbose > 0)
		py_frames__report(s->py);
	/* The last file is in place: symbol files no perf.data beside it names any more go. */
	py_frames__prune(s->py);
}

static void samples_stop(struct rec_source *src)
{
	struct samples *s = src->priv;

	for (int i = 0; i < s->nr_evs; i++)
		pe_set__disable(s->sets[i]);
}

static void samples_free(struct rec_source *src)
{
	struct samples *s = src->priv;

	for (int i = 0; i < s->nr_evs && s->sets; i++)
		pe_set__free(s->sets[i]);
	for (int i = 0; i < s->nr_rings; i++)
		pe_ring__unmap(&s->rings[i]);
	free(s->rings);
	free(s->sets);
	free(s->evs);
	sbuf_free(&s->pending);
	if (s->ctx->py == s->py)
		s->ctx->py = NULL;
	py_frames__free(s->py);
	free(s->eh_copy);
	eh_source__free(s->eh);
	if (s->ctx->thread_samples == &s->tid_samples)
		s->ctx->thread_samples = s->ctx->thread_pids = NULL;
	u64_map_free(&s->tid_samples);
	u64_map_free(&s->tid_pids);
}

static const struct int_list no_pids;

int samples_source__new(struct rec_source **out, struct rec_ctx *ctx)
{
	const struct record_opts *o = ctx->o;
	struct rec_source *src = rec_source__alloc("samples", sizeof(struct samples));
	struct samples *s;
	int e;

	*out = src;
	if (!src)
		return -ENOMEM;
	s = src->priv;
	s->ctx = ctx;
	src->attrs = samples_attrs;
	src->start = samples_start;
	src->fds = samples_fds;
	src->poll_ms = samples_poll_ms;
	src->drain = samples_drain;
	src->stop = samples_stop;
	src->meta = samples_meta;
	src->stats = samples_stats;
	src->free = samples_free;
	e = resolve_events(s, o->cpus.n ? o->cpus.v[0] : ctx->online->v[0]);
	e = e ?: open_events(s, o->cpus.n ? &o->cpus : ctx->online);
	s->tree = ctx->target->mode == SP_FILTER_TREE;
	/* The tables of what runs now, before the first sample; -- CMD: none yet (CMD has not run). */
	if (!e && o->ehframe)
		e = eh_source__new(&s->eh, ctx->skel, o->pids.n ? &o->pids : s->tree ? &no_pids : NULL,
				   o->period ? 0 : o->freq, on_eh_sample, s);
	if (!e && eh_source__py(s->eh)) {
		struct py_frames_opts po = {
			.procs = eh_source__py(s->eh), .output = o->output, .track_attr = &s->sets[0]->attr,
			.track_id = s->sets[0]->ev[0].id, .names_id = PY_NAMES_ID, .names_attr = &s->names_attr,
			.sorted_ns = &ctx->sorted_ns, .dsos = ctx->dsos,
		};

		py_names_attr(&s->names_attr);
		s->eh_copy = malloc(EH_SAMPLE_MAX);
		e = s->eh_copy ? py_frames__new(&s->py, &po) : -ENOMEM;
		ctx->py = s->py;
	}
	if (!e && !o->ehframe && ctx->target->mode == SP_FILTER_NONE && !o->nr_spans && !o->otel) {
		s->no_prog = true;
		s->tid_off = pd_sample_offset(&s->sets[0]->attr, PERF_SAMPLE_TID);
	}
	if (!e && (s->no_prog || eh_counts_records(o))) {
		ctx->thread_samples = &s->tid_samples;
		ctx->thread_pids = &s->tid_pids;
	}
	return e;
}
