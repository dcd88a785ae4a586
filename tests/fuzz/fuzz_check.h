/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the outputs promise their readers, checked on every fuzz input: a
 * browser's JSON.parse, an XML parser, speedscope and pprof reject a whole
 * file for one bad byte, so an output that breaks them is a finding as a
 * crash is.  fuzz_fail prints why and where, then aborts: libFuzzer keeps
 * the input.
 */
#ifndef SP_FUZZ_CHECK_H
#define SP_FUZZ_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes as C escapes, so that what failed shows as it is. */
static inline void fuzz_show(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = p[i];

		if (c < 0x20 || c >= 0x7f || c == '\\')
			fprintf(stderr, "\\x%02x", c);
		else
			fputc(c, stderr);
	}
}

static inline void fuzz_fail(const char *what, const char *p, size_t n, size_t at)
{
	size_t from = at > 120 ? at - 120 : 0, to = at + 120 < n ? at + 120 : n;

	fprintf(stderr, "fuzz: %s at byte %zu of %zu: ...", what, at, n);
	fuzz_show(p + from, at - from);
	fprintf(stderr, "<HERE>");
	fuzz_show(p + at, to - at);
	fprintf(stderr, "...\n");
	abort();
}

/* The length of the valid UTF-8 sequence at p (RFC 3629: no overlongs, surrogates or > U+10FFFF), or 0. */
static inline size_t utf8_seq(const unsigned char *p, size_t n)
{
	unsigned c = p[0];
	size_t len;
	unsigned lo = 0x80, hi = 0xbf;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	if (n < len || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return len;
}

/* Where the first byte that is not UTF-8 is, or n. */
static inline size_t utf8_bad(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0, l; i < n; i += l)
		if (!(l = utf8_seq(p + i, n - i)))
			return i;
	return n;
}

static inline void check_utf8(const char *what, const char *p, size_t n)
{
	size_t at = utf8_bad(p, n);

	if (at < n)
		fuzz_fail(what, p, n, at);
}

/* ---- JSON (RFC 8259), strictly: what JSON.parse accepts ---- */

struct jcur {
	const char *p, *s, *end;
	const char *err;
	int depth;
};

static inline void jws(struct jcur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static inline bool jfail(struct jcur *c, const char *why)
{
	if (!c->err)
		c->err = why;
	return false;
}

static inline bool jlit(struct jcur *c, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n))
		return jfail(c, "JSON: not a value");
	c->p += n;
	return true;
}

static inline bool jstring(struct jcur *c)
{
	if (c->p >= c->end || *c->p != '"')
		return jfail(c, "JSON: a string was expected");
	for (c->p++; c->p < c->end;) {
		unsigned char ch = *c->p;
		size_t l;

		if (ch == '"') {
			c->p++;
			return true;
		}
		if (ch < 0x20)
			return jfail(c, "JSON: a control byte inside a string");
		if (ch == '\\') {
			if (c->end - c->p < 2)
				break;
			ch = c->p[1];
			if (ch == 'u') {
				if (c->end - c->p < 6)
					break;
				for (int i = 2; i < 6; i++)
					if (!strchr("0123456789abcdefABCDEF", c->p[i]) || !c->p[i])
						return jfail(c, "JSON: a \\u escape without four hex digits");
				c->p += 6;
				continue;
			}
			if (!strchr("\"\\/bfnrt", ch) || !ch)
				return jfail(c, "JSON: an unknown escape");
			c->p += 2;
			continue;
		}
		if (!(l = utf8_seq((const unsigned char *)c->p, c->end - c->p)))
			return jfail(c, "JSON: a string that is not UTF-8");
		c->p += l;
	}
	return jfail(c, "JSON: a string that does not end");
}

static inline bool jdigits(struct jcur *c)
{
	const char *from = c->p;

	while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
		c->p++;
	return c->p > from;
}

static inline bool jnumber(struct jcur *c)
{
	if (c->p < c->end && *c->p == '-')
		c->p++;
	if (c->p < c->end && *c->p == '0')
		c->p++;
	else if (!jdigits(c))
		return jfail(c, "JSON: not a number");
	if (c->p < c->end && *c->p == '.' && (c->p++, !jdigits(c)))
		return jfail(c, "JSON: a fraction without digits");
	if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
		c->p++;
		if (c->p < c->end && (*c->p == '+' || *c->p == '-'))
			c->p++;
		if (!jdigits(c))
			return jfail(c, "JSON: an exponent without digits");
	}
	return true;
}

static inline bool jvalue(struct jcur *c);

/* An object's members (close '}') or an array's values (']'), after the bracket that opened it. */
static inline bool jitems(struct jcur *c, char close)
{
	jws(c);
	if (c->p < c->end && *c->p == close) {
		c->p++;
		return true;
	}
	for (;;) {
		if (close == '}') {
			jws(c);
			if (!jstring(c))
				return false;
			jws(c);
			if (c->p >= c->end || *c->p++ != ':')
				return jfail(c, "JSON: ':' was expected");
		}
		if (!jvalue(c))
			return false;
		jws(c);
		if (c->p < c->end && *c->p == ',') {
			c->p++;
			continue;
		}
		if (c->p < c->end && *c->p == close) {
			c->p++;
			return true;
		}
		return jfail(c, close == '}' ? "JSON: ',' or '}' was expected" : "JSON: ',' or ']' was expected");
	}
}

static inline bool jvalue(struct jcur *c)
{
	bool ok = true;

	jws(c);
	if (c->p >= c->end)
		return jfail(c, "JSON: a value was expected");
	if (++c->depth > 512)
		return jfail(c, "JSON: nested too deep");
	switch (*c->p) {
	case '{':
		c->p++;
		ok = jitems(c, '}');
		break;
	case '[':
		c->p++;
		ok = jitems(c, ']');
		break;
	case '"':
		ok = jstring(c);
		break;
	case 't':
		ok = jlit(c, "true");
		break;
	case 'f':
		ok = jlit(c, "false");
		break;
	case 'n':
		ok = jlit(c, "null");
		break;
	default:
		ok = jnumber(c);
	}
	c->depth--;
	return ok;
}

/* One JSON document, alone but for white space. */
static inline void check_json(const char *what, const char *p, size_t n)
{
	struct jcur c = { p, p, p + n, NULL, 0 };
	char msg[160];

	if (jvalue(&c)) {
		jws(&c);
		if (c.p == c.end)
			return;
		jfail(&c, "JSON: bytes after the value");
	}
	snprintf(msg, sizeof(msg), "%s: %s", what, c.err);
	fuzz_fail(msg, p, n, c.p - p);
}

/* JSON lines: each non-empty line one document. */
static inline void check_json_lines(const char *what, const char *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		const char *nl = memchr(p + i, '\n', n - i);
		size_t len = nl ? (size_t)(nl - (p + i)) : n - i;

		if (len)
			check_json(what, p + i, len);
		i += len + 1;
	}
}

#endif
