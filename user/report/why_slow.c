// SPDX-License-Identifier: GPL-2.0
/* report --spans --why-slow: each name's slowest spans against the rest, from the span join's view. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "log.h"
#include "report_spans.h"
#include "sbuf.h"
#include "session.h"
#include "util.h"
#include "why_slow.h"

#define WAIT_CANDIDATES 4 /* the waits a waker's slow spans blocked in, kept to name the one it ended most */

/* A place the time went, or a waker, while the groups are summed; the key owns its text. */
struct why_acc {
	char *key;
	union {
		struct why_func f;
		struct why_waker w;
	};
	const char *wait[WAIT_CANDIDATES];
	double wait_ns[WAIT_CANDIDATES];
	__u64 best_ns; /* a waker's: the longest slow wait it ended, whose stack it shows */
};

struct accs {
	struct why_acc *a;
	size_t nr, cap;
	struct hindex idx;
};

static bool acc_eq(const void *ctx, size_t i)
{
	const void *const *c = ctx;

	return !strcmp(((const struct accs *)c[0])->a[i].key, c[1]);
}

/* The accumulator of key (copied), made zero the first time; NULL for want of memory. */
static struct why_acc *acc_of(struct accs *s, const char *key)
{
	__u64 h = hash_str(key);
	const void *ctx[2] = { s, key };
	long i = hindex_find(&s->idx, h, acc_eq, ctx);
	char *k;

	if (i >= 0)
		return &s->a[i];
	if (!(k = strdup(key)) || array_reserve((void **)&s->a, &s->cap, s->nr, sizeof(*s->a)) ||
	    hindex_add(&s->idx, h, s->nr)) {
		free(k);
		return NULL;
	}
	s->a[s->nr] = (struct why_acc){ .key = k };
	return &s->a[s->nr++];
}

static void accs_free(struct accs *s)
{
	for (size_t i = 0; i < s->nr; i++)
		free(s->a[i].key);
	free(s->a);
	hindex_free(&s->idx);
	*s = (struct accs){};
}

static __u64 dur(const struct spans_row *r)
{
	return r->end > r->start ? r->end - r->start : 0;
}

static int cmp_slowest(const void *a, const void *b)
{
	const struct spans_row *x = *(const struct spans_row *const *)a, *y = *(const struct spans_row *const *)b;

	if (dur(x) != dur(y))
		return dur(x) < dur(y) ? 1 : -1;
	return (x->start > y->start) - (x->start < y->start);
}

/* rows[0..n) sorted slowest first: the group's figures. */
static void group_of(const struct spans_row *const *rows, size_t n, struct why_group *g)
{
	*g = (struct why_group){ .count = n };
	if (!n)
		return;
	/* The median: the middle one, the faster of the two middle ones of an even count. */
	g->p50_ns = dur(rows[n / 2]);
	for (size_t i = 0; i < n; i++) {
		const struct spans_row *r = rows[i];

		g->total_ns += dur(r);
		if (r->has_split) {
			g->on_ns += r->split.on;
			g->runq_ns += r->split.runq;
			g->sleep_ns += r->split.sleep;
			g->blocked_ns += r->split.blocked;
			g->split++;
		} else if (r->on_cpu_ns > 0) {
			g->on_ns += r->on_cpu_ns;
		}
	}
	g->mean_ns = g->total_ns / n;
	g->on_ns /= n;
	g->runq_ns /= n;
	g->sleep_ns /= n;
	g->blocked_ns /= n;
}

/*
 * A span's CPU time per sample: its own measured time on CPU (its split,
 * or its task-clock) shared out by its samples; else (external spans) the
 * sampling clock's period, no more than the span's time allows.
 */
static double per_sample_ns(const struct spans_view *v, const struct spans_row *r)
{
	double each = v->ns_per_sample;

	if (!r->samples)
		return 0;
	if (r->on_cpu_ns > 0)
		return (double)r->on_cpu_ns / r->samples;
	return each * r->samples > dur(r) ? (double)dur(r) / r->samples : each;
}

static int add_funcs(struct accs *fs, const struct spans_view *v, const struct spans_row *r, bool slow)
{
	double each = per_sample_ns(v, r);
	char key[600];

	for (size_t k = 0; k < r->nr_top; k++) {
		struct why_acc *a;

		snprintf(key, sizeof(key), "on\x1f%s", r->top[k].name);
		if (!(a = acc_of(fs, key)))
			return -ENOMEM;
		a->f.sym = r->top[k].name;
		*(slow ? &a->f.slow_ns : &a->f.rest_ns) += each * r->top[k].n;
	}
	if (r->off_ns && r->blocked_in) {
		struct why_acc *a;

		snprintf(key, sizeof(key), "off\x1f%s", r->blocked_in);
		if (!(a = acc_of(fs, key)))
			return -ENOMEM;
		a->f.sym = r->blocked_in;
		a->f.off_cpu = true;
		*(slow ? &a->f.slow_ns : &a->f.rest_ns) += r->off_ns;
	}
	return 0;
}

/* The wait r blocked in, as one of the waker's candidates, by the time it ended there. */
static void note_wait(struct why_acc *a, const char *wait, double ns)
{
	int k;

	for (k = 0; k < WAIT_CANDIDATES && a->wait[k] && strcmp(a->wait[k], wait); k++)
		;
	if (k == WAIT_CANDIDATES)
		return;
	a->wait[k] = wait;
	a->wait_ns[k] += ns;
}

static int add_wakers(struct accs *ws, const struct spans_row *r, bool slow)
{
	for (int k = 0; k < r->nr_woken_by; k++) {
		const struct spans_waker *w = &r->woken_by[k];
		struct why_acc *a = acc_of(ws, w->comm ? w->comm : "?");

		if (!a)
			return -ENOMEM;
		/*
		 * One waker per comm (a pool's threads alike, and one thread whose
		 * stack was taken a frame deeper or shallower), shown with the stack
		 * that ended the longest wait of the slow group.
		 */
		if (!a->w.stack)
			a->w = (struct why_waker){ .comm = w->comm ? w->comm : "?", .tid = w->tid, .stack = &w->stack };
		if (slow && w->stack.ns > a->best_ns) {
			a->best_ns = w->stack.ns;
			a->w.stack = &w->stack;
			a->w.tid = w->tid;
		}
		*(slow ? &a->w.slow_ns : &a->w.rest_ns) += w->stack.ns;
		if (slow && r->blocked_in)
			note_wait(a, r->blocked_in, w->stack.ns);
	}
	return 0;
}

static int cmp_func(const void *a, const void *b)
{
	const struct why_func *x = a, *y = b;

	if (x->explains_ns != y->explains_ns)
		return x->explains_ns < y->explains_ns ? 1 : -1;
	return strcmp(x->sym, y->sym) ?: x->off_cpu - y->off_cpu;
}

static int cmp_waker(const void *a, const void *b)
{
	const struct why_waker *x = a, *y = b;

	if (x->explains_ns != y->explains_ns)
		return x->explains_ns < y->explains_ns ? 1 : -1;
	return strcmp(x->comm, y->comm);
}

/* What each explains, per span; the positive ones, most first, up to max, into *out. */
static int rank(struct accs *s, bool wakers, const struct why_name *n, void **out, size_t *nr, size_t max)
{
	size_t size = wakers ? sizeof(struct why_waker) : sizeof(struct why_func), k = 0;
	char *arr = calloc(s->nr ? s->nr : 1, size);

	if (!arr)
		return -ENOMEM;
	for (size_t i = 0; i < s->nr; i++) {
		struct why_acc *a = &s->a[i];
		double *slow = wakers ? &a->w.slow_ns : &a->f.slow_ns, *rest = wakers ? &a->w.rest_ns : &a->f.rest_ns;
		double ex = *slow / n->slow.count - (n->rest.count ? *rest / n->rest.count : 0);

		if (!(ex > 0))
			continue;
		if (wakers) {
			double best = 0;

			a->w.explains_ns = ex;
			for (int j = 0; j < WAIT_CANDIDATES && a->wait[j]; j++)
				if (a->wait_ns[j] > best) {
					best = a->wait_ns[j];
					a->w.blocked_in = a->wait[j];
				}
			memcpy(arr + k++ * size, &a->w, size);
			continue;
		}
		a->f.explains_ns = ex;
		a->f.slow_share = n->slow.total_ns > 0 ? a->f.slow_ns / n->slow.total_ns : 0;
		a->f.rest_share = n->rest.total_ns > 0 ? a->f.rest_ns / n->rest.total_ns : 0;
		a->f.delta = a->f.slow_share - a->f.rest_share;
		memcpy(arr + k++ * size, &a->f, size);
	}
	sort_n(arr, k, size, wakers ? cmp_waker : cmp_func);
	*out = arr;
	*nr = k < max ? k : max;
	return 0;
}

/* Name k of the view: its finished spans split into the slowest pct and the rest, and compared. */
static int compare_name(struct why_name *n, const struct spans_view *v, size_t k, double pct)
{
	const struct spans_row **rows = NULL;
	struct accs fs = {}, ws = {};
	size_t nr = 0, slow;
	int e = 0;

	for (size_t i = 0; i < v->nr_rows; i++)
		nr += v->row[i].kind == k && !v->row[i].unfinished;
	if (!(rows = calloc(nr ? nr : 1, sizeof(*rows))))
		return -ENOMEM;
	nr = 0;
	for (size_t i = 0; i < v->nr_rows; i++)
		if (v->row[i].kind == k && !v->row[i].unfinished)
			rows[nr++] = &v->row[i];
	sort_n(rows, nr, sizeof(*rows), cmp_slowest);
	/* At least one slow span, and at least one of the rest to hold it against. */
	slow = (size_t)ceil(nr * pct / 100 - 1e-9);
	slow = slow < 1 ? 1 : slow >= nr && nr > 1 ? nr - 1 : slow;
	if (nr > 0) {
		group_of(rows, slow, &n->slow);
		group_of(rows + slow, nr - slow, &n->rest);
	}
	for (size_t i = 0; i < nr && !e; i++)
		e = add_funcs(&fs, v, rows[i], i < slow) ?: add_wakers(&ws, rows[i], i < slow);
	if (!e && nr)
		e = rank(&fs, false, n, (void **)&n->func, &n->nr_func, WHY_FUNCS) ?:
		    rank(&ws, true, n, (void **)&n->waker, &n->nr_waker, WHY_WAKERS);
	accs_free(&fs);
	accs_free(&ws);
	free(rows);
	return e;
}

int why_slow__build(struct why_slow *w, const struct spans_view *v, const struct why_opts *o)
{
	const struct spans_table *t = v->table;
	int e = 0;

	*w = (struct why_slow){ .pct = o->slowest_pct };
	if (!(w->names = calloc(t->nr_kinds ? t->nr_kinds : 1, sizeof(*w->names))))
		return -ENOMEM;
	for (size_t k = 0; k < t->nr_kinds && !e; k++) {
		struct why_name *n = &w->names[w->nr_names];

		if ((o->span_name && strcmp(o->span_name, t->kind[k].name)) || !t->kind[k].count)
			continue;
		n->name = t->kind[k].name;
		e = compare_name(n, v, k, o->slowest_pct);
		/* A name whose every span the recording ended inside has nothing to compare. */
		if (n->slow.count)
			w->nr_names++;
		else if (!e)
			*n = (struct why_name){};
	}
	if (!e && !w->nr_names)
		e = -ENOENT;
	if (e)
		why_slow__free(w);
	return e;
}

void why_slow__free(struct why_slow *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nr_names; i++) {
		free(w->names[i].func);
		free(w->names[i].waker);
	}
	free(w->names);
	*w = (struct why_slow){};
}

/* ---- output ---- */

static void json_group(struct sbuf *b, const char *name, const struct why_group *g)
{
	sbuf_printf(b, ",\"%s\":{\"count\":%zu,\"p50_ns\":%llu,\"on_cpu_ns\":%.0f,\"runq_ns\":%.0f,\"sleep_ns\":%.0f,"
		       "\"blocked_ns\":%.0f}",
		    name, g->count, (unsigned long long)g->p50_ns, g->on_ns, g->runq_ns, g->sleep_ns, g->blocked_ns);
}

static void json_name(struct sbuf *b, const struct why_slow *w, const struct why_name *n)
{
	sbuf_printf(b, "{\"name\":");
	sbuf_json_str(b, n->name);
	sbuf_printf(b, ",\"slowest_pct\":%g", w->pct);
	json_group(b, "slow", &n->slow);
	json_group(b, "rest", &n->rest);
	sbuf_printf(b, ",\"functions\":[");
	for (size_t i = 0; i < n->nr_func; i++) {
		const struct why_func *f = &n->func[i];
		char sym[600];

		snprintf(sym, sizeof(sym), "%s%s", f->sym, f->off_cpu ? " [off-cpu]" : "");
		sbuf_printf(b, "%s{\"sym\":", i ? "," : "");
		sbuf_json_str(b, sym);
		sbuf_printf(b, ",\"slow_share\":%.6f,\"rest_share\":%.6f,\"delta\":%.6f}", f->slow_share, f->rest_share,
			    f->delta);
	}
	sbuf_printf(b, "],\"wakers\":[");
	for (size_t i = 0; i < n->nr_waker; i++) {
		const struct why_waker *k = &n->waker[i];

		sbuf_printf(b, "%s{\"comm\":", i ? "," : "");
		sbuf_json_str(b, k->comm);
		sbuf_printf(b, ",\"stack\":[");
		for (__u32 j = 0; j < k->stack->nr; j++) {
			sbuf_printf(b, "%s", j ? "," : "");
			sbuf_json_str(b, k->stack->frame[j]);
		}
		sbuf_printf(b, "],\"ns\":%.0f}", k->slow_ns);
	}
	sbuf_printf(b, "]}\n");
}

static void text_ms(FILE *out, double ns)
{
	fprintf(out, "  %10.3f", ns / 1e6);
}

static void print_text(const struct why_slow *w, const struct why_name *n, FILE *out)
{
	static const char *const rows[] = { "mean", "on CPU", "run queue", "asleep", "blocked" };
	const struct why_group *g[2] = { &n->slow, &n->rest };
	char esc[1024];

	fprintf(out, "%s: the slowest %g%% (%zu spans) against the rest (%zu)\n", text_name(n->name, NULL, esc, sizeof(esc)),
		w->pct, n->slow.count, n->rest.count);
	fprintf(out, "  %-12s  %10s  %10s\n", "ms per span", "slow", "rest");
	fprintf(out, "  %-12s", "p50");
	for (int i = 0; i < 2; i++)
		text_ms(out, g[i]->p50_ns);
	fputc('\n', out);
	for (int r = 0; r < 5; r++) {
		fprintf(out, "  %-12s", rows[r]);
		for (int i = 0; i < 2; i++)
			text_ms(out, r == 0 ? g[i]->mean_ns : r == 1 ? g[i]->on_ns : r == 2 ? g[i]->runq_ns
							 : r == 3 ? g[i]->sleep_ns : g[i]->blocked_ns);
		fputc('\n', out);
	}
	if (n->slow.split < n->slow.count || n->rest.split < n->rest.count)
		fprintf(out, "  (run queue, asleep and blocked: of the spans with a wall split, record --off-cpu or --sched)\n");
	if (n->nr_func) {
		fprintf(out, "\n  %-12s  %7s  %7s  %8s  %s\n", "explains ms", "slow %", "rest %", "delta", "function");
		for (size_t i = 0; i < n->nr_func; i++) {
			const struct why_func *f = &n->func[i];

			fprintf(out, "  %12.3f  %6.1f%%  %6.1f%%  %+7.1f%%  %s%s\n", f->explains_ns / 1e6, 100 * f->slow_share,
				100 * f->rest_share, 100 * f->delta, text_name(f->sym, NULL, esc, sizeof(esc)),
				f->off_cpu ? " [off-cpu]" : "");
		}
	}
	if (n->nr_waker) {
		fprintf(out, "\n  %-12s  %-16s  %s\n", "explains ms", "waker", "the wait it ended; its stack");
		for (size_t i = 0; i < n->nr_waker; i++) {
			const struct why_waker *k = &n->waker[i];
			char esc2[1024];

			fprintf(out, "  %12.3f  %-16s  %s\n%16s", k->explains_ns / 1e6, text_name(k->comm, NULL, esc, sizeof(esc)),
				k->blocked_in ? text_name(k->blocked_in, NULL, esc2, sizeof(esc2)) : "?", "");
			for (__u32 j = 0; j < k->stack->nr; j++)
				fprintf(out, "%s%s", j ? " <- " : "", text_name(k->stack->frame[j], NULL, esc, sizeof(esc)));
			fputc('\n', out);
		}
	}
	fputc('\n', out);
}

int why_slow__print(const struct why_slow *w, bool json, FILE *out)
{
	for (size_t i = 0; i < w->nr_names; i++) {
		if (json) {
			struct sbuf b = {};
			int e;

			json_name(&b, w, &w->names[i]);
			e = b.err;
			if (!e)
				fwrite(b.p, 1, b.len, out);
			sbuf_free(&b);
			if (e)
				return e;
		} else {
			print_text(w, &w->names[i], out);
		}
	}
	return 0;
}

int why_slow_report(const struct spans_report_opts *so, const struct why_opts *o, char *err, size_t errlen)
{
	struct spans_report_opts jo = *so;
	struct session *sess = NULL;
	struct span_report *r = NULL;
	const struct spans_view *v = NULL;
	struct why_slow w = {};
	int e;

	/* Every function and stack of every span: the groups are compared on all of them. */
	jo.min_pct = 0;
	e = session__open(&sess, jo.input, &(struct session_opts){ .any_owner = jo.any_owner, .filter = jo.filter },
			  err, errlen);
	e = e ?: span_report__new(&r, sess, &jo, err, errlen);
	e = e ?: session__run(sess, err, errlen);
	e = e ?: span_report__finish(r, err, errlen);
	if (!e && (e = span_report__view(r, &v)))
		set_errorf(err, errlen, e, "out of memory joining the spans of %s", jo.input);
	if (!e && (e = why_slow__build(&w, v, o)) == -ENOENT && o->span_name)
		set_errorf(err, errlen, e, "%s: no finished span named '%s'", jo.input, o->span_name);
	else if (e == -ENOENT)
		set_errorf(err, errlen, e, "%s: no finished span to compare", jo.input);
	else if (e && !err[0])
		set_errorf(err, errlen, e, "out of memory comparing the spans of %s", jo.input);
	if (!e && (e = why_slow__print(&w, o->json, stdout) ?: (fflush(stdout) ? -errno : 0)))
		set_errorf(err, errlen, e, "cannot write the comparison: %s", strerror(-e));
	why_slow__free(&w);
	span_report__free(r);
	session__free(sess);
	return e;
}
