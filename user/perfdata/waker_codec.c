// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "util.h"
#include "waker_codec.h"

int waker_rec_decode(const void *raw, __u32 raw_size, struct waker_rec *out)
{
	struct waker_rec hdr;

	memset(out, 0, sizeof(*out));
	if (!raw || raw_size < 8)
		return -EINVAL;
	memcpy(&hdr, raw, 8);
	if (hdr.magic != WAKER_REC_MAGIC || hdr.size < offsetof(struct waker_rec, comm) || hdr.size > raw_size)
		return -EINVAL;
	memcpy(out, raw, SP_MIN((size_t)hdr.size, sizeof(*out)));
	out->comm[sizeof(out->comm) - 1] = 0;
	return 0;
}

const char *waker_ctx_name(__u32 ctx)
{
	switch (ctx) {
	case SP_WAKER_HARDIRQ: return "[hardirq]";
	case SP_WAKER_SOFTIRQ: return "[softirq]";
	case SP_WAKER_NMI: return "[nmi]";
	default: return NULL;
	}
}
