/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What several unit tests do alike: a scratch folder for a perf.data and
 * files written into it, what a writer's sink gets, and this process's own
 * executable mappings given to a symbolizer as MMAP records would give
 * them.  Include after cmocka.h.
 */
#ifndef SP_TESTS_UNIT_H
#define SP_TESTS_UNIT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_data.h"
#include "sideband.h"
#include "symbols.h"
#include "util.h"

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

/* text as the file dir/name. */
static inline void unit_write_file(const char *dir, const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* cmd's stdout, up to size - 1 bytes and NUL-ended (malloc'ed: the caller frees it). */
static inline char *unit_run(const char *cmd, size_t size)
{
	FILE *f = popen(cmd, "r");
	char *out = calloc(1, size);
	size_t n = 0, k;

	assert_non_null(f);
	while ((k = fread(out + n, 1, size - 1 - n, f)) > 0)
		n += k;
	pclose(f);
	return out;
}

/*
 * The same per test (cmocka_unit_test_setup_teardown): dir made again from
 * template each time; with the variable keep set in the environment the
 * folder stays, to read its files with perf.
 */
#define UNIT_SCRATCH_EACH(dir, path, template, keep)                \
	static int setup(void **state)                              \
	{                                                           \
		(void)state;                                        \
		snprintf(dir, sizeof(dir), "%s", template);         \
		return unit_scratch(dir, path, sizeof(path));       \
	}                                                           \
	static int teardown(void **state)                           \
	{                                                           \
		(void)state;                                        \
		return getenv(keep) ? 0 : unit_scratch_remove(dir); \
	}

/* What a writer's sink got (unit_capture_sink): the attrs at begin, every record after. */
struct unit_capture {
	struct pd_attr *attrs;
	int nr_attrs;
	unsigned char *bytes;
	size_t len, cap;
};

static inline int unit_cap_begin(void *arg, const struct pd_attr *attrs, int nr)
{
	struct unit_capture *c = arg;

	c->attrs = calloc(nr, sizeof(*c->attrs));
	assert_non_null(c->attrs);
	for (int i = 0; i < nr; i++) {
		c->attrs[i] = attrs[i];
		c->attrs[i].name = strdup(attrs[i].name);
		c->attrs[i].ids = malloc(attrs[i].nr_ids * sizeof(__u64));
		memcpy(c->attrs[i].ids, attrs[i].ids, attrs[i].nr_ids * sizeof(__u64));
	}
	c->nr_attrs = nr;
	return 0;
}

static inline int unit_cap_write(void *arg, const void *p, size_t n)
{
	struct unit_capture *c = arg;

	assert_int_equal(array_reserve((void **)&c->bytes, &c->cap, c->len + n, 1), 0);
	memcpy(c->bytes + c->len, p, n);
	c->len += n;
	return 0;
}

static inline void unit_capture_free(struct unit_capture *c)
{
	for (int i = 0; i < c->nr_attrs; i++) {
		free(c->attrs[i].name);
		free(c->attrs[i].ids);
	}
	free(c->attrs);
	free(c->bytes);
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
