// SPDX-License-Identifier: GPL-2.0
/*
 * Another process's file through its root (here our own): a regular file is
 * read, anything else (a FIFO, a symlink as the last component, a deleted
 * name) refused without being opened, by openat2 and by the forked reader
 * that stands in for it before Linux 5.6.  Escapes from a container are
 * played for real in tests/integration/test_safety.py.
 */
#include <errno.h>
#include <fcntl.h>
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
#include <sys/stat.h>
#include <cmocka.h>

#include "proc_file.h"
#include "fileio.h"

static char dir[64]; /* a mkdtemp name */

static int setup(void **state)
{
	char tmpl[] = "/tmp/sp-proc-file-XXXXXX", p[PATH_MAX];
	FILE *f;

	(void)state;
	if (!mkdtemp(tmpl))
		return -1;
	snprintf(dir, sizeof(dir), "%s", tmpl);
	snprintf(p, sizeof(p), "%s/file", dir);
	f = fopen(p, "w");
	if (!f)
		return -1;
	fputs("bytes", f);
	fclose(f);
	snprintf(p, sizeof(p), "%s/fifo", dir);
	if (mkfifo(p, 0600))
		return -1;
	snprintf(p, sizeof(p), "%s/link", dir);
	return symlink("file", p);
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) ? -1 : 0;
}

static void check(int (*open_in_root)(int, const char *))
{
	char p[PATH_MAX], buf[16] = {};
	int fd;

	snprintf(p, sizeof(p), "%s/file", dir);
	fd = open_in_root(getpid(), p);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), 5);
	assert_string_equal(buf, "bytes");
	close(fd);
	/* A FIFO would block an open for reading: refused from its O_PATH look, never opened. */
	snprintf(p, sizeof(p), "%s/fifo", dir);
	assert_int_equal(open_in_root(getpid(), p), -EINVAL);
	snprintf(p, sizeof(p), "%s/link", dir);
	assert_true(open_in_root(getpid(), p) < 0);
	snprintf(p, sizeof(p), "%s/file (deleted)", dir);
	assert_int_equal(proc_open_in_root(getpid(), p), -ENOENT);
	assert_int_equal(proc_open_in_root(getpid(), "relative"), -ENOENT);
	assert_true(open_in_root(getpid(), "/no/such/file") < 0);
}

static void test_openat2(void **state)
{
	(void)state;
	check(proc_open_in_root);
}

static void test_forked_reader(void **state)
{
	(void)state;
	check(proc_open_in_root_forked);
}

static void test_regular_only(void **state)
{
	char p[PATH_MAX];

	(void)state;
	snprintf(p, sizeof(p), "%s/fifo", dir);
	assert_int_equal(open_regular(p), -EINVAL);
	assert_int_equal(open_regular("/dev/null"), -EINVAL);
	assert_int_equal(open_regular(dir), -EINVAL);
	snprintf(p, sizeof(p), "%s/link", dir);
	assert_true(open_regular_at(AT_FDCWD, p, true) < 0);
	assert_true(open_regular_at(AT_FDCWD, p, false) >= 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_openat2),
		cmocka_unit_test(test_forked_reader),
		cmocka_unit_test(test_regular_only),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
