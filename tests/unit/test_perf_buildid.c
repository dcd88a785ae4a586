// SPDX-License-Identifier: GPL-2.0
/*
 * A kept copy entered in perf's build-id cache in perf's own layout (what
 * `perf buildid-cache --add` makes), and paths that would leave it refused.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "perf_buildid.h"

#define HEX "9afb56ed7b8e6e826801947243a9fcf5a9572a00"

static char home[64]; /* a mkdtemp name */

static int setup(void **state)
{
	char tmpl[] = "/tmp/sp-perf-buildid-XXXXXX";
	char copy[PATH_MAX];
	FILE *f;

	(void)state;
	if (!mkdtemp(tmpl))
		return -1;
	snprintf(home, sizeof(home), "%s", tmpl);
	setenv("HOME", home, 1);
	snprintf(copy, sizeof(copy), "%s/copy", home);
	f = fopen(copy, "w");
	if (!f)
		return -1;
	fputs("ELF bytes", f);
	fclose(f);
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", home);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_perf_layout(void **state)
{
	char copy[PATH_MAX], p[PATH_MAX * 2], target[PATH_MAX];
	struct stat a, b;
	ssize_t n;

	(void)state;
	snprintf(copy, sizeof(copy), "%s/copy", home);
	assert_int_equal(perf_buildid_link(HEX, "/mnt/ctr-wl", copy), 0);
	/* Twice is fine: a second recording of the same container. */
	assert_int_equal(perf_buildid_link(HEX, "/mnt/ctr-wl", copy), 0);
	snprintf(p, sizeof(p), "%s/.debug/mnt/ctr-wl/" HEX "/elf", home);
	assert_int_equal(stat(p, &a), 0);
	assert_int_equal(stat(copy, &b), 0);
	assert_true(a.st_ino == b.st_ino); /* a hard link: no second copy */
	snprintf(p, sizeof(p), "%s/.debug/.build-id/9a/fb56ed7b8e6e826801947243a9fcf5a9572a00", home);
	n = readlink(p, target, sizeof(target) - 1);
	assert_true(n > 0);
	target[n] = 0;
	assert_string_equal(target, "../../mnt/ctr-wl/" HEX);
	/* perf reads LINK/elf */
	snprintf(p + strlen(p), sizeof(p) - strlen(p), "/elf");
	assert_int_equal(access(p, R_OK), 0);
}

static void test_paths_refused(void **state)
{
	char copy[PATH_MAX];

	(void)state;
	snprintf(copy, sizeof(copy), "%s/copy", home);
	assert_int_equal(perf_buildid_link(HEX, "relative/x", copy), -EINVAL);
	assert_int_equal(perf_buildid_link(HEX, "/a/../../etc/x", copy), -EINVAL);
	assert_int_equal(perf_buildid_link(HEX, "/a/./x", copy), -EINVAL);
	assert_int_equal(perf_buildid_link(HEX, "/..", copy), -EINVAL);
	assert_int_equal(perf_buildid_link("9a/b", "/x", copy), -EINVAL);
	/* A name that merely holds dots is a name. */
	assert_int_equal(perf_buildid_link(HEX, "/usr/lib/libx.so.1..2", copy), 0);
	/* Without $HOME it is the password database's (util.h's home_dir): test_safety.py plays that as root. */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_perf_layout),
		cmocka_unit_test(test_paths_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
