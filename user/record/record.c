// SPDX-License-Identifier: GPL-2.0
/*
 * The recorder: one loop over the sources of source.h.  It opens the
 * writer, loads the sampling program (whose per-thread map every source
 * shares), makes the sources the options ask for, writes their attrs and
 * the side-band synthesized from /proc, then drains every source into the
 * writer until the run is over, one FINISHED_ROUND per pass.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "buildid.h"
#include "buildid_cache.h"
#include "jit_maps.h"
#include "ehsource.h"
#include "elf_budget.h"
#include "fileio.h"
#include "hash.h"
#include "host.h"
#include "kernel_features.h"
#include "libbpf_setup.h"
#include "log.h"
#include "min_btf.h"
#include "otel_record.h"
#include "parse.h"
#include "perf_data.h"
#include "run.h"
#include "sideband.h"
#include "source.h"
#include "target.h"
#include "util.h"
#include "sample.skel.h"
#include "spanperf_abi.h"

/*
 * How often the sources are drained when they do not fill: a mapping's
 * record must be read while its process lives for the build-id cache to
 * reach a container's file (ten wakeups a second cost nothing measurable).
 */
#define POLL_MS 100
/* What copies of containers' files may take in the cache directory. */
#define BUILDID_CACHE_MAX (2ull << 30)
/* The most fds a source may poll: one per CPU's ring, and then some. */
#define MAX_FDS_PER_SOURCE 4096

/*
 * The sources, in the order of their attrs in the file, of each pass of
 * the loop, and of their stats.  Counters come before the spans that read
 * them; the samples first, since their records tell OTel of execs.
 */
static const rec_source_new_fn source_list[] = {
	samples_source__new,
	counters_source__new,
	spans_source__new,
	otel_source__new,
	offcpu_source__new,
};
#define NR_SOURCES (sizeof(source_list) / sizeof(source_list[0]))
/* The end of a recording waits this long at most for copies of files (buildid_cache.h). */
#define BUILDID_COPY_BUDGET_NS (5ull * 1000000000)

struct recorder {
	struct rec_ctx ctx;
	struct rec_source *src[NR_SOURCES];
	struct pollfd *pfds;
	int nr_pfds;
	struct pd_writer *w;
	struct run run;
	struct target target;
	struct min_btf btf_cut; /* the kernel's BTF the sampling object is relocated against, till it loads */
	struct int_list online;
	struct sp_features feat;
	struct span_spec *specs;
	__u64 start_ns, start_tod_ns;
	__u64 ktext_start, ktext_end;
	int ktext_err;
	__u64 last_progress_ns;
	bool progress_shown;
	int argc;		/* the command line, for each file's header */
	char **argv;
	/* --switch-output: when this file began, its samples so far, and the files kept */
	__u64 window_ns, window_samples, prev_window_ns;
	char **kept;
	int nr_kept;
	char last_name[PATH_MAX];
	unsigned same_stamp;	/* files stamped in one hundredth of a second: a suffix each */
	bool stop; /* on_switch asked for the end */
	/* --switch-output on a full disk: the window's file could not be opened; windows dropped (all, in a row) */
	int open_err;
	__u64 dropped, dropping;
};

#define for_each_source(r, s)                                                                 \
	for (struct rec_source **s##_p = (r)->src, *s; s##_p < (r)->src + NR_SOURCES; s##_p++) \
		if ((s = *s##_p))

static void recorder_free(struct recorder *r)
{
	run__stop(&r->run);
	target__free(&r->target);
	/* Backwards: a source may use what an earlier one made (the counters, the skeleton). */
	for (int i = NR_SOURCES - 1; i >= 0; i--)
		rec_source__free(r->src[i]);
	free(r->pfds);
	free(r->specs);
	sample_bpf__destroy(r->ctx.skel);
	min_btf__release(&r->btf_cut);
	pd_writer__free(r->w);
	dso_set__free(r->ctx.dsos);
	buildid_cache__free(r->ctx.bcache);
	jit_maps__free(r->ctx.jits);
	int_list_free(&r->online);
	for (int i = 0; i < r->nr_kept; i++)
		free(r->kept[i]);
	free(r->kept);
}

/*
 * The sampling object is CO-RE-relocated against a cut of the kernel's BTF
 * (min_btf.h): libbpf then never reads /sys/kernel/btf/vmlinux (5.5 MB,
 * 126k types on 6.18, 6-9 ms of a recorder's start).  Without one, the
 * whole BTF as before.
 */
static void cut_kernel_btf(struct recorder *r)
{
	size_t sz;
	const void *elf = sample_bpf__elf_bytes(&sz);
	int e = min_btf__get(&r->btf_cut, elf, sz);

	if (e)
		pr_debug("the sampling object is relocated against the kernel's whole BTF: %s", strerror(-e));
	else
		pr_debug("the sampling object is relocated against a cut of the kernel's BTF (%s): %u types, %u bytes, %.2f ms",
			 r->btf_cut.hit ? "cached" : r->btf_cut.stored ? "cut and kept" : "cut, not kept",
			 r->btf_cut.nr_types, r->btf_cut.size, r->btf_cut.ns / 1e6);
}

/*
 * The sampling object opened, to be relocated against btf_path (NULL: the
 * kernel's whole BTF); its maps are sized here, between open and load.
 */
static int open_sampling(struct recorder *r, const char *btf_path)
{
	const struct record_opts *o = r->ctx.o;
	struct sample_bpf *skel;
	int e;

	LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = btf_path);

	skel = sample_bpf__open_opts(&oo);
	if (!skel) {
		e = -errno;
		pr_err("cannot open the sampling BPF object: %s", strerror(-e));
		return e;
	}
	r->ctx.skel = skel;
	skel->rodata->filter_mode = r->target.mode;
	e = target__prepare(&r->target, skel->obj, skel->maps.filter);
	if (e) {
		pr_err("cannot size the sampling program's filter: %s", strerror(-e));
		return e;
	}
	/*
	 * One entry where no program reads or writes it (ehframe without spans
	 * or --otel: the records are counted, source.h): its 32768 entries were
	 * preallocated and zeroed at every start (htab_map_alloc, 4.4 MB).
	 */
	bpf_map__set_max_entries(skel->maps.threads, eh_counts_records(o) ? 1 : o->max_threads);
	otel_record_size_maps(skel->maps.otel_recipes, skel->maps.otel_events, o->otel);
	eh_source_size(skel, o->ehframe, o->verbose > 0, o->period ? 0 : o->freq);
	skel->rodata->eh_threads = !eh_counts_records(o);
	/*
	 * With the cut, the fork hook is the raw_tp twin: tp_btf's attach needs
	 * the kernel's whole BTF in libbpf (the attach id), which the cut is
	 * there to spare; the twin reads the same three fields by CO-RE.
	 */
	if (btf_path && bpf_program__autoload(skel->progs.eh_fork_btf)) {
		bpf_program__set_autoload(skel->progs.eh_fork_btf, false);
		bpf_program__set_autoload(skel->progs.eh_fork_raw, true);
	}
	/* --call-graph ehframe attaches on_sample_eh alone: on_sample unloaded is a verification less at start. */
	bpf_program__set_autoload(skel->progs.on_sample, !o->ehframe);
	/* --otel: contexts read at switch-out too (tp_btf only; without it, at samples alone, said in otel_start). */
	bpf_program__set_autoload(skel->progs.otel_switch,
				  o->otel && !o->raw_tp && features_try_attach("calib_tp_btf") == 0);
	return 0;
}

/* The sampling program loaded; its filter map is everyone's. */
static int load_bpf(struct recorder *r)
{
	const char *cut = r->btf_cut.fd >= 0 ? r->btf_cut.path : NULL;
	int e = open_sampling(r, cut), load_err = 0;

	if (!e)
		load_err = e = libbpf_load_skel(r->ctx.skel->skeleton, "sampling");
	/*
	 * A cut that fails the load (a type it left out: a fault of the
	 * cutter's) must never stop a recording: once more against the whole
	 * BTF, whose failure, if it fails too, is the one said.
	 */
	if (load_err && cut) {
		pr_debug("the sampling object did not load against the cut of the kernel's BTF (%s): "
			 "loaded again against the whole BTF", libbpf_explain(load_err));
		sample_bpf__destroy(r->ctx.skel);
		r->ctx.skel = NULL;
		load_err = 0;
		e = open_sampling(r, NULL);
		if (!e)
			load_err = e = libbpf_load_skel(r->ctx.skel->skeleton, "sampling");
	}
	/* libbpf has read the cut by now (and freed it after relocating). */
	min_btf__release(&r->btf_cut);
	if (load_err)
		pr_err("cannot load the sampling BPF program: %s", libbpf_explain(load_err));
	return e ?: target__loaded(&r->target, r->ctx.skel->obj, r->ctx.skel->maps.filter);
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

/* The --span specs, resolved against this kernel and these files. */
static int resolve_specs(struct recorder *r)
{
	const struct record_opts *o = r->ctx.o;
	char err[512];

	features_probe(&r->feat);
	r->ctx.feat = &r->feat;
	r->specs = calloc(o->nr_spans, sizeof(*r->specs));
	if (!r->specs)
		return -ENOMEM;
	memcpy(r->specs, o->specs, o->nr_spans * sizeof(*r->specs));
	r->ctx.specs = r->specs;
	for (int i = 0; i < o->nr_spans; i++) {
		const struct span_spec *sp = &r->specs[i];

		if (span_spec_resolve(&r->specs[i], &r->feat, o->raw_tp, err, sizeof(err))) {
			pr_err("%s", err);
			return -EINVAL;
		}
		if (sp->raw_syscall)
			pr_debug("--span '%s': on raw_syscalls, syscall number %d (%s)", sp->text, sp->sysnr,
				 o->raw_tp ? "--raw-tp" : "no syscall tracepoints");
	}
	return 0;
}

/* Without a file the records went to the sink alone, which said why it failed. */
static void say_write_error(const struct recorder *r, const char *name, int e)
{
	char why[PATH_MAX + 64];

	if (r->ctx.o->output)
		pr_err("cannot write -o '%s': %s", name, write_strerror(e, name, why, sizeof(why)));
}

/* --switch-output: a full disk drops the window, not the recording (pd_writer__keep_going). */
static bool drops_windows(const struct recorder *r, int e)
{
	return r->ctx.o->switch_output && r->ctx.o->output && (e == -ENOSPC || e == -EDQUOT);
}

/* A new window's writer; on a full disk, one without a file, for a window to drop. */
static int open_writer(struct recorder *r)
{
	const struct record_opts *o = r->ctx.o;
	int e = pd_writer__open(&r->w, o->output);

	r->open_err = 0;
	if (e && drops_windows(r, e)) {
		r->open_err = e;
		e = pd_writer__open(&r->w, NULL);
	}
	if (!e && o->switch_output && o->output)
		pd_writer__keep_going(r->w);
	return e;
}

/* What the options ask for, made and loaded; nothing runs yet. */
static int open_sources(struct recorder *r)
{
	const struct record_opts *o = r->ctx.o;
	int e;

	/* Before anything else: an unwritable -o must not cost a recording. */
	e = pd_writer__open(&r->w, o->output);
	if (e) {
		say_write_error(r, o->output, e);
		return e;
	}
	if (o->switch_output && o->output)
		pd_writer__keep_going(r->w);
	if (o->sink)
		pd_writer__set_sink(r->w, o->sink);
	r->ctx.dsos = dso_set__new();
	if (!r->ctx.dsos || host_online_cpus(&r->online)) {
		pr_err("cannot read the online CPUs from /sys/devices/system/cpu/online");
		return -ENOENT;
	}
	r->ctx.online = &r->online;
	r->ctx.bcache = buildid_cache__new(!o->no_buildid_cache, o->perf_cache, BUILDID_CACHE_MAX);
	r->ctx.jits = jit_maps__new();
	e = o->cpus.n ? check_cpus(&o->cpus, &r->online) : 0;
	e = e ?: run_check_targets(&o->pids, &o->tids);
	cut_kernel_btf(r);
	/* With the cut, the raw_tp twins: a tp_btf program would have libbpf parse the whole BTF anyway. */
	target__init(&r->target, &o->pids, &o->tids,
		     target_follows_cmd(o->cmd, o->all_cpus, &o->pids, &o->tids, &o->cpus), o->max_threads,
		     o->raw_tp || r->btf_cut.fd >= 0);
	r->ctx.target = &r->target;
	e = e ?: o->nr_spans ? resolve_specs(r) : 0;
	e = e ?: load_bpf(r);
	for (size_t i = 0; i < NR_SOURCES && !e; i++)
		e = source_list[i](&r->src[i], &r->ctx);
	return e;
}

static int write_attrs(struct recorder *r)
{
	int e = 0;

	for_each_source(r, s)
		if (s->attrs && !e)
			e = s->attrs(s, r->w);
	if (e)
		return e;
	/* The file's first bytes: a full disk is said here, not only by the exit status. */
	e = pd_writer__begin(r->w);
	if (e)
		say_write_error(r, r->ctx.o->output, e);
	return e;
}

/* The pollfd set, from what each source says wakes it. */
static int build_pollfds(struct recorder *r)
{
	const struct record_opts *o = r->ctx.o;
	int cap = 0, fds[MAX_FDS_PER_SOURCE];

	for_each_source(r, s) {
		int n = s->fds ? s->fds(s, fds, MAX_FDS_PER_SOURCE) : 0;
		struct pollfd *p;

		if (n < 0)
			return n;
		if (r->nr_pfds + n > cap) {
			cap = r->nr_pfds + n;
			p = realloc(r->pfds, cap * sizeof(*p));
			if (!p)
				return -ENOMEM;
			r->pfds = p;
		}
		for (int i = 0; i < n; i++)
			r->pfds[r->nr_pfds++] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	}
	if (o->on_pass && o->wake_fd >= 0) {
		struct pollfd *p = realloc(r->pfds, (r->nr_pfds + 1) * sizeof(*p));

		if (!p)
			return -ENOMEM;
		r->pfds = p;
		r->pfds[r->nr_pfds++] = (struct pollfd){ .fd = o->wake_fd, .events = POLLIN };
	}
	return 0;
}

/*
 * The side-band from /proc, stamped time: before every sample of the file.
 * Each --switch-output file gets its own, as perf re-synthesizes, so that
 * it reads on its own.
 */
static int synthesize(struct recorder *r, __u64 time)
{
	const struct record_opts *o = r->ctx.o;
	struct sideband sb = {
		.w = r->w,
		.attr = r->ctx.track_attr,
		.id = r->ctx.track_id,
		.time = time,
		.dsos = r->ctx.dsos,
		.bcache = r->ctx.bcache,
		.jits = r->ctx.jits,
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
	if (o->tids.n) {
		e = sideband_synthesize_tids(&sb, &o->tids);
	} else if (r->target.mode == SP_FILTER_TREE) {
		/* CMD's tree as it is now: at the start CMD alone, not yet run; then what it forked. */
		struct int_list tree = {};

		e = target__pids(&r->target, &tree) ?: sideband_synthesize(&sb, &tree);
		int_list_free(&tree);
	} else {
		e = sideband_synthesize(&sb, o->pids.n ? &o->pids : NULL);
	}
	if (e) {
		say_write_error(r, o->output, e);
		return e;
	}
	pr_debug("synthesized %lu processes: %lu COMM, %lu MMAP2; %lu module MMAPs", sb.nr_procs, sb.nr_comm,
		 sb.nr_mmap, sb.nr_modules);
	if (sb.nr_cut)
		pr_warn("%lu /proc/PID/maps lines came without their newline (cut short) and were dropped", sb.nr_cut);
	return 0;
}

/* Every source attached and running, after the start stamp; then the side-band. */
static int start_sources(struct recorder *r)
{
	int e = 0;

	if (run__prepare(&r->run, r->ctx.o->cmd))
		return -EINVAL;
	r->ctx.run = &r->run;
	/* CMD, held until run__start, is in the filter before the sources start. */
	if (r->run.have_cmd && (e = target__follow(&r->target, r->run.wl.pid)))
		return e;
	/* Slow (all of /proc/kallsyms), so done before the sources run. */
	r->ktext_err = host_kernel_text(&r->ktext_start, &r->ktext_end);
	/* Every sample comes after this stamp, which the synthesized records carry. */
	r->start_tod_ns = now_ns(CLOCK_REALTIME);
	r->start_ns = now_ns(CLOCK_MONOTONIC);
	r->last_progress_ns = r->start_ns;
	r->window_ns = r->prev_window_ns = r->start_ns;
	for_each_source(r, s)
		if (s->start && !e)
			e = s->start(s);
	return e ?: synthesize(r, r->start_ns) ?: build_pollfds(r);
}

/* One pass over every source, then FINISHED_ROUND so perf can sort in rounds. */
static int drain_all(struct recorder *r)
{
	bool any = false;

	for_each_source(r, s) {
		long n = s->drain ? s->drain(s, r->w) : 0;

		if (n < 0)
			return n;
		any |= n > 0;
	}
	target__pass(&r->target);
	if (any) {
		char buf[8];
		long n = pd_sideband_write(buf, sizeof(buf), NULL, &(struct pd_sideband){ .type = PD_RECORD_FINISHED_ROUND });

		r->ctx.sorted_ns = r->ctx.round_ns;
		r->ctx.round_ns = now_ns(CLOCK_MONOTONIC);
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
		(now - r->start_ns) / 1e9, (unsigned long long)r->ctx.samples,
		pd_writer__data_size(r->w) / 1e6, final ? "\n" : "");
	r->progress_shown = !final;
}

/* --switch-output, below with the header. */
static bool switch_due(struct recorder *r);
static int rotate(struct recorder *r);

/* The loop's period, or sooner where a source needs it (ehframe while processes start). */
static int poll_ms(struct recorder *r)
{
	int ms = POLL_MS;

	for_each_source(r, s)
		if (s->poll_ms) {
			/*
			 * Called once a pass, out of SP_MIN, which evaluates its
			 * arguments twice: ehframe counts the passes here (record -v),
			 * and counted each twice.
			 */
			int want = s->poll_ms(s, POLL_MS);

			ms = SP_MIN(ms, want);
		}
	return ms;
}

/* Until -d, CMD's exit or a signal; then every source stopped, drained and finished. */
static int loop(struct recorder *r)
{
	const struct record_opts *o = r->ctx.o;
	int e;

	if (run__start(&r->run, o->cmd, r->start_ns, o->duration))
		return -EINVAL;
	if (r->ctx.otel)
		otel_record__await_cmd(r->ctx.otel, 100000000ull);
	while (run__wait(&r->run, r->pfds, r->nr_pfds, poll_ms(r))) {
		e = drain_all(r);
		if (e)
			goto out;
		jit_maps__poll(r->ctx.jits, now_ns(CLOCK_MONOTONIC));
		if (switch_due(r)) {
			e = rotate(r);
			if (e)
				return e;
			if (r->stop)
				break;
		}
		if (o->on_pass && o->on_pass(o->on_switch_arg))
			break;
		progress(r, false);
	}
	for_each_source(r, s)
		if (s->stop)
			s->stop(s);
	e = drain_all(r);
	if (!e) {
		/* Stamped now: after every other record. */
		__u64 end = now_ns(CLOCK_MONOTONIC);

		for_each_source(r, s)
			if (s->finish && !e)
				e = s->finish(s, r->w, end);
	}
out:
	if (e)
		say_write_error(r, o->output, e);
	return e;
}

/*
 * What BPF saw: the samples it passed (summed over the threads map, which
 * nothing deletes from, plus those refused because it was full), so that -v
 * can compare them with what the rings delivered.
 */
static void bpf_counts(struct recorder *r, __u64 *accepted, __u64 *threads_full, int *threads)
{
	int fd = bpf_map__fd(r->ctx.skel->maps.threads);
	__u32 key, next, *prev = NULL;
	struct sp_thread t;

	*threads = 0;
	*threads_full = bpf_percpu_sum(bpf_map__fd(r->ctx.skel->maps.stats), SP_STAT_THREADS_FULL);
	*accepted = *threads_full;
	if (r->ctx.thread_samples) {
		/* No program ran: the records' own count, all of which the rings delivered. */
		const struct u64_map *m = r->ctx.thread_samples;

		for (size_t i = 0; i < m->cap; i++)
			if (m->used[i]) {
				(*threads)++;
				*accepted += m->slot[i].val;
			}
		return;
	}
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

/* -v: the threads as the records counted them, their names from /proc ("-" once gone). */
static int records_threads(struct recorder *r, struct tid_thread **out)
{
	const struct u64_map *m = r->ctx.thread_samples;
	struct tid_thread *all = calloc(m->n ? m->n : 1, sizeof(*all));
	int n = 0;

	*out = all;
	for (size_t i = 0; all && i < m->cap && (size_t)n < m->n; i++) {
		uint64_t *pid;
		char path[64];

		if (!m->used[i])
			continue;
		all[n].tid = m->slot[i].key;
		all[n].t.samples = m->slot[i].val;
		pid = u64_map_get(r->ctx.thread_pids, all[n].tid, false);
		all[n].t.pid = pid ? *pid : 0;
		snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", all[n].t.pid, all[n].tid);
		if (read_file_str(path, all[n].t.comm, sizeof(all[n].t.comm)))
			strcpy(all[n].t.comm, "-");
		all[n].t.comm[strcspn(all[n].t.comm, "\n")] = 0;
		n++;
	}
	return n;
}

/* -v: the per-thread map as BPF counted it, or the records did, busiest first. */
static void print_threads(struct recorder *r)
{
	int fd = bpf_map__fd(r->ctx.skel->maps.threads), n = 0, cap = 0;
	struct tid_thread *all = NULL, *na;
	__u32 key, next, *prev = NULL;

	if (r->ctx.thread_samples)
		n = records_threads(r, &all);
	while (!r->ctx.thread_samples && !bpf_map_get_next_key(fd, prev, &next)) {
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
	fprintf(stderr, "per-thread samples (%s):\n%8s %8s %-16s %10s\n",
		!r->ctx.thread_samples ? "BPF map"
		: r->ctx.o->ehframe    ? "from the records"
				       : "from the records, no program on the events",
		"tid", "pid", "comm",
		"samples");
	for (int i = 0; i < n && (i < 20 || sp_verbose > 1); i++)
		fprintf(stderr, "%8u %8u %-16.16s %10llu\n", all[i].tid, all[i].t.pid, all[i].t.comm,
			(unsigned long long)all[i].t.samples);
	free(all);
}

/*
 * perf's name for a --switch-output file: OUTPUT.YYYYMMDDHHMMSScc, local
 * time to the hundredth of a second (perf's fetch_current_timestamp).
 */
static int stamped_name(const char *output, char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	char dt[32];

	if (clock_gettime(CLOCK_REALTIME, &ts) || !localtime_r(&ts.tv_sec, &tm) ||
	    !strftime(dt, sizeof(dt), "%Y%m%d%H%M%S", &tm))
		return -EINVAL;
	if ((size_t)snprintf(buf, len, "%s.%s%02ld", output, dt, ts.tv_nsec / 10000000) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/*
 * The next file's stamped name.  Two files may end within one hundredth of a
 * second (a size switch just before the end): the second then gets "-1",
 * "-2", ..., which sorts after the first and before the next stamp, where
 * the same name would have renamed the first to NAME.old and lost it.
 */
static int next_stamped_name(struct recorder *r)
{
	char prev[sizeof(r->last_name)];
	size_t n;
	int e;

	snprintf(prev, sizeof(prev), "%s", r->last_name);
	e = stamped_name(r->ctx.o->output, r->last_name, sizeof(r->last_name));
	if (e)
		return e;
	n = strlen(r->last_name);
	if (strncmp(prev, r->last_name, n) || (prev[n] && prev[n] != '-')) {
		r->same_stamp = 0;
		return 0;
	}
	if ((size_t)snprintf(r->last_name + n, sizeof(r->last_name) - n, "-%u", ++r->same_stamp) >=
	    sizeof(r->last_name) - n)
		return -ENAMETOOLONG;
	return 0;
}

/* --switch-max-files: the newest N files kept, the oldest deleted, as perf does. */
static void keep_file(struct recorder *r, const char *name)
{
	const struct record_opts *o = r->ctx.o;
	char *dup;

	if (!o->switch_max_files)
		return;
	dup = strdup(name);
	if (!r->kept)
		r->kept = calloc(o->switch_max_files, sizeof(*r->kept));
	if (!dup || !r->kept) {
		free(dup);
		pr_warn("out of memory: %s will not be counted against --switch-max-files", name);
		return;
	}
	if ((__u64)r->nr_kept == o->switch_max_files) {
		if (unlink(r->kept[0]) && errno != ENOENT)
			pr_warn("cannot delete the oldest file '%s': %s", r->kept[0], strerror(errno));
		free(r->kept[0]);
		memmove(r->kept, r->kept + 1, (r->nr_kept - 1) * sizeof(*r->kept));
		r->nr_kept--;
	}
	r->kept[r->nr_kept++] = dup;
}

/* The header: the host, the command line, the clock and the build ids of the files seen. */
static int write_header(struct recorder *r)
{
	int argc = r->argc;
	char **argv = r->argv;
	struct pd_meta meta = { .clockid = CLOCK_MONOTONIC, .clockid_res_ns = 1 };
	struct timespec res;
	int e = r->open_err ?: pd_writer__file_error(r->w);

	if (e) /* a window to drop: nothing more to find out for it */
		return e;
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
	meta.first_sample_ns = r->ctx.first_ns;
	meta.last_sample_ns = r->ctx.last_ns;
	if (meta.first_sample_ns > meta.last_sample_ns) /* a window without samples */
		meta.first_sample_ns = meta.last_sample_ns = 0;
	e = dso_set__build_ids(r->ctx.dsos, &meta);
	if (e)
		pr_warn("build ids incomplete: %s", strerror(-e));
	buildid_cache__finish(r->ctx.bcache, BUILDID_COPY_BUDGET_NS, &meta);
	if (jit_maps__put(r->ctx.jits, &meta))
		pr_warn("out of memory: containers' JIT perf maps are not in the file");
	for_each_source(r, s)
		if (s->meta && (e = s->meta(s, &meta)))
			pr_warn("the %s source's header feature is incomplete: %s", s->name, strerror(-e));
	e = r->ctx.o->switch_output ? next_stamped_name(r) : 0;
	if (!r->ctx.o->switch_output)
		snprintf(r->last_name, sizeof(r->last_name), "%s", r->ctx.o->output);
	e = e ?: r->ctx.o->switch_output ? pd_writer__retarget(r->w, r->last_name) : 0;
	e = e ?: pd_writer__finish(r->w, &meta);
	pd_meta_free(&meta);
	return e;
}

/*
 * --switch-output on a full disk: the window's file is dropped (its
 * temporary removed with its writer), counted, and the recording goes on.
 * Said when the dropping begins and when a file fits again, not per window.
 */
static void window_dropped(struct recorder *r, int e)
{
	char why[PATH_MAX + 64];

	r->dropped++;
	if (!r->dropping++)
		pr_warn("cannot write -o '%s': %s; windows are dropped until there is room", r->ctx.o->output,
			write_strerror(e, r->ctx.o->output, why, sizeof(why)));
}

/*
 * The end of the file (its header), or of a window without one; with
 * --switch-output, the window's end is said and on_switch told, once the
 * sink has had every record of it.
 */
static int end_window(struct recorder *r)
{
	const struct record_opts *o = r->ctx.o;
	int e = o->output ? write_header(r) : 0;
	bool dropped = e && drops_windows(r, e);

	if (dropped)
		window_dropped(r, e);
	else if (e)
		say_write_error(r, r->last_name[0] ? r->last_name : o->output, e);
	if ((e && !dropped) || !o->switch_output)
		return e;
	if (o->output && !dropped) {
		if (r->dropping)
			pr_warn("%llu windows dropped; -o '%s' has room again", (unsigned long long)r->dropping,
				o->output);
		r->dropping = 0;
		/* perf's "[ perf record: Dump NAME ]", with what the file holds for scripts. */
		if (sp_verbose >= 0)
			fprintf(stderr, "%s[ spanperf record: dump %s: %llu samples ]\n", r->progress_shown ? "\n" : "",
				r->last_name, (unsigned long long)(r->ctx.samples - r->window_samples));
		r->progress_shown = false;
		keep_file(r, r->last_name);
	}
	/* A dropped window has no file: its consumers are ended as without one. */
	if (o->on_switch && o->on_switch(o->output && !dropped ? r->last_name : NULL, o->on_switch_arg))
		r->stop = true;
	return 0;
}

/*
 * --switch-output: this file completed as at the end of a run (its header,
 * build ids, the stamped name), then a new one with the same attrs and its
 * own side-band.  The sources keep running: what their rings hold goes to
 * the new file.  What sources write only at finish (--off-cpu's sums and
 * blocks still open) goes to the last file.  The sink has had the attrs and
 * the side-band from the rings: it gets the new file's records from the
 * next drain on.  Without a file, a window only ends.
 */
static int rotate(struct recorder *r)
{
	const struct record_opts *o = r->ctx.o;
	__u64 now = now_ns(CLOCK_MONOTONIC);
	int e = 0;

	for_each_source(r, s)
		if (o->window_sums && s->window_end && !e)
			e = s->window_end(s, r->w, now);
	e = e ?: end_window(r);

	if (e)
		return e;
	/*
	 * Stamped at the last file's start: a sample still in a ring from
	 * before now must find its process in this file too.
	 */
	r->prev_window_ns = r->window_ns;
	r->window_ns = now;
	r->window_samples = r->ctx.samples;
	r->ctx.first_ns = ~0ull;
	r->ctx.last_ns = 0;
	if (!o->output)
		return 0;
	pd_writer__free(r->w);
	r->w = NULL;
	e = open_writer(r);
	if (e) {
		say_write_error(r, o->output, e);
		return e;
	}
	e = write_attrs(r);
	if (e)
		return e;
	e = synthesize(r, r->prev_window_ns);
	if (!e)
		pd_writer__set_sink(r->w, o->sink);
	return e;
}

static bool switch_due(struct recorder *r)
{
	const struct record_opts *o = r->ctx.o;

	if (!o->switch_output)
		return false;
	if (runctl_switch_requested())
		return true;
	if (o->switch_size && pd_writer__data_size(r->w) >= o->switch_size)
		return true;
	return o->switch_ns && now_ns(CLOCK_MONOTONIC) - r->window_ns >= o->switch_ns;
}

/* The one line of figures, then each source's losses, then the sampling program's. */
static void summary(struct recorder *r)
{
	const struct record_opts *o = r->ctx.o;
	__u64 accepted, full, spans = 0;
	bool makes_spans = false;
	int threads;

	bpf_counts(r, &accepted, &full, &threads);
	for_each_source(r, s) {
		makes_spans |= s->makes_spans;
		spans += s->spans;
	}
	if (sp_verbose >= 0) {
		fprintf(stderr, "[ spanperf record: %llu samples from %d threads in %.1f s",
			(unsigned long long)r->ctx.samples, threads, (now_ns(CLOCK_MONOTONIC) - r->start_ns) / 1e9);
		if (r->ctx.lost)
			fprintf(stderr, ", %llu LOST (ring full: raise -m or lower -F)", (unsigned long long)r->ctx.lost);
		if (makes_spans)
			fprintf(stderr, ", %llu spans", (unsigned long long)spans);
		if (r->dropped)
			fprintf(stderr, ", %llu windows dropped (disk full)", (unsigned long long)r->dropped);
		if (o->switch_output || !o->output)
			fprintf(stderr, " ]\n");
		else
			fprintf(stderr, "; wrote %.2f MB to %s ]\n", pd_writer__data_size(r->w) / 1e6, o->output);
	}
	for_each_source(r, s)
		if (s->stats)
			s->stats(s);
	elf_budget_say();
	if (full)
		pr_warn("%llu samples came from threads that found the per-thread map full; raise --max-threads above %llu",
			(unsigned long long)full, (unsigned long long)o->max_threads);
	full = target__full(&r->target, bpf_map__fd(r->ctx.skel->maps.stats));
	if (full)
		pr_warn("%llu processes of the command's were not followed: more than --max-threads (%llu) at once",
			(unsigned long long)full, (unsigned long long)o->max_threads);
	if (r->target.mode == SP_FILTER_TREE)
		pr_debug("-- CMD: %llu processes of the command's tree left the BPF filter as they ended",
			 (unsigned long long)r->target.pruned);
	if (sp_verbose > 0) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);

		if (r->ctx.thread_samples && !o->ehframe)
			fprintf(stderr, "no sampling program (no filter, spans or --otel); the rings delivered %llu and lost %llu\n",
				(unsigned long long)r->ctx.samples, (unsigned long long)r->ctx.lost);
		else if (r->ctx.thread_samples)
			fprintf(stderr, "the rings delivered %llu samples (counted from the records) and lost %llu\n",
				(unsigned long long)r->ctx.samples, (unsigned long long)r->ctx.lost);
		else
			fprintf(stderr, "BPF accepted %llu samples; the rings delivered %llu and lost %llu\n",
				(unsigned long long)accepted, (unsigned long long)r->ctx.samples,
				(unsigned long long)r->ctx.lost);
		/* Only with kernel.bpf_stats_enabled=1: this program's own cost, whoever else loads one. */
		struct bpf_program *prog = o->ehframe ? r->ctx.skel->progs.on_sample_eh : r->ctx.skel->progs.on_sample;

		if (!bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) &&
		    info.run_cnt)
			fprintf(stderr, "sampling program: %llu runs, %.0f ns each (bpf_stats)\n",
				(unsigned long long)info.run_cnt, (double)info.run_time_ns / info.run_cnt);
		print_threads(r);
	}
	buildid_cache__report(r->ctx.bcache);
	jit_maps__report(r->ctx.jits);
}

/*
 * ehframe needs helpers a kernel may lack (eh_source_check, probed once):
 * asked for by name, that is an error; under -g, frame pointers instead.
 */
static int choose_unwinder(struct record_opts *o)
{
	char why[128];

	if (!o->ehframe || !eh_source_check(why, sizeof(why)))
		return 0;
	if (!o->ehframe_auto) {
		pr_err("--call-graph ehframe %s; --call-graph dwarf works without it", why);
		return -EOPNOTSUPP;
	}
	o->ehframe = false;
	pr_debug("-g takes user chains by frame pointers, as perf's: --call-graph ehframe %s", why);
	return 0;
}

int record__run(const struct record_opts *opts, int argc, char **argv, int *exit_code)
{
	struct record_opts eff = *opts; /* as this kernel can: -g's ehframe may become fp */
	const struct record_opts *o = &eff;
	struct recorder r = { .ctx.o = o, .argc = argc, .argv = argv };
	int e;

	*exit_code = 1;
	e = run_check_privileges();
	if (e)
		return e;
	runctl_init();
	if (o->switch_output)
		runctl_catch_switch();
	libbpf_setup_init();
	e = choose_unwinder(&eff) ?: open_sources(&r) ?: write_attrs(&r) ?: start_sources(&r) ?: loop(&r);
	if (e)
		goto cleanup;
	if (r.progress_shown)
		progress(&r, true);
	run__stop(&r.run);
	e = end_window(&r);
	if (e)
		goto cleanup;
	summary(&r);
	*exit_code = run__exit_code(&r.run);
cleanup:
	recorder_free(&r);
	return e;
}
