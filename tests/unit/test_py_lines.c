// SPDX-License-Identifier: GPL-2.0
/*
 * CPython's line tables against CPython itself: each fixture line is a code
 * object of an interpreter's own standard library with the line its
 * PyCode_Addr2Line gives every instruction (tests/unit/data/py_lines/gen.py
 * wrote them under pyenv's 3.8-3.13 and Debian's 3.11).  Every index goes
 * through the one-index decoder and through the runs report reads.
 *
 * PY_LINES_FULL=VERSION:FILE[,...] checks whole libraries (gen.py --all)
 * the same way and prints the counts.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "py_lines.h"
#include "py_names.h"
#include "sbuf.h"

struct counts {
	unsigned long code, instr, bad;
};

static int unhex(const char *h, __u8 *out, size_t max)
{
	size_t n = 0;

	if (!strcmp(h, "-"))
		return 0;
	for (; h[0] && h[1] && n < max; h += 2)
		sscanf(h, "%2hhx", &out[n++]);
	return n;
}

/* The expected lines, index -1 on: "V*N,..." with V "n" for none. */
static int expand(char *rle, int *out, int max)
{
	int n = 0;

	for (char *tok = strtok(rle, ","); tok; tok = strtok(NULL, ",")) {
		int v = tok[0] == 'n' ? -1 : atoi(tok), k = atoi(strchr(tok, '*') + 1);

		for (int i = 0; i < k && n < max; i++)
			out[n++] = v;
	}
	return n;
}

static void check_file(const char *path, __u16 version, struct counts *c, bool quiet)
{
	enum py_line_format f = py_line_format_of(version);
	FILE *fp = fopen(path, "r");
	size_t cap = 1 << 22;
	char *line = malloc(cap), *hex = malloc(cap), *rle = malloc(cap);
	__u8 *tab = malloc(cap / 2);
	int *want = malloc(sizeof(int) * (PY_MAX_CODEUNITS + 1));

	assert_non_null(fp);
	assert_true(line && hex && rle && tab && want);
	while (fgets(line, cap, fp)) {
		int first, n, len, bad_one = 0;
		struct sbuf runs = {};
		struct py_runs r;
		bool bad;

		if (sscanf(line, "%d %s %s", &first, hex, rle) != 3)
			continue;
		len = unhex(hex, tab, cap / 2);
		n = expand(rle, want, PY_MAX_CODEUNITS + 1);
		c->code++;
		py_runs_init(&r, &runs, first, 1 << 20);
		assert_int_equal(py_lines_runs(f, tab, len, first, n - 1, &r), 0);
		for (int i = -1; i < n - 1; i++) {
			int one = py_lines_addr2line(f, tab, len, first, i, &bad);
			int run = py_runs_line((__u8 *)runs.p, runs.len, first, i);

			c->instr++;
			if (one != want[i + 1] || run != want[i + 1] || bad) {
				if (!quiet && bad_one++ < 3)
					fprintf(stderr, "%s: first %d idx %d: want %d, one %d, runs %d\n", path, first, i,
						want[i + 1], one, run);
				c->bad++;
			}
		}
		/* Past the code: no line. */
		assert_int_equal(py_runs_line((__u8 *)runs.p, runs.len, first, n - 1), -1);
		sbuf_free(&runs);
	}
	fclose(fp);
	free(line);
	free(hex);
	free(rle);
	free(tab);
	free(want);
}

static const struct {
	const char *file;
	__u16 version;
} fixtures[] = {
	{ "3.8.txt", 0x0308 },	{ "3.9.txt", 0x0309 },	{ "3.10.txt", 0x030a }, { "3.11.txt", 0x030b },
	{ "3.11-debian.txt", 0x030b }, { "3.12.txt", 0x030c }, { "3.13.txt", 0x030d },
};

static void test_fixtures(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		char path[256];
		struct counts c = {};

		snprintf(path, sizeof(path), "tests/unit/data/py_lines/%s", fixtures[i].file);
		check_file(path, fixtures[i].version, &c, false);
		assert_true(c.code > 50);
		assert_int_equal(c.bad, 0);
	}
}

/* PY_LINES_FULL=3.8:/tmp/all-3.8.txt,...: whole libraries, for the figures. */
static void test_full(void **state)
{
	const char *env = getenv("PY_LINES_FULL");
	char *copy, *save = NULL;

	(void)state;
	copy = strdup(env);
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct counts c = {};
		int maj, min;

		assert_int_equal(sscanf(tok, "%d.%d:", &maj, &min), 2);
		check_file(strchr(tok, ':') + 1, maj << 8 | min, &c, false);
		printf("%s: %lu code objects, %lu instructions, %lu mismatches\n", tok, c.code, c.instr, c.bad);
		assert_int_equal(c.bad, 0);
	}
	free(copy);
}

/* Tables cut short or lying: an answer or "no line", never a read past the end. */
static void test_malformed(void **state)
{
	/* 3.11: a code-13 entry whose svarint is cut; an entry without its start bit. */
	const __u8 cut13[] = { 0x80 | 13 << 3, 0x41 };
	const __u8 nostart[] = { 0x80 | 10 << 3 | 1, 0, 0, 0x05 };
	/* lnotab: an odd byte at the end is ignored, as CPython does. */
	const __u8 odd[] = { 4, 1, 4 };
	struct sbuf runs = {};
	struct py_runs r;
	bool bad;

	(void)state;
	assert_int_equal(py_lines_addr2line(PY_LINES_LOCATIONS, cut13, sizeof(cut13), 10, 0, &bad), -1);
	assert_true(bad);
	/* The entry before the fault stands: index 0 and 1 are line 10, then no line. */
	assert_int_equal(py_lines_addr2line(PY_LINES_LOCATIONS, nostart, sizeof(nostart), 10, 1, &bad), 10);
	assert_false(bad);
	py_runs_init(&r, &runs, 10, 100);
	assert_int_equal(py_lines_runs(PY_LINES_LOCATIONS, nostart, sizeof(nostart), 10, 8, &r), -EINVAL);
	assert_int_equal(py_runs_line((__u8 *)runs.p, runs.len, 10, 1), 10);
	assert_int_equal(py_runs_line((__u8 *)runs.p, runs.len, 10, 2), -1);
	sbuf_free(&runs);
	assert_int_equal(py_lines_addr2line(PY_LINES_LNOTAB, odd, sizeof(odd), 1, 1, &bad), 1);
	assert_int_equal(py_lines_addr2line(PY_LINES_LNOTAB, odd, sizeof(odd), 1, 2, &bad), 2);
	assert_int_equal(py_lines_addr2line(PY_LINES_LNOTAB, odd, sizeof(odd), 1, 100, &bad), 2);
	/* 3.10: -128 is no line; the running line stays. */
	{
		const __u8 t[] = { 2, 1, 2, 0x80, 2, 1 };

		assert_int_equal(py_lines_addr2line(PY_LINES_310, t, sizeof(t), 5, 0, &bad), 6);
		assert_int_equal(py_lines_addr2line(PY_LINES_310, t, sizeof(t), 5, 1, &bad), -1);
		assert_int_equal(py_lines_addr2line(PY_LINES_310, t, sizeof(t), 5, 2, &bad), 7);
		assert_int_equal(py_lines_addr2line(PY_LINES_310, t, sizeof(t), 5, 3, &bad), -1);
		assert_int_equal(py_lines_addr2line(PY_LINES_310, t, sizeof(t), 5, -1, &bad), 5);
	}
	/* No table at all: lnotab's lines are firstlineno's; the others have none. */
	assert_int_equal(py_lines_addr2line(PY_LINES_LNOTAB, NULL, 0, 3, 7, &bad), 3);
	assert_int_equal(py_lines_addr2line(PY_LINES_LOCATIONS, NULL, 0, 3, 7, &bad), -1);
	/* A varint of more groups than any int: refused. */
	{
		__u8 t[16] = { 0x80 | 13 << 3 };

		memset(t + 1, 0x7f, sizeof(t) - 1);
		assert_int_equal(py_lines_addr2line(PY_LINES_LOCATIONS, t, sizeof(t), 1, 0, &bad), -1);
		assert_true(bad);
	}
	assert_int_equal(py_line_format_of(0x0307), -EPROTONOSUPPORT);
	assert_int_equal(py_line_format_of(0x030e), -EPROTONOSUPPORT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_full),
	};

	/* The whole libraries only when asked: they are not checked in. */
	return _cmocka_run_group_tests("tests", tests, getenv("PY_LINES_FULL") ? 3 : 2, NULL, NULL);
}
