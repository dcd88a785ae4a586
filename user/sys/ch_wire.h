/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ClickHouse's wire forms, with no network: RowBinary rows written and read
 * (every string as its length and its bytes, so that a comm, span name or
 * cgroup path goes in and comes back byte for byte, newlines, quotes and
 * non-UTF-8 alike), and string literals for the queries.
 *
 * Queries never carry another process's text as it is: ClickHouse 18.16 has
 * no query parameters ({name:Type} came in 19.x; it answers "Unknown setting
 * param_x"), so a literal is written by ch_literal alone, which lets through
 * letters, digits and " _-./:" and writes every other byte as \xHH.  The
 * literal's alphabet has no quote, backslash but its own escapes, or control
 * byte, so nothing in it can end the literal; tests/unit and the fuzzer hold
 * it to that.
 */
#ifndef SP_CH_WIRE_H
#define SP_CH_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sbuf.h"

/* 'text' as a ClickHouse string literal, quotes included, n bytes of s. */
int ch_literal(struct sbuf *b, const void *s, size_t n);
/* A name ClickHouse takes unquoted (database, cluster): [A-Za-z_][A-Za-z0-9_]*, at most 64 bytes. */
bool ch_ident_ok(const char *s);

/* RowBinary: little-endian integers, strings as LEB128 length and bytes, arrays as LEB128 count and items. */
void rb_u8(struct sbuf *b, uint8_t v);
void rb_u16(struct sbuf *b, uint16_t v);
void rb_u32(struct sbuf *b, uint32_t v);
void rb_u64(struct sbuf *b, uint64_t v);
void rb_len(struct sbuf *b, uint64_t n);
void rb_str(struct sbuf *b, const char *s); /* NULL: empty */
void rb_bytes(struct sbuf *b, const void *p, size_t n);

/* A RowBinary answer read: a short or malformed one latches bad (every read then gives 0 or ""). */
struct rb_in {
	const uint8_t *p, *end;
	bool bad;
};
bool rb_more(const struct rb_in *in);
uint8_t rb_get_u8(struct rb_in *in);
uint16_t rb_get_u16(struct rb_in *in);
uint32_t rb_get_u32(struct rb_in *in);
uint64_t rb_get_u64(struct rb_in *in);
uint64_t rb_get_len(struct rb_in *in);
/* A string: *n bytes at the returned pointer (into the answer, not NUL-terminated). */
const char *rb_get_str(struct rb_in *in, size_t *n);

#endif
