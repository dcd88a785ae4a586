// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "sched_codec.h"
#include "util.h"

int sched_rec_decode(const void *raw, __u32 raw_size, struct sched_rec *out)
{
	struct sched_rec hdr;

	memset(out, 0, sizeof(*out));
	if (!raw || raw_size < 8)
		return -EINVAL;
	memcpy(&hdr, raw, 8);
	if (hdr.magic != SCHED_REC_MAGIC || hdr.size < sizeof(*out) || hdr.size > raw_size)
		return -EINVAL;
	memcpy(out, raw, sizeof(*out));
	return 0;
}
