// SPDX-License-Identifier: GPL-2.0
/*
 * The kallsyms copy's text range (kallsyms.h): kept beside the copy when
 * it is stored, read back without the copy; a range file that is not one
 * (garbage, another _text) is passed over, the copy searched, and the range
 * written again from it.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "kallsyms.h"

#define TEXT 0xffffffff81000000ull
#define ETEXT 0xffffffff8220bb08ull
#define BID "4a5a9b0affb66c437abcd455d2738af879985fa9"

static char dir[] = "/tmp/spanperf-kallsyms-XXXXXX";
static char range[PATH_MAX];

static const char copy[] = "0000000000000000 A fixed_percpu_data\n"
			   "ffffffff81000000 T _text\n"
			   "ffffffff81000010 T startup_64\n"
			   "ffffffff8220bb08 T _etext\n"
			   "ffffffff8220c000 D _sdata\n";

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	setenv("XDG_CACHE_HOME", dir, 1);
	snprintf(range, sizeof(range), "%s/spanperf/kallsyms/" BID "-%llx.text", dir, TEXT);
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

static void write_range(const char *text)
{
	FILE *f = fopen(range, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_range_kept(void **state)
{
	__u64 start, end;

	(void)state;
	assert_int_equal(kallsyms_store_cache(BID, TEXT, copy, sizeof(copy) - 1, "", 0), 0);
	assert_int_equal(access(range, R_OK), 0);
	assert_int_equal(kallsyms_cache_text_range(BID, TEXT, &start, &end), 0);
	assert_true(start == TEXT && end == ETEXT);
	/* The range answers, not the copy: a range written so is what is read. */
	write_range("ffffffff81000000 ffffffff82000000\n");
	assert_int_equal(kallsyms_cache_text_range(BID, TEXT, &start, &end), 0);
	assert_true(start == TEXT && end == 0xffffffff82000000ull);
}

static void test_range_refused(void **state)
{
	static const char *bad[] = { "garbage\n", "ffffffff81001000 ffffffff8220bb08\n",
				     "ffffffff81000000 ffffffff80000000\n", "" };
	__u64 start, end;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(kallsyms_store_cache(BID, TEXT, copy, sizeof(copy) - 1, "", 0), 0);
		write_range(bad[i]);
		assert_int_equal(kallsyms_cache_text_range(BID, TEXT, &start, &end), 0);
		assert_true(start == TEXT && end == ETEXT);
		/* Written again from the copy. */
		end = 0;
		assert_int_equal(kallsyms_cache_text_range(BID, TEXT, &start, &end), 0);
		assert_true(end == ETEXT);
	}
	/* No copy and no range: none. */
	unlink(range);
	snprintf(range + strlen(range) - strlen(".text"), 6, "%s", "");
	unlink(range);
	assert_int_not_equal(kallsyms_cache_text_range(BID, TEXT, &start, &end), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_range_kept),
		cmocka_unit_test(test_range_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
