// SPDX-License-Identifier: GPL-2.0
/* The agent's sender thread: windows posted, or spooled and posted later (ch_ship.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ch_http.h"
#include "ch_ship.h"
#include "ch_wire.h"
#include "log.h"
#include "sbuf.h"

struct queued {
	struct queued *next;
	struct ch_window w;
	struct sbuf body[CH_NR_TABLES]; /* RowBinary, then gzipped by the thread */
	uint64_t rows;
};

struct ch_ship {
	struct ch_ship_opts o;
	struct ch_spool *spool;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct queued *head, **tail;
	bool stopping, created, thread_ok;
	uint64_t retain_at; /* CLOCK_MONOTONIC ns: when --retention drops old partitions next */
	struct ch_ship_stats st; /* under lock */
	char last_err[256];	 /* the last failure said, so that a run of them is said once */
};

/* A failure, said when it is not the one said last (a server down says so once, not every window). */
static void say(struct ch_ship *s, const char *err)
{
	if (!strcmp(s->last_err, err))
		return;
	snprintf(s->last_err, sizeof(s->last_err), "%s", err);
	pr_warn("%s", err);
}

static void count(struct ch_ship *s, uint64_t *field, uint64_t n)
{
	pthread_mutex_lock(&s->lock);
	*field += n;
	pthread_mutex_unlock(&s->lock);
}

static int ensure_tables(struct ch_ship *s)
{
	char err[512] = "";
	int e;

	if (s->created)
		return 0;
	e = ch_schema_create(s->o.http, &s->o.place, err, sizeof(err));
	if (e) {
		say(s, err);
		count(s, &s->st.server_errors, 1);
		return e;
	}
	s->created = true;
	return 0;
}

/* --retention: the old days' partitions dropped, at the first send and hourly after; a failure said, counted. */
static void retain(struct ch_ship *s)
{
	struct timespec ts;
	uint64_t now;
	unsigned dropped = 0;
	char err[512] = "";

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = ts.tv_sec * 1000000000ull + ts.tv_nsec;
	if (!s->o.place.retention_days || (s->retain_at && now < s->retain_at))
		return;
	s->retain_at = now + 3600 * 1000000000ull;
	if (ch_schema_retain(s->o.http, &s->o.place, &dropped, err, sizeof(err))) {
		say(s, err);
		count(s, &s->st.server_errors, 1);
	}
	if (dropped)
		pr_info("dropped %u partitions older than %u days", dropped, s->o.place.retention_days);
	count(s, &s->st.partitions_dropped, dropped);
}

/* Whether `windows` holds token: 1, 0, or -errno. */
static int already_sent(struct ch_ship *s, const char *token)
{
	struct sbuf q = {}, ans = {};
	char err[512] = "";
	int e;

	sbuf_printf(&q, "SELECT count() FROM %s.%s WHERE token = ", s->o.place.db, ch_tables[CH_WINDOWS].name);
	ch_literal(&q, token, strlen(token));
	sbuf_printf(&q, " FORMAT TabSeparated");
	sbuf_add(&q, "", 1);
	e = q.err ? -ENOMEM : ch_query(s->o.http, q.p, &ans, err, sizeof(err));
	if (e) {
		say(s, err);
		count(s, &s->st.server_errors, 1);
	}
	else
		e = ans.len && ans.p[0] != '0';
	sbuf_free(&q);
	sbuf_free(&ans);
	return e;
}

/* Every table's body of w, `windows` last; 0 or -errno (said, counted). */
static int post(struct ch_ship *s, const struct ch_window *w)
{
	static const enum ch_table order[] = { CH_STACKS, CH_SAMPLES, CH_SPANS, CH_WINDOWS };
	char sql[256], err[512] = "";
	uint64_t bytes = 0;
	int e = ensure_tables(s);

	if (e)
		return e; /* said and counted */
	retain(s);
	for (size_t i = 0; !e && i < sizeof(order) / sizeof(order[0]); i++) {
		enum ch_table t = order[i];

		if (!w->len[t])
			continue;
		snprintf(sql, sizeof(sql), "INSERT INTO %s.%s FORMAT RowBinary", s->o.place.db, ch_tables[t].name);
		e = ch_insert(s->o.http, sql, w->body[t], w->len[t], err, sizeof(err));
		if (e)
			say(s, err);
		bytes += w->len[t];
	}
	if (e) {
		count(s, &s->st.server_errors, 1);
		return e;
	}
	s->last_err[0] = 0;
	count(s, &s->st.bytes_sent, bytes);
	count(s, &s->st.windows_sent, 1);
	return 0;
}

static void spool_or_drop(struct ch_ship *s, const struct ch_window *w)
{
	int e = s->spool ? ch_spool__put(s->spool, w) : -ENOSPC;

	if (e) {
		if (e != -ENOSPC)
			pr_warn("cannot spool a window: %s; it is dropped", strerror(-e));
		count(s, &s->st.windows_dropped, 1);
		return;
	}
	count(s, &s->st.windows_spooled, 1);
}

/* The spool, oldest first, until it is empty or a send fails; 0 when empty. */
static int drain_spool(struct ch_ship *s)
{
	while (s->spool && ch_spool__nr(s->spool)) {
		struct ch_window w = {};
		void *buf = NULL;
		int e = ch_spool__oldest(s->spool, &w, &buf);

		if (e == -ENOENT)
			break;
		if (e)
			continue; /* dropped, counted */
		e = ensure_tables(s);
		e = e ?: already_sent(s, w.token);
		if (e == 1)
			e = 0;
		else if (!e)
			e = post(s, &w);
		free(buf);
		if (e < 0)
			return e;
		ch_spool__pop(s->spool);
	}
	return 0;
}

/* Each body gzipped once: as posted, and as spooled. */
static int gzip_bodies(struct queued *q)
{
	for (int i = 0; i < CH_NR_TABLES; i++) {
		struct sbuf z = {};

		if (!q->body[i].len)
			continue;
		if (ch_gzip(q->body[i].p, q->body[i].len, &z)) {
			sbuf_free(&z);
			return -ENOMEM;
		}
		sbuf_free(&q->body[i]);
		q->body[i] = z;
		q->w.body[i] = z.p;
		q->w.len[i] = z.len;
	}
	return 0;
}

static void ship_one(struct ch_ship *s, struct queued *q)
{
	bool stale, stopping;

	if (gzip_bodies(q)) {
		count(s, &s->st.windows_dropped, 1);
		goto cleanup;
	}

	pthread_mutex_lock(&s->lock);
	stale = s->head != NULL; /* a newer window waits: this one is behind, the spool keeps it */
	stopping = s->stopping;
	pthread_mutex_unlock(&s->lock);
	/* Stopping, the spool is left for the next run: only the last window gets its one short try. */
	if (stopping && !stale && !ch_spool__nr(s->spool) && !post(s, &q->w))
		count(s, &s->st.rows_sent, q->rows);
	else if (stopping)
		spool_or_drop(s, &q->w);
	else if (!stale && !drain_spool(s) && !post(s, &q->w))
		count(s, &s->st.rows_sent, q->rows);
	else
		spool_or_drop(s, &q->w);
cleanup:
	for (int i = 0; i < CH_NR_TABLES; i++)
		sbuf_free(&q->body[i]);
	free(q);
}

static void *run(void *arg)
{
	struct ch_ship *s = arg;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct queued *q = s->head;

		if (!q) {
			if (s->stopping)
				break;
			pthread_cond_wait(&s->cond, &s->lock);
			continue;
		}
		s->head = q->next;
		if (!s->head)
			s->tail = &s->head;
		pthread_mutex_unlock(&s->lock);
		ship_one(s, q);
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int ch_ship__start(struct ch_ship **out, const struct ch_ship_opts *o)
{
	struct ch_ship *s = calloc(1, sizeof(*s));
	int e = 0;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->o = *o;
	s->tail = &s->head;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	if (o->spool_dir)
		e = ch_spool__open(&s->spool, o->spool_dir, o->spool_max);
	if (!e && (e = -pthread_create(&s->thread, NULL, run, s)))
		pr_err("cannot start the agent's sender: %s", strerror(-e));
	if (e) {
		ch_spool__free(s->spool);
		ch_http__free(s->o.http);
		free(s);
		return e;
	}
	s->thread_ok = true;
	*out = s;
	return 0;
}

void ch_ship__send(struct ch_ship *s, char token[64], struct sbuf body[CH_NR_TABLES], uint64_t rows)
{
	struct queued *q = calloc(1, sizeof(*q));

	if (!q) {
		for (int i = 0; i < CH_NR_TABLES; i++)
			sbuf_free(&body[i]);
		count(s, &s->st.windows_dropped, 1);
		return;
	}
	memcpy(q->w.token, token, sizeof(q->w.token));
	q->rows = rows;
	/* The raw bodies stay the caller's until the thread gzips them (a spool then holds them gzipped). */
	for (int i = 0; i < CH_NR_TABLES; i++) {
		q->body[i] = body[i];
		memset(&body[i], 0, sizeof(body[i]));
	}
	pthread_mutex_lock(&s->lock);
	*s->tail = q;
	s->tail = &q->next;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

void ch_ship__stats(struct ch_ship *s, struct ch_ship_stats *st)
{
	pthread_mutex_lock(&s->lock);
	*st = s->st;
	pthread_mutex_unlock(&s->lock);
	/* The spool is the thread's; its sizes are read as they are (a gauge may lag one window). */
	st->spool_windows = ch_spool__nr(s->spool);
	st->spool_bytes = ch_spool__bytes(s->spool);
	st->windows_dropped += ch_spool__dropped(s->spool);
}

void ch_ship__stop(struct ch_ship *s, long deadline_ms)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	/*
	 * The last windows get one short try each: a server that does not
	 * answer within it leaves them to the spool, so the agent ends within
	 * about a second of its signal.
	 */
	ch_http__set_timeout(s->o.http, deadline_ms);
	if (s->thread_ok)
		pthread_join(s->thread, NULL);
	ch_spool__free(s->spool);
	ch_http__free(s->o.http);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
