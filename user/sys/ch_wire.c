// SPDX-License-Identifier: GPL-2.0
/* RowBinary rows and string literals for ClickHouse (ch_wire.h). */
#include <string.h>

#include "ch_wire.h"
#include "util.h"

static bool literal_safe(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ' ' ||
	       c == '_' || c == '-' || c == '.' || c == '/' || c == ':';
}

int ch_literal(struct sbuf *b, const void *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = s;

	sbuf_add(b, "'", 1);
	for (size_t i = 0; i < n; i++) {
		char e[4] = { '\\', 'x', hex[p[i] >> 4], hex[p[i] & 15] };

		if (literal_safe(p[i]))
			sbuf_add(b, &p[i], 1);
		else
			sbuf_add(b, e, 4);
	}
	return sbuf_add(b, "'", 1);
}

bool ch_ident_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	return n && n <= 64 && !(s[0] >= '0' && s[0] <= '9') && str_is_word(s, n);
}

static void rb_le(struct sbuf *b, uint64_t v, int n)
{
	unsigned char x[8];

	for (int i = 0; i < n; i++)
		x[i] = v >> (8 * i);
	sbuf_add(b, x, n);
}

void rb_u8(struct sbuf *b, uint8_t v) { rb_le(b, v, 1); }
void rb_u16(struct sbuf *b, uint16_t v) { rb_le(b, v, 2); }
void rb_u32(struct sbuf *b, uint32_t v) { rb_le(b, v, 4); }
void rb_u64(struct sbuf *b, uint64_t v) { rb_le(b, v, 8); }

void rb_len(struct sbuf *b, uint64_t n)
{
	unsigned char x[10];
	int i = 0;

	do {
		x[i++] = (n & 0x7f) | (n > 0x7f ? 0x80 : 0);
		n >>= 7;
	} while (n);
	sbuf_add(b, x, i);
}

void rb_bytes(struct sbuf *b, const void *p, size_t n)
{
	rb_len(b, n);
	sbuf_add(b, p, n);
}

void rb_str(struct sbuf *b, const char *s)
{
	rb_bytes(b, s ? s : "", s ? strlen(s) : 0);
}

bool rb_more(const struct rb_in *in)
{
	return !in->bad && in->p < in->end;
}

static uint64_t rb_get_le(struct rb_in *in, size_t n)
{
	uint64_t v = 0;

	if (in->bad || (size_t)(in->end - in->p) < n) {
		in->bad = true;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)in->p[i] << (8 * i);
	in->p += n;
	return v;
}

uint8_t rb_get_u8(struct rb_in *in) { return rb_get_le(in, 1); }
uint16_t rb_get_u16(struct rb_in *in) { return rb_get_le(in, 2); }
uint32_t rb_get_u32(struct rb_in *in) { return rb_get_le(in, 4); }
uint64_t rb_get_u64(struct rb_in *in) { return rb_get_le(in, 8); }

uint64_t rb_get_len(struct rb_in *in)
{
	uint64_t n = 0;

	for (int shift = 0; !in->bad; shift += 7) {
		if (in->p >= in->end || shift > 63) {
			in->bad = true;
			break;
		}
		n |= (uint64_t)(*in->p & 0x7f) << shift;
		if (!(*in->p++ & 0x80))
			return n;
	}
	return 0;
}

const char *rb_get_str(struct rb_in *in, size_t *n)
{
	uint64_t len = rb_get_len(in);
	const char *s = (const char *)in->p;

	if (in->bad || len > (uint64_t)(in->end - in->p)) {
		in->bad = true;
		*n = 0;
		return "";
	}
	in->p += len;
	*n = len;
	return s;
}
