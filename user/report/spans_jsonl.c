// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_scan.h"
#include "spans_jsonl.h"

struct cur {
	const char *p, *end;
};

static void ws(struct cur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r'))
		c->p++;
}

/* A JSON string at the cursor (json_scan.h); -1 if malformed. */
static int str(struct cur *c, char *out, size_t len)
{
	return json_scan_str(&c->p, c->end, out, len);
}

/* Skips any JSON value (objects and arrays nested up to a limit). */
static int skip_value(struct cur *c, int depth)
{
	ws(c);
	if (c->p >= c->end || depth > 32)
		return -1;
	if (*c->p == '"')
		return str(c, NULL, 0);
	if (*c->p == '{' || *c->p == '[') {
		char close = *c->p == '{' ? '}' : ']';

		c->p++;
		ws(c);
		if (c->p < c->end && *c->p == close) {
			c->p++;
			return 0;
		}
		for (;;) {
			if (close == '}') {
				ws(c);
				if (str(c, NULL, 0))
					return -1;
				ws(c);
				if (c->p >= c->end || *c->p++ != ':')
					return -1;
			}
			if (skip_value(c, depth + 1))
				return -1;
			ws(c);
			if (c->p >= c->end)
				return -1;
			if (*c->p == close) {
				c->p++;
				return 0;
			}
			if (*c->p++ != ',')
				return -1;
		}
	}
	/* number, true, false, null */
	{
		const char *s = c->p;

		while (c->p < c->end && (isalnum((unsigned char)*c->p) || strchr("+-.", *c->p)))
			c->p++;
		return c->p > s ? 0 : -1;
	}
}

static int u64_value(struct cur *c, __u64 *v)
{
	const char *s = c->p;
	unsigned long long x = 0;

	if (c->p >= c->end || !isdigit((unsigned char)*c->p))
		return -1;
	while (c->p < c->end && isdigit((unsigned char)*c->p)) {
		unsigned d = *c->p++ - '0';

		if (x > (~0ull - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	if (c->p < c->end && (*c->p == '.' || *c->p == 'e' || *c->p == 'E'))
		return -1; /* nanoseconds and ids are integers */
	*v = x;
	return c->p > s ? 0 : -1;
}

/* The raw text of a value, for trace_id and span_id. */
static int raw_value(struct cur *c, char *out, size_t len)
{
	const char *s = c->p;
	size_t n;

	if (skip_value(c, 0))
		return -1;
	n = c->p - s;
	if (n >= len)
		return -1;
	memcpy(out, s, n);
	out[n] = 0;
	return 0;
}

static int parse_line(struct cur *c, struct ext_span *sp, const char **why)
{
	bool have_tid = false, have_start = false, have_end = false;

	memset(sp, 0, sizeof(*sp));
	ws(c);
	if (c->p >= c->end || *c->p++ != '{')
		return *why = "it is not a JSON object", -1;
	ws(c);
	if (c->p < c->end && *c->p == '}') {
		c->p++;
		return *why = "it lacks tid, start_ns and end_ns", -1;
	}
	for (;;) {
		char key[32];
		__u64 v;

		ws(c);
		if (str(c, key, sizeof(key)))
			return *why = "a key is not a string", -1;
		ws(c);
		if (c->p >= c->end || *c->p++ != ':')
			return *why = "a key has no ':'", -1;
		ws(c);
		if (!strcmp(key, "tid") || !strcmp(key, "pid") || !strcmp(key, "start_ns") || !strcmp(key, "end_ns")) {
			if (u64_value(c, &v))
				return *why = "tid, pid, start_ns and end_ns must be non-negative integers", -1;
			if (key[0] == 't' || key[0] == 'p') {
				if (v > 0x7fffffff)
					return *why = "tid or pid is out of range", -1;
				if (key[0] == 't') {
					sp->tid = v;
					have_tid = true;
				} else {
					sp->pid = v;
					sp->has_pid = 1;
				}
			} else if (key[0] == 's') {
				sp->start = v;
				have_start = true;
			} else {
				sp->end = v;
				have_end = true;
			}
		} else if (!strcmp(key, "name")) {
			if (str(c, sp->name, sizeof(sp->name)))
				return *why = "name must be a string", -1;
		} else if (!strcmp(key, "trace_id") || !strcmp(key, "span_id")) {
			if (raw_value(c, key[0] == 't' ? sp->trace_id : sp->span_id, sizeof(sp->trace_id)))
				return *why = "trace_id or span_id is malformed or too long", -1;
		} else if (skip_value(c, 0)) {
			return *why = "a value is malformed", -1;
		}
		ws(c);
		if (c->p >= c->end)
			return *why = "the object is not closed", -1;
		if (*c->p == '}') {
			c->p++;
			break;
		}
		if (*c->p++ != ',')
			return *why = "members are not separated by ','", -1;
	}
	ws(c);
	if (c->p < c->end)
		return *why = "there is text after the object", -1;
	if (!have_tid || !have_start || !have_end)
		return *why = "it lacks tid, start_ns or end_ns", -1;
	if (sp->end < sp->start)
		return *why = "end_ns is before start_ns", -1;
	if (!sp->name[0])
		snprintf(sp->name, sizeof(sp->name), "span");
	return 0;
}

int ext_spans_parse(const char *text, size_t len, const char *fname, struct ext_span **out, size_t *n,
		    char *err, size_t errlen)
{
	struct ext_span *v = NULL;
	size_t cnt = 0, cap = 0, line = 0;
	const char *p = text, *end = text + len;

	*out = NULL;
	*n = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p), *le = nl ? nl : end;
		struct cur c = { p, le };
		const char *why = NULL;

		line++;
		p = nl ? nl + 1 : end;
		ws(&c);
		if (c.p == le)
			continue; /* blank line */
		if (cnt == cap) {
			struct ext_span *nv = realloc(v, (cap = cap ? cap * 2 : 256) * sizeof(*v));

			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
		}
		if (memchr(c.p, 0, le - c.p) || parse_line(&c, &v[cnt], &why)) {
			snprintf(err, errlen, "%s:%zu: not a span: %s", fname, line, why ? why : "it holds a NUL byte");
			free(v);
			return -EINVAL;
		}
		cnt++;
	}
	if (!cnt) {
		snprintf(err, errlen, "%s holds no spans", fname);
		free(v);
		return -EINVAL;
	}
	*out = v;
	*n = cnt;
	return 0;
}
