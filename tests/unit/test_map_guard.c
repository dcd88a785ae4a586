// SPDX-License-Identifier: GPL-2.0
/*
 * A file mapped for reading and truncated by someone else: its pages past
 * the new end read as zeros under the guard, and are counted, instead of
 * killing the reader with SIGBUS (a report died so, issue 38).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <cmocka.h>

#include "map_guard.h"

static void test_truncated_file_reads_as_zeros(void **state)
{
	char path[] = "/tmp/sp-map-guard-XXXXXX";
	long psz = sysconf(_SC_PAGESIZE);
	int fd = mkstemp(path);
	char *buf = malloc(3 * psz);
	volatile const char *m;

	(void)state;
	assert_true(fd >= 0 && buf);
	memset(buf, 'x', 3 * psz);
	assert_int_equal(write(fd, buf, 3 * psz), 3 * psz);
	m = mmap(NULL, 3 * psz, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_true(m != MAP_FAILED);
	assert_int_equal(m[2 * psz], 'x');
	assert_int_equal(map_guard__install(), 0);
	/* Someone else rewrites it in place: the first page stays, the rest is gone. */
	assert_int_equal(ftruncate(fd, psz), 0);
	assert_int_equal(m[0], 'x');
	assert_int_equal(m[psz + 5], 0);
	assert_int_equal(m[2 * psz], 0);
	assert_int_equal(map_guard__pages(), 2);
	munmap((void *)m, 3 * psz);
	close(fd);
	unlink(path);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_truncated_file_reads_as_zeros),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
