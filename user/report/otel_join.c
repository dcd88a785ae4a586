// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "correlate.h"
#include "otel_join.h"

struct ospan {
	__u32 tid;
	__u64 start, end;
	struct otel_ids ids;
};

struct osample {
	__u32 tid, stack;
	__u64 time, period;
	struct otel_ids ids;
};

struct otel_join {
	struct strpool pool;
	struct ospan *spans;
	size_t nspans, cap_spans;
	struct osample *samples;
	size_t nsamples, cap_samples;
};

void otel_hex(char *buf, const __u8 *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		buf[2 * i] = digits[p[i] >> 4];
		buf[2 * i + 1] = digits[p[i] & 15];
	}
	buf[2 * n] = 0;
}

struct otel_join *otel_join__new(void)
{
	return calloc(1, sizeof(struct otel_join));
}

int otel_join__add_span(struct otel_join *j, const struct span_rec *r)
{
	char trace[33], span[17];
	struct ospan *s;

	if (r->source != SP_SRC_OTEL || !(r->flags & SPAN_HAS_CONTEXT))
		return 0;
	if (array_reserve((void **)&j->spans, &j->cap_spans, j->nspans, sizeof(*j->spans)))
		return -ENOMEM;
	otel_hex(trace, r->trace_id, 16);
	otel_hex(span, r->span_id, 8);
	s = &j->spans[j->nspans];
	*s = (struct ospan){ .tid = r->tid, .start = r->start_ns, .end = r->end_ns };
	s->ids.trace_id = strpool_intern(&j->pool, trace, NULL);
	s->ids.span_id = strpool_intern(&j->pool, span, NULL);
	if (!s->ids.trace_id || !s->ids.span_id)
		return -ENOMEM;
	j->nspans++;
	return 0;
}

int otel_join__add_sample(struct otel_join *j, __u32 tid, __u64 time, __u32 stack, __u64 period)
{
	if (array_reserve((void **)&j->samples, &j->cap_samples, j->nsamples, sizeof(*j->samples)))
		return -ENOMEM;
	j->samples[j->nsamples++] = (struct osample){ .tid = tid, .stack = stack, .time = time, .period = period };
	return 0;
}

bool otel_join__has_spans(const struct otel_join *j)
{
	return j && j->nspans;
}

static int cmp_fold(const void *a, const void *b)
{
	const struct osample *x = a, *y = b;

	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	/* Pooled strings: their addresses order them well enough to group. */
	if (x->ids.span_id != y->ids.span_id)
		return (uintptr_t)x->ids.span_id < (uintptr_t)y->ids.span_id ? -1 : 1;
	if (x->ids.trace_id != y->ids.trace_id)
		return (uintptr_t)x->ids.trace_id < (uintptr_t)y->ids.trace_id ? -1 : 1;
	return 0;
}

int otel_join__fold(struct otel_join *j, struct otel_fold **out, size_t *n)
{
	struct corr_sample *cs = malloc((j->nsamples ? j->nsamples : 1) * sizeof(*cs));
	struct corr_span *sp = malloc((j->nspans ? j->nspans : 1) * sizeof(*sp));
	struct otel_fold *f = NULL;
	size_t nf = 0, cap = 0;
	int err = -ENOMEM;

	*out = NULL;
	*n = 0;
	if (!cs || !sp)
		goto cleanup;
	for (size_t i = 0; i < j->nsamples; i++)
		cs[i] = (struct corr_sample){ j->samples[i].tid, (__u32)i, j->samples[i].time };
	for (size_t i = 0; i < j->nspans; i++)
		sp[i] = (struct corr_span){ .tid = j->spans[i].tid, .start = j->spans[i].start, .end = j->spans[i].end };
	correlate(cs, j->nsamples, sp, j->nspans);
	/* A thread's otel spans never overlap: each sample takes at most one. */
	for (size_t i = 0; i < j->nspans; i++)
		for (size_t k = sp[i].first; k < sp[i].first + sp[i].count; k++)
			j->samples[cs[k].idx].ids = j->spans[i].ids;
	sort_n(j->samples, j->nsamples, sizeof(*j->samples), cmp_fold);
	for (size_t i = 0; i < j->nsamples; i++) {
		const struct osample *s = &j->samples[i];

		if (!nf || cmp_fold(s, &j->samples[i - 1])) {
			if (array_reserve((void **)&f, &cap, nf, sizeof(*f)))
				goto cleanup;
			f[nf++] = (struct otel_fold){ .stack = s->stack, .ids = s->ids };
		}
		f[nf - 1].count++;
		f[nf - 1].period += s->period;
	}
	*out = f;
	*n = nf;
	f = NULL;
	err = 0;
cleanup:
	free(f);
	free(cs);
	free(sp);
	return err;
}

void otel_join__free(struct otel_join *j)
{
	if (!j)
		return;
	strpool_free(&j->pool);
	free(j->spans);
	free(j->samples);
	free(j);
}
