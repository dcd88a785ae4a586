// SPDX-License-Identifier: GPL-2.0
/*
 * report's filters: perf's --time forms (tools/perf/util/time-utils.c's
 * results, computed here by hand), the name lists with file:// entries,
 * and when -- CMD follows the command's tree.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "report_filter.h"
#include "target.h"

#define S 1000000000ull
/* A file whose samples run from 10 s to 20 s. */
#define FIRST (10 * S)
#define LAST (20 * S)

static void ranges(const char *s, size_t n, const struct time_range *want)
{
	struct time_range *r;
	size_t got;
	char err[256] = "";

	if (time_ranges_parse(s, FIRST, LAST, &r, &got, err, sizeof(err)))
		fail_msg("'%s': %s", s, err);
	assert_int_equal(got, n);
	for (size_t i = 0; i < n; i++) {
		if (r[i].start != want[i].start || r[i].end != want[i].end)
			fail_msg("'%s' range %zu: [%llu, %llu], want [%llu, %llu]", s, i, (unsigned long long)r[i].start,
				 (unsigned long long)r[i].end, (unsigned long long)want[i].start,
				 (unsigned long long)want[i].end);
	}
	free(r);
}

static void bad(const char *s, __u64 first, __u64 last, const char *needle)
{
	struct time_range *r = (void *)1;
	size_t n = 7;
	char err[256] = "";

	assert_int_equal(time_ranges_parse(s, first, last, &r, &n, err, sizeof(err)), -EINVAL);
	assert_null(r);
	assert_int_equal(n, 0);
	if (!strstr(err, needle) || strchr(err, '\n'))
		fail_msg("'%s': error '%s' does not name '%s' in one line", s, err, needle);
}

static void test_time_absolute(void **state)
{
	(void)state;
	ranges("1.5,2.25", 1, (struct time_range[]){ { 1500000000ull, 2250000000ull } });
	/* Up to nine decimals, padded to nanoseconds; either side may be left out. */
	ranges("7321.123456789,", 1, (struct time_range[]){ { 7321123456789ull, 0 } });
	ranges(",12", 1, (struct time_range[]){ { 0, 12 * S } });
	ranges(",", 1, (struct time_range[]){ { 0, 0 } });
	/* Several, white space between, and after a comma. */
	ranges("1,2 3,4", 2, (struct time_range[]){ { S, 2 * S }, { 3 * S, 4 * S } });
	ranges("1,  2\t3,4", 2, (struct time_range[]){ { S, 2 * S }, { 3 * S, 4 * S } });
	bad("1", FIRST, LAST, "'1'");
	bad("2,1", FIRST, LAST, "'2,1'");
	bad("1,2 1.5,3", FIRST, LAST, "--time");     /* overlapping */
	bad("1, 2,3", FIRST, LAST, "--time");	      /* an end with a comma in it, as perf refuses */
	bad("1.1234567891,", FIRST, LAST, "--time"); /* ten decimals */
	bad("1e3,2", FIRST, LAST, "--time");
	bad("", FIRST, LAST, "--time");
}

static void test_time_percent(void **state)
{
	(void)state;
	/* The end is the last ns before the next slice, but at the last sample itself. */
	ranges("10%", 1, (struct time_range[]){ { FIRST, 11 * S - 1 } });
	ranges("10%/2", 1, (struct time_range[]){ { 11 * S, 12 * S - 1 } });
	ranges("10%/1,10%/3", 2, (struct time_range[]){ { FIRST, 11 * S - 1 }, { 12 * S, 13 * S - 1 } });
	ranges("0%-10%,30%-40%", 2, (struct time_range[]){ { FIRST, 11 * S - 1 }, { 13 * S, 14 * S - 1 } });
	ranges("90%-100%", 1, (struct time_range[]){ { 19 * S, LAST } });
	ranges("100%", 1, (struct time_range[]){ { FIRST, LAST } });
	ranges("2.5%/2", 1, (struct time_range[]){ { FIRST + S / 4, FIRST + S / 2 - 1 } });
	bad("10%/0", FIRST, LAST, "'10%/0'");
	bad("0%", FIRST, LAST, "'0%'");
	bad("x%", FIRST, LAST, "'x%'");
	bad("10%-200%", FIRST, LAST, "'10%-200%'");
	bad("10%,20%", FIRST, LAST, "--time");
	/* No first and last sample times in the file: percents mean nothing. */
	bad("10%", 0, 0, "the first and last sample times");
}

static void test_time_keep(void **state)
{
	struct time_range one[] = { { 5, 9 } }, open_end[] = { { 5, 0 } }, two[] = { { 1, 2 }, { 5, 0 } };

	(void)state;
	assert_true(time_ranges_keep(NULL, 0, 3));
	assert_true(time_ranges_keep(one, 1, 5) && time_ranges_keep(one, 1, 9));
	assert_false(time_ranges_keep(one, 1, 4) || time_ranges_keep(one, 1, 10));
	/* A sample stamped 0 is kept, as perf keeps it. */
	assert_true(time_ranges_keep(one, 1, 0));
	assert_true(time_ranges_keep(open_end, 1, ~0ull));
	assert_true(time_ranges_keep(two, 2, 2) && time_ranges_keep(two, 2, 6));
	assert_false(time_ranges_keep(two, 2, 3));
}

static void test_name_sets(void **state)
{
	char path[] = "/tmp/spanperf-names-XXXXXX", arg[64], err[256] = "";
	struct report_filter f = {};
	FILE *fp;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	fp = fdopen(fd, "w");
	fputs("from-file\n\nanother one\n", fp);
	fclose(fp);
	assert_false(report_filter_active(&f));
	snprintf(arg, sizeof(arg), "a,,b,file://%s", path);
	assert_int_equal(name_set_add(&f.comms, arg, "--comms", err, sizeof(err)), 0);
	assert_int_equal(name_set_add(&f.comms, "c", "--comms", err, sizeof(err)), 0);
	for (const char *n = "a\0b\0c\0from-file\0another one\0"; *n; n += strlen(n) + 1)
		assert_true(name_set_has(&f.comms, n));
	assert_false(name_set_has(&f.comms, "") || name_set_has(&f.comms, "d") || name_set_has(&f.comms, NULL));
	assert_true(report_filter_lists(&f) && !report_filter_by_address(&f));
	assert_int_equal(name_set_add(&f.syms, "x", "--symbols", err, sizeof(err)), 0);
	assert_true(report_filter_by_address(&f));
	unlink(path);
	assert_int_not_equal(name_set_add(&f.dsos, arg, "--dsos", err, sizeof(err)), 0);
	assert_non_null(strstr(err, "--dsos: cannot read file://"));
	report_filter_free(&f);
}

static void test_follows_cmd(void **state)
{
	static char *cmd[] = { "make", NULL };
	struct int_list none = {}, one = { .v = (int[]){ 1 }, .n = 1 };

	(void)state;
	assert_true(target_follows_cmd(cmd, false, &none, &none, &none));
	assert_false(target_follows_cmd(NULL, false, &none, &none, &none));
	assert_false(target_follows_cmd(cmd, true, &none, &none, &none));  /* -a */
	assert_false(target_follows_cmd(cmd, false, &one, &none, &none));  /* -p */
	assert_false(target_follows_cmd(cmd, false, &none, &one, &none));  /* -t */
	assert_false(target_follows_cmd(cmd, false, &none, &none, &one));  /* -C */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time_absolute), cmocka_unit_test(test_time_percent),
		cmocka_unit_test(test_time_keep),     cmocka_unit_test(test_name_sets),
		cmocka_unit_test(test_follows_cmd),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
