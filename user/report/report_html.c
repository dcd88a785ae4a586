// SPDX-License-Identifier: GPL-2.0
/*
 * report --html: the page is page.html's markup, page.css and page.js
 * (compiled in by the Makefile as html_assets.c), and the recording as one
 * JSON document inside <script type="application/json">.  Every name in it
 * comes from the recorded processes (comm, symbols, span names), so the
 * JSON is escaped for a script element: '<' as \u003c (no "</script>" or
 * "<!--" can end or bend it), U+2028/2029 escaped, invalid UTF-8 replaced
 * (sbuf_json_str).  The page reads it with JSON.parse and writes names with
 * textContent only, and a Content-Security-Policy forbids any fetch.
 *
 * The data is laid out for size (a page of a million samples stays under
 * 50 MB): one string table, per-thread arrays of sample times as deltas
 * and stack indices, stacks as arrays of function indices.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "report_html.h"
#include "sbuf.h"
#include "session.h"
#include "util.h"

extern const char html_page_css[], html_page_js[], html_page_body[];

struct jout {
	FILE *f;
	struct sbuf b;
	int err;
};

/* Writes the buffer out, escaped for the inside of a <script> element. */
static void jflush(struct jout *o)
{
	const unsigned char *p = (const unsigned char *)o->b.p;
	size_t i, from = 0;

	if (o->b.err && !o->err)
		o->err = o->b.err;
	for (i = 0; !o->err && i < o->b.len; i++) {
		const char *rep = NULL;
		size_t skip = 1;

		if (p[i] == '<')
			rep = "\\u003c";
		else if (p[i] == 0xe2 && i + 2 < o->b.len && p[i + 1] == 0x80 && (p[i + 2] == 0xa8 || p[i + 2] == 0xa9)) {
			rep = p[i + 2] == 0xa8 ? "\\u2028" : "\\u2029";
			skip = 3;
		}
		if (!rep)
			continue;
		if (fwrite(p + from, 1, i - from, o->f) != i - from || fputs(rep, o->f) < 0)
			o->err = stdio_error();
		from = i + skip;
		i += skip - 1;
	}
	if (!o->err && fwrite(p + from, 1, o->b.len - from, o->f) != o->b.len - from)
		o->err = stdio_error();
	o->b.len = 0;
}

static void jmaybe_flush(struct jout *o)
{
	if (o->b.len > (1 << 20))
		jflush(o);
}

/* A UTF-8 sequence split across two flushes would escape wrongly: flush only between values. */
#define J(...) sbuf_printf(&o->b, __VA_ARGS__)

static void jstr(struct jout *o, const char *s)
{
	sbuf_json_str(&o->b, s ? s : "");
}

static void write_meta(struct jout *o, const struct timeline *t, const char *input)
{
	const struct profile *p = t->p;
	/* A fleet's (report --clickhouse) has no file: its meta stays empty. */
	const struct pd_meta none = {}, *m = p->rd ? &p->rd->meta : &none;
	struct sbuf cmd = {};

	for (int i = 0; i < m->cmdline_argc; i++)
		sbuf_printf(&cmd, "%s%s", i ? " " : "", m->cmdline_argv[i]);
	sbuf_zero(&cmd, 1);
	J("\"meta\":{\"file\":");
	jstr(o, input);
	J(",\"host\":");
	jstr(o, m->hostname);
	J(",\"kernel\":");
	jstr(o, m->osrelease);
	J(",\"arch\":");
	jstr(o, m->arch);
	J(",\"cpu\":");
	jstr(o, m->cpudesc);
	J(",\"cpus\":%u,\"cmdline\":", m->nr_cpus_online);
	jstr(o, cmd.p);
	J(",\"event\":");
	jstr(o, p->event);
	J(",\"clock\":%s,\"freq\":%llu,\"samples\":%llu,\"off_samples\":%llu,\"lost\":%llu,\"spans\":%llu,"
	  "\"spans_shown\":%zu,\"every\":%llu,\"t0\":\"%llu\",\"dur\":%llu,\"callchains\":%s,\"version\":\"%s\",\"counters\":[",
	  p->event_is_clock ? "true" : "false", (unsigned long long)p->sample_freq, (unsigned long long)p->samples,
	  (unsigned long long)p->off_samples, (unsigned long long)p->lost, (unsigned long long)t->spans_total,
	  t->nr_spans, (unsigned long long)t->sample_every, (unsigned long long)t->t0,
	  (unsigned long long)(t->t1 - t->t0), p->callchains ? "true" : "false", SPANPERF_VERSION);
	for (int k = 0; k < t->nr_ctr; k++)
		J("%s%zu", k ? "," : "", t->ctr_names[k]);
	J("]}");
	sbuf_free(&cmd);
}

static void write_stacks(struct jout *o, const char *key, const struct pstack *s, size_t n)
{
	J(",\"%s\":[", key);
	for (size_t i = 0; i < n; i++) {
		J("%s[", i ? "," : "");
		for (__u32 j = 0; j < s[i].nr; j++)
			J("%s%u", j ? "," : "", s[i].frames[j].func);
		J("]");
		jmaybe_flush(o);
	}
	J("]");
}

static void write_threads(struct jout *o, const struct timeline *t)
{
	J(",\"th\":[");
	for (size_t i = 0; i < t->nr_threads; i++) {
		const struct tl_thread *th = &t->threads[i];
		__u64 prev = t->t0;
		bool first = true;

		J("%s{\"tid\":%u,\"pid\":%u,\"n\":%zu,\"ns\":%llu,\"t\":[", i ? "," : "", th->tid, th->pid, th->comm,
		  (unsigned long long)th->samples);
		for (size_t k = 0; k < th->nr_ticks; k++) {
			if (th->ticks[k].off)
				continue;
			J("%s%llu", first ? "" : ",", (unsigned long long)(th->ticks[k].time - prev));
			prev = th->ticks[k].time;
			first = false;
			jmaybe_flush(o);
		}
		J("],\"k\":[");
		first = true;
		for (size_t k = 0; k < th->nr_ticks; k++) {
			if (th->ticks[k].off)
				continue;
			J("%s%u", first ? "" : ",", th->ticks[k].stack);
			first = false;
			jmaybe_flush(o);
		}
		/* Off-CPU blocks: start, length, stack; sums of short blocks have no interval to draw. */
		J("],\"o\":[");
		first = true;
		for (size_t k = 0; k < th->nr_ticks; k++) {
			const struct ptick *b = &th->ticks[k];

			if (!b->off || b->sum || b->period > b->time - t->t0)
				continue;
			J("%s%llu,%llu,%u", first ? "" : ",", (unsigned long long)(b->time - b->period - t->t0),
			  (unsigned long long)b->period, b->stack);
			first = false;
			jmaybe_flush(o);
		}
		J("]}");
	}
	J("]");
}

/* Each span: thread, start, length, name, source, samples, flags, counters, top (name, n)..., wall, ids. */
static void write_spans(struct jout *o, const struct timeline *t)
{
	J(",\"sp\":[");
	for (size_t i = 0; i < t->nr_spans; i++) {
		const struct tl_span *s = &t->spans[i];
		const struct tl_thread *th = NULL;
		th = &t->threads[SP_PARTITION(t->nr_threads, k, t->threads[k].tid < s->tid)];
		J("%s[%zu,%llu,%llu,%zu,%zu,%llu,%d,[", i ? "," : "", (size_t)(th - t->threads),
		  (unsigned long long)(s->start - t->t0), (unsigned long long)(s->end - s->start), s->name, s->source,
		  (unsigned long long)s->samples, (s->unfinished ? 1 : 0) | (s->ids_recorded ? 2 : 0));
		for (int k = 0; s->has_counters && k < t->nr_ctr; k++)
			J("%s%llu", k ? "," : "", (unsigned long long)s->counters[k]);
		J("],[");
		for (int k = 0; k < s->ntop; k++)
			J("%s%zu,%llu", k ? "," : "", s->top[k], (unsigned long long)s->top_n[k]);
		J("],%zu,\"%s\",\"%s\"]", s->wall, s->span_id, s->ids_recorded ? s->trace_id : "");
		jmaybe_flush(o);
	}
	J("],\"w\":[");
	for (size_t i = 0; i < t->walls.n; i++) {
		J("%s{%s}", i ? "," : "", t->walls.str[i]);
		jmaybe_flush(o);
	}
	J("]");
}

/* Functions as [name, dso, kernel] triples into the string table, which goes last. */
static int write_funcs(struct jout *o, struct timeline *t)
{
	const struct profile *p = t->p;

	J(",\"f\":[");
	for (size_t i = 0; i < p->nr_funcs; i++) {
		char buf[32];
		size_t name, dso;

		if (!strpool_intern(&t->pool, pfunc_sym(&p->funcs[i], buf, sizeof(buf)), &name) ||
		    !strpool_intern(&t->pool, p->funcs[i].dso ? p->funcs[i].dso : "", &dso))
			return -ENOMEM;
		J("%s%zu,%zu,%d", i ? "," : "", name, dso, p->funcs[i].kernel);
		jmaybe_flush(o);
	}
	J("]");
	return 0;
}

int report_html(const struct timeline *tc, const char *input, FILE *out)
{
	/* The string table grows with the functions' names. */
	struct timeline *t = (struct timeline *)tc;
	struct jout jo = { .f = out }, *o = &jo;
	int e;

	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      /* Nothing may be fetched: the page is the whole report, and no name in it can load anything. */
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; "
	      "style-src 'unsafe-inline'; img-src data:\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	      "<meta name=\"generator\" content=\"spanperf " SPANPERF_VERSION "\">\n<title>spanperf</title>\n<style>\n",
	      out);
	fputs(html_page_css, out);
	fputs("</style></head>\n<body>\n", out);
	fputs(html_page_body, out);
	fputs("<script id=\"spanperf-data\" type=\"application/json\">{\"v\":1,", out);
	write_meta(o, t, input);
	e = write_funcs(o, t);
	if (e)
		goto cleanup;
	write_stacks(o, "k", t->p->stacks, t->p->nr_stacks);
	write_stacks(o, "ko", t->p->off_stacks, t->p->nr_off_stacks);
	write_threads(o, t);
	write_spans(o, t);
	J(",\"s\":[");
	for (size_t i = 0; i < t->pool.n; i++) {
		J("%s", i ? "," : "");
		jstr(o, t->pool.str[i]);
		jmaybe_flush(o);
	}
	J("]}");
	jflush(o);
	if (o->err) {
		e = o->err;
		goto cleanup;
	}
	fputs("</script>\n<script>\n", out);
	fputs(html_page_js, out);
	fputs("</script>\n</body></html>\n", out);
	e = fflush(out) ? stdio_error() : ferror(out) ? -EIO : 0;
cleanup:
	sbuf_free(&o->b);
	return e;
}

/* ---- speedscope ---- */

enum { EV_SAMPLE_END, EV_SPAN_END, EV_SPAN_START, EV_SAMPLE_START }; /* ends first at one instant */

struct sev {
	__u64 at;
	int type;
	size_t ref; /* span index, or tick index */
};

static int cmp_sev(const void *a, const void *b)
{
	const struct sev *x = a, *y = b;

	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	if (x->type != y->type)
		return x->type < y->type ? -1 : 1;
	/* Spans opening together: the outer (earlier index, sorted outer first) first; closing: inner first. */
	return x->type == EV_SPAN_END ? (x->ref < y->ref) - (x->ref > y->ref) : (x->ref > y->ref) - (x->ref < y->ref);
}

struct ss_state {
	__u32 *cur, *want;	/* frames open, root first */
	size_t ncur, nwant, cap;
	size_t *open;		/* spans open, in order of opening */
	size_t nopen, cap_open;
};

static int ss_reserve(struct ss_state *s, size_t n)
{
	if (n <= s->cap)
		return 0;
	s->cap = n * 2;
	__u32 *c = realloc(s->cur, s->cap * sizeof(*c)), *w = c ? realloc(s->want, s->cap * sizeof(*w)) : NULL;

	if (c)
		s->cur = c;
	if (w)
		s->want = w;
	return c && w ? 0 : -ENOMEM;
}

/* Closes and opens frames so that cur becomes want, at time at. */
static void ss_diff(struct jout *o, struct ss_state *s, __u64 at, bool *first)
{
	size_t same = 0;

	while (same < s->ncur && same < s->nwant && s->cur[same] == s->want[same])
		same++;
	while (s->ncur > same) {
		J("%s{\"type\":\"C\",\"frame\":%u,\"at\":%llu}", *first ? "" : ",", s->cur[--s->ncur],
		  (unsigned long long)at);
		*first = false;
	}
	for (; s->ncur < s->nwant; s->ncur++) {
		s->cur[s->ncur] = s->want[s->ncur];
		J("%s{\"type\":\"O\",\"frame\":%u,\"at\":%llu}", *first ? "" : ",", s->cur[s->ncur],
		  (unsigned long long)at);
		*first = false;
	}
	jmaybe_flush(o);
}

static int ss_thread(struct jout *o, const struct timeline *t, const struct tl_thread *th, const size_t *span_frame,
		     __u64 dt, struct ss_state *st)
{
	const struct profile *p = t->p;
	struct sev *ev = NULL;
	size_t nev = 0, cap = 0, sample = (size_t)-1;
	bool first = true;
	__u64 prev_end = 0;

	for (size_t i = 0; i < t->nr_spans; i++) {
		/* A span of no time has nothing to show, and its end would sort before its start: never closed. */
		if (t->spans[i].tid != th->tid || t->spans[i].end <= t->spans[i].start)
			continue;
		if (array_reserve((void **)&ev, &cap, nev + 1, sizeof(*ev)))
			goto oom;
		ev[nev++] = (struct sev){ t->spans[i].start, EV_SPAN_START, i };
		ev[nev++] = (struct sev){ t->spans[i].end, EV_SPAN_END, i };
	}
	/* A sample stands for the interval before it, clipped by the one before. */
	for (size_t k = 0; k < th->nr_ticks; k++) {
		const struct ptick *x = &th->ticks[k];
		__u64 from = x->time > dt ? x->time - dt : 0, end;

		if (x->off)
			continue;
		if (from < prev_end)
			from = prev_end;
		if (from < t->t0)
			from = t->t0; /* the first sample's interval, clipped to the profile */
		/* Never empty: a sample's end sorts before its start at one instant. */
		end = x->time > from ? x->time : from + 1;
		prev_end = end;
		if (array_reserve((void **)&ev, &cap, nev + 1, sizeof(*ev)))
			goto oom;
		ev[nev++] = (struct sev){ from, EV_SAMPLE_START, k };
		ev[nev++] = (struct sev){ end, EV_SAMPLE_END, k };
	}
	sort_n(ev, nev, sizeof(*ev), cmp_sev);
	st->ncur = st->nopen = 0;
	for (size_t i = 0; i < nev;) {
		__u64 at = ev[i].at;

		for (; i < nev && ev[i].at == at; i++) {
			switch (ev[i].type) {
			case EV_SAMPLE_START:
				sample = ev[i].ref;
				break;
			case EV_SAMPLE_END:
				if (sample == ev[i].ref)
					sample = (size_t)-1;
				break;
			case EV_SPAN_START:
				if (array_reserve((void **)&st->open, &st->cap_open, st->nopen, sizeof(*st->open)))
					goto oom;
				st->open[st->nopen++] = ev[i].ref;
				break;
			case EV_SPAN_END:
				for (size_t k = 0; k < st->nopen; k++)
					if (st->open[k] == ev[i].ref) {
						memmove(&st->open[k], &st->open[k + 1], (st->nopen - k - 1) * sizeof(*st->open));
						st->nopen--;
						break;
					}
				break;
			}
		}
		st->nwant = 0;
		if (ss_reserve(st, st->nopen + (sample != (size_t)-1 ? p->stacks[th->ticks[sample].stack].nr : 0) + 1))
			goto oom;
		for (size_t k = 0; k < st->nopen; k++)
			st->want[st->nwant++] = span_frame[t->spans[st->open[k]].name];
		if (sample != (size_t)-1) {
			const struct pstack *s = &p->stacks[th->ticks[sample].stack];

			for (__u32 j = s->nr; j-- > 0;)
				st->want[st->nwant++] = s->frames[j].func;
		}
		ss_diff(o, st, at - t->t0, &first);
	}
	free(ev);
	return 0;
oom:
	free(ev);
	return -ENOMEM;
}

/* The busiest thread first: speedscope opens the first profile. */
static int cmp_busy(const void *a, const void *b, void *tl)
{
	const struct timeline *t = tl;
	const struct tl_thread *x = &t->threads[*(const size_t *)a], *y = &t->threads[*(const size_t *)b];

	if (x->samples != y->samples)
		return x->samples < y->samples ? 1 : -1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

int report_speedscope(const struct timeline *t, const char *input, FILE *out)
{
	const struct profile *p = t->p;
	struct jout jo = { .f = out }, *o = &jo;
	struct ss_state st = {};
	size_t *span_frame = malloc((t->pool.n ? t->pool.n : 1) * sizeof(*span_frame));
	size_t nframes = p->nr_funcs, *order = NULL;
	__u64 dt;
	bool any = false;
	int e = 0;

	if (!span_frame)
		return -ENOMEM;
	memset(span_frame, 0xff, (t->pool.n ? t->pool.n : 1) * sizeof(*span_frame));
	/* A clock event samples every 1/freq s of CPU; thinning makes each kept sample stand for more. */
	dt = p->sample_freq ? 1000000000ull / p->sample_freq : 1000000;
	dt *= t->sample_every;
	J("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":\"spanperf %s\",\"name\":",
	  SPANPERF_VERSION);
	jstr(o, input);
	J(",\"activeProfileIndex\":0,\"shared\":{\"frames\":[");
	for (size_t i = 0; i < p->nr_funcs; i++) {
		char buf[32];

		J("%s{\"name\":", i ? "," : "");
		jstr(o, pfunc_sym(&p->funcs[i], buf, sizeof(buf)));
		/* A Python function: its source file (speedscope shows it beside the name); else the dso. */
		J(",\"file\":");
		jstr(o, p->funcs[i].src_file ? p->funcs[i].src_file : p->funcs[i].dso);
		J("}");
		jmaybe_flush(o);
	}
	for (size_t i = 0; i < t->nr_spans; i++) {
		size_t n = t->spans[i].name;
		struct sbuf b = {};

		if (span_frame[n] != (size_t)-1)
			continue;
		span_frame[n] = nframes++;
		sbuf_printf(&b, "span:%s", t->pool.str[n]);
		sbuf_zero(&b, 1);
		J("%s{\"name\":", nframes > 1 ? "," : "");
		jstr(o, b.err ? "span" : b.p);
		J("}");
		sbuf_free(&b);
	}
	J("]},\"profiles\":[");
	order = malloc((t->nr_threads ? t->nr_threads : 1) * sizeof(*order));
	if (!order) {
		e = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < t->nr_threads; i++)
		order[i] = i;
	qsort_r(order, t->nr_threads, sizeof(*order), cmp_busy, (void *)t);
	for (size_t i = 0; i < t->nr_threads && !e; i++) {
		const struct tl_thread *th = &t->threads[order[i]];

		J("%s{\"type\":\"evented\",\"name\":", any ? "," : "");
		{
			struct sbuf b = {};

			sbuf_printf(&b, "%s (tid %u)", t->pool.str[th->comm], th->tid);
			sbuf_zero(&b, 1);
			jstr(o, b.err ? "?" : b.p);
			sbuf_free(&b);
		}
		J(",\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":%llu,\"events\":[",
		  (unsigned long long)(t->t1 - t->t0 + 1));
		e = ss_thread(o, t, th, span_frame, dt, &st);
		J("]}");
		any = true;
	}
	J("]}\n");
	jflush(o);
cleanup:
	free(order);
	free(span_frame);
	free(st.cur);
	free(st.want);
	free(st.open);
	sbuf_free(&o->b);
	return e ?: o->err;
}
