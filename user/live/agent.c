// SPDX-License-Identifier: GPL-2.0
/*
 * The agent's engine: record's recorder as the agent sets it up (whole
 * host, -F 19, ehframe stacks, no file), its records in windows of the
 * live session, each window's rows handed to the sender.  Its health is
 * served on --serve as Prometheus text.
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>

#include "agent.h"
#include "agent_opts.h"
#include "agent_rows.h"
#include "buildid.h"
#include "ch_http.h"
#include "ch_ship.h"
#include "ch_wire.h"
#include "live_record.h"
#include "log.h"
#include "profile.h"
#include "record.h"
#include "report_spans.h"
#include "sbuf.h"
#include "session.h"
#include "stop.h"
#include "web_serve.h"

struct agent {
	const struct agent_opts *o;
	char host[256];
	uint64_t run_id, seq;
	struct ch_ship *ship;
	struct profile *cur;
	struct span_report *cur_sr;
	uint64_t start_ns; /* the window's, unix */
	struct web_server *web; /* --serve */
	struct buildid_memo *bids;
};

/*
 * Inodes whose build ids the windows keep (88 bytes each, pages touched as
 * used): a host's libraries and programs many times over.
 */
#define AGENT_BUILD_IDS 16384

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int window_begin(void *arg, struct session *sess, char *err, size_t errlen)
{
	struct agent *a = arg;
	struct profile_opts po = {};
	struct spans_report_opts so = { .input = "the recording", .none_ok = true };
	int e = profile__new(&a->cur, sess, &po);

	if (e)
		return set_errorf(err, errlen, e, "cannot read the recording: %s", strerror(-e));
	return a->o->nr_spans ? span_report__new(&a->cur_sr, sess, &so, err, errlen) : 0;
}

static void window_drop(void *arg, struct session *sess)
{
	struct agent *a = arg;

	live_window_drop(sess, &a->cur, &a->cur_sr);
}

/* A window complete: its rows to the sender; a window that cannot be made is said and skipped. */
static int window_end(void *arg, struct session *sess, const char *path, char *err, size_t errlen)
{
	struct agent *a = arg;
	const struct spans_view *v = NULL;
	struct sbuf body[CH_NR_TABLES] = {};
	char token[64] = "";
	uint64_t now = clock_ns(CLOCK_REALTIME), rows = 0;
	struct agent_window_meta m = { .token = token, .host = a->host, .start_ns = a->start_ns, .end_ns = now,
				       .mono_to_unix = now - clock_ns(CLOCK_MONOTONIC), .hz = a->o->freq,
				       .bids = a->bids };
	int e = profile__end(a->cur, true);

	(void)path;
	if (!e && a->cur_sr)
		e = session__end_consumer(sess, a->cur_sr, true) ?: span_report__finish(a->cur_sr, err, errlen)
										?: span_report__view(a->cur_sr, &v);
	/* The token: this run's random id and the window's number, so no two windows anywhere share one. */
	snprintf(token, sizeof(token), "%016" PRIx64 "-%" PRIu64, a->run_id, a->seq++);
	if (!e)
		e = agent_rows(&m, sess, a->cur, v, body, &rows);
	if (e) {
		pr_warn("a window was lost: %s", err[0] ? err : strerror(-e));
		err[0] = 0;
		for (int i = 0; i < CH_NR_TABLES; i++)
			sbuf_free(&body[i]);
	} else {
		ch_ship__send(a->ship, token, body, rows);
	}
	window_drop(a, NULL);
	a->start_ns = now;
	/*
	 * What the window's profile and rows took goes back to the system: an
	 * always-on agent's resident size is its steady state, not the peak of
	 * its busiest window.
	 */
	malloc_trim(0);
	return 0;
}

/*
 * GET /metrics on --serve (web_serve.h: its deadlines, per-client limits
 * and --web-config): the sender's counts, in Prometheus' naming.
 */
static int metrics(void *arg, const char *url, struct web_reply *r)
{
	struct agent *a = arg;
	struct sbuf *b = &r->body;
	struct ch_ship_stats st;

	if (strcmp(url, "/metrics")) {
		r->status = 404;
		return sbuf_printf(b, "spanperf agent serves /metrics\n");
	}
	ch_ship__stats(a->ship, &st);
#define M(name, type, help, v)                                                                          \
	sbuf_printf(b, "# HELP spanperf_agent_" name " " help "\n# TYPE spanperf_agent_" name " " type "\n" \
		       "spanperf_agent_" name " %" PRIu64 "\n", (uint64_t)(v))
	M("windows_sent_total", "counter", "Windows ClickHouse took.", st.windows_sent);
	M("windows_spooled_total", "counter", "Windows written to the spool.", st.windows_spooled);
	M("windows_dropped_total", "counter", "Windows lost: the spool at its bound, or none.", st.windows_dropped);
	M("rows_sent_total", "counter", "Rows ClickHouse took.", st.rows_sent);
	M("bytes_sent_total", "counter", "Bytes ClickHouse took, gzipped RowBinary as posted.", st.bytes_sent);
	M("server_errors_total", "counter", "Sends that failed: no answer, or an error answer.", st.server_errors);
	M("spool_windows", "gauge", "Windows in the spool.", st.spool_windows);
	M("spool_bytes", "gauge", "Bytes in the spool.", st.spool_bytes);
	M("partitions_dropped_total", "counter", "Day partitions --retention dropped.", st.partitions_dropped);
#undef M
	r->content_type = "text/plain; version=0.0.4; charset=utf-8";
	return b->err;
}

static int serve_start(struct agent *a, const struct agent_opts *o)
{
	struct web_opts wo = { .addr = o->serve, .flag = "--serve", .config = o->web_config, .handler = metrics,
			       .arg = a };

	return web_server__start(&a->web, &wo);
}

/* record's defaults, then the agent's: the whole host, its rate and stacks, windows with no file. */
static int record_opts_of(struct agent_opts *o, struct record_opts *ro)
{
	char err[512];

	record_opts_defaults(ro);
	ro->freq = o->freq;
	ro->callgraph = true;
	ro->ehframe = ro->ehframe_auto = !o->fp;
	ro->offcpu = o->offcpu;
	ro->otel = o->otel;
	ro->duration = o->duration;
	ro->no_buildid_cache = true;
	ro->output = NULL;
	ro->switch_output = true;
	ro->window_sums = true;
	ro->switch_ns = o->window * 1e9;
	ro->spans = o->span_texts;
	ro->nr_spans = o->nr_spans;
	o->span_texts = NULL;
	if (ro->nr_spans > SP_MAX_SPANS) {
		pr_err("%d --span given; at most %d", ro->nr_spans, SP_MAX_SPANS);
		return -E2BIG;
	}
	if (ro->nr_spans && record_opts_parse_specs(ro, err, sizeof(err))) {
		pr_err("%s", err);
		return -EINVAL;
	}
	return 0;
}

int agent_run(struct agent_opts *o)
{
	static const struct live_window_ops ops = { .begin = window_begin, .end = window_end, .drop = window_drop };
	struct agent a = { .o = o };
	struct live_opts lo = { .ops = &ops, .arg = &a, .wake_fd = -1, .keep_tables = LIVE_KEPT_TABLES,
				.keep_syms = LIVE_KEPT_SYMS };
	struct ch_ship_opts so = { .place = { o->database, o->cluster, o->password_file, o->ca_file,
					      (unsigned)o->retention_days },
				   .spool_dir = o->spool, .spool_max = o->spool_max_mb << 20 };
	struct ch_http_opts ho = { .url = o->url, .password_file = o->password_file, .ca_file = o->ca_file };
	struct record_opts ro;
	char err[512] = "";
	int e, ret = 1, code = 0;

	record_opts_defaults(&ro);
	if (o->host_label)
		snprintf(a.host, sizeof(a.host), "%s", o->host_label);
	else if (gethostname(a.host, sizeof(a.host) - 1))
		snprintf(a.host, sizeof(a.host), "unknown");
	if (getrandom(&a.run_id, sizeof(a.run_id), 0) != sizeof(a.run_id))
		a.run_id = clock_ns(CLOCK_REALTIME) ^ ((uint64_t)getpid() << 32);
	if ((e = ch_http__open(&so.http, &ho, err, sizeof(err)))) {
		pr_err("%s", err[0] ? err : strerror(-e));
		return 1;
	}
	record_opts_free(&ro);
	if (record_opts_of(o, &ro) || ch_ship__start(&a.ship, &so)) {
		if (!a.ship)
			ch_http__free(so.http);
		goto cleanup;
	}
	if (o->serve && serve_start(&a, o))
		goto cleanup;
	/* Without the memory, each window reads its files' ids again. */
	a.bids = buildid_memo__new(AGENT_BUILD_IDS);
	a.start_ns = clock_ns(CLOCK_REALTIME);
	e = live_record(&ro, &lo, sp_argc, sp_argv, &code, err, sizeof(err));
	if (e && err[0])
		pr_err("%s", err);
	ret = e ? 1 : 0;
cleanup:
	window_drop(&a, NULL);
	web_server__free(a.web); /* before the sender it reads goes */
	/* The last window is queued: one short try to send it, else the spool keeps it. */
	ch_ship__stop(a.ship, 700);
	buildid_memo__free(a.bids);
	record_opts_free(&ro);
	return ret;
}
