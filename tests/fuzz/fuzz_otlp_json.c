// SPDX-License-Identifier: GPL-2.0
/* The OTLP JSON reader of annotate (the Collector's file exporter format). */
#include "fuzz_common.h"
#include "otlp_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ext_span *v;
	struct otlp_stats st;
	size_t n;
	char err[256];

	if (!otlp_json_parse((const char *)data, size, "fuzz.json", &v, &n, &st, err, sizeof(err)))
		ext_spans_free(v, n);
	return 0;
}
