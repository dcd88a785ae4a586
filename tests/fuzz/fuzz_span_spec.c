// SPDX-License-Identifier: GPL-2.0
/* The --span SPEC parser. */
#include "fuzz_common.h"
#include "span_sources.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size), err[256];
	struct span_spec sp;

	if (!s)
		return 0;
	span_spec_parse(s, &sp, err, sizeof(err));
	free(s);
	return 0;
}
