// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbuf.h"

static int sbuf_grow(struct sbuf *b, size_t n)
{
	size_t cap;
	char *p;

	if (b->err)
		return b->err;
	if (b->len + n <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + n)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p)
		return b->err = -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

int sbuf_add(struct sbuf *b, const void *p, size_t n)
{
	int err = sbuf_grow(b, n);

	if (err)
		return err;
	/* Nothing to add may come as NULL (an absent name's), which memcpy may not be given. */
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

int sbuf_zero(struct sbuf *b, size_t n)
{
	int err = sbuf_grow(b, n);

	if (err)
		return err;
	memset(b->p + b->len, 0, n);
	b->len += n;
	return 0;
}

int sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n, err;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return b->err = -EINVAL;
	err = sbuf_grow(b, n + 1);
	if (err)
		return err;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, n + 1, fmt, ap);
	va_end(ap);
	b->len += n;
	return 0;
}

/*
 * RFC 3629's table: no overlong form, no UTF-16 surrogate, nothing past
 * U+10FFFF.  A lax check let those through, and strict decoders (a
 * browser's XML parser, Python's json) reject the whole document for one.
 */
int utf8_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;
	int n;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	/* The second byte's range is narrower for these leads. */
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (int i = 2; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

int sbuf_json_str(struct sbuf *b, const char *s)
{
	const unsigned char *c = (const unsigned char *)s;

	sbuf_add(b, "\"", 1);
	while (*c) {
		int n = utf8_len(c);

		if (*c == '"' || *c == '\\')
			sbuf_printf(b, "\\%c", *c);
		else if (*c < 0x20 || *c == 0x7f)
			sbuf_printf(b, "\\u%04x", *c);
		else if (!n)
			sbuf_add(b, "\\ufffd", 6); /* names come from files: a stray byte must not break JSON */
		else
			sbuf_add(b, c, n);
		c += n ? n : 1;
	}
	return sbuf_add(b, "\"", 1);
}

int sbuf_add_utf8(struct sbuf *b, const char *s, size_t n)
{
	const unsigned char *c = (const unsigned char *)s, *end = c + n;

	while (c < end) {
		unsigned char tail[4] = {};
		int l = 1;

		/* utf8_len reads up to 3 bytes past a lead byte: near the end, a copy padded with NULs. */
		if (*c >= 0x80) {
			memcpy(tail, c, end - c < 4 ? end - c : 4);
			l = utf8_len(tail);
		}
		if (l)
			sbuf_add(b, c, l);
		else
			sbuf_add(b, "\xef\xbf\xbd", 3); /* U+FFFD */
		c += l ? l : 1;
	}
	return b->err;
}

void sbuf_free(struct sbuf *b)
{
	if (!b)
		return;
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
	b->err = 0;
}

const char *text_name(const char *s, const char *also, char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	if (!s)
		return s;
	for (const unsigned char *c = (const unsigned char *)s;; c++) {
		if (!*c)
			return s;
		if (*c < 0x20 || *c == 0x7f || *c == '\\' || (also && strchr(also, *c)))
			break;
	}
	if (!len)
		return "";
	for (const unsigned char *c = (const unsigned char *)s; *c && o + 5 <= len; c++) {
		if (*c < 0x20 || *c == 0x7f || *c == '\\' || (also && strchr(also, *c))) {
			buf[o++] = '\\';
			buf[o++] = 'x';
			buf[o++] = hex[*c >> 4];
			buf[o++] = hex[*c & 15];
		} else {
			buf[o++] = *c;
		}
	}
	buf[o] = 0;
	return buf;
}

bool printed_holds(void (*print)(const void *a, const void *b, FILE *out), const void *a, const void *b,
		   const char *text)
{
	char *line = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&line, &len);
	bool yes = true;

	if (f) {
		print(a, b, f);
		fclose(f);
		if (len > 1023)
			line[1023] = 0;
		yes = strstr(line, text) != NULL;
	}
	free(line);
	return yes;
}
