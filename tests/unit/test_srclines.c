// SPDX-License-Identifier: GPL-2.0
/*
 * Source lines and inlined functions from this test binary's own DWARF
 * (unit tests build with -g), and debug files kept by build id: only one
 * whose build id is the one asked for is ever returned.
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

#include "unit.h"

#include "buildid.h"
#include "debuginfo.h"
#include "sideband.h"
#include "srclines.h"
#include "symbols.h"

static volatile int sink;

static inline __attribute__((always_inline)) void fixture_inlined(int x)
{
	sink = x * 7; /* FIXTURE_INLINED_LINE */
}

__attribute__((noinline)) void fixture_outer(int x)
{
	fixture_inlined(x); /* FIXTURE_CALL_LINE */
	sink += 1;
}

/* The line of this file that holds marker. */
static int line_of(const char *marker)
{
	char line[512];
	FILE *f = fopen(__FILE__, "r");
	int n = 0, found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, marker) && !strstr(line, "line_of("))
			found = n;
	}
	fclose(f);
	return found;
}

static void test_inlined_frames_and_lines(void **state)
{
	struct symbolizer *s = symbolizer__new(NULL, NULL);
	struct srclines *src;
	struct src_info si;
	struct sym out;
	char want[64];
	bool inl = false;

	(void)state;
	if (access(__FILE__, R_OK))
		skip(); /* the source is needed for the expected lines */
	assert_non_null(s);
	unit_self_maps(s, 1234, 0);
	src = srclines__new(s, false);
	assert_non_null(src);
	/* Some address of fixture_outer is in the inlined store: the chain there is two deep. */
	for (int off = 0; off < 64 && !inl; off++) {
		symbolizer__resolve(s, 1234, (__u64)(uintptr_t)fixture_outer + off, 1, false, &out);
		if (!out.known || strcmp(out.name, "fixture_outer"))
			break;
		__u64 vaddr = symbolizer__vaddr(s, out.dso_id, out.file_offset);
		struct src_info line;

		/* Its line alone first (an output without inlined frames), then its functions too. */
		assert_int_equal(srclines__lookup_as(src, out.dso_id, vaddr, false, &line), 0);
		assert_int_equal(line.nr, 0);
		assert_int_equal(srclines__lookup(src, out.dso_id, vaddr, &si), 0);
		assert_ptr_equal(si.srcline, line.srcline);
		if (si.nr == 2) {
			inl = true;
			assert_string_equal(si.frames[0].name, "fixture_inlined");
			assert_string_equal(si.frames[1].name, "fixture_outer");
			snprintf(want, sizeof(want), "test_srclines.c:%d", line_of("FIXTURE_INLINED_LINE"));
			assert_string_equal(si.srcline, want);
			assert_string_equal(si.frames[0].srcline, want);
			/* The outer frame's line is its call site. */
			snprintf(want, sizeof(want), "test_srclines.c:%d", line_of("FIXTURE_CALL_LINE"));
			assert_string_equal(si.frames[1].srcline, want);
		}
	}
	assert_true(inl);
	/* No DWARF for a dso the symbolizer has no file of. */
	assert_int_equal(srclines__lookup(src, -1, 0x1000, &si), 0);
	assert_null(si.srcline);
	assert_int_equal(si.nr, 0);
	srclines__free(src);
	symbolizer__free(s);
}

static void test_kept_debug_file_checked(void **state)
{
	char dir[] = "/tmp/spanperf-dbgXXXXXX", self[PATH_MAX], hex[2 * BUILD_ID_MAX + 1], path[PATH_MAX * 2],
	     got[PATH_MAX];
	const char *other = "00112233445566778899aabbccddeeff00112233";
	__u8 id[BUILD_ID_MAX], size;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *old = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;

	(void)state;
	assert_true(n > 0);
	self[n] = 0;
	if (buildid_from_file(self, id, &size))
		skip();
	buildid_hex(id, size, hex);
	assert_non_null(mkdtemp(dir));
	setenv("XDG_CACHE_HOME", dir, 1);
	assert_int_equal(debuginfo_path(hex, got, sizeof(got)), -ENOENT);
	snprintf(path, sizeof(path), "%s/spanperf", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/spanperf/buildid", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	/* Our own file under our own id: found; under another's: never. */
	snprintf(path, sizeof(path), "%s/spanperf/buildid/%s.debug", dir, hex);
	assert_int_equal(symlink(self, path), 0);
	assert_int_equal(debuginfo_path(hex, got, sizeof(got)), 0);
	assert_string_equal(got, path);
	unlink(path);
	snprintf(path, sizeof(path), "%s/spanperf/buildid/%s.debug", dir, other);
	assert_int_equal(symlink(self, path), 0);
	assert_int_equal(debuginfo_path(other, got, sizeof(got)), -ENOENT);
	unlink(path);
	/* Not a build id at all: no path is even made of it. */
	assert_int_equal(debuginfo_path("../../etc/passwd", got, sizeof(got)), -ENOENT);
	snprintf(path, sizeof(path), "%s/spanperf/buildid", dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/spanperf", dir);
	rmdir(path);
	rmdir(dir);
	if (old)
		setenv("XDG_CACHE_HOME", old, 1);
	else
		unsetenv("XDG_CACHE_HOME");
	free(old);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inlined_frames_and_lines),
		cmocka_unit_test(test_kept_debug_file_checked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
