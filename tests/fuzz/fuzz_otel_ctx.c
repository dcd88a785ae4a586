// SPDX-License-Identifier: GPL-2.0
/* The OTEP 4947 thread-context record parser, on bytes as a process may leave them. */
#include "fuzz_common.h"
#include "otel_ctx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct otel_ctx c;
	struct otel_ctx_attr a;
	size_t pos = 0;
	static volatile unsigned sum;

	if (otel_ctx_parse(data, size, &c))
		return 0;
	while (otel_ctx_next_attr(&c, &pos, &a))
		for (unsigned i = 0; i < a.len; i++)
			sum += a.val[i]; /* every byte an attribute claims must be readable */
	return 0;
}
