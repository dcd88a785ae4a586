// SPDX-License-Identifier: GPL-2.0
/* The report engine: the consumers the options need, one pass, then the outputs. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "atomic_file.h"
#include "ch_reader.h"
#include "ch_wire.h"
#include "debuginfo.h"
#include "elf_budget.h"
#include "fileio.h"
#include "hash.h"
#include "log.h"
#include "map_guard.h"
#include "perf_data.h"
#include "report.h"
#include "report_html.h"
#include "report_spans.h"
#include "session.h"
#include "unwind.h"
#include "util.h"

/* Writes a file through a temporary name, so that a failure leaves nothing half-written. */
static int write_output(const char *path, int (*fn)(const struct profile *, FILE *, const void *),
			const struct profile *p, const void *arg)
{
	struct atomic_file af;
	FILE *f;
	int e = atomic_file__open(&af, path, 0644, false);

	if (e)
		return e;
	f = atomic_file__stdio(&af);
	e = f ? fn(p, f, arg) : -errno;
	/* A renderer says -EIO of a failed fwrite: the stream knows it was ENOSPC. */
	e = e ? atomic_file__error(&af, e) : atomic_file__commit(&af);
	atomic_file__release(&af);
	return e;
}

/* The end of "cannot write PATH: ...": a full disk names its file system ("-" is stdout). */
static const char *write_error(int e, const char *path, char *buf, size_t len)
{
	return path && strcmp(path, "-") ? write_strerror(e, path, buf, len) : write_strerror_fd(e, STDOUT_FILENO, buf, len);
}

static int flame_fn(const struct profile *p, FILE *f, const void *title)
{
	return report_flamegraph(p, title, f);
}

static int pprof_fn(const struct profile *p, FILE *f, const void *arg)
{
	(void)arg;
	return report_pprof(p, f);
}

/* As perf report: one section per event, on-CPU first; or the one --event chose. */
static int report_tables(const struct profile *p, bool ev_set, enum pview ev, const struct table_opts *to)
{
	struct profile v;
	int e;

	if (!ev_set || ev == PV_ON_CPU) {
		e = report_table(p, to, stdout);
		if (e || ev_set || !p->nr_off_stacks)
			return e;
		if (!to->json)
			fputc('\n', stdout);
		ev = PV_OFF_CPU;
	}
	e = profile_view(p, ev, false, &v) ?: report_table(&v, to, stdout);
	profile_view_free(&v);
	return e;
}

/* --span-prefix: the spans as report --spans (or annotate) places them, before the stacks in them. */
static int add_prefixes(struct profile *p, struct span_report *sr, char *err, size_t errlen)
{
	struct span_label *l = NULL;
	struct strpool pool = {};
	size_t n = 0;
	int e = span_report__finish(sr, err, errlen);

	if (!e && (e = span_report__labels(sr, &pool, &l, &n)))
		set_errorf(err, errlen, e, "out of memory joining spans of %s", p->rd->path);
	for (size_t i = 0; !e && i < n; i++)
		if ((e = profile__add_prefix_span(p, l[i].tid, l[i].start, l[i].end, l[i].label)))
			set_errorf(err, errlen, e, "out of memory reading %s", p->rd->path);
	if (!e)
		pr_debug("%s: %zu spans prefix the stacks of %llu samples", p->rd->path, n,
			 (unsigned long long)p->samples);
	free(l);
	strpool_free(&pool);
	return e;
}

/*
 * The profile in one pass; with span_prefix the span join rides the same
 * pass (and the same symbolizer), and its spans split the stacks after it.
 */
static int load_profile(struct session *sess, struct profile **p, const struct report_opts *o, char *err,
			size_t errlen)
{
	struct profile_opts po = { .span_prefix = o->span_prefix, .inline_frames = o->inline_frames,
				   .srclines = has_sort_key(&o->table, SK_SRCLINE) || o->pprof,
				   .full_srcline = o->full_srcline, .unknown_offsets = o->unknown_offsets,
				   /* A table without -g reads the sampled address alone, as perf report -g none does. */
				   .leaf_only = !o->table.callgraph && !o->folded && !o->flame && !o->pprof &&
						!o->span_prefix };
	struct spans_report_opts so = { .input = o->input, .external = o->external };
	struct span_report *sr = NULL;
	int e = profile__new(p, sess, &po);

	if (e)
		return set_errorf(err, errlen, e, "cannot read %s: %s", o->input, strerror(-e));
	e = o->span_prefix ? span_report__new(&sr, sess, &so, err, errlen) : 0;
	if (!e)
		e = session__run(sess, err, errlen);
	if (!e && sr)
		e = add_prefixes(*p, sr, err, errlen);
	/* --percent-limit: every output shows the samples of the table's rows. */
	if (!e && (e = profile__finish(*p) ?: table__limit(*p, &o->table)))
		set_errorf(err, errlen, e, "out of memory reading %s", o->input);
	span_report__free(sr);
	return e;
}

/* Some failures (out of memory) leave err unwritten: then errno's words. */
static void say_read_error(const char *input, int e, const char *err)
{
	if (err[0])
		pr_err("%s", err);
	else
		pr_err("cannot read %s: %s", input, strerror(-e));
}

static void say_what_was_read(const char *input, const struct profile *p)
{
	pr_debug("%s: %llu samples in %zu distinct stacks of %zu functions; %llu processes started by fork "
		 "(each with its parent's maps), %llu execs; %llu samples lost while recording; %d dsos read from "
		 "the build-id cache (containers' files, or files gone from their paths), %d entries there not used as "
		 "their bytes are not those the recording copied",
		 input, (unsigned long long)p->samples, p->nr_stacks, p->nr_funcs,
		 (unsigned long long)p->sess->forks, (unsigned long long)p->sess->execs, (unsigned long long)p->lost,
		 symbolizer__from_cache(p->sym), symbolizer__cache_rejected(p->sym));
	{
		__u64 named, repeats;

		symbolizer__python_counts(p->sym, &named, &repeats);
		if (named || p->sess->python_bad)
			pr_debug("%s: %llu Python code objects named (%llu records of them repeated), %llu records not read",
				 input, (unsigned long long)named, (unsigned long long)repeats,
				 (unsigned long long)p->sess->python_bad);
	}
	elf_budget_say();
	if (sp_verbose >= 1) {
		pd_reader__print_features(p->sess->rd, stderr); /* where and how it was recorded */
		unwinder__print_stats(p->unwinder, stderr);
	}
}

static int write_flamegraph(const struct report_opts *o, const struct profile *shown, bool ns)
{
	char title[600], why[PATH_MAX + 64];
	int e;

	snprintf(title, sizeof(title), "%s: %llu samples of %s%s", o->input, (unsigned long long)shown->samples,
		 shown->event ? shown->event : "?", ns ? ", in ns" : "");
	e = shown->samples ? write_output(o->flame, flame_fn, shown, title) : -ENODATA;
	if (e)
		pr_err("cannot write --flamegraph '%s': %s", o->flame,
		       e != -ENODATA		    ? write_error(e, o->flame, why, sizeof(why))
		       : profile_total_samples(shown) || report_filter_active(&o->filter) ? "no sample passes the filters"
											     : "the file has no samples");
	return e;
}

/* Every output of the profile the options ask for; 0, or 1 after saying why. */
static int profile_outputs(const struct report_opts *o, const struct profile *p)
{
	struct profile view = {};
	const struct profile *shown = p;
	char why[PATH_MAX + 64];
	int e = 0, ret = 1;

	/* Off-CPU and wall views weigh stacks by their nanoseconds. */
	if (o->ev_set && o->ev != PV_ON_CPU) {
		e = profile_view(p, o->ev, true, &view);
		if (e) {
			pr_err("cannot report %s: %s", o->input, strerror(-e));
			goto cleanup;
		}
		shown = &view;
	}
	if (o->flame && write_flamegraph(o, shown, shown != p))
		goto cleanup;
	if (o->pprof && (e = write_output(o->pprof, pprof_fn, p, NULL))) {
		pr_err("cannot write --pprof '%s': %s", o->pprof, write_error(e, o->pprof, why, sizeof(why)));
		goto cleanup;
	}
	if (o->folded)
		e = report_folded(shown, stdout, o->wakers);
	else if (!o->flame && !o->pprof)
		e = report_tables(p, o->ev_set, o->ev, &o->table);
	if (e) {
		pr_err("%s %s: %s", o->external ? "cannot write the folded stacks of" : "cannot report", o->input,
		       write_error(e, NULL, why, sizeof(why)));
		goto cleanup;
	}
	if (fflush(stdout)) {
		write_error(stdio_error(), NULL, why, sizeof(why));
		if (o->external)
			pr_err("cannot write the folded stacks of %s: %s", o->input, why);
		else
			pr_err("cannot write the report: %s", why);
		goto cleanup;
	}
	ret = 0;
cleanup:
	profile_view_free(&view);
	return ret;
}

static int html_fn(const struct timeline *t, FILE *f, const char *input)
{
	return report_html(t, input, f);
}

static int speedscope_fn(const struct timeline *t, FILE *f, const char *input)
{
	return report_speedscope(t, input, f);
}

/* As write_output, for the outputs over a timeline; "-" is stdout. */
static int write_timeline(const char *path, int (*fn)(const struct timeline *, FILE *, const char *),
			  const struct timeline *t, const char *input)
{
	struct atomic_file af;
	FILE *f;
	int e;

	if (!strcmp(path, "-"))
		return fn(t, stdout, input) ?: (fflush(stdout) ? -errno : 0);
	e = atomic_file__open(&af, path, 0644, false);
	if (e)
		return e;
	f = atomic_file__stdio(&af);
	e = f ? fn(t, f, input) : -errno;
	e = e ? atomic_file__error(&af, e) : atomic_file__commit(&af);
	atomic_file__release(&af);
	return e;
}

/*
 * --html and --speedscope over a built timeline of input (a file's or a
 * fleet's), saying first how it was thinned; 0, or 1 once an output failed.
 */
static int write_visuals(const struct report_opts *o, const struct timeline *t, const char *input)
{
	char why[PATH_MAX + 64];
	int e;

	if (t->sample_every > 1 || t->nr_spans < t->spans_total)
		pr_warn("%s: %llu samples and %llu spans; the %s keeps 1 sample in %llu of each thread and the %zu longest spans (--max-samples, --max-spans)",
			input, (unsigned long long)t->p->samples, (unsigned long long)t->spans_total,
			o->html ? "page" : "profile", (unsigned long long)t->sample_every, t->nr_spans);
	if (o->html && (e = write_timeline(o->html, html_fn, t, input))) {
		pr_err("cannot write --html '%s': %s", o->html, write_error(e, o->html, why, sizeof(why)));
		return 1;
	}
	if (o->speedscope && (e = write_timeline(o->speedscope, speedscope_fn, t, input))) {
		pr_err("cannot write --speedscope '%s': %s", o->speedscope,
		       write_error(e, o->speedscope, why, sizeof(why)));
		return 1;
	}
	return 0;
}

/*
 * --html and --speedscope: the profile (keeping each sample's time) and the
 * span join (annotate's spans, or the recorded ones; none is no error) in
 * the one pass, then the timeline they make together.
 */
static int report_visual(const struct report_opts *o)
{
	struct spans_report_opts so = { .input = o->input, .external = o->external, .none_ok = true,
					.min_pct = o->table.min_pct };
	struct session_opts sopts = { .any_owner = o->force, .filter = &o->filter };
	struct debuginfo_opts dopts = o->debuginfod;
	struct tl_limits lim = { o->max_samples, o->max_spans };
	struct timeline_read r;
	char err[512] = "";
	int e, ret = 1;

	/* Not fetched here: but libdw's own debuginfod hook is kept off all the same (--offline). */
	debuginfo_opts_from_env(&dopts);
	e = timeline__read(&r, o->input, &sopts, &so, &o->table, &lim, err, sizeof(err));
	if (e) {
		say_read_error(o->input, e, err);
		goto cleanup;
	}
	say_what_was_read(o->input, r.p);
	ret = write_visuals(o, &r.t, o->input);
cleanup:
	timeline_read__free(&r);
	return ret;
}

/* The session and its profile in one pass. */
static int read_file(const struct report_opts *o, struct session **sess, struct profile **p, char *err, size_t errlen)
{
	int e = session__open(sess, o->input, &(struct session_opts){ .any_owner = o->force, .filter = &o->filter },
			      err, errlen);

	return e ?: load_profile(*sess, p, o, err, errlen);
}

/*
 * One pass names what the host can; the files it could not (stripped, no
 * debug file here) are then asked of debuginfod, all at once, and if any
 * came the file is read again with them.  A later report finds them kept
 * by build id and needs one pass and no network.
 */
static int read_with_debuginfod(const struct report_opts *o, struct session **sess, struct profile **p, char *err,
				size_t errlen)
{
	struct debuginfo_opts dopts = o->debuginfod;
	struct debuginfo_stats st = {};
	const char **want = NULL;
	size_t n = 0;
	int e;

	/* The servers into dopts, and out of libdw's reach (it would fetch while unwinding, with no deadline). */
	debuginfo_opts_from_env(&dopts);
	e = read_file(o, sess, p, err, errlen);
	if (e || !debuginfo_enabled(&dopts))
		return e;
	e = symbolizer__wanting((*p)->sym, &want, &n);
	if (!e && n)
		e = debuginfo_fetch(&dopts, want, n, &st);
	free(want);
	if (e)
		return set_errorf(err, errlen, e, "out of memory fetching the debug files of %s", o->input);
	debuginfo_say(&dopts, &st);
	if (!(st.fetched + st.cached))
		return 0;
	profile__free(*p);
	session__free(*sess);
	*p = NULL;
	*sess = NULL;
	return read_file(o, sess, p, err, errlen);
}

/* perf report --header-only's "# name : value" lines, spanperf's own features with them. */
static int report_header(const struct report_opts *o)
{
	struct pd_reader *rd = NULL;
	char err[512] = "";
	int e = pd_reader__open(&rd, o->input, &(struct pd_reader_opts){ .any_owner = o->force }, err, sizeof(err));

	if (e) {
		pr_err("%s", err[0] ? err : strerror(-e));
		return 1;
	}
	pd_reader__print_features(rd, stdout);
	pd_reader__free(rd);
	return 0;
}

int report_ch_check(const struct report_opts *o, char *err, size_t errlen)
{
	bool ch_only = o->ch.password_file || o->ch.ca_file || o->ch.db || o->ch.since || o->ch.from || o->ch.to || o->ch.host;

	if (!o->ch.url && (ch_only || (o->ch.span_name && !o->spans)))
		return set_errorf(err, errlen, -EINVAL, "--database, --since, --from, --to and --host select a fleet's "
				  "windows: use them with --clickhouse URL");
	if (o->ch.url && (o->span_prefix || o->header_only))
		return set_errorf(err, errlen, -EINVAL, "--clickhouse reads a fleet's windows, which keep each thread's "
				  "samples summed, not their times: --span-prefix and --header-only read a file");
	if (o->ch.url && (!ch_ident_ok(o->ch.db ? o->ch.db : "spanperf") || (o->ch.since && o->ch.from) ||
			  !o->ch.from != !o->ch.to))
		return set_errorf(err, errlen, -EINVAL, o->ch.since && o->ch.from ? "--since and --from: give one of them"
							: !o->ch.from != !o->ch.to ? "--from and --to go together"
										   : "--database is not a name of letters, digits and _");
	return 0;
}

/* --clickhouse: the window the options select, as ch_reader's source; 0 or -EINVAL (said). */
static int ch_source_of(const struct report_opts *o, struct ch_source *src)
{
	uint64_t since = 3600;
	time_t now = time(NULL);

	*src = (struct ch_source){ .url = o->ch.url, .password_file = o->ch.password_file, .ca_file = o->ch.ca_file,
				   .db = o->ch.db ? o->ch.db : "spanperf", .host = o->ch.host,
				   .comms = &o->filter.comms, .pids = &o->filter.pids, .tids = &o->filter.tids,
				   .span_name = o->ch.span_name, .dsos = &o->filter.dsos, .syms = &o->filter.syms,
				   .time = o->filter.time, .timeline = o->html || o->speedscope };
	if (o->ch.since && ch_parse_duration(o->ch.since, &since)) {
		pr_err("--since '%s' is not a duration like 90s, 30m, 1h or 2d", o->ch.since);
		return -EINVAL;
	}
	src->from_s = since > (uint64_t)now ? 0 : now - since;
	src->to_s = now + 1;
	if (o->ch.from && ch_parse_time(o->ch.from, &src->from_s)) {
		pr_err("--from '%s' is not a time like 2026-11-28 04:00:00 (UTC) or @SECONDS", o->ch.from);
		return -EINVAL;
	}
	if (o->ch.to && ch_parse_time(o->ch.to, &src->to_s)) {
		pr_err("--to '%s' is not a time like 2026-11-28 05:00:00 (UTC) or @SECONDS", o->ch.to);
		return -EINVAL;
	}
	return 0;
}

/*
 * --html and --speedscope of a fleet: the profile's ticks (each window's
 * samples laid out over it) and its spans, as report_visual's of a file.
 */
static int ch_visual(const struct report_opts *o, const struct ch_source *src, struct profile *p)
{
	struct tl_limits lim = { o->max_samples, o->max_spans };
	const struct spans_view *v = NULL;
	struct spans_view none = { .input = src->url };
	struct ch_spans *cs = NULL;
	struct timeline t = {};
	char err[512] = "";
	int e, ret = 1;

	/* No span is no error: a page of samples alone, as a file's without spans. */
	e = ch_spans_load(&cs, src, &v, err, sizeof(err));
	if (e == -ENODATA) {
		v = &none;
		e = 0;
	}
	if (!e && (e = table__limit(p, &o->table) ?: timeline__build(&t, p, v, &lim)))
		set_errorf(err, sizeof(err), e, "out of memory laying out the windows of %s", src->url);
	if (e) {
		pr_err("%s", err[0] ? err : strerror(-e));
		goto cleanup;
	}
	ret = write_visuals(o, &t, src->url);
cleanup:
	timeline__free(&t);
	ch_spans_free(cs);
	return ret;
}

/* report --clickhouse: the fleet's profile (summed in ClickHouse) or spans, into the outputs a file's would go to. */
static int report_clickhouse(const struct report_opts *o)
{
	const struct spans_view *v = NULL;
	struct ch_spans *cs = NULL;
	struct profile *p = NULL;
	struct ch_source src;
	char err[512] = "";
	int e, ret = 1;

	if (ch_source_of(o, &src))
		return 1;
	if (o->spans) {
		e = ch_spans_load(&cs, &src, &v, err, sizeof(err));
		if (!e)
			e = o->spans_format == SPANS_OTLP ? spans_print_otlp(v, stdout, err, sizeof(err))
			    : o->spans_format == SPANS_JSON ? spans_print_json(v, stdout)
							    : spans_print_table(v, stdout);
		if (!e && fflush(stdout))
			e = -errno;
		if (e)
			pr_err("%s", err[0] ? err : strerror(-e));
		ch_spans_free(cs);
		return e ? 1 : 0;
	}
	e = ch_profile_load(&p, &src, err, sizeof(err));
	if (e)
		pr_err("%s", err[0] ? err : strerror(-e));
	else if (!p->samples && !p->off_samples)
		pr_err("ClickHouse at %s holds no samples of that window%s%s%s", src.url, src.host ? " and host " : "",
		       src.host ? src.host : "", report_filter_active(&o->filter) ? " that pass the filters" : "");
	else if (o->html || o->speedscope)
		ret = ch_visual(o, &src, p);
	else
		ret = profile_outputs(&(struct report_opts){ .input = src.url, .table = o->table, .flame = o->flame,
							     .pprof = o->pprof, .folded = o->folded, .wakers = o->wakers,
							     .ev_set = o->ev_set, .ev = o->ev, .filter = o->filter }, p);
	profile__free(p);
	return ret;
}

int report_run(const struct report_opts *o)
{
	struct session *sess = NULL;
	struct profile *p = NULL;
	char err[512] = "";
	int ret = 1, e;

	if (o->ch.url)
		return report_clickhouse(o);
	/* Every file it maps (the input, ELF files, libdw's) may be cut short by another process. */
	map_guard__install();
	if (o->header_only)
		return report_header(o);
	if (o->html || o->speedscope)
		return report_visual(o);
	if (o->spans) {
		struct spans_report_opts so = { .input = o->input, .format = o->spans_format,
						.bpf_samples = o->bpf_samples, .any_owner = o->force,
						.filter = &o->filter, .min_pct = o->table.min_pct };

		struct why_opts wo = o->why;

		wo.json = o->spans_format == SPANS_JSON;
		if (!wo.slowest_pct)
			wo.slowest_pct = WHY_SLOW_PCT;
		if (o->why_slow ? why_slow_report(&so, &wo, err, sizeof(err)) : spans_report(&so, err, sizeof(err))) {
			pr_err("%s", err);
			return 1;
		}
		return 0;
	}
	e = read_with_debuginfod(o, &sess, &p, err, sizeof(err));
	if (e) {
		say_read_error(o->input, e, err);
		goto cleanup;
	}
	say_what_was_read(o->input, p);
	ret = profile_outputs(o, p);
	if (map_guard__pages())
		pr_warn("%lu pages of mapped files were cut short by another process while read: they read as zeros, "
			"and what they held may be named wrong", map_guard__pages());
cleanup:
	profile__free(p);
	session__free(sess);
	return ret;
}
