// SPDX-License-Identifier: GPL-2.0
/*
 * The OTEP 4947 thread-context record parser, on bytes as a process may
 * leave them, and the attributes' way to report: a span record's RAW as a
 * file may hold it (attrs_size may lie), its attributes named through a
 * process context.
 */
#include "fuzz_common.h"
#include "otel_ctx.h"
#include "otel_join.h"
#include "span_codec.h"

static volatile unsigned sum;

static int count(void *ctx, const char *key, const char *value)
{
	(void)ctx;
	sum += strlen(key) + strlen(value);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct otel_ctx c;
	struct otel_ctx_attr a;
	struct otel_pctx pc = { .nkeys = 2, .keys = { "http.route", NULL } };
	struct pd_sample s = { .raw = (void *)data, .raw_size = size };
	struct span_rec rec;
	struct strpool pool = {};
	const char *pooled;
	size_t pos = 0;

	if (!otel_ctx_parse(data, size, &c)) {
		while (otel_ctx_next_attr(&c, &pos, &a))
			for (unsigned i = 0; i < a.len; i++)
				sum += a.val[i]; /* every byte an attribute claims must be readable */
		otel_attrs_each(&pc, c.attrs, c.attrs_size, count, NULL);
	}
	if (!span_codec_decode(&s, &rec)) {
		otel_attrs_each(size & 1 ? &pc : NULL, rec.attrs, rec.attrs_size, count, NULL);
		if (!otel_attrs_intern(&pool, &pc, rec.attrs, rec.attrs_size, &pooled))
			otel_attrs_split(pooled, count, NULL);
	}
	strpool_free(&pool);
	return 0;
}
