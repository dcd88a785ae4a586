/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Samples grouped by the OpenTelemetry context they ran in.  record --otel
 * writes each run of a thread's samples under one context as a span of the
 * source `otel`, stamped with its end, so a reader meets a span after its
 * samples: the profile notes each sample (thread, time, stack) as it goes,
 * and this join gives every sample the trace and span ids of the otel span
 * around it once all spans are read.
 */
#ifndef SP_OTEL_JOIN_H
#define SP_OTEL_JOIN_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "hash.h"
#include "otel_pctx.h"
#include "span_codec.h"

/* What a sample ran in; the ids are lower-case hex, pooled: compare pointers. */
struct otel_ids {
	const char *trace_id, *span_id;
	/* The span's attributes, "key\x1fvalue\x1e..." (otel_attrs_split), pooled; NULL: none. */
	const char *attrs;
};

/*
 * Each attribute of a span's OTEP 4947 bytes, its key named through the
 * process context pc (NULL: "attr.N"), in the order the process wrote them;
 * stops at an attribute that runs past the end.  fn's non-zero return stops
 * it and is returned.
 */
typedef int (*otel_attr_fn)(void *ctx, const char *key, const char *value);
int otel_attrs_each(const struct otel_pctx *pc, const __u8 *attrs, size_t n, otel_attr_fn fn, void *ctx);
/* The pooled form of a span's attributes into *out (NULL when it has none); 0 or -ENOMEM. */
int otel_attrs_intern(struct strpool *pool, const struct otel_pctx *pc, const __u8 *attrs, size_t n,
		      const char **out);
/* The same, from the pooled form of struct otel_ids. */
int otel_attrs_split(const char *pooled, otel_attr_fn fn, void *ctx);
/* The value of attribute key in the pooled form into buf, or NULL. */
const char *otel_attrs_get(const char *pooled, const char *key, char *buf, size_t len);

struct otel_join;

struct otel_join *otel_join__new(void);
/*
 * Keeps an otel span (other sources are ignored); 0 or -ENOMEM.  Its
 * attributes are named later, by otel_join__name_attrs: a recording writes
 * its process contexts at the end, after the spans.
 */
int otel_join__add_span(struct otel_join *j, const struct span_rec *r);
/* The process context of pid, or NULL. */
typedef const struct otel_pctx *(*otel_pctx_fn)(void *ctx, __u32 pid);
/* Names every kept span's attributes through its process's context; 0 or -ENOMEM. */
int otel_join__name_attrs(struct otel_join *j, otel_pctx_fn pc_of, void *ctx);
/* Notes a sample of stack `stack` (the caller's index); 0 or -ENOMEM. */
int otel_join__add_sample(struct otel_join *j, __u32 tid, __u64 time, __u32 stack, __u64 period);
bool otel_join__has_spans(const struct otel_join *j);

/*
 * report --folded --span-prefix: a span of any source whose label (copied)
 * goes before the stacks of the samples
 * inside it.  Nested spans chain, outermost first, so that a flame graph's
 * root frame of a span holds every sample inside it; a sample in none gets
 * SPAN_PREFIX_NONE.  0 or -ENOMEM.
 */
#define SPAN_PREFIX_NONE "[no span]"
void otel_join__want_prefixes(struct otel_join *j); /* even with no span at all: every sample [no span] */
int otel_join__add_prefix_span(struct otel_join *j, __u32 tid, __u64 start, __u64 end, const char *label);
bool otel_join__has_prefixes(const struct otel_join *j);

/* One (stack, context) pair of the join's result, with its samples. */
struct otel_fold {
	__u32 stack;
	struct otel_ids ids; /* NULL ids: no context */
	const char *prefix;  /* with prefix spans: their labels, else NULL */
	__u64 count, period;
};

/*
 * Every sample noted, given its context (and prefix), folded by (stack, context, prefix) in
 * stack order: an array the caller frees, and its length in *n.
 */
int otel_join__fold(struct otel_join *j, struct otel_fold **out, size_t *n);
void otel_join__free(struct otel_join *j);

/* Lower-case hex of n bytes into buf (2n + 1 bytes). */
void otel_hex(char *buf, const __u8 *p, size_t n);

#endif
