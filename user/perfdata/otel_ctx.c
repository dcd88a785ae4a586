// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>

#include "otel_ctx.h"

int otel_ctx_parse(const void *buf, size_t len, struct otel_ctx *out)
{
	const __u8 *p = buf;
	__u16 n;

	memset(out, 0, sizeof(*out));
	if (len < OTEL_CTX_HEADER)
		return -EINVAL;
	if (p[24] != 1)
		return -EAGAIN;
	memcpy(out->trace_id, p, 16);
	memcpy(out->span_id, p + 16, 8);
	out->trace_flags = p[25];
	memcpy(&n, p + 26, 2); /* host byte order, 2-byte aligned in the process: copy, never cast */
	if (n > OTEL_CTX_MAX - OTEL_CTX_HEADER || n > len - OTEL_CTX_HEADER)
		return -EINVAL;
	out->attrs_size = n;
	out->attrs = p + OTEL_CTX_HEADER;
	/* Each attribute must end inside the declared size. */
	for (size_t pos = 0; pos < n;) {
		if (n - pos < 2 || (size_t)out->attrs[pos + 1] > n - pos - 2)
			return -EINVAL;
		pos += 2 + out->attrs[pos + 1];
	}
	return 0;
}

int otel_ctx_next_attr(const struct otel_ctx *c, size_t *pos, struct otel_ctx_attr *a)
{
	if (*pos + 2 > c->attrs_size)
		return 0;
	a->key_index = c->attrs[*pos];
	a->len = c->attrs[*pos + 1];
	if ((size_t)a->len > c->attrs_size - *pos - 2)
		return 0;
	a->val = c->attrs + *pos + 2;
	*pos += 2 + a->len;
	return 1;
}
