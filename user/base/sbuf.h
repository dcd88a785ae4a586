/* SPDX-License-Identifier: GPL-2.0 */
/* A growable byte buffer: records and text are built in one before they are written. */
#ifndef SP_SBUF_H
#define SP_SBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* On allocation failure it latches `err`: callers check once at the end. */
struct sbuf {
	char *p;
	size_t len, cap;
	int err;
};
int sbuf_add(struct sbuf *b, const void *p, size_t n);
int sbuf_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sbuf_zero(struct sbuf *b, size_t n);
/* Length of the valid UTF-8 sequence at s (RFC 3629: no overlong form, no surrogate), or 0. */
int utf8_len(const unsigned char *s);
/* JSON string with quotes and escapes; invalid UTF-8 as U+FFFD. */
int sbuf_json_str(struct sbuf *b, const char *s);
/*
 * n bytes of s, each byte that is not part of valid UTF-8 (RFC 3629) as
 * U+FFFD: for formats whose strings must be UTF-8 (protobuf's, XML).
 */
int sbuf_add_utf8(struct sbuf *b, const char *s, size_t n);
/*
 * A name from a recording (comm, symbol, path: others' to choose) as text
 * output may show it: s itself if it is clean, else a copy in buf with
 * control bytes, backslashes and the bytes in also (";" for folded stacks)
 * as \xNN, so that no newline forges a line and no escape sequence reaches
 * a terminal.  Cut to fit len.
 */
const char *text_name(const char *s, const char *also, char *buf, size_t len);
void sbuf_free(struct sbuf *b);

/*
 * Whether the line print(a, b, out) writes holds text in its first 1023
 * bytes: top's '/' over a table's rows (true if it cannot be printed).
 */
bool printed_holds(void (*print)(const void *a, const void *b, FILE *out), const void *a, const void *b,
		   const char *text);

#endif
