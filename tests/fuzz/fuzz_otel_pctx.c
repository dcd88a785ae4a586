// SPDX-License-Identifier: GPL-2.0
/*
 * The OTEP 4719 process-context decoders, on bytes as a process (or a
 * perf.data) may hold them: the 32-byte header, the protobuf payload, and
 * spanperf's own record of it.  The first byte picks which.
 */
#include "fuzz_common.h"
#include "otel_pctx.h"

static volatile unsigned sum;

static void touch(const struct otel_pctx *p)
{
	if (p->service_name)
		sum += strlen(p->service_name);
	for (int i = 0; i < p->nkeys; i++)
		if (p->keys[i])
			sum += strlen(p->keys[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct otel_pctx_header h;
	struct otel_pctx p;
	__u32 pid;

	if (!size)
		return 0;
	switch (data[0] % 3) {
	case 0:
		if (!otel_pctx_decode(data + 1, size - 1, &p)) {
			touch(&p);
			otel_pctx_clear(&p);
		}
		break;
	case 1:
		if (!otel_pctx_rec_decode(data + 1, size - 1, &pid, &p)) {
			touch(&p);
			otel_pctx_clear(&p);
		}
		break;
	default:
		otel_pctx_header_parse(data + 1, size - 1, &h);
		break;
	}
	return 0;
}
