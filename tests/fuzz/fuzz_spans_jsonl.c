// SPDX-License-Identifier: GPL-2.0
/* The external spans (JSON lines) parser of annotate. */
#include "fuzz_common.h"
#include "spans_jsonl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ext_span *v;
	size_t n;
	char err[256];

	if (!ext_spans_parse((const char *)data, size, "fuzz.jsonl", &v, &n, err, sizeof(err)))
		ext_spans_free(v, n);
	return 0;
}
