// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_scan.h"
#include "sbuf.h"
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

/* A JSON number as RFC 8259 has it: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int number(struct cur *c)
{
	const char *p = c->p, *e = c->end;

	if (p < e && *p == '-')
		p++;
	if (p < e && *p == '0')
		p++;
	else if (p < e && *p >= '1' && *p <= '9')
		while (p < e && isdigit((unsigned char)*p))
			p++;
	else
		return -1;
	if (p < e && *p == '.') {
		if (++p >= e || !isdigit((unsigned char)*p))
			return -1;
		while (p < e && isdigit((unsigned char)*p))
			p++;
	}
	if (p < e && (*p == 'e' || *p == 'E')) {
		if (++p < e && (*p == '+' || *p == '-'))
			p++;
		if (p >= e || !isdigit((unsigned char)*p))
			return -1;
		while (p < e && isdigit((unsigned char)*p))
			p++;
	}
	/* "1x" is no number followed by something: the caller's ',' or '}' check says so. */
	c->p = p;
	return 0;
}

/*
 * trace_id or span_id, as the output will write it: a string decoded and
 * encoded again (the text as read could hold anything a lax reader let
 * through, and went into JSON output as is), a number checked against
 * JSON's grammar, null as no id; anything else is refused.
 */
static int id_value(struct cur *c, char *out, size_t len, const char **why)
{
	char s[64];
	struct sbuf b = {};

	out[0] = 0;
	if (c->p < c->end && *c->p == '"') {
		if (str(c, s, sizeof(s)))
			return *why = "trace_id or span_id is not a well-formed string", -1;
		sbuf_json_str(&b, s);
		if (b.err || b.len >= len) {
			sbuf_free(&b);
			return *why = "trace_id or span_id is too long", -1;
		}
		memcpy(out, b.p, b.len);
		out[b.len] = 0;
		sbuf_free(&b);
		return 0;
	}
	if (c->end - c->p >= 4 && !memcmp(c->p, "null", 4) &&
	    (c->end - c->p == 4 || !isalnum((unsigned char)c->p[4]))) {
		c->p += 4;
		return 0;
	}
	{
		const char *start = c->p;

		if (number(c) || (c->p < c->end && (isalnum((unsigned char)*c->p) || *c->p == '.')))
			return *why = "trace_id and span_id must be strings, numbers or null", -1;
		if ((size_t)(c->p - start) >= len)
			return *why = "trace_id or span_id is too long", -1;
		memcpy(out, start, c->p - start);
		out[c->p - start] = 0;
	}
	return 0;
}

static int parse_line(struct cur *c, struct ext_span_buf *sp, const char **why)
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
			if (id_value(c, key[0] == 't' ? sp->trace_id : sp->span_id, sizeof(sp->trace_id), why))
				return -1;
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

int ext_span_keep(const struct ext_span_buf *b, struct ext_span *out)
{
	const char *s[] = { b->name, b->trace_id, b->span_id, b->parent_span_id, b->perf_attrs };
	size_t len[5], all = 0;
	char *p;

	for (int i = 0; i < 5; i++)
		all += len[i] = strlen(s[i]) + 1;
	p = malloc(all);
	if (!p)
		return -ENOMEM;
	*out = (struct ext_span){ .tid = b->tid, .pid = b->pid, .has_pid = b->has_pid, .realtime = b->realtime,
				  .no_tid = b->no_tid, .start = b->start, .end = b->end };
	for (int i = 0; i < 5; i++) {
		memcpy(p, s[i], len[i]);
		*(i == 0 ? &out->name : i == 1 ? &out->trace_id : i == 2 ? &out->span_id
			: i == 3 ? &out->parent_span_id : &out->perf_attrs) = p;
		p += len[i];
	}
	return 0;
}

void ext_spans_free(struct ext_span *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free((char *)v[i].name);
	free(v);
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
		struct ext_span_buf b = {};
		const char *why = NULL;

		line++;
		p = nl ? nl + 1 : end;
		ws(&c);
		if (c.p == le)
			continue; /* blank line */
		if (cnt == cap) {
			struct ext_span *nv = realloc(v, (cap = cap ? cap * 2 : 256) * sizeof(*v));

			if (!nv) {
				ext_spans_free(v, cnt);
				return -ENOMEM;
			}
			v = nv;
		}
		if (memchr(c.p, 0, le - c.p) || parse_line(&c, &b, &why)) {
			snprintf(err, errlen, "%s:%zu: not a span: %s", fname, line, why ? why : "it holds a NUL byte");
			ext_spans_free(v, cnt);
			return -EINVAL;
		}
		if (ext_span_keep(&b, &v[cnt])) {
			ext_spans_free(v, cnt);
			return -ENOMEM;
		}
		cnt++;
	}
	if (!cnt) {
		snprintf(err, errlen, "%s holds no spans", fname);
		ext_spans_free(v, cnt);
		return -EINVAL;
	}
	*out = v;
	*n = cnt;
	return 0;
}
