/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An OTEP 4947 thread-context record, read from bytes copied out of a
 * process: the 28-byte header (trace-id, span-id, valid, trace-flags,
 * attrs-data-size) and the attributes { u8 key_index, u8 len, u8 val[len] }.
 * Everything in it is the process's to write, so every size is checked.
 */
#ifndef SP_OTEL_CTX_H
#define SP_OTEL_CTX_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#define OTEL_CTX_HEADER 28
#define OTEL_CTX_MAX 640 /* the OTEP's recommended bound on a whole record */

struct otel_ctx_attr {
	__u8 key_index, len;
	const __u8 *val;
};

struct otel_ctx {
	__u8 trace_id[16], span_id[8];
	__u8 trace_flags;
	__u16 attrs_size;
	const __u8 *attrs; /* into the caller's buffer */
};

/*
 * Parses buf (len bytes copied from the record's address).  -EAGAIN: valid
 * is not 1 (being written: read again later); -EINVAL: the size field
 * claims more than was copied or than OTEL_CTX_MAX, or an attribute runs
 * past the end.
 */
int otel_ctx_parse(const void *buf, size_t len, struct otel_ctx *out);
/* The next attribute after *pos (0 first): 1 with *a filled, 0 at the end. */
int otel_ctx_next_attr(const struct otel_ctx *c, size_t *pos, struct otel_ctx_attr *a);

#endif
