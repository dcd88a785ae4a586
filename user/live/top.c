// SPDX-License-Identifier: GPL-2.0
/*
 * spanperf top's engine: the recorder as record would run it (its
 * defaults, then top's options), read live in windows of -d seconds.  A
 * window is a profile (or the span join) added to the live session when its
 * first record comes and ended when the window does; the last one is
 * drawn until the next replaces it.  So the table is the last window's,
 * symbols are those report finds, and memory is one window's worth and the
 * symbolizer's bounded tables, whatever runs on the host.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "live_record.h"
#include "log.h"
#include "profile.h"
#include "record.h"
#include "report_spans.h"
#include "session.h"
#include "top.h"
#include "top_view.h"

static int window_begin(void *arg, struct session *sess, char *err, size_t errlen)
{
	struct top *t = arg;
	struct profile_opts po = {};
	struct spans_report_opts so = { .input = "the recording", .window_s = t->o->delay, .min_pct = t->o->min_pct };
	int e;

	if (t->o->spans)
		return span_report__new(&t->cur_sr, sess, &so, err, errlen);
	e = profile__new(&t->cur, sess, &po);
	if (e)
		set_errorf(err, errlen, e, "cannot read the recording: %s", strerror(-e));
	return e;
}

/* The window being built, dropped (paused, -n reached, or it failed); sess NULL once it is gone. */
static void window_drop(void *arg, struct session *sess)
{
	struct top *t = arg;

	live_window_drop(sess, &t->cur, &t->cur_sr);
}

/* --spans: the window's spans joined, and the view report --spans tables (with each name's rate); 0 or -errno, said in err. */
static int spans_done(struct top *t, struct session *sess, const struct spans_view **v, char *err, size_t errlen)
{
	int e = session__end_consumer(sess, t->cur_sr, true) ?: span_report__finish(t->cur_sr, err, errlen)
							     ?: span_report__view(t->cur_sr, v);

	if (e == -ENOMEM)
		snprintf(err, errlen, "out of memory joining the recording's spans");
	return e;
}

/* A window complete: its table replaces the last one's, drawn or printed. */
static int window_end(void *arg, struct session *sess, const char *path, char *err, size_t errlen)
{
	struct top *t = arg;
	const struct top_opts *o = t->o;
	const struct spans_view *view = NULL;
	int e = 0;

	(void)path;
	if ((o->iterations && t->refreshes >= o->iterations) || t->paused) {
		window_drop(t, sess);
		return o->iterations && t->refreshes >= o->iterations;
	}
	if (o->spans)
		e = spans_done(t, sess, &view, err, errlen);
	else
		e = profile__end(t->cur, true) ?: table__limit(t->cur, &t->to);
	if (e) {
		if (t->curses)
			snprintf(t->note, sizeof(t->note), "a refresh was lost");
		else
			pr_warn("a refresh was lost: %s", o->spans ? err : strerror(-e));
		window_drop(t, sess);
		return 0;
	}
	t->refreshes++;
	profile__free(t->last);
	span_report__free(t->last_sr);
	t->last = t->cur;
	t->last_sr = t->cur_sr;
	t->last_view = view;
	t->cur = NULL;
	t->cur_sr = NULL;
	if (t->curses)
		top_view_draw(t);
	else
		top_view_print(t);
	return o->iterations && t->refreshes >= o->iterations;
}

static int on_pass(void *arg)
{
	return top_view_keys(arg);
}

/* Paused, the screen keeps a window the next ones do not replace: its names must stay. */
static bool holds(void *arg)
{
	const struct top *t = arg;

	return t->paused;
}

/* record's defaults, then what top sets: its target and sampling, windows of -d, no file. */
static int record_opts_of(struct top_opts *o, struct record_opts *ro)
{
	char err[512];

	record_opts_defaults(ro);
	ro->pids = o->pids;
	ro->tids = o->tids;
	ro->cpus = o->cpus;
	memset(&o->pids, 0, sizeof(o->pids));
	memset(&o->tids, 0, sizeof(o->tids));
	memset(&o->cpus, 0, sizeof(o->cpus));
	ro->freq = o->freq;
	ro->events = o->events;
	ro->callgraph = o->callgraph;
	/* As record's -g: ehframe where the kernel has what it needs (record__run decides). */
	ro->ehframe = ro->ehframe_auto = o->callgraph;
	ro->no_buildid_cache = true; /* nothing is kept: nothing to look up later */
	ro->output = NULL;
	ro->switch_output = true;
	ro->switch_ns = o->delay * 1e9;
	if (!o->spans)
		return 0;
	ro->spans = o->span_texts;
	ro->nr_spans = o->nr_spans;
	o->span_texts = NULL;
	ro->offcpu = o->offcpu;
	if (ro->nr_spans > SP_MAX_SPANS) {
		pr_err("%d --span given; at most %d", ro->nr_spans, SP_MAX_SPANS);
		return -E2BIG;
	}
	if (record_opts_parse_specs(ro, err, sizeof(err))) {
		pr_err("%s", err);
		return -EINVAL;
	}
	return 0;
}

int top_run(struct top_opts *o, int argc, char **argv)
{
	/* The keys are read between the recorder's passes, on the full screen only. */
	static const struct live_window_ops print_ops = { .begin = window_begin, .end = window_end,
							  .drop = window_drop };
	static const struct live_window_ops screen_ops = { .begin = window_begin, .end = window_end,
							   .drop = window_drop, .pass = on_pass, .holds = holds };
	struct top t = { .o = o };
	struct live_opts lo = { .ops = &print_ops, .arg = &t, .wake_fd = -1, .keep_tables = LIVE_KEPT_TABLES,
				.keep_syms = LIVE_KEPT_SYMS, .filter = &o->filter };
	struct record_opts ro;
	char err[512];
	int e, ret = 1;

	parse_sort_keys("comm,dso,sym", &t.to);
	if (o->sort && parse_sort_keys(o->sort, &t.to)) {
		pr_err("--sort '%s' has an unknown or repeated key", o->sort);
		return 1;
	}
	snprintf(t.sort, sizeof(t.sort), "%s", o->sort ? o->sort : "comm,dso,sym");
	t.to.callgraph = o->callgraph;
	t.to.min_pct = o->min_pct;
	t.clear = o->stdio && isatty(STDOUT_FILENO);
	/* Without --stdio or --batch: the curses screen, when there is a terminal to draw on. */
	if (!o->stdio && !o->batch && !(isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)))
		o->batch = true;
	t.curses = !o->stdio && !o->batch;
	if (record_opts_of(o, &ro))
		goto cleanup;
	/* The recorder's lines (the summary) are not top's: its tables are. */
	sp_verbose = o->verbose > 0 ? o->verbose : -1;
	if (t.curses) {
		lo.ops = &screen_ops;
		lo.wake_fd = STDIN_FILENO;
		top_view_start(&t);
		top_view_draw(&t);
	}
	e = live_record(&ro, &lo, argc, argv, &ret, err, sizeof(err));
	if (t.curses)
		top_view_end(&t);
	if (e && err[0])
		pr_err("%s", err);
	ret = e ? 1 : 0;
cleanup:
	window_drop(&t, NULL);
	profile__free(t.last);
	span_report__free(t.last_sr);
	record_opts_free(&ro);
	return ret;
}
