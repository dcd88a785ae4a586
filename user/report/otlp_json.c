// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_scan.h"
#include "log.h"
#include "otlp_json.h"
#include "sbuf.h"
#include "util.h"

#define MAX_DEPTH 64

struct cur {
	const char *start, *p, *end;
	int depth;
};

static void ws(struct cur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r' || *c->p == '\n'))
		c->p++;
}

static bool eat(struct cur *c, char ch)
{
	ws(c);
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return true;
	}
	return false;
}

/* A JSON string at the cursor (json_scan.h); -1 if malformed. */
static int str(struct cur *c, char *out, size_t len)
{
	ws(c);
	return json_scan_str(&c->p, c->end, out, len);
}

static int skip_value(struct cur *c);

/* Calls fn(c, key, ctx) for each member of an object; fn must consume the value. */
typedef int (*member_fn)(struct cur *c, const char *key, void *ctx);

static int object(struct cur *c, member_fn fn, void *ctx)
{
	char key[64];
	int err = 0;

	if (!eat(c, '{') || ++c->depth > MAX_DEPTH)
		return -1;
	if (eat(c, '}'))
		goto out;
	do {
		if (str(c, key, sizeof(key)) || !eat(c, ':'))
			return -1;
		ws(c);
		if ((err = fn ? fn(c, key, ctx) : skip_value(c)))
			return err;
	} while (eat(c, ','));
	if (!eat(c, '}'))
		return -1;
out:
	c->depth--;
	return 0;
}

typedef int (*elem_fn)(struct cur *c, void *ctx);

static int array(struct cur *c, elem_fn fn, void *ctx)
{
	int err;

	if (!eat(c, '[') || ++c->depth > MAX_DEPTH)
		return -1;
	if (eat(c, ']'))
		goto out;
	do {
		ws(c);
		if ((err = fn ? fn(c, ctx) : skip_value(c)))
			return err;
	} while (eat(c, ','));
	if (!eat(c, ']'))
		return -1;
out:
	c->depth--;
	return 0;
}

static int skip_member(struct cur *c, const char *key, void *ctx)
{
	(void)key;
	(void)ctx;
	return skip_value(c);
}

static int skip_elem(struct cur *c, void *ctx)
{
	(void)ctx;
	return skip_value(c);
}

static int skip_value(struct cur *c)
{
	ws(c);
	if (c->p >= c->end)
		return -1;
	switch (*c->p) {
	case '"': return str(c, NULL, 0);
	case '{': return object(c, skip_member, NULL);
	case '[': return array(c, skip_elem, NULL);
	}
	if (c->end - c->p >= 4 && (!memcmp(c->p, "true", 4) || !memcmp(c->p, "null", 4))) {
		c->p += 4;
		return 0;
	}
	if (c->end - c->p >= 5 && !memcmp(c->p, "false", 5)) {
		c->p += 5;
		return 0;
	}
	if (*c->p == '-' || isdigit((unsigned char)*c->p)) {
		const char *s = c->p;

		c->p++;
		while (c->p < c->end && (isdigit((unsigned char)*c->p) || strchr(".eE+-", *c->p)))
			c->p++;
		return c->p > s ? 0 : -1;
	}
	return -1;
}

/* An unsigned integer written as a number or, per the OTLP JSON mapping for int64, a string. */
static int u64_value(struct cur *c, __u64 *out, bool *ok)
{
	char buf[32], *end;
	const char *s;

	ws(c);
	*ok = false;
	if (c->p < c->end && *c->p == '"') {
		if (str(c, buf, sizeof(buf)))
			return -1;
	} else {
		s = c->p;
		if (skip_value(c))
			return -1;
		if ((size_t)(c->p - s) >= sizeof(buf))
			return 0;
		memcpy(buf, s, c->p - s);
		buf[c->p - s] = 0;
	}
	if (!isdigit((unsigned char)buf[0]))
		return 0;
	errno = 0;
	*out = strtoull(buf, &end, 10);
	*ok = !*end && !errno;
	return 0;
}

/* ---- attributes: [{"key": K, "value": {"intValue": V | "stringValue": S | ...}}] ---- */

struct kv {
	char key[64];
	__u64 ival;
	bool has_int;
	char sval[128];
	bool has_str;
};

static int anyvalue_member(struct cur *c, const char *key, void *ctx)
{
	struct kv *kv = ctx;

	if (!strcmp(key, "intValue"))
		return u64_value(c, &kv->ival, &kv->has_int);
	if (!strcmp(key, "stringValue")) {
		kv->has_str = true;
		return str(c, kv->sval, sizeof(kv->sval));
	}
	return skip_value(c);
}

static int kv_member(struct cur *c, const char *key, void *ctx)
{
	struct kv *kv = ctx;

	if (!strcmp(key, "key"))
		return str(c, kv->key, sizeof(kv->key));
	if (!strcmp(key, "value"))
		return object(c, anyvalue_member, kv);
	return skip_value(c);
}

struct attrs {
	__u64 tid, pid;
	bool has_tid, has_pid;
	/* The perf.* attributes' text as written, for annotate's OTLP output; dropped whole when they do not fit. */
	char perf[512];
	size_t perf_len;
};

static int attr_elem(struct cur *c, void *ctx)
{
	struct attrs *a = ctx;
	struct kv kv = {};
	__u64 v = 0;
	bool ok = false;
	const char *at = c->p;

	if (object(c, kv_member, &kv))
		return -1;
	if (!strncmp(kv.key, "perf.", 5)) {
		size_t n = (size_t)(c->p - at), need = n + (a->perf_len ? 1 : 0);

		if (a->perf_len + need < sizeof(a->perf)) {
			if (a->perf_len)
				a->perf[a->perf_len++] = ',';
			memcpy(a->perf + a->perf_len, at, n);
			a->perf_len += n;
			a->perf[a->perf_len] = 0;
		}
	}
	if (kv.has_int) {
		v = kv.ival;
		ok = true;
	} else if (kv.has_str) {
		char *end;

		v = strtoull(kv.sval, &end, 10);
		ok = isdigit((unsigned char)kv.sval[0]) && !*end;
	}
	if (!ok || v == 0 || v > 0x7fffffff)
		return 0;
	if (!strcmp(kv.key, "thread.id")) {
		a->tid = v;
		a->has_tid = true;
	} else if (!strcmp(kv.key, "process.pid")) {
		a->pid = v;
		a->has_pid = true;
	}
	return 0;
}

/* ---- spans ---- */

struct parse {
	struct ext_span *spans;
	size_t n, cap;
	struct otlp_stats *st;
	struct attrs resource;
};

struct span_fields {
	struct ext_span_buf e;
	struct attrs a;
	bool has_start, has_end;
};

static bool hex_id(const char *s, size_t want)
{
	size_t n = strlen(s);

	if (n != want)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

static int span_member(struct cur *c, const char *key, void *ctx)
{
	struct span_fields *f = ctx;
	char id[40];

	if (!strcmp(key, "name"))
		return str(c, f->e.name, sizeof(f->e.name));
	if (!strcmp(key, "traceId") || !strcmp(key, "spanId")) {
		bool trace = key[0] == 't';

		if (str(c, id, sizeof(id)))
			return -1;
		/* Kept as the JSON string spanperf's JSON lines carry; lower case, as OTLP writes it. */
		if (hex_id(id, trace ? 32 : 16)) {
			for (char *p = id; *p; p++)
				*p = tolower((unsigned char)*p);
			char *to = trace ? f->e.trace_id : f->e.span_id;
			size_t n = strlen(id); /* 32 or 16: hex_id said so */

			to[0] = '"';
			memcpy(to + 1, id, n);
			memcpy(to + 1 + n, "\"", 2);
		}
		return 0;
	}
	if (!strcmp(key, "parentSpanId")) {
		if (str(c, id, sizeof(id)))
			return -1;
		if (hex_id(id, 16)) {
			for (char *p = id; *p; p++)
				*p = tolower((unsigned char)*p);
			memcpy(f->e.parent_span_id, id, sizeof(f->e.parent_span_id));
		}
		return 0;
	}
	if (!strcmp(key, "startTimeUnixNano"))
		return u64_value(c, &f->e.start, &f->has_start);
	if (!strcmp(key, "endTimeUnixNano"))
		return u64_value(c, &f->e.end, &f->has_end);
	if (!strcmp(key, "attributes"))
		return array(c, attr_elem, &f->a);
	return skip_value(c);
}

static int span_elem(struct cur *c, void *ctx)
{
	struct parse *ps = ctx;
	struct span_fields f = {};

	if (object(c, span_member, &f))
		return -1;
	if (!f.has_start || !f.has_end || f.e.end < f.e.start) {
		ps->st->skipped++;
		return 0;
	}
	if (!f.e.name[0])
		snprintf(f.e.name, sizeof(f.e.name), "span");
	memcpy(f.e.perf_attrs, f.a.perf, f.a.perf_len + 1);
	f.e.realtime = 1;
	if (f.a.has_tid) {
		f.e.tid = f.a.tid;
	} else {
		f.e.no_tid = 1;
		ps->st->no_thread++;
	}
	if (f.a.has_pid || ps->resource.has_pid) {
		f.e.pid = f.a.has_pid ? f.a.pid : ps->resource.pid;
		f.e.has_pid = 1;
	}
	if (array_reserve((void **)&ps->spans, &ps->cap, ps->n, sizeof(*ps->spans)) ||
	    ext_span_keep(&f.e, &ps->spans[ps->n]))
		return -ENOMEM;
	ps->n++;
	ps->st->spans++;
	return 0;
}

static int scope_member(struct cur *c, const char *key, void *ctx)
{
	if (!strcmp(key, "spans"))
		return array(c, span_elem, ctx);
	return skip_value(c);
}

static int scope_elem(struct cur *c, void *ctx)
{
	return object(c, scope_member, ctx);
}

static int resource_member(struct cur *c, const char *key, void *ctx)
{
	struct parse *ps = ctx;

	if (!strcmp(key, "attributes"))
		return array(c, attr_elem, &ps->resource);
	return skip_value(c);
}

static int rs_member(struct cur *c, const char *key, void *ctx)
{
	/* resource comes first in the Collector's output; a later one applies to later spans only. */
	if (!strcmp(key, "resource"))
		return object(c, resource_member, ctx);
	if (!strcmp(key, "scopeSpans") || !strcmp(key, "instrumentationLibrarySpans"))
		return array(c, scope_elem, ctx);
	return skip_value(c);
}

static int rs_elem(struct cur *c, void *ctx)
{
	struct parse *ps = ctx;

	ps->resource = (struct attrs){};
	return object(c, rs_member, ctx);
}

static int root_member(struct cur *c, const char *key, void *ctx)
{
	if (!strcmp(key, "resourceSpans"))
		return array(c, rs_elem, ctx);
	return skip_value(c);
}

bool otlp_json_detect(const char *text, size_t len)
{
	size_t n = len < 4096 ? len : 4096;

	return memmem(text, n, "\"resourceSpans\"", 15) != NULL;
}

int otlp_json_parse(const char *text, size_t len, const char *fname, struct ext_span **out, size_t *n,
		    struct otlp_stats *st, char *err, size_t errlen)
{
	struct cur c = { text, text, text + len, 0 };
	struct parse ps = { .st = st };
	int e;

	*out = NULL;
	*n = 0;
	memset(st, 0, sizeof(*st));
	/* One request per line (the file exporter), or one document: both are a run of objects. */
	for (ws(&c); c.p < c.end; ws(&c)) {
		e = object(&c, root_member, &ps);
		if (e) {
			ext_spans_free(ps.spans, ps.n);
			if (e == -ENOMEM)
				return set_errorf(err, errlen, -ENOMEM, "out of memory reading %s", fname);
			return set_errorf(err, errlen, -EINVAL, "%s: not OTLP JSON at byte %zu", fname,
					  (size_t)(c.p - c.start));
		}
	}
	*out = ps.spans;
	*n = ps.n;
	return 0;
}

/* ---- out ---- */

static void attr_head(struct sbuf *b, bool *first, const char *key)
{
	sbuf_printf(b, "%s{\"key\":", *first ? "" : ",");
	sbuf_json_str(b, key);
	*first = false;
}

void otlp_attr_int(struct sbuf *b, bool *first, const char *key, __s64 v)
{
	attr_head(b, first, key);
	/* int64 is a string in the OTLP JSON mapping. */
	sbuf_printf(b, ",\"value\":{\"intValue\":\"%lld\"}}", (long long)v);
}

void otlp_attr_double(struct sbuf *b, bool *first, const char *key, double v)
{
	attr_head(b, first, key);
	sbuf_printf(b, ",\"value\":{\"doubleValue\":%.6f}}", v);
}

void otlp_attr_str(struct sbuf *b, bool *first, const char *key, const char *v)
{
	attr_head(b, first, key);
	sbuf_printf(b, ",\"value\":{\"stringValue\":");
	sbuf_json_str(b, v);
	sbuf_printf(b, "}}");
}
