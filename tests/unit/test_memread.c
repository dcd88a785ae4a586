// SPDX-License-Identifier: GPL-2.0
/*
 * The page reader (memread.h) reads what py_read_pid reads, range for
 * range: within a page, across pages, from a page it kept after the
 * process wrote it (the old bytes: one reading's snapshot), and fails
 * where py_read_pid fails (a hole between two mappings, bounds), this
 * process being the one read.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <cmocka.h>

#include "memread.h"
#include "pyfacts.h"

#define PG 4096

static void test_same_bytes(void **state)
{
	struct mem_pages *m = mem_pages__new(getpid());
	__u8 *a = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	__u8 got[3 * PG], want[3 * PG];
	static const size_t offs[] = { 0, 1, PG - 3, PG - 8, PG, 2 * PG - 1, 3 * PG - 16 };
	static const size_t lens[] = { 1, 8, 16, 100, PG, PG + 5, 2 * PG + 1 };

	(void)state;
	assert_non_null(m);
	assert_true(a != MAP_FAILED);
	for (size_t i = 0; i < 4 * PG; i++)
		a[i] = (__u8)(i * 7 + 3);
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
		for (size_t j = 0; j < sizeof(lens) / sizeof(lens[0]); j++) {
			__u64 at = (__u64)(unsigned long)a + offs[i];
			size_t n = lens[j];

			if (offs[i] + n > 4 * PG || n > sizeof(got))
				continue;
			memset(got, 0, n);
			assert_int_equal(py_read_pid((void *)(long)getpid(), at, want, n), 0);
			assert_int_equal(mem_pages__read(m, at, got, n), 0);
			assert_memory_equal(got, want, n);
		}
	/* Kept: a byte written since is read as it was when its page was first read. */
	assert_int_equal(mem_pages__read(m, (__u64)(unsigned long)a + 10, got, 1), 0);
	a[10] ^= 0xff;
	assert_int_equal(mem_pages__read(m, (__u64)(unsigned long)a + 10, want, 1), 0);
	assert_int_equal(got[0], want[0]);
	mem_pages__free(m);
	/* A new reader reads it anew. */
	m = mem_pages__new(getpid());
	assert_non_null(m);
	assert_int_equal(mem_pages__read(m, (__u64)(unsigned long)a + 10, want, 1), 0);
	assert_int_equal(want[0], a[10]);
	mem_pages__free(m);
	munmap(a, 4 * PG);
}

static void test_fails_alike(void **state)
{
	struct mem_pages *m = mem_pages__new(getpid());
	__u8 *a = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	__u64 base = (__u64)(unsigned long)a;
	__u8 got[64];

	(void)state;
	assert_non_null(m);
	assert_true(a != MAP_FAILED);
	memset(a, 0x5a, 3 * PG);
	/* A hole in the middle page. */
	assert_int_equal(munmap(a + PG, PG), 0);
	assert_int_equal(mem_pages__read(m, base + PG - 8, got, 8), 0);
	assert_int_not_equal(mem_pages__read(m, base + PG - 8, got, 16), 0);
	assert_int_not_equal(mem_pages__read(m, base + PG + 8, got, 8), 0);
	assert_int_equal(mem_pages__read(m, base + 2 * PG, got, 8), 0);
	assert_int_equal(got[0], 0x5a);
	assert_int_equal(mem_pages__read(m, 16, got, 8), -EFAULT);
	assert_int_equal(mem_pages__read(m, 1ull << 47, got, 8), -EFAULT);
	assert_int_equal(mem_pages__read(m, base, got, 0), 0);
	mem_pages__free(m);
	mem_pages__free(NULL);
	munmap(a, PG);
	munmap(a + 2 * PG, PG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_bytes),
		cmocka_unit_test(test_fails_alike),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
