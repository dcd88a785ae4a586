/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What several unit tests do alike: a scratch folder for a perf.data, and
 * this process's own executable mappings given to a symbolizer as MMAP
 * records would give them.  Include after cmocka.h.
 */
#ifndef SP_TESTS_UNIT_H
#define SP_TESTS_UNIT_H

#include <stdio.h>
#include <stdlib.h>

#include "sideband.h"
#include "symbols.h"

/* dir (a mkdtemp template) made, and path set to dir/perf.data; 0, or -1 for cmocka's setup. */
static inline int unit_scratch(char *dir, char *path, size_t len)
{
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, len, "%s/perf.data", dir);
	return 0;
}

/* The scratch folder removed, with what the test left in it; 0 for cmocka's teardown. */
static inline int unit_scratch_remove(const char *dir)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

/* cmocka's group setup and teardown, named so, over a test file's scratch folder dir and its path. */
#define UNIT_SCRATCH(dir, path)                                \
	static int setup(void **state)                         \
	{                                                      \
		(void)state;                                   \
		return unit_scratch(dir, path, sizeof(path));  \
	}                                                      \
	static int teardown(void **state)                      \
	{                                                      \
		(void)state;                                   \
		return unit_scratch_remove(dir);               \
	}

/* pid's maps at time t: this process's executable ones, read from /proc/self/maps. */
static inline void unit_self_maps(struct symbolizer *s, __s32 pid, __u64 t)
{
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "r");
	struct procmap m;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (!procmaps_parse_line(line, &m) && (m.prot & 4 /* PROT_EXEC */))
			assert_int_equal(symbolizer__add_map(s, pid, m.start, m.end - m.start, m.pgoff, m.path, t, false, NULL), 0);
	fclose(f);
}

#endif
