// SPDX-License-Identifier: GPL-2.0
/*
 * The recorder's records into a live session, cut in windows.  Everything
 * here runs in the recorder's loop: a record is delivered within the round
 * it came in (the writer's sink calls session__feed), and a window ends
 * right after the drain that completed it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "live_record.h"
#include "log.h"
#include "perf_data.h"
#include "profile.h"
#include "record.h"
#include "report_spans.h"
#include "session.h"

struct live {
	const struct live_opts *lo;
	struct pd_sink sink;
	struct session *sess;
	bool in_window; /* the window's consumers are in the session */
	bool broken;	/* the live view failed: no more records for it */
	int e;		/* why, when it fails the recording */
	char *err;
	size_t errlen;
};

/* The live view failed (err says why): the recording fails with it, or goes on without it. */
static int fail(struct live *l, int e)
{
	if (!l->err[0])
		snprintf(l->err, l->errlen, "the live view of the recording failed: %s", strerror(-e));
	l->broken = true;
	if (l->lo->file_first) {
		pr_warn("%s; the recording goes on without it", l->err);
		return 0;
	}
	l->e = e;
	return e;
}

static int on_begin(void *arg, const struct pd_attr *attrs, int nr_attrs)
{
	struct live *l = arg;
	struct session_live_opts so = { .name = "the recording", .keep_tables = l->lo->keep_tables,
					.keep_syms = l->lo->keep_syms, .filter = l->lo->filter };
	int e = session__open_live(&l->sess, attrs, nr_attrs, &so, l->err, l->errlen);

	return e ? fail(l, e) : 0;
}

static int begin_window(struct live *l)
{
	int e = l->lo->ops->begin(l->lo->arg, l->sess, l->err, l->errlen);

	if (e)
		return fail(l, e);
	l->in_window = true;
	return 0;
}

static int on_write(void *arg, const void *p, size_t n)
{
	struct live *l = arg;
	int e;

	if (l->broken || !l->sess)
		return 0;
	if (!l->in_window && (e = begin_window(l)))
		return e;
	if (l->broken)
		return 0;
	e = session__feed(l->sess, p, n, l->err, l->errlen);
	return e ? fail(l, e) : 0;
}

/*
 * A window's end: every record queued delivered, as at a file's end, then
 * the engine's end, then the symbolizer trimmed (what the engine still
 * shows of the window resolved before the trim, so it stays valid until
 * the next; an engine that holds an older window, ops->holds, skips it).
 */
static int end_window(struct live *l, const char *path)
{
	int e;

	if (l->broken || !l->sess)
		return 0;
	if (!l->in_window && (e = begin_window(l)))
		return e < 0 ? 1 : 0;
	if (l->broken)
		return 0;
	e = session__flush(l->sess, l->err, l->errlen);
	l->in_window = false;
	if (!e)
		e = l->lo->ops->end(l->lo->arg, l->sess, path, l->err, l->errlen);
	else
		l->lo->ops->drop(l->lo->arg, l->sess);
	if (!l->lo->ops->holds || !l->lo->ops->holds(l->lo->arg))
		session__trim(l->sess);
	if (e < 0)
		return fail(l, e) ? 1 : 0;
	return e > 0;
}

static int on_switch(const char *path, void *arg)
{
	return end_window(arg, path);
}

static int on_pass(void *arg)
{
	struct live *l = arg;

	return l->lo->ops->pass ? l->lo->ops->pass(l->lo->arg) : 0;
}

int live_record(struct record_opts *ro, const struct live_opts *lo, int argc, char **argv, int *exit_code,
		char *err, size_t errlen)
{
	struct live l = { .lo = lo, .err = err, .errlen = errlen };
	int e;

	err[0] = 0;
	l.sink = (struct pd_sink){ .begin = on_begin, .write = on_write, .arg = &l };
	ro->sink = &l.sink;
	ro->on_switch = on_switch;
	ro->on_switch_arg = &l;
	ro->on_pass = lo->ops->pass ? on_pass : NULL;
	ro->wake_fd = lo->wake_fd;
	e = record__run(ro, argc, argv, exit_code);
	/* Records after the last window's end (none when --switch-output ends each): one more window. */
	if (!e && !l.broken && l.in_window)
		end_window(&l, NULL);
	if (l.in_window)
		lo->ops->drop(lo->arg, l.sess);
	if (!e && l.sess && !l.broken && (e = session__end(l.sess, err, errlen)))
		e = fail(&l, e);
	session__free(l.sess);
	ro->sink = NULL;
	return e ?: l.e;
}

void live_window_drop(struct session *sess, struct profile **p, struct span_report **sr)
{
	if (sess && *p)
		profile__end(*p, false);
	if (sess && sr && *sr)
		session__end_consumer(sess, *sr, false);
	profile__free(*p);
	*p = NULL;
	if (sr) {
		span_report__free(*sr);
		*sr = NULL;
	}
}
