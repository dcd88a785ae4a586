// SPDX-License-Identifier: GPL-2.0
/* The /proc/PID/maps and /proc/modules line parsers. */
#include "fuzz_common.h"
#include "sideband.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size);
	struct procmap m;
	struct kmodule km;

	if (!s)
		return 0;
	procmaps_parse_line(s, &m);
	kmodule_parse_line(s, &km);
	free(s);
	return 0;
}
