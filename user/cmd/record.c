// SPDX-License-Identifier: GPL-2.0
/*
 * spanperf record: per-CPU sampling events, each with the sampling program
 * as a filter in front of perf's ring; the rings' records are copied to the
 * perf.data as they are, after the side-band synthesized from /proc.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "buildid.h"
#include "buildid_cache.h"
#include "commands.h"
#include "counters.h"
#include "events.h"
#include "fileio.h"
#include "host.h"
#include "kernel_features.h"
#include "libbpf_setup.h"
#include "log.h"
#include "offcpu.h"
#include "options.h"
#include "otel_pctx.h"
#include "otel_record.h"
#include "perf_data.h"
#include "perf_events.h"
#include "run.h"
#include "sample.skel.h"
#include "sideband.h"
#include "span_codec.h"
#include "span_sources.h"
#include "spanperf.h"
#include "util.h"

/*
 * How often the rings are drained when they do not fill: a mapping's record
 * must be read while its process lives for the build-id cache to reach a
 * container's file (ten wakeups a second cost nothing measurable).
 */
#define POLL_MS 100
/* What copies of containers' files may take in the cache directory. */
#define BUILDID_CACHE_MAX (2ull << 30)
/* What a span counts without --span-counters: neither needs a counter read. */
#define SPAN_DEFAULT_COUNTERS "task-clock,context-switches"

struct recorder {
	const struct record_opts *o;
	struct sample_bpf *skel;
	struct event_spec *evs;
	int nr_evs;
	struct pe_set **sets;
	struct pe_ring *rings;
	struct pollfd *pfds;
	int nr_rings;
	struct pd_writer *w;
	struct dso_set *dsos;
	struct buildid_cache *bcache;
	struct sbuf pending;	      /* records of ours to follow the ring's chunk: see buildid_cache.h */
	struct run run;
	long time_off; /* offset of TIME in our SAMPLE records, -1 if none */
	__u64 samples, lost, first_ns, last_ns, start_ns, start_tod_ns;
	__u64 round_ns; /* CLOCK_MONOTONIC at the last FINISHED_ROUND: every record before it is older */
	__u64 ktext_start, ktext_end;
	int ktext_err;
	__u64 last_progress_ns;
	bool progress_shown;
	/* spans */
	struct span_spec *specs;
	struct counter_set *cs;
	struct span_set *spans;
	struct perf_event_attr span_attr;
	__u64 nr_spans;
	struct otel_record *otel; /* --otel */
	struct offcpu_set *oc; /* --off-cpu */
};

static void recorder_free(struct recorder *r)
{
	run__stop(&r->run);
	otel_record__free(r->otel);
	offcpu__free(r->oc);
	span_set__free(r->spans);
	counters__free(r->cs);
	free(r->specs);
	for (int i = 0; i < r->nr_evs && r->sets; i++)
		pe_set__free(r->sets[i]);
	for (int i = 0; i < r->nr_rings; i++)
		pe_ring__unmap(&r->rings[i]);
	free(r->rings);
	free(r->pfds);
	free(r->sets);
	free(r->evs);
	sample_bpf__destroy(r->skel);
	pd_writer__free(r->w);
	dso_set__free(r->dsos);
	buildid_cache__free(r->bcache);
	sbuf_free(&r->pending);
}

/* The sample layout every sampling event shares; side-band bits on the first. */
static void build_attr(const struct record_opts *o, const struct event_spec *ev, bool tracking,
		       struct perf_event_attr *a)
{
	*a = ev->attr;
	a->size = sizeof(*a);
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			 PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
	if (o->callgraph)
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
	if (o->freq) {
		a->freq = 1;
		a->sample_freq = o->freq;
	} else {
		a->sample_period = o->period;
	}
	a->disabled = 1;
	a->sample_id_all = 1;
	/* One clock with bpf_ktime_get_ns and the spans applications write. */
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
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

static int resolve_events(struct recorder *r, int test_cpu)
{
	const struct record_opts *o = r->o;
	char err[256];
	int e;

	if (o->events) {
		e = event_list_parse(o->events, &r->evs, &r->nr_evs, err, sizeof(err));
		if (e) {
			pr_err("%s", err);
			return e;
		}
	} else {
		r->evs = calloc(1, sizeof(*r->evs));
		if (!r->evs)
			return -ENOMEM;
		r->nr_evs = 1;
		event_default_cycles(&r->evs[0]);
	}
	/* The kernel's rate limit gives EINVAL, which would read as "no PMU". */
	if (o->freq && max_sample_rate() && o->freq > (uint64_t)max_sample_rate()) {
		pr_err("-F %llu is above the kernel's limit kernel.perf_event_max_sample_rate=%d",
		       (unsigned long long)o->freq, max_sample_rate());
		return -EINVAL;
	}
	for (int i = 0; i < r->nr_evs; i++) {
		struct event_spec *ev = &r->evs[i];
		struct perf_event_attr a;

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

static int load_bpf(struct recorder *r)
{
	const struct record_opts *o = r->o;
	const struct int_list *filter = o->pids.n ? &o->pids : o->tids.n ? &o->tids : NULL;
	int e;

	r->skel = sample_bpf__open();
	if (!r->skel) {
		e = -errno;
		pr_err("cannot open the sampling BPF object: %s", strerror(-e));
		return e;
	}
	r->skel->rodata->filter_mode = o->pids.n ? SP_FILTER_PID : o->tids.n ? SP_FILTER_TID : SP_FILTER_NONE;
	/* Maps are sized here, between open and load. */
	bpf_map__set_max_entries(r->skel->maps.filter, filter ? filter->n : 1);
	bpf_map__set_max_entries(r->skel->maps.threads, o->max_threads);
	otel_record_size_maps(r->skel->maps.otel_recipes, r->skel->maps.otel_events, o->otel);
	e = sample_bpf__load(r->skel);
	if (e) {
		pr_err("cannot load the sampling BPF program: %s", libbpf_explain(e));
		return e;
	}
	for (int i = 0; filter && i < filter->n; i++) {
		__u32 key = filter->v[i];
		__u8 one = 1;

		if (bpf_map_update_elem(bpf_map__fd(r->skel->maps.filter), &key, &one, BPF_ANY))
			return -errno;
	}
	return 0;
}

static int open_events(struct recorder *r, const struct int_list *cpus)
{
	const struct record_opts *o = r->o;
	int e;

	r->sets = calloc(r->nr_evs, sizeof(*r->sets));
	if (!r->sets)
		return -ENOMEM;
	for (int i = 0; i < r->nr_evs; i++) {
		struct perf_event_attr a;

		build_attr(o, &r->evs[i], i == 0, &a);
		e = pe_set__open(&r->sets[i], &a, cpus);
		if (e) {
			pr_err("cannot open event '%s' on every CPU: %s", r->evs[i].name, strerror(-e));
			return e;
		}
	}
	/* One ring per CPU, on the first event; the others write into it. */
	r->rings = calloc(r->sets[0]->nr, sizeof(*r->rings));
	r->pfds = calloc(r->sets[0]->nr + 2, sizeof(*r->pfds)); /* + the span and off-CPU rings */
	if (!r->rings || !r->pfds)
		return -ENOMEM;
	for (int j = 0; j < r->sets[0]->nr; j++) {
		struct pe_cpu *c = &r->sets[0]->ev[j];

		e = pe_ring__map(&r->rings[j], c->fd, c->cpu, o->mmap_pages);
		if (e) {
			pr_err("cannot map a %llu-page ring on CPU %d: %s (try a smaller -m)",
			       (unsigned long long)o->mmap_pages, c->cpu, strerror(-e));
			return e;
		}
		r->nr_rings++;
		r->pfds[j] = (struct pollfd){ .fd = c->fd, .events = POLLIN };
		for (int i = 1; i < r->nr_evs; i++)
			for (int k = 0; k < r->sets[i]->nr; k++)
				if (r->sets[i]->ev[k].cpu == c->cpu) {
					e = pe_ring__redirect(&r->rings[j], r->sets[i]->ev[k].fd);
					if (e)
						return e;
				}
	}
	/* on_record peeks at each sample's time; the codec knows where it is. */
	r->time_off = pd_sample_offset(&r->sets[0]->attr, PERF_SAMPLE_TIME);
	return 0;
}

/*
 * Attach, then enable.  libbpf's attach already enables each event (after
 * the program is on it, which is the order that matters); the explicit
 * enable keeps that true for any attach path that does not.
 */
static int start_events(struct recorder *r)
{
	int e;

	for (int i = 0; i < r->nr_evs; i++) {
		e = pe_set__attach(r->sets[i], r->skel->progs.on_sample);
		if (e) {
			pr_err("cannot attach the sampling program to '%s': %s", r->evs[i].name,
			       libbpf_explain(e));
			return e;
		}
		e = pe_set__enable(r->sets[i]);
		if (e) {
			pr_err("cannot enable '%s': %s", r->evs[i].name, strerror(-e));
			return e;
		}
	}
	return 0;
}

/*
 * One attr per span source, named spanperf:NAME, so that perf script lists
 * spans beside the samples; the span itself rides in RAW.  Every attr
 * carries IDENTIFIER first and sample_id_all, as perf requires of a file
 * with several.
 */
static int add_span_attrs(struct recorder *r)
{
	const struct counter_event *ev;
	struct sbuf names = {};
	__u64 id;
	int n, e = 0;

	span_codec_attr(&r->span_attr);
	for (int i = 0; i < r->o->nr_spans && !e; i++) {
		char name[sizeof(SPAN_ATTR_PREFIX) + sizeof(r->specs[i].name)];

		id = SPAN_ID_BASE + i;
		e = span_codec_attr_name(name, sizeof(name), r->specs[i].name) ?:
		    pd_writer__add_attr(r->w, &r->span_attr, name, &id, 1);
	}
	if (e)
		return e;
	/* What each span's counters[k] is, by name: an attr that never has records. */
	ev = counters__events(r->cs, &n);
	sbuf_printf(&names, "%s", SPAN_COUNTERS_PREFIX);
	for (int k = 0, first = 1; k < n; k++) {
		if (ev[k].slot == COUNTER_UNSUPPORTED)
			continue;
		sbuf_printf(&names, "%s%s", first ? "" : ",", ev[k].spec.name);
		first = 0;
	}
	sbuf_zero(&names, 1);
	id = SPAN_COUNTERS_ID;
	e = names.err ?: pd_writer__add_attr(r->w, &r->span_attr, names.p, &id, 1);
	sbuf_free(&names);
	return e;
}

static int add_attrs(struct recorder *r)
{
	int e = 0;

	for (int i = 0; i < r->nr_evs && !e; i++) {
		__u64 *ids;

		e = pe_set__ids(r->sets[i], &ids);
		if (e)
			return e;
		e = pd_writer__add_attr(r->w, &r->sets[i]->attr, r->evs[i].name, ids, r->sets[i]->nr);
		free(ids);
	}
	if (!e && r->o->nr_spans)
		e = add_span_attrs(r);
	/* OTEP 4947 contexts: one more span source, after the --span ones. */
	if (!e && r->o->otel) {
		__u64 id = SPAN_ID_BASE + r->o->nr_spans;

		span_codec_attr(&r->span_attr);
		e = pd_writer__add_attr(r->w, &r->span_attr, SPAN_ATTR_PREFIX "otel", &id, 1);
		/* The processes' OTEP 4719 contexts: what names the spans' attribute keys. */
		id = OTEL_PCTX_ID;
		if (!e)
			e = pd_writer__add_attr(r->w, &r->span_attr, OTEL_PCTX_ATTR_NAME, &id, 1);
	}
	if (!e && r->oc) {
		struct perf_event_attr a;
		__u64 id = OFFCPU_ID;

		offcpu__attr(&a);
		e = pd_writer__add_attr(r->w, &a, OFFCPU_EVENT_NAME, &id, 1);
	}
	return e ?: pd_writer__begin(r->w);
}

/* A finished span becomes a sample of its attr: time = end, period = duration. */
static int on_span(void *ctx, const struct sp_span *sp)
{
	struct recorder *r = ctx;
	struct span_rec rec;
	char buf[512];
	long n;

	span_rec_from_bpf(&rec, sp);
	n = span_codec_write(buf, sizeof(buf), &r->span_attr, &rec);
	if (n < 0)
		return n;
	r->nr_spans++;
	return pd_writer__write(r->w, buf, n);
}

/*
 * A container's (or a deleted) file: now, while the process lives, its build
 * id and a copy; then the same mapping once more in the build-id form, right
 * after the ring's chunk, so that both perf and report know which file it
 * was.  Failures are counted by the cache, never fatal.
 */
static void note_foreign(struct recorder *r, const struct perf_event_header *h, const struct pd_mmap *m)
{
	const struct perf_event_attr *attr = &r->sets[0]->attr;
	struct pd_mmap2_info info = { .prot = m->prot, .flags = m->flags };
	struct pd_sample ts = {};
	char buf[PATH_MAX + 256];
	long n;

	if (!buildid_cache__note(r->bcache, m->pid, m->start, m->start + m->len, m->filename, info.build_id,
				 &info.build_id_size))
		return;
	dso_set__add_foreign(r->dsos, m->filename, info.build_id, info.build_id_size);
	if (pd_trailer_parse(attr, h, h->size, &ts))
		return;
	n = pd_build_mmap2(buf, sizeof(buf), attr, &ts, PERF_RECORD_MISC_USER, m->pid, m->tid, m->start, m->len,
			   m->pgoff, &info, m->filename);
	if (n > 0)
		sbuf_add(&r->pending, buf, n);
}

static int on_record(void *ctx, const struct perf_event_header *h)
{
	struct recorder *r = ctx;
	struct pd_comm c;
	struct pd_task t;
	struct pd_mmap m;
	__u64 v, id;

	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		if (r->time_off < 0 || h->size < r->time_off + 8)
			break;
		memcpy(&v, (const char *)h + r->time_off, 8);
		if (!r->samples++ || v < r->first_ns)
			r->first_ns = v;
		if (v > r->last_ns)
			r->last_ns = v;
		break;
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
		if (!pd_parse_lost(h, h->size, &id, &v))
			r->lost += v;
		break;
	case PERF_RECORD_COMM:
		if ((h->misc & PERF_RECORD_MISC_COMM_EXEC) && !pd_parse_comm(h, h->size, &c)) {
			buildid_cache__exec(r->bcache, c.pid);
			otel_record__exec(r->otel, c.pid);
		}
		break;
	case PERF_RECORD_EXIT:
		if (r->otel && !pd_parse_task(h, h->size, &t))
			otel_record__exit(r->otel, t.tid);
		break;
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_MMAP:
		/* Build ids are for code: data maps (mmap_data) have none worth a read. */
		if ((h->misc & PERF_RECORD_MISC_MMAP_DATA) || pd_parse_mmap(h, h->size, &m))
			break;
		if (h->type == PERF_RECORD_MMAP2 && !m.kernel && (m.prot & PROT_EXEC)) {
			note_foreign(r, h, &m);
			otel_record__mmap(r->otel, m.pid, m.filename);
		}
		return dso_set__add(r->dsos, m.filename);
	}
	return 0;
}

static int on_chunk(void *ctx, const void *p, size_t n)
{
	struct recorder *r = ctx;

	return pd_writer__write(r->w, p, n);
}

/* The switch-in stamps each off-CPU block, before now: it belongs to this round too. */
static int drain_offcpu(struct recorder *r, bool *any)
{
	__u64 n = 0;
	int e = r->oc ? offcpu__consume(r->oc, on_chunk, r, &n) : 0;

	*any |= n > 0;
	return e;
}

/* One pass over every ring, then FINISHED_ROUND so perf can sort in rounds. */
static int drain_all(struct recorder *r)
{
	__u64 spans = r->nr_spans;
	bool any = false;
	int e;

	for (int i = 0; i < r->nr_rings; i++) {
		long n = pe_ring__drain(&r->rings[i], on_record, on_chunk, r);

		if (n < 0)
			return n;
		any |= n > 0;
		if (r->pending.len) {
			int e = r->pending.err ?: pd_writer__write(r->w, r->pending.p, r->pending.len);

			r->pending.len = 0;
			if (e)
				return e;
		}
	}
	/* Spans are stamped with their end, before now: they belong to this round. */
	if (r->spans) {
		e = span_set__consume(r->spans, on_span, r);

		if (e)
			return e;
		any |= r->nr_spans > spans;
	}
	if (r->otel) {
		long n = otel_record__consume(r->otel);

		if (n < 0)
			return n;
		any |= n > 0;
	}
	e = drain_offcpu(r, &any);
	if (e)
		return e;
	if (any) {
		char buf[8];
		long n = pd_build_finished_round(buf, sizeof(buf));

		r->round_ns = now_ns(CLOCK_MONOTONIC);
		return pd_writer__write(r->w, buf, n);
	}
	return 0;
}

static void progress(struct recorder *r, bool final)
{
	__u64 now = now_ns(CLOCK_MONOTONIC);

	if (sp_verbose < 0 || !isatty(STDERR_FILENO))
		return;
	if (!final && now - r->last_progress_ns < 1000000000ull)
		return;
	r->last_progress_ns = now;
	fprintf(stderr, "\r[ recording: %.1f s, %llu samples, %.1f MB ]%s",
		(now - r->start_ns) / 1e9, (unsigned long long)r->samples,
		pd_writer__data_size(r->w) / 1e6, final ? "\n" : "");
	r->progress_shown = !final;
}

static int synthesize(struct recorder *r)
{
	const struct record_opts *o = r->o;
	struct sideband sb = {
		.w = r->w,
		.attr = &r->sets[0]->attr,
		.id = r->sets[0]->ev[0].id,
		.time = r->start_ns,
		.dsos = r->dsos,
		.bcache = r->bcache,
		.ktext_start = r->ktext_start,
		.ktext_end = r->ktext_end,
		.data_maps = o->dwarf_stack,
	};
	int e = sideband_kernel_mmap(&sb);

	if (e)
		pr_warn("no kernel map (cannot read _text from /proc/kallsyms: %s); kernel frames will show as [unknown]",
			strerror(-r->ktext_err));
	e = sideband_module_mmaps(&sb);
	if (e)
		pr_warn("no module maps (/proc/modules: %s); perf report will not place module frames", strerror(-e));
	if (o->tids.n)
		e = sideband_synthesize_tids(&sb, &o->tids);
	else
		e = sideband_synthesize(&sb, o->pids.n ? &o->pids : NULL);
	if (e)
		return e;
	pr_debug("synthesized %lu processes: %lu COMM, %lu MMAP2; %lu module MMAPs", sb.nr_procs, sb.nr_comm,
		 sb.nr_mmap, sb.nr_modules);
	return 0;
}

/*
 * What BPF saw: the samples it passed (summed over the threads map, which
 * nothing deletes from, plus those refused because it was full), so that -v
 * can compare them with what the rings delivered.
 */
static void bpf_counts(struct recorder *r, __u64 *accepted, __u64 *threads_full, int *threads)
{
	int fd = bpf_map__fd(r->skel->maps.threads);
	__u32 key, next, *prev = NULL;
	struct sp_thread t;

	*threads = 0;
	*threads_full = bpf_percpu_sum(bpf_map__fd(r->skel->maps.stats), SP_STAT_THREADS_FULL);
	*accepted = *threads_full;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		(*threads)++;
		if (!bpf_map_lookup_elem(fd, &key, &t))
			*accepted += t.samples;
	}
}

struct tid_thread {
	__u32 tid;
	struct sp_thread t;
};

static int cmp_thread(const void *a, const void *b)
{
	const struct tid_thread *x = a, *y = b;

	return (x->t.samples < y->t.samples) - (x->t.samples > y->t.samples);
}

/* -v: the per-thread map as BPF counted it, busiest first. */
static void print_threads(struct recorder *r)
{
	int fd = bpf_map__fd(r->skel->maps.threads), n = 0, cap = 0;
	struct tid_thread *all = NULL, *na;
	__u32 key, next, *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			na = realloc(all, cap * sizeof(*all));
			if (!na)
				break;
			all = na;
		}
		all[n].tid = key;
		if (!bpf_map_lookup_elem(fd, &key, &all[n].t))
			n++;
	}
	sort_n(all, n, sizeof(*all), cmp_thread);
	fprintf(stderr, "per-thread samples (BPF map):\n%8s %8s %-16s %10s\n", "tid", "pid", "comm", "samples");
	for (int i = 0; i < n && (i < 20 || sp_verbose > 1); i++)
		fprintf(stderr, "%8u %8u %-16.16s %10llu\n", all[i].tid, all[i].t.pid, all[i].t.comm,
			(unsigned long long)all[i].t.samples);
	free(all);
}

/* What the off-CPU program could not time or name, said once each. */
static void offcpu_report(struct recorder *r)
{
	struct offcpu_stats st;

	offcpu__stats(r->oc, &st);
	pr_info("off-CPU: %llu blocks written one by one, %llu summed into %llu samples, %llu still blocked at the end; %.3f s in all",
		(unsigned long long)st.samples, (unsigned long long)st.summed, (unsigned long long)st.sums,
		(unsigned long long)st.open_at_end, st.ns / 1e9);
	if (st.lost)
		pr_warn("%llu off-CPU blocks LOST: their ring buffer was full (raise --off-cpu-entries)",
			(unsigned long long)st.lost);
	if (st.noslot)
		pr_warn("%llu off-CPU blocks not timed: the per-thread map was full (raise --max-threads)",
			(unsigned long long)st.noslot);
	if (st.agg_full)
		pr_warn("%llu short off-CPU blocks were written one by one: the sum map was full (raise --off-cpu-entries)",
			(unsigned long long)st.agg_full);
	if (st.kstack || st.ustack)
		pr_info("off-CPU stacks not taken: %llu kernel, %llu user (unreadable, or the stack map full)",
			(unsigned long long)st.kstack, (unsigned long long)st.ustack);
	if (st.hidden)
		pr_info("%llu off-CPU blocks ended by their thread's run time: the switch tracepoint did not show it coming back",
			(unsigned long long)st.hidden);
	if (st.unseen)
		pr_warn("%llu off-CPU blocks dropped: the switch tracepoint never showed their thread coming back",
			(unsigned long long)st.unseen);
	if (st.stale || st.exited)
		pr_info("%llu off-CPU starts dropped: their thread was gone or another process's",
			(unsigned long long)(st.stale + st.exited));
}

static int finish(struct recorder *r, int argc, char **argv)
{
	struct pd_meta meta = { .clockid = CLOCK_MONOTONIC, .clockid_res_ns = 1 };
	struct timespec res;
	__u64 accepted, full;
	int threads, e;

	host_fill_meta(&meta);
	meta.cmdline_argc = argc;
	meta.cmdline_argv = calloc(argc + 1, sizeof(char *));
	for (int i = 0; meta.cmdline_argv && i < argc; i++)
		meta.cmdline_argv[i] = strdup(argv[i]);
	if (!meta.cmdline_argv)
		meta.cmdline_argc = 0;
	if (!clock_getres(CLOCK_MONOTONIC, &res))
		meta.clockid_res_ns = res.tv_sec * 1000000000ull + res.tv_nsec;
	meta.clock_tod_ns = r->start_tod_ns;
	meta.clock_ref_ns = r->start_ns;
	meta.first_sample_ns = r->first_ns;
	meta.last_sample_ns = r->last_ns;
	e = dso_set__build_ids(r->dsos, &meta);
	if (e)
		pr_warn("build ids incomplete: %s", strerror(-e));
	e = pd_writer__finish(r->w, &meta);
	pd_meta_free(&meta);
	if (e) {
		pr_err("cannot write -o '%s': %s", r->o->output, strerror(-e));
		return e;
	}
	bpf_counts(r, &accepted, &full, &threads);
	if (sp_verbose >= 0) {
		fprintf(stderr, "[ spanperf record: %llu samples from %d threads in %.1f s",
			(unsigned long long)r->samples, threads,
			(now_ns(CLOCK_MONOTONIC) - r->start_ns) / 1e9);
		if (r->lost)
			fprintf(stderr, ", %llu LOST (ring full: raise -m or lower -F)", (unsigned long long)r->lost);
		if (r->spans || r->otel)
			fprintf(stderr, ", %llu spans", (unsigned long long)(r->nr_spans + otel_record__spans(r->otel)));
		fprintf(stderr, "; wrote %.2f MB to %s ]\n", pd_writer__data_size(r->w) / 1e6, r->o->output);
	}
	if (r->spans) {
		struct span_stats st;

		span_set__stats(r->spans, &st);
		if (st.lost)
			pr_warn("%llu spans LOST: their ring buffer was full", (unsigned long long)st.lost);
		if (st.too_deep)
			pr_warn("%llu spans nested deeper than %d were not kept", (unsigned long long)st.too_deep,
				SP_SPAN_DEPTH);
		if (st.unmatched)
			pr_warn("%llu span ends had no matching begin", (unsigned long long)st.unmatched);
		if (st.nostack)
			pr_warn("%llu span begins found no room for the thread's span stack",
				(unsigned long long)st.nostack);
		if (st.unfinished)
			pr_info("%llu threads exited inside spans; those spans end at the exit, marked unfinished",
				(unsigned long long)st.unfinished);
		if (st.short_dropped)
			pr_debug("%llu spans shorter than --span-min-us were dropped in BPF",
				 (unsigned long long)st.short_dropped);
	}
	if (r->otel)
		otel_record__report(r->otel);
	if (r->oc)
		offcpu_report(r);
	if (full)
		pr_warn("%llu samples came from threads that found the per-thread map full; raise --max-threads above %llu",
			(unsigned long long)full, (unsigned long long)r->o->max_threads);
	if (sp_verbose > 0) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);

		fprintf(stderr, "BPF accepted %llu samples; the rings delivered %llu and lost %llu\n",
			(unsigned long long)accepted, (unsigned long long)r->samples, (unsigned long long)r->lost);
		/* Only with kernel.bpf_stats_enabled=1: this program's own cost, whoever else loads one. */
		if (!bpf_obj_get_info_by_fd(bpf_program__fd(r->skel->progs.on_sample), &info, &len) && info.run_cnt)
			fprintf(stderr, "sampling program: %llu runs, %.0f ns each (bpf_stats)\n",
				(unsigned long long)info.run_cnt, (double)info.run_time_ns / info.run_cnt);
		print_threads(r);
	}
	buildid_cache__report(r->bcache);
	return 0;
}

/* Span counters: natives need no counter read; the rest go through the counters program. */
static int setup_spans(struct recorder *r, const struct int_list *online, const struct sp_features *f)
{
	const struct record_opts *o = r->o;
	struct span_set_opts so = { .specs = r->specs, .nr = o->nr_spans, .min_ns = o->span_min_us * 1000,
				    .ring_bytes = o->span_buffer_kb * 1024 };
	struct counters_opts co = { .cpus = online, .max_threads = o->max_threads, .native_switches = true,
				    .prefer_raw_tp = f->tp_btf_err != 0 || o->raw_tp };
	const struct counter_event *ev;
	struct event_spec *evs = NULL;
	char err[512];
	int n, e;

	e = event_list_parse(o->span_counters ? o->span_counters : SPAN_DEFAULT_COUNTERS, &evs, &n, err, sizeof(err));
	if (e) {
		pr_err("--span-counters: %s", err);
		return e;
	}
	co.evs = evs;
	co.nr_evs = n;
	e = counters__open(&r->cs, &co, err, sizeof(err));
	free(evs);
	if (e) {
		pr_err("%s", err);
		return e;
	}
	ev = counters__events(r->cs, &n);
	for (int k = 0; k < n; k++) {
		__u8 kind = ev[k].slot == COUNTER_NATIVE ? SP_CTR_ONCPU
			    : ev[k].slot == COUNTER_NATIVE_SWITCHES ? SP_CTR_SWITCHES
			    : ev[k].slot >= 0 ? (ev[k].is_clock ? SP_CTR_CLOCK : SP_CTR_COUNTER) : SP_CTR_NONE;

		if (kind == SP_CTR_NONE) {
			pr_warn("%s; spans will not carry it", ev[k].why);
			continue;
		}
		so.ctr_kind[so.nr_counters] = kind;
		so.ctr_slot[so.nr_counters++] = ev[k].slot >= 0 ? ev[k].slot : 0;
	}
	counters__map_fds(r->cs, &so.counters_fd, &so.snap_fd, &so.counts_fd);
	so.threads_fd = bpf_map__fd(r->skel->maps.threads);
	e = span_set__open(&r->spans, &so, err, sizeof(err));
	if (e)
		pr_err("%s", err);
	return e;
}

static int setup_offcpu(struct recorder *r)
{
	const struct record_opts *o = r->o;
	/* Spans (--otel ones too) need each block's time; sums have none. */
	__s64 ms = o->offcpu_thresh_ms >= 0 ? o->offcpu_thresh_ms : o->nr_spans || o->otel ? 0 : OFFCPU_DEFAULT_THRESH_MS;
	struct offcpu_opts oo = {
		.cpus = o->cpus.n ? &o->cpus : NULL,
		.filter = o->pids.n ? &o->pids : o->tids.n ? &o->tids : NULL,
		.filter_mode = o->pids.n ? SP_FILTER_PID : o->tids.n ? SP_FILTER_TID : SP_FILTER_NONE,
		.max_threads = o->max_threads,
		.entries = o->offcpu_entries,
		.thresh_ns = ms * 1000000ull,
		.prefer_raw_tp = o->raw_tp,
	};
	char err[512];
	int e = offcpu__open(&r->oc, &oo, err, sizeof(err));

	if (e)
		pr_err("%s", err);
	return e;
}

static int parse_specs(struct recorder *r)
{
	char err[512];

	r->specs = calloc(r->o->nr_spans, sizeof(*r->specs));
	if (!r->specs)
		return -ENOMEM;
	if (r->o->nr_spans > SP_MAX_SPANS - r->o->otel) {
		pr_err("%d --span given; at most %d per recording%s", r->o->nr_spans, SP_MAX_SPANS - r->o->otel,
		       r->o->otel ? " with --otel" : "");
		return -E2BIG;
	}
	for (int i = 0; i < r->o->nr_spans; i++)
		if (span_spec_parse(r->o->spans[i], &r->specs[i], err, sizeof(err))) {
			pr_err("%s", err);
			return -EINVAL;
		}
	return 0;
}

static int resolve_specs(struct recorder *r, const struct sp_features *f)
{
	char err[512];

	for (int i = 0; i < r->o->nr_spans; i++) {
		const struct span_spec *sp = &r->specs[i];

		if (span_spec_resolve(&r->specs[i], f, r->o->raw_tp, err, sizeof(err))) {
			pr_err("%s", err);
			return -EINVAL;
		}
		if (sp->raw_syscall)
			pr_debug("--span '%s': on raw_syscalls, syscall number %d (%s)", sp->text, sp->sysnr,
				 r->o->raw_tp ? "--raw-tp" : "no syscall tracepoints");
	}
	return 0;
}

/* The processes that publish thread context now; the command's once it has exec'ed. */
static int start_otel(struct recorder *r)
{
	const struct record_opts *o = r->o;
	struct otel_record_opts oo = {
		.recipes_fd = bpf_map__fd(r->skel->maps.otel_recipes),
		.threads_fd = bpf_map__fd(r->skel->maps.threads),
		.gen = &r->skel->bss->otel_gen,
		.round_ns = &r->round_ns,
		.events_fd = bpf_map__fd(r->skel->maps.otel_events),
		.stats_fd = bpf_map__fd(r->skel->maps.stats),
		.pids = o->pids.n ? &o->pids : NULL,
		.cmd_pid = r->run.have_cmd ? r->run.wl.pid : 0,
		/* cpu-clock's period is in ns; -F is a rate. */
		.period_ns = o->freq ? 1000000000ull / o->freq : o->period,
		.w = r->w, .attr = &r->span_attr, .idx = o->nr_spans, .pctx_id = OTEL_PCTX_ID,
	};
	int e = otel_record__new(&r->otel, &oo);

	if (e) {
		pr_err("cannot read the otel context ring: %s", strerror(-e));
		return e;
	}
	return otel_record__tick(r->otel, now_ns(CLOCK_MONOTONIC));
}

static int check_cpus(const struct int_list *want, const struct int_list *online)
{
	for (int i = 0; i < want->n; i++)
		if (!int_list_has(online, want->v[i])) {
			pr_err("-C: CPU %d is not online (online: %d-%d)", want->v[i], online->v[0],
			       online->v[online->n - 1]);
			return -EINVAL;
		}
	return 0;
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o;
	struct recorder r = {};
	struct int_list online = {};
	char err[512];
	int e, ret = 1;

	sp_prog = "spanperf record";
	e = record_parse_args(argc, argv, &o, err, sizeof(err));
	if (e == OPT_HELP)
		return 0;
	if (e) {
		pr_err("%s", err);
		goto cleanup;
	}
	sp_verbose = o.verbose;
	r.o = &o;
	if (o.nr_spans && parse_specs(&r))
		goto cleanup;
	if (run_check_privileges())
		goto cleanup;
	runctl_init();
	libbpf_setup_init();
	/* Before anything else: an unwritable -o must not cost a recording. */
	e = pd_writer__open(&r.w, o.output);
	if (e) {
		pr_err("cannot write -o '%s': %s", o.output, strerror(-e));
		goto cleanup;
	}
	r.dsos = dso_set__new();
	if (!r.dsos || host_online_cpus(&online)) {
		pr_err("cannot read the online CPUs from /sys/devices/system/cpu/online");
		goto cleanup;
	}
	r.bcache = buildid_cache__new(!o.no_buildid_cache, BUILDID_CACHE_MAX);
	if ((o.cpus.n && check_cpus(&o.cpus, &online)) || run_check_targets(&o.pids, &o.tids))
		goto cleanup;
	if (o.nr_spans) {
		struct sp_features f;

		features_probe(&f);
		if (resolve_specs(&r, &f))
			goto cleanup;
		if (resolve_events(&r, o.cpus.n ? o.cpus.v[0] : online.v[0]) || load_bpf(&r) ||
		    setup_spans(&r, &online, &f))
			goto cleanup;
	} else if (resolve_events(&r, o.cpus.n ? o.cpus.v[0] : online.v[0]) || load_bpf(&r)) {
		goto cleanup;
	}
	if (o.offcpu && setup_offcpu(&r))
		goto cleanup;
	if (open_events(&r, o.cpus.n ? &o.cpus : &online) || add_attrs(&r))
		goto cleanup;
	if (run__prepare(&r.run, o.cmd))
		goto cleanup;
	/* Slow (all of /proc/kallsyms), so done before the events run. */
	r.ktext_err = host_kernel_text(&r.ktext_start, &r.ktext_end);
	/* Every sample comes after this stamp, which the synthesized records carry. */
	r.start_tod_ns = now_ns(CLOCK_REALTIME);
	r.start_ns = now_ns(CLOCK_MONOTONIC);
	r.last_progress_ns = r.start_ns;
	if (r.cs) {
		e = counters__start(r.cs);
		if (e) {
			pr_err("cannot attach the counters program: %s", libbpf_explain(e));
			goto cleanup;
		}
		if (span_set__attach(r.spans, err, sizeof(err))) {
			pr_err("%s", err);
			goto cleanup;
		}
		/* The span ring wakes the loop when it fills. */
		r.pfds[r.nr_rings] = (struct pollfd){ .fd = span_set__ring_fd(r.spans), .events = POLLIN };
	}
	if (r.oc) {
		if (offcpu__attach(r.oc, err, sizeof(err))) {
			pr_err("%s", err);
			goto cleanup;
		}
		pr_debug("off-CPU on %s/sched_switch, the block's state from %s", offcpu__hook(r.oc),
			 offcpu__has_prev_state(r.oc) ? "the tracepoint's prev_state" : "the task");
		r.pfds[r.nr_rings + !!r.spans] = (struct pollfd){ .fd = offcpu__ring_fd(r.oc), .events = POLLIN };
	}
	if (start_events(&r))
		goto cleanup;
	e = synthesize(&r);
	if (e) {
		pr_err("cannot write -o '%s': %s", o.output, strerror(-e));
		goto cleanup;
	}
	if (o.otel && start_otel(&r))
		goto cleanup;
	if (run__start(&r.run, o.cmd, r.start_ns, o.duration))
		goto cleanup;
	if (r.otel)
		otel_record__await_cmd(r.otel, 100000000ull);
	while (run__wait(&r.run, r.pfds, r.nr_rings + !!r.spans + !!r.oc, POLL_MS)) {
		e = drain_all(&r);
		if (e) {
			pr_err("cannot write -o '%s': %s", o.output, strerror(-e));
			goto cleanup;
		}
		if (r.otel)
			otel_record__tick(r.otel, now_ns(CLOCK_MONOTONIC));
		progress(&r, false);
	}
	for (int i = 0; i < r.nr_evs; i++)
		pe_set__disable(r.sets[i]);
	if (r.cs)
		counters__stop(r.cs);
	e = drain_all(&r);
	if (!e && r.otel) {
		long n = otel_record__flush(r.otel);

		e = n < 0 ? n : 0;
	}
	/* The sums and the blocks still going, stamped now: after every other record. */
	if (!e && r.oc)
		e = offcpu__finish(r.oc, now_ns(CLOCK_MONOTONIC), on_chunk, &r);
	if (e) {
		pr_err("cannot write -o '%s': %s", o.output, strerror(-e));
		goto cleanup;
	}
	if (r.progress_shown)
		progress(&r, true);
	run__stop(&r.run);
	if (finish(&r, sp_argc, sp_argv))
		goto cleanup;
	ret = run__exit_code(&r.run);
cleanup:
	recorder_free(&r);
	int_list_free(&online);
	record_opts_free(&o);
	return ret;
}
