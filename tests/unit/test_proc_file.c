// SPDX-License-Identifier: GPL-2.0
/*
 * Another process's file through its root (here our own): a regular file is
 * read, anything else (a FIFO, a symlink as the last component, a deleted
 * name) refused without being opened, by openat2 and by the walk
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
	if (symlink("file", p))
		return -1;
	/* Ordinary symlinks along the way: relative, absolute, a chain, a loop. */
	snprintf(p, sizeof(p), "%s/sub", dir);
	if (mkdir(p, 0700))
		return -1;
	snprintf(p, sizeof(p), "%s/sub/up", dir);
	if (symlink("..", p))
		return -1;
	snprintf(p, sizeof(p), "%s/abs", dir);
	if (symlink(dir, p))
		return -1;
	snprintf(p, sizeof(p), "%s/loop", dir);
	if (symlink("loop/x", p))
		return -1;
	/* Through procfs: /proc/self/cwd is a magic link to wherever this process stands. */
	snprintf(p, sizeof(p), "%s/viaproc", dir);
	return symlink("/proc/self/cwd", p);
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

/*
 * Where a path leads that only a resolution by the rules of openat2 keeps
 * in bounds: the walk that stands in for it must agree with it.
 */
static void check_links(int (*open_in_root)(int, const char *))
{
	char p[PATH_MAX], cwd[PATH_MAX];
	int fd;

	/* Ordinary symlinks are followed, relative and absolute, and ".." through them. */
	snprintf(p, sizeof(p), "%s/sub/up/file", dir);
	fd = open_in_root(getpid(), p);
	assert_true(fd >= 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/abs/sub/../file", dir);
	fd = open_in_root(getpid(), p);
	assert_true(fd >= 0);
	close(fd);
	/* ".." never climbs above the root: here "/", so /.. is / again. */
	snprintf(p, sizeof(p), "/../../..%s/file", dir);
	fd = open_in_root(getpid(), p);
	assert_true(fd >= 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/loop", dir);
	assert_true(open_in_root(getpid(), p) < 0);
	snprintf(p, sizeof(p), "%s/loop/file", dir);
	assert_int_equal(open_in_root(getpid(), p), -ELOOP);
	/* A magic link along the way (to a directory that holds the file) is refused. */
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	snprintf(p, sizeof(p), "%s/viaproc/file", dir);
	assert_int_equal(open_in_root(getpid(), p), -ELOOP);
	assert_int_equal(open_in_root(getpid(), "/proc/self/cwd/file"), -ELOOP);
	assert_int_equal(chdir(cwd), 0);
	/* A directory is not a file to read. */
	assert_true(open_in_root(getpid(), "/") < 0);
	snprintf(p, sizeof(p), "%s/sub/..", dir);
	assert_true(open_in_root(getpid(), p) < 0);
}

static void test_walk(void **state)
{
	(void)state;
	check(proc_open_in_root_walk);
	check_links(proc_open_in_root_walk);
	check_links(proc_open_in_root);
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
		cmocka_unit_test(test_walk),
		cmocka_unit_test(test_regular_only),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
