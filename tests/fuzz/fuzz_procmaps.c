// SPDX-License-Identifier: GPL-2.0
/*
 * The /proc/PID/maps and /proc/modules line parsers, and the maps reader
 * over the whole input as a file: lines of any length, cut ones dropped.
 */
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
	if (size) {
		FILE *f = fmemopen((void *)data, size, "r");
		unsigned long cut = 0;
		char *line = NULL;
		size_t cap = 0;

		while (f && procmaps_next(f, &line, &cap, &m, &cut))
			if (m.end <= m.start || strlen(m.path) >= sizeof(m.path))
				abort(); /* a mapping the parser should have refused */
		free(line);
		if (f)
			fclose(f);
	}
	return 0;
}
