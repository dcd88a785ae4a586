// SPDX-License-Identifier: GPL-2.0
/*
 * The OTel join (otel_join.c): otel spans of any ids, edges and OTEP 4947
 * attribute bytes, process contexts of any keys, samples, and the
 * --span-prefix spans, folded.  Checked: every sample is folded once (counts
 * and periods add up), a sample inside exactly one otel span of its thread
 * carries that span's ids, prefixes are there when asked for, and the
 * pooled attributes split back to what the bytes said (separators as '?').
 */
#include "fuzz_check.h"
#include "fuzz_rec.h"
#include "otel_ctx.h"
#include "otel_join.h"

#define MAX_SPANS 64
#define MAX_SAMPLES 256
#define NR_STACKS 8

struct want {
	struct { __u32 tid; __u64 start, end; char span_id[17]; } span[MAX_SPANS];
	int nspans;
	struct { __u32 tid, stack; __u64 time; } sample[MAX_SAMPLES];
	int nsamples;
};

/* The pairs of one span's attributes, as otel_attrs_each gives them, separators made '?'. */
struct pairs {
	char text[8192];
	size_t len;
};

static int add_pair(void *ctx, const char *key, const char *value)
{
	struct pairs *p = ctx;
	int n = snprintf(p->text + p->len, sizeof(p->text) - p->len, "%s=%s;", key, value);

	if (n > 0)
		p->len = SP_MIN(p->len + n, sizeof(p->text) - 1);
	for (size_t i = 0; i < p->len; i++)
		if (p->text[i] == '\x1e' || p->text[i] == '\x1f')
			p->text[i] = '?';
	return 0;
}

static const struct otel_pctx *pc_of(void *ctx, __u32 pid)
{
	struct otel_pctx *pc = ctx;

	return pid == 100 ? &pc[0] : pid == 102 ? &pc[1] : NULL;
}

/* The pooled form of a span's attributes splits back into the pairs each gave. */
static void check_attrs(const struct otel_pctx *pc, const __u8 *attrs, size_t n)
{
	struct strpool pool = {};
	struct pairs a = {}, b = {};
	const char *pooled;

	if (otel_attrs_intern(&pool, pc, attrs, n, &pooled))
		abort();
	otel_attrs_each(pc, attrs, n, add_pair, &a);
	otel_attrs_split(pooled, add_pair, &b);
	if (a.len != b.len || memcmp(a.text, b.text, a.len)) {
		fprintf(stderr, "fuzz: attributes ");
		fuzz_show(a.text, a.len);
		fprintf(stderr, " pooled as ");
		fuzz_show(b.text, b.len);
		fprintf(stderr, "\n");
		abort();
	}
	strpool_free(&pool);
}

static void check_fold(struct otel_join *j, const struct want *w, __u64 periods, bool prefixes)
{
	struct otel_fold *f;
	__u64 count = 0, period = 0;
	size_t n;

	if (otel_join__fold(j, &f, &n))
		abort();
	for (size_t i = 0; i < n; i++) {
		count += f[i].count;
		period += f[i].period;
		if (f[i].stack >= NR_STACKS || !f[i].ids.trace_id != !f[i].ids.span_id || prefixes != !!f[i].prefix)
			abort();
	}
	if (count != (__u64)w->nsamples || period != periods) {
		fprintf(stderr, "fuzz: %d samples of %llu ns folded as %llu of %llu ns\n", w->nsamples,
			(unsigned long long)periods, (unsigned long long)count, (unsigned long long)period);
		abort();
	}
	/* A sample inside exactly one otel span of its thread: its stack has a row of that span's ids. */
	for (int s = 0; s < w->nsamples; s++) {
		int in = -1, nr = 0;
		size_t i;

		for (int k = 0; k < w->nspans; k++)
			if (w->span[k].tid == w->sample[s].tid && w->span[k].start <= w->sample[s].time &&
			    w->sample[s].time <= w->span[k].end)
				in = k, nr++;
		if (nr != 1)
			continue;
		for (i = 0; i < n; i++)
			if (f[i].stack == w->sample[s].stack && f[i].ids.span_id &&
			    !strcmp(f[i].ids.span_id, w->span[in].span_id))
				break;
		if (i == n) {
			fprintf(stderr, "fuzz: sample %d (tid %u at %llu) is in span %s alone, but no row says so\n", s,
				w->sample[s].tid, (unsigned long long)w->sample[s].time, w->span[in].span_id);
			abort();
		}
	}
	free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size };
	struct otel_pctx pc[2] = {};
	char keys[2][8][32];
	static struct want w;
	struct otel_join *j = otel_join__new();
	bool prefixes = false;
	__u64 periods = 0;

	if (!j)
		abort();
	memset(&w, 0, sizeof(w));
	/* Two processes' key maps, of any bytes; one without a service. */
	for (int p = 0; p < 2; p++) {
		pc[p].nkeys = fz_take(&f, 1) % 9;
		for (int k = 0; k < pc[p].nkeys; k++) {
			fz_str(&f, keys[p][k], sizeof(keys[p][k]));
			pc[p].keys[k] = keys[p][k];
		}
	}
	if (fz_take(&f, 1) & 1)
		otel_join__want_prefixes(j), prefixes = true;
	while (f.n) {
		unsigned op = fz_take(&f, 1);
		__u32 tid = 100 + (op >> 2 & 3);

		switch (op & 3) {
		case 0: {
			struct span_rec r = { .source = op & 0x80 ? SP_SRC_UPROBE : SP_SRC_OTEL, .tid = tid,
					      .pid = tid & ~1u, .flags = op & 0x40 ? 0 : SPAN_HAS_CONTEXT };
			unsigned id = fz_take(&f, 1);

			if (w.nspans == MAX_SPANS)
				break;
			r.start_ns = fz_take(&f, 2);
			r.end_ns = r.start_ns + fz_take(&f, 1) * 4;
			memset(r.trace_id, id & 3, sizeof(r.trace_id));
			memset(r.span_id, id >> 2, sizeof(r.span_id));
			r.attrs_size = fz_take(&f, 1) % 96;
			for (int i = 0; i < r.attrs_size; i++)
				r.attrs[i] = fz_take(&f, 1);
			check_attrs(pc_of(pc, r.pid), r.attrs, r.attrs_size);
			if (otel_join__add_span(j, &r))
				abort();
			if (r.source == SP_SRC_OTEL && r.flags & SPAN_HAS_CONTEXT) {
				w.span[w.nspans].tid = tid;
				w.span[w.nspans].start = r.start_ns;
				w.span[w.nspans].end = r.end_ns;
				otel_hex(w.span[w.nspans].span_id, r.span_id, 8);
				w.nspans++;
			}
			break;
		}
		case 1: case 2:
			if (w.nsamples < MAX_SAMPLES) {
				__u64 period = fz_take(&f, 1);

				w.sample[w.nsamples].tid = tid;
				w.sample[w.nsamples].time = fz_take(&f, 2);
				w.sample[w.nsamples].stack = op >> 4 & (NR_STACKS - 1);
				if (otel_join__add_sample(j, tid, w.sample[w.nsamples].time, w.sample[w.nsamples].stack,
							  period))
					abort();
				w.nsamples++;
				periods += period;
			}
			break;
		default: {
			char label[40];
			__u64 start = fz_take(&f, 2);

			fz_str(&f, label, sizeof(label));
			if (otel_join__add_prefix_span(j, tid, start, start + fz_take(&f, 1) * 8, label))
				abort();
			prefixes = true;
		}
		}
	}
	if (otel_join__name_attrs(j, pc_of, pc))
		abort();
	check_fold(j, &w, periods, prefixes);
	otel_join__free(j);
	return 0;
}
