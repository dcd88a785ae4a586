// SPDX-License-Identifier: GPL-2.0
/* A fleet's profile and spans from ClickHouse (ch_reader.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ch_http.h"
#include "ch_reader.h"
#include "ch_schema.h"
#include "ch_wire.h"
#include "hash.h"
#include "log.h"
#include "profile.h"
#include "report_filter.h"
#include "sbuf.h"
#include "spans_view.h"

int ch_parse_duration(const char *s, uint64_t *seconds)
{
	char *end;
	double v = strtod(s, &end);
	double mul = 1;

	if (end == s || v < 0)
		return -EINVAL;
	if (*end == 's')
		end++;
	else if (*end == 'm')
		mul = 60, end++;
	else if (*end == 'h')
		mul = 3600, end++;
	else if (*end == 'd')
		mul = 86400, end++;
	if (*end || v * mul > 1e11)
		return -EINVAL;
	*seconds = v * mul;
	return 0;
}

int ch_parse_time(const char *s, uint64_t *unix_s)
{
	struct tm tm = {};
	const char *end;
	char *e;

	if (s[0] == '@') {
		unsigned long long v = strtoull(s + 1, &e, 10);

		if (e == s + 1 || *e)
			return -EINVAL;
		*unix_s = v;
		return 0;
	}
	end = strptime(s, "%Y-%m-%d", &tm);
	if (end && (*end == ' ' || *end == 'T'))
		end = strptime(end + 1, "%H:%M:%S", &tm);
	if (end && *end == 'Z')
		end++;
	if (!end || *end)
		return -EINVAL;
	*unix_s = timegm(&tm);
	return 0;
}

/*
 * What a query selects: the source and --time's ranges, resolved against
 * the selected windows (Unix ns; 0 at either end: open there).
 */
struct ch_sel {
	const struct ch_source *src;
	struct time_range *r;
	size_t nr;
	char windows[160], stacks[160];
};

/* col IN (the set's names, as ch_literal's literals); an empty set keeps nothing. */
static void in_set(struct sbuf *q, const char *col, const struct name_set *set)
{
	if (!set->pool.n) {
		sbuf_printf(q, "0");
		return;
	}
	sbuf_printf(q, "%s IN (", col);
	for (size_t i = 0; i < set->pool.n; i++) {
		sbuf_printf(q, "%s", i ? ", " : "");
		ch_literal(q, set->pool.str[i], strlen(set->pool.str[i]));
	}
	sbuf_printf(q, ")");
}

/* --time's ranges over column col: " AND (...)", nothing without --time. */
static void in_ranges(struct sbuf *q, const struct ch_sel *sel, const char *col)
{
	if (!sel->nr)
		return;
	sbuf_printf(q, " AND (0");
	for (size_t i = 0; i < sel->nr; i++) {
		sbuf_printf(q, " OR (1");
		if (sel->r[i].start)
			sbuf_printf(q, " AND %s >= %llu", col, (unsigned long long)sel->r[i].start);
		if (sel->r[i].end)
			sbuf_printf(q, " AND %s <= %llu", col, (unsigned long long)sel->r[i].end);
		sbuf_printf(q, ")");
	}
	sbuf_printf(q, ")");
}

/*
 * The rows sel selects, as a WHERE clause: numbers printed, strings as
 * ch_literal's literals.  The window and host, and --time (a sample's by
 * its window's start, a span's by its end); spans: their name and lists
 * too (a span's comm is its thread's as it began).  A sample's lists go
 * apart (lists()): what they leave out stays in the tables' total.
 */
static void where(struct sbuf *q, const struct ch_sel *sel, bool spans)
{
	const struct ch_source *src = sel->src;

	sbuf_printf(q, " WHERE date >= toDate(%" PRIu64 ") AND time >= %" PRIu64 " AND time < %" PRIu64, src->from_s,
		    src->from_s, src->to_s);
	if (src->host) {
		sbuf_printf(q, " AND host = ");
		ch_literal(q, src->host, strlen(src->host));
	}
	if (spans) {
		in_ranges(q, sel, "end_ns");
	} else if (sel->nr) {
		sbuf_printf(q, " AND token GLOBAL IN (SELECT token FROM %s WHERE date >= toDate(%" PRIu64 ")", sel->windows,
			    src->from_s);
		in_ranges(q, sel, "start_ns");
		sbuf_printf(q, ")");
	}
	if (src->span_name && spans) {
		sbuf_printf(q, " AND name = ");
		ch_literal(q, src->span_name, strlen(src->span_name));
	}
}

/*
 * --comms, --pids, --tids, and for samples --dsos and --symbols of the
 * leaf (its first frame not inlined: the function the sampled address is
 * in, as a file's filter resolves it), as one condition; false: none given.
 */
static bool lists(struct sbuf *q, const struct ch_sel *sel, bool spans)
{
	const struct ch_source *src = sel->src;
	bool any = false;

	sbuf_printf(q, "(1");
	if (src->comms && src->comms->on) {
		sbuf_printf(q, " AND ");
		in_set(q, "comm", src->comms);
		any = true;
	}
	for (int k = 0; k < 2; k++) {
		const struct int_list *l = k ? src->tids : src->pids;

		if (!l || !l->n)
			continue;
		sbuf_printf(q, " AND %s IN (", k ? "tid" : "pid");
		for (size_t i = 0; i < (size_t)l->n; i++)
			sbuf_printf(q, "%s%d", i ? ", " : "", l->v[i]);
		sbuf_printf(q, ")");
		any = true;
	}
	if (!spans && ((src->dsos && src->dsos->on) || (src->syms && src->syms->on))) {
		sbuf_printf(q, " AND stack_id GLOBAL IN (SELECT stack_id FROM %s WHERE date >= toDate(%" PRIu64 ")",
			    sel->stacks, src->from_s);
		if (src->dsos && src->dsos->on) {
			sbuf_printf(q, " AND ");
			in_set(q, "dso[arrayFirstIndex(k -> k = 0, inlined)]", src->dsos);
		}
		if (src->syms && src->syms->on) {
			sbuf_printf(q, " AND func[arrayFirstIndex(k -> k = 0, inlined)] != '[unknown]' AND ");
			in_set(q, "func[arrayFirstIndex(k -> k = 0, inlined)]", src->syms);
		}
		sbuf_printf(q, ")");
		any = true;
	}
	sbuf_printf(q, ")");
	return any;
}

static int ask(struct ch_http *c, struct sbuf *q, struct sbuf *ans, char *err, size_t errlen)
{
	if (sbuf_add(q, "", 1))
		return -ENOMEM;
	pr_debug("ClickHouse: %s", q->p);
	return ch_query(c, q->p, ans, err, errlen);
}

static int open_http(struct ch_http **c, const struct ch_source *src, char *err, size_t errlen)
{
	struct ch_http_opts ho = { .url = src->url, .password_file = src->password_file, .timeout_ms = 120000,
				   .ca_file = src->ca_file };

	return ch_http__open(c, &ho, err, errlen);
}

/* A string of the answer, NUL-terminated, in pool. */
static const char *pooled(struct strpool *pool, struct rb_in *in, size_t *id)
{
	size_t n;
	const char *s = rb_get_str(in, &n);
	char *tmp = strndup(s, n);
	const char *r = tmp ? strpool_intern(pool, tmp, id) : NULL;

	free(tmp);
	return r;
}

struct ch_profile_ctx {
	struct profile *p;
	struct strpool strs, fkeys, dsos;
	struct u64_map stack_at; /* stack id -> index + 1 into frames */
	struct cframes {
		uint32_t nr;
		struct pframe *f;
	} *frames;
	size_t nr_frames;
	/*
	 * The arrays' room, doubled as they grow: grown by one element a
	 * row, a whole host's thousands of functions and stacks were copied
	 * whole at each (an allocator that cannot grow a block in place, as
	 * ASan's, took 27 s for what took 0.4 s).
	 */
	size_t cap_funcs, cap_frames, cap_stacks, cap_off_stacks;
};

static int add_func(struct ch_profile_ctx *x, const char *name, const char *dso, const char *bid, uint64_t off,
		    bool kernel, bool inlined, uint32_t *out)
{
	struct sbuf key = {};
	size_t id, did;
	int e = 0;

	sbuf_printf(&key, "%s%c%s%c%s%c%" PRIx64 "%c%d", name, 0x1f, dso, 0x1f, bid, 0x1f, off, 0x1f, kernel | inlined << 1);
	sbuf_add(&key, "", 1);
	if (key.err || !strpool_intern(&x->fkeys, key.p, &id) || !strpool_intern(&x->dsos, dso, &did)) {
		sbuf_free(&key);
		return -ENOMEM;
	}
	sbuf_free(&key);
	if (id == x->p->nr_funcs) {
		struct pfunc *f;

		if (array_reserve((void **)&x->p->funcs, &x->cap_funcs, id, sizeof(*f)))
			return -ENOMEM;
		f = x->p->funcs;
		f[id] = (struct pfunc){ .name = strpool_intern(&x->strs, name, NULL),
					.dso = strpool_intern(&x->strs, dso, NULL),
					.build_id = *bid ? strpool_intern(&x->strs, bid, NULL) : NULL,
					.dso_id = did, .kernel = kernel,
					.unknown_addr = strcmp(name, "[unknown]") ? 0 : off };
		f[id].path = f[id].dso;
		x->p->nr_funcs++;
		if (!f[id].name || !f[id].dso)
			e = -ENOMEM;
		if (!e && inlined) {
			/* As a file's profile names a function inlined at the address: "NAME (inlined)" */
			struct sbuf l = {};

			f[id].inlined = true;
			sbuf_printf(&l, "%s (inlined)", name);
			sbuf_add(&l, "", 1);
			f[id].label = l.err ? NULL : strpool_intern(&x->strs, l.p, NULL);
			e = f[id].label ? 0 : -ENOMEM;
			sbuf_free(&l);
		}
	}
	*out = id;
	return e;
}

/* The stacks the samples name: func, dso, build_id, offset, kernel arrays per stack id. */
static int read_stacks(struct ch_profile_ctx *x, struct rb_in *in)
{
	while (rb_more(in)) {
		uint64_t id = rb_get_u64(in), n = rb_get_len(in);
		const char **name, **dso, **bid;
		uint8_t *kern;
		struct pframe *f;
		uint64_t *slot;
		int e = 0;

		if (in->bad || n > 4096)
			return -EBADMSG;
		name = calloc(n + 1, sizeof(*name));
		dso = calloc(n + 1, sizeof(*dso));
		bid = calloc(n + 1, sizeof(*bid));
		f = calloc(n + 1, sizeof(*f));
		for (uint64_t i = 0; name && i < n; i++)
			name[i] = pooled(&x->strs, in, NULL);
		if (rb_get_len(in) != n)
			in->bad = true;
		for (uint64_t i = 0; dso && i < n; i++)
			dso[i] = pooled(&x->strs, in, NULL);
		if (rb_get_len(in) != n)
			in->bad = true;
		for (uint64_t i = 0; bid && i < n; i++)
			bid[i] = pooled(&x->strs, in, NULL);
		if (rb_get_len(in) != n)
			in->bad = true;
		for (uint64_t i = 0; f && i < n; i++)
			f[i].ip = rb_get_u64(in);
		if (rb_get_len(in) != n)
			in->bad = true;
		kern = calloc(n + 1, 1);
		for (uint64_t i = 0; kern && i < n; i++)
			kern[i] = rb_get_u8(in);
		if (rb_get_len(in) != n)
			in->bad = true;
		for (uint64_t i = 0; !e && name && dso && bid && f && kern && i < n; i++) {
			bool inl = rb_get_u8(in);

			if (!name[i] || !dso[i] || !bid[i])
				e = -ENOMEM;
			else
				e = add_func(x, name[i], dso[i], bid[i], f[i].ip, kern[i], inl, &f[i].func);
		}
		if (!e && (!name || !dso || !bid || !f || !kern))
			e = -ENOMEM;
		free(name), free(dso), free(bid), free(kern);
		if (!e && in->bad)
			e = -EBADMSG;
		slot = e ? NULL : u64_map_get(&x->stack_at, id, true);
		if (!e && !slot)
			e = -ENOMEM;
		if (!e && !*slot) {
			if (array_reserve((void **)&x->frames, &x->cap_frames, x->nr_frames, sizeof(*x->frames))) {
				e = -ENOMEM;
			} else {
				x->frames[x->nr_frames] = (struct cframes){ n, f };
				*slot = ++x->nr_frames;
				f = NULL;
			}
		}
		free(f);
		if (e)
			return e;
	}
	return in->bad ? -EBADMSG : 0;
}

static int push_stack(struct pstack **arr, size_t *nr, size_t *cap, const struct pstack *s)
{
	if (array_reserve((void **)arr, cap, *nr, sizeof(**arr)))
		return -ENOMEM;
	(*arr)[(*nr)++] = *s;
	return 0;
}

/* A row of the timeline's samples: where its window is, for its ticks. */
struct ch_trow {
	uint64_t ws, we, count, period;
	uint32_t tid;
	uint32_t stack; /* into stacks, or off_stacks */
	bool off;
};

/*
 * The summed samples: off_cpu, pid, tid, comm, stack id, count, period,
 * and with a timeline their window's start and end (rows pushed to rows).
 */
static int read_samples(struct ch_profile_ctx *x, struct rb_in *in, struct ch_trow **rows, size_t *nr_rows)
{
	struct profile *p = x->p;
	size_t cap = 0;

	while (rb_more(in)) {
		uint8_t off = rb_get_u8(in);
		uint32_t pid = rb_get_u32(in), tid = rb_get_u32(in);
		const char *comm = pooled(&x->strs, in, NULL);
		uint64_t id = rb_get_u64(in), count = rb_get_u64(in), period = rb_get_u64(in);
		uint64_t ws = rows ? rb_get_u64(in) : 0, we = rows ? rb_get_u64(in) : 0;
		uint64_t *slot = u64_map_get(&x->stack_at, id, false);
		struct pstack s = { .pid = pid, .tid = tid, .comm = comm, .count = count, .period = period };
		int e;

		if (in->bad)
			return -EBADMSG;
		if (!comm)
			return -ENOMEM;
		if (!slot || !*slot)
			continue; /* its stack's partition dropped: nothing to show it by */
		if (rows && array_reserve((void **)rows, &cap, *nr_rows, sizeof(**rows)))
			return -ENOMEM;
		s.nr = x->frames[*slot - 1].nr;
		s.frames = malloc((s.nr ? s.nr : 1) * sizeof(*s.frames));
		if (!s.frames)
			return -ENOMEM;
		memcpy(s.frames, x->frames[*slot - 1].f, s.nr * sizeof(*s.frames));
		if (rows)
			(*rows)[(*nr_rows)++] = (struct ch_trow){ ws, we, count, period, tid,
								  off ? p->nr_off_stacks : p->nr_stacks, off };
		e = off ? push_stack(&p->off_stacks, &p->nr_off_stacks, &x->cap_off_stacks, &s)
			: push_stack(&p->stacks, &p->nr_stacks, &x->cap_stacks, &s);
		if (e) {
			free(s.frames);
			return e;
		}
		if (off) {
			p->off_samples += count;
			p->off_period += period;
		} else {
			p->samples += count;
			p->period += period;
		}
	}
	return 0;
}

/*
 * The timeline's ticks.  A window keeps its samples summed, not their
 * times: each thread's on-CPU samples of a window are laid out evenly over
 * it, stack after stack; its off-CPU stacks are each one tick at the
 * window's end, a sum of blocks with no interval of its own.
 */
static int make_ticks(struct profile *p, const struct ch_trow *r, size_t n)
{
	uint64_t all = 0;
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		all += r[i].off ? 1 : r[i].count;
	if (all > (1u << 28))
		return -E2BIG;
	p->ticks = calloc(all ? all : 1, sizeof(*p->ticks));
	if (!p->ticks)
		return -ENOMEM;
	for (size_t i = 0, j; i < n; i = j) {
		uint64_t m = 0, at = 0;

		/* A run of rows of one window and thread, as the query orders them. */
		for (j = i; j < n && r[j].ws == r[i].ws && r[j].tid == r[i].tid; j++)
			m += r[j].off ? 0 : r[j].count;
		for (size_t h = i; h < j; h++) {
			if (r[h].off) {
				p->ticks[k++] = (struct ptick){ .time = r[h].we, .period = r[h].period, .tid = r[h].tid,
								.stack = r[h].stack, .off = true, .sum = true };
				continue;
			}
			for (uint64_t c = 0; c < r[h].count; c++, at++)
				p->ticks[k++] = (struct ptick){ .time = r[h].ws + (r[h].we - r[h].ws) * (at + 1) / m,
								.period = r[h].period / r[h].count, .tid = r[h].tid,
								.stack = r[h].stack };
		}
	}
	p->nr_ticks = k;
	return 0;
}

static int read_meta(struct ch_profile_ctx *x, struct rb_in *in)
{
	struct profile *p = x->p;
	size_t n;
	const char *ev;

	if (!rb_more(in))
		return 0;
	ev = rb_get_str(in, &n);
	if (n) {
		char *tmp = strndup(ev, n);

		p->event = tmp ? strpool_intern(&x->strs, tmp, NULL) : NULL;
		free(tmp);
	}
	p->event_is_clock = rb_get_u8(in);
	p->sample_freq = rb_get_u64(in);
	p->lost = rb_get_u64(in);
	p->first_ns = rb_get_u64(in);
	p->last_ns = rb_get_u64(in);
	return in->bad ? -EBADMSG : 0;
}

/*
 * sel for src: its tables' names, and --time's ranges resolved against the
 * first start and last end of the windows src selects.  0 or -errno (said).
 */
static int sel_open(struct ch_sel *sel, const struct ch_source *src, struct ch_http *c, char *err, size_t errlen)
{
	struct sbuf q = {}, ans = {};
	struct rb_in in;
	uint64_t first = 0, last = 0;
	int e;

	*sel = (struct ch_sel){ .src = src };
	snprintf(sel->windows, sizeof(sel->windows), "%s.%s", src->db, ch_tables[CH_WINDOWS].name);
	snprintf(sel->stacks, sizeof(sel->stacks), "%s.%s", src->db, ch_tables[CH_STACKS].name);
	if (!src->time)
		return 0;
	sbuf_printf(&q, "SELECT min(start_ns), max(end_ns) FROM %s WHERE date >= toDate(%" PRIu64 ") AND start_ns >= %"
			PRIu64 "000000000 AND start_ns < %" PRIu64 "000000000", sel->windows, src->from_s, src->from_s,
		    src->to_s);
	if (src->host) {
		sbuf_printf(&q, " AND host = ");
		ch_literal(&q, src->host, strlen(src->host));
	}
	sbuf_printf(&q, " FORMAT RowBinary");
	e = ask(c, &q, &ans, err, errlen);
	in = (struct rb_in){ (const uint8_t *)ans.p, (const uint8_t *)ans.p + ans.len, false };
	if (!e && rb_more(&in)) {
		first = rb_get_u64(&in);
		last = rb_get_u64(&in);
	}
	if (!e && in.bad)
		e = set_errorf(err, errlen, -EBADMSG, "ClickHouse at %s answered rows that are not the schema's "
				"(spanperf-clickhouse(7))", src->url);
	if (!e && !first && !last && strchr(src->time, '%'))
		e = set_errorf(err, errlen, -ENODATA, "ClickHouse at %s holds no windows of that time for --time's "
			       "percentages to be of", src->url);
	e = e ?: time_ranges_parse(src->time, first, last, &sel->r, &sel->nr, err, errlen);
	sbuf_free(&q);
	sbuf_free(&ans);
	return e;
}

static void sel_close(struct ch_sel *sel)
{
	free(sel->r);
}

int ch_profile_load(struct profile **out, const struct ch_source *src, char *err, size_t errlen)
{
	struct ch_profile_ctx x = {};
	struct ch_http *c = NULL;
	struct ch_trow *rows = NULL;
	struct sbuf q = {}, ans = {}, cond = {};
	struct ch_sel sel = {};
	struct rb_in in;
	size_t nr_rows = 0;
	bool listed;
	int e;

	*out = NULL;
	x.p = calloc(1, sizeof(*x.p));
	if (!x.p)
		return -ENOMEM;
	x.p->callchains = true;
	e = open_http(&c, src, err, errlen);
	e = e ?: sel_open(&sel, src, c, err, errlen);
	if (e)
		goto cleanup;
	listed = lists(&cond, &sel, false);
	if (sbuf_add(&cond, "", 1)) {
		e = -ENOMEM;
		goto cleanup;
	}
	/* The stacks first: the samples' rows are made into stacks of them as they come. */
	sbuf_printf(&q, "SELECT stack_id, any(func), any(dso), any(build_id), any(offset), any(kernel), any(inlined) FROM %s "
			"WHERE date >= toDate(%" PRIu64 ") AND stack_id GLOBAL IN (SELECT stack_id FROM %s.%s",
		    sel.stacks, src->from_s, src->db, ch_tables[CH_SAMPLES].name);
	where(&q, &sel, false);
	sbuf_printf(&q, " AND %s) GROUP BY stack_id FORMAT RowBinary", cond.p);
	e = ask(c, &q, &ans, err, errlen);
	in = (struct rb_in){ (const uint8_t *)ans.p, (const uint8_t *)ans.p + ans.len, false };
	e = e ?: read_stacks(&x, &in);
	q.len = ans.len = 0;
	/*
	 * Each row's identity once (a window sent twice has its rows twice until
	 * the merge), then summed by stack; for a timeline, by window too.
	 */
	if (src->timeline)
		sbuf_printf(&q, "SELECT off_cpu, pid, tid, comm, stack_id, c, p, ws, we FROM (");
	sbuf_printf(&q, "SELECT off_cpu, pid, tid, comm, stack_id, sum(c)%s, sum(p)%s%s FROM (SELECT host, token, off_cpu, "
			"pid, tid, comm, stack_id, any(count) AS c, any(period) AS p FROM %s.%s",
		    src->timeline ? " AS c" : "", src->timeline ? " AS p" : "", src->timeline ? ", token" : "", src->db,
		    ch_tables[CH_SAMPLES].name);
	where(&q, &sel, false);
	sbuf_printf(&q, " AND %s GROUP BY token, host, off_cpu, pid, tid, comm, stack_id) GROUP BY %shost, off_cpu, pid, "
			"tid, comm, stack_id", cond.p, src->timeline ? "token, " : "");
	if (src->timeline)
		sbuf_printf(&q, ") ANY LEFT JOIN (SELECT token, any(start_ns) AS ws, any(end_ns) AS we FROM %s WHERE date >= "
				"toDate(%" PRIu64 ") GROUP BY token) USING token ORDER BY ws, tid, off_cpu, stack_id, comm, "
				"pid", sel.windows, src->from_s);
	else
		sbuf_printf(&q, " ORDER BY host, off_cpu, pid, tid, comm, stack_id");
	sbuf_printf(&q, " FORMAT RowBinary");
	if (!e)
		e = ask(c, &q, &ans, err, errlen);
	in = (struct rb_in){ (const uint8_t *)ans.p, (const uint8_t *)ans.p + ans.len, false };
	e = e ?: read_samples(&x, &in, src->timeline ? &rows : NULL, &nr_rows);
	if (!e && src->timeline && (e = make_ticks(x.p, rows, nr_rows)) == -E2BIG)
		set_errorf(err, errlen, e, "ClickHouse at %s holds more than 2^28 samples of that window: too many for "
			   "--html or --speedscope, narrow it", src->url);
	q.len = ans.len = 0;
	/* What --comms, --pids, --tids, --dsos and --symbols leave out: in the tables' total, as a file's. */
	if (listed) {
		sbuf_printf(&q, "SELECT off_cpu, sum(c), sum(p) FROM (SELECT off_cpu, any(count) AS c, any(period) AS p "
				"FROM %s.%s", src->db, ch_tables[CH_SAMPLES].name);
		where(&q, &sel, false);
		sbuf_printf(&q, " AND NOT %s GROUP BY token, host, off_cpu, pid, tid, comm, stack_id) GROUP BY off_cpu "
				"FORMAT RowBinary", cond.p);
		if (!e)
			e = ask(c, &q, &ans, err, errlen);
		in = (struct rb_in){ (const uint8_t *)ans.p, (const uint8_t *)ans.p + ans.len, false };
		while (!e && rb_more(&in)) {
			bool off = rb_get_u8(&in);
			uint64_t n = rb_get_u64(&in), per = rb_get_u64(&in);

			*(off ? &x.p->off_filtered_samples : &x.p->filtered_samples) += n;
			*(off ? &x.p->off_filtered_period : &x.p->filtered_period) += per;
			if (in.bad)
				e = -EBADMSG;
		}
		q.len = ans.len = 0;
	}
	sbuf_printf(&q, "SELECT any(event), max(clock), max(hz), sum(l), min(s), max(en) FROM (SELECT token, any(event) "
			"AS event, any(clock) AS clock, any(hz) AS hz, any(lost) AS l, any(start_ns) AS s, any(end_ns) AS en "
			"FROM %s WHERE date >= toDate(%" PRIu64 ") AND start_ns >= %" PRIu64 "000000000 AND start_ns < %" PRIu64
			"000000000",
		    sel.windows, src->from_s, src->from_s, src->to_s);
	if (src->host) {
		sbuf_printf(&q, " AND host = ");
		ch_literal(&q, src->host, strlen(src->host));
	}
	in_ranges(&q, &sel, "start_ns");
	sbuf_printf(&q, " GROUP BY token) HAVING count() > 0 FORMAT RowBinary");
	if (!e)
		e = ask(c, &q, &ans, err, errlen);
	in = (struct rb_in){ (const uint8_t *)ans.p, (const uint8_t *)ans.p + ans.len, false };
	e = e ?: read_meta(&x, &in);
	if (e == -EBADMSG)
		set_errorf(err, errlen, e, "ClickHouse at %s answered rows that are not the schema's (spanperf-clickhouse(7))",
			   src->url);
	else if (e == -ENOMEM && !err[0])
		set_errorf(err, errlen, e, "out of memory reading from ClickHouse at %s", src->url);
	if (!e) {
		/* The files, for pprof's mappings: each dso id's name and a build id it was seen with. */
		x.p->dso_infos = calloc(x.dsos.n ? x.dsos.n : 1, sizeof(*x.p->dso_infos));
		x.p->nr_dso_infos = x.p->dso_infos ? (int)x.dsos.n : 0;
		for (size_t i = 0; i < x.p->nr_funcs && x.p->dso_infos; i++) {
			struct sym_dso_info *d = &x.p->dso_infos[x.p->funcs[i].dso_id];

			d->path = x.p->funcs[i].dso;
			d->kernel = x.p->funcs[i].kernel;
			if (!d->build_id)
				d->build_id = x.p->funcs[i].build_id;
		}
		if (!x.p->dso_infos)
			e = -ENOMEM;
	}
cleanup:
	for (size_t i = 0; i < x.nr_frames; i++)
		free(x.frames[i].f);
	free(x.frames);
	u64_map_free(&x.stack_at);
	strpool_free(&x.fkeys);
	strpool_free(&x.dsos);
	sbuf_free(&q);
	sbuf_free(&ans);
	sbuf_free(&cond);
	free(rows);
	sel_close(&sel);
	ch_http__free(c);
	if (e) {
		strpool_free(&x.strs);
		profile__free(x.p);
		return e;
	}
	/* The profile's strings live as long as it: its labels pool owns them. */
	x.p->labels = x.strs;
	*out = x.p;
	return 0;
}

struct ch_spans {
	struct strpool strs, names, ctrs;
	struct spans_row *rows;
	size_t nr, cap;
	struct spans_view v;
	struct spans_table t;
	const char *ctr_names[SP_MAX_COUNTERS];
	char *url;
};

void ch_spans_free(struct ch_spans *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nr; i++) {
		free((void *)s->rows[i].top);
		free((void *)s->rows[i].woken_by);
	}
	free(s->rows);
	spans_table_free(&s->t);
	strpool_free(&s->strs);
	strpool_free(&s->names);
	strpool_free(&s->ctrs);
	free(s->url);
	free(s);
}

static void copy_hex(char *dst, size_t cap, struct rb_in *in)
{
	size_t n;
	const char *s = rb_get_str(in, &n);

	n = n < cap - 1 ? n : cap - 1;
	memcpy(dst, s, n);
	dst[n] = 0;
}

/* One span's row of the answer, in the columns' order of the query below. */
static int read_span(struct ch_spans *s, struct rb_in *in, struct spans_row *r)
{
	struct spans_func *top;
	struct spans_waker *w;
	int at[SP_MAX_COUNTERS];
	uint64_t n;
	size_t kind;

	memset(r, 0, sizeof(*r));
	r->name = pooled(&s->strs, in, NULL);
	r->source = pooled(&s->strs, in, NULL);
	r->pid = rb_get_u32(in);
	r->tid = rb_get_u32(in);
	r->start = rb_get_u64(in);
	r->end = rb_get_u64(in);
	r->samples = rb_get_u64(in);
	r->unfinished = rb_get_u8(in);
	n = rb_get_len(in);
	if (n > SP_MAX_COUNTERS)
		return -EBADMSG;
	for (uint64_t k = 0; k < n; k++) {
		size_t id;
		const char *c = pooled(&s->ctrs, in, &id);

		if (!c || id >= SP_MAX_COUNTERS)
			return c ? -EBADMSG : -ENOMEM;
		s->ctr_names[id] = c;
		at[k] = id;
	}
	if (rb_get_len(in) != n)
		return -EBADMSG;
	for (uint64_t k = 0; k < n; k++)
		r->counters[at[k]] = rb_get_u64(in);
	r->has_counters = n > 0;
	copy_hex(r->trace_id, sizeof(r->trace_id), in);
	copy_hex(r->span_id, sizeof(r->span_id), in);
	r->has_ctx = rb_get_u8(in);
	r->on_cpu_ns = (int64_t)rb_get_u64(in);
	r->has_split = rb_get_u8(in);
	r->split.on = rb_get_u64(in);
	r->split.runq = rb_get_u64(in);
	r->split.off = rb_get_u64(in);
	r->split.sleep = rb_get_u64(in);
	r->split.blocked = rb_get_u64(in);
	r->split_how = pooled(&s->strs, in, NULL);
	if (r->split_how && !*r->split_how)
		r->split_how = NULL;
	r->off_ns = rb_get_u64(in);
	r->blocked_in = pooled(&s->strs, in, NULL);
	if (r->blocked_in && !*r->blocked_in)
		r->blocked_in = NULL;
	n = rb_get_len(in);
	if (n > 1u << 20)
		return -EBADMSG;
	top = calloc(n ? n : 1, sizeof(*top));
	if (!top)
		return -ENOMEM;
	r->top = top;
	r->nr_top = n;
	for (uint64_t i = 0; i < n; i++)
		top[i].name = pooled(&s->strs, in, NULL);
	if (rb_get_len(in) != n)
		return -EBADMSG;
	for (uint64_t i = 0; i < n; i++)
		top[i].n = rb_get_u64(in);
	n = rb_get_len(in);
	if (n > 1u << 16)
		return -EBADMSG;
	w = calloc(n ? n : 1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	r->woken_by = w;
	r->nr_woken_by = n;
	for (uint64_t i = 0; i < n; i++)
		w[i].comm = pooled(&s->strs, in, NULL);
	if (rb_get_len(in) != n)
		return -EBADMSG;
	for (uint64_t i = 0; i < n; i++)
		w[i].tid = rb_get_u32(in);
	if (rb_get_len(in) != n)
		return -EBADMSG;
	for (uint64_t i = 0; i < n; i++)
		w[i].stack.ns = rb_get_u64(in);
	if (in->bad)
		return -EBADMSG;
	if (!r->name || !r->source)
		return -ENOMEM;
	if (!strpool_intern(&s->names, r->name, &kind))
		return -ENOMEM;
	r->kind = kind;
	return 0;
}

int ch_spans_load(struct ch_spans **out, const struct ch_source *src, const struct spans_view **v, char *err,
		  size_t errlen)
{
	struct ch_spans *s = calloc(1, sizeof(*s));
	struct ch_http *c = NULL;
	struct sbuf q = {}, ans = {};
	struct ch_sel sel = {};
	struct rb_in in;
	int e;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	e = open_http(&c, src, err, errlen);
	e = e ?: sel_open(&sel, src, c, err, errlen);
	sbuf_printf(&q, "SELECT name, source, pid, tid, start_ns, end_ns, samples, unfinished, counter_names, counters, "
			"trace_id, span_id, has_ctx, on_cpu_ns, has_split, split_on, split_runq, split_off, split_sleep, "
			"split_blocked, split_how, off_ns, blocked_in, top_func, top_n, waker_comm, waker_tid, waker_ns "
			"FROM %s.%s", src->db, ch_tables[CH_SPANS].name);
	where(&q, &sel, true);
	sbuf_printf(&q, " AND ");
	lists(&q, &sel, true);
	/* A window sent twice has its spans twice until the merge: each identity once. */
	sbuf_printf(&q, " ORDER BY start_ns, tid, name LIMIT 1 BY host, token, tid, start_ns, name FORMAT RowBinary");
	if (!e)
		e = ask(c, &q, &ans, err, errlen);
	in = (struct rb_in){ (const uint8_t *)ans.p, (const uint8_t *)ans.p + ans.len, false };
	while (!e && rb_more(&in)) {
		if (s->nr == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 256;
			struct spans_row *r = realloc(s->rows, cap * sizeof(*r));

			if (!r) {
				e = -ENOMEM;
				break;
			}
			s->rows = r;
			s->cap = cap;
		}
		e = read_span(s, &in, &s->rows[s->nr]);
		s->nr++;
	}
	if (!e) {
		s->url = strdup(src->url);
		s->v = (struct spans_view){ .input = s->url, .row = s->rows, .nr_rows = s->nr, .ctr_names = s->ctr_names,
					    .nr_ctr = s->ctrs.n, .table_ctr = s->ctrs.n, .has_clock = true };
		for (size_t i = 0; i < s->nr; i++) {
			s->v.offcpu |= s->rows[i].off_ns > 0;
			s->v.wakers |= s->rows[i].nr_woken_by > 0;
			s->v.any_split |= s->rows[i].has_split;
			s->v.nr_samples += s->rows[i].samples;
		}
		for (int k = 0; k < s->v.nr_ctr; k++)
			s->v.ctr_clock[k] = strstr(s->ctr_names[k], "clock") != NULL;
		e = spans_table_build(&s->t, s->rows, s->nr, (const char *const *)s->names.str, s->names.n, 0);
		s->v.table = &s->t;
		if (!s->nr && !e) {
			e = -ENODATA;
			set_errorf(err, errlen, e, "ClickHouse at %s holds no spans of that window%s%s", src->url,
				   src->span_name ? " and span name " : "", src->span_name ? src->span_name : "");
		}
	}
	if (e == -EBADMSG)
		set_errorf(err, errlen, e, "ClickHouse at %s answered rows that are not the schema's (spanperf-clickhouse(7))",
			   src->url);
	sbuf_free(&q);
	sbuf_free(&ans);
	sel_close(&sel);
	ch_http__free(c);
	if (e) {
		ch_spans_free(s);
		return e;
	}
	*v = &s->v;
	*out = s;
	return 0;
}
