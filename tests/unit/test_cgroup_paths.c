// SPDX-License-Identifier: GPL-2.0
/*
 * cgroup v2 ids to paths, on this host's own hierarchy (read only: no root
 * needed, no cgroup made).  The truth is independent of the handles the
 * module reads: on kernfs a cgroup's inode number is its id.
 */
#include <dirent.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "cgroup_paths.h"

static uint64_t ino(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : st.st_ino;
}

/*
 * The root is "/", and each cgroup one level down is its own path.  Where
 * cgroups can be made (root), two nested ones of this test's own, so that
 * there is a path with a slash inside.
 */
static void test_walk_names_paths(void **state)
{
	const char *root = cgroup2_root();
	char outer[256], inner[300], want[300];
	struct cgroup_paths c;
	struct dirent *d;
	bool made;
	int named = 0;
	DIR *dir;

	(void)state;
	if (!root)
		skip();
	snprintf(outer, sizeof(outer), "%s/spanperf-unit-%d", root, (int)getpid());
	snprintf(inner, sizeof(inner), "%s/inner", outer);
	made = !mkdir(outer, 0755) && !mkdir(inner, 0755);
	cgroup_paths__init(&c, NULL, 8192);
	assert_null(cgroup_paths__get(&c, ino(root)));
	assert_int_equal(cgroup_paths__walk(&c), 0);
	assert_string_equal(cgroup_paths__get(&c, ino(root)), "/");
	dir = opendir(root);
	assert_non_null(dir);
	while ((d = readdir(dir))) {
		char path[512];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", root, d->d_name);
		if (d->d_name[0] == '.' || lstat(path, &st) || !S_ISDIR(st.st_mode))
			continue;
		snprintf(want, sizeof(want), "/%s", d->d_name);
		assert_non_null(cgroup_paths__get(&c, st.st_ino));
		assert_string_equal(cgroup_paths__get(&c, st.st_ino), want);
		named++;
	}
	closedir(dir);
	if (made) {
		snprintf(want, sizeof(want), "/spanperf-unit-%d/inner", (int)getpid());
		assert_non_null(cgroup_paths__get(&c, ino(inner)));
		assert_string_equal(cgroup_paths__get(&c, ino(inner)), want);
	}
	rmdir(inner);
	rmdir(outer);
	print_message("  %d cgroups below %s named%s\n", named, root, made ? ", and one nested" : "");
	assert_false(cgroup_paths__full(&c));
	cgroup_paths__clear(&c);
	assert_null(cgroup_paths__get(&c, ino(root)));
	cgroup_paths__clear(&c);
	cgroup_paths__clear(NULL);
}

/* A walk keeps max paths: the first directory, the root, and no more. */
static void test_walk_stops_at_max(void **state)
{
	const char *root = cgroup2_root();
	struct cgroup_paths c;

	(void)state;
	if (!root)
		skip();
	cgroup_paths__init(&c, NULL, 1);
	assert_int_equal(cgroup_paths__walk(&c), 0);
	assert_true(cgroup_paths__full(&c));
	assert_string_equal(cgroup_paths__get(&c, ino(root)), "/");
	assert_int_equal(c.names.n, 1);
	/* Full, the next walk adds nothing until cleared. */
	assert_int_equal(cgroup_paths__walk(&c), 0);
	assert_int_equal(c.names.n, 1);
	cgroup_paths__clear(&c);
}

/*
 * No mount is crossed: from a folder above the hierarchy (hybrid hosts:
 * /sys/fs/cgroup, with v2 mounted at unified), its root is never reached.
 * A folder that is no hierarchy at all names nothing.
 */
static void test_walk_stays_on_its_mount(void **state)
{
	const char *root = cgroup2_root();
	struct cgroup_paths c;

	(void)state;
	cgroup_paths__init(&c, "/nonexistent-spanperf-cgroup", 16);
	assert_int_equal(cgroup_paths__walk(&c), 0);
	assert_int_equal(c.names.n, 0);
	if (!root || strcmp(root, "/sys/fs/cgroup/unified"))
		skip();
	cgroup_paths__init(&c, "/sys/fs/cgroup", 8192);
	assert_int_equal(cgroup_paths__walk(&c), 0);
	assert_null(cgroup_paths__get(&c, ino(root)));
	cgroup_paths__clear(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_walk_names_paths),
		cmocka_unit_test(test_walk_stops_at_max),
		cmocka_unit_test(test_walk_stays_on_its_mount),
	};

	return cmocka_run_group_tests_name("cgroup_paths", tests, NULL, NULL);
}
