/* SPDX-License-Identifier: GPL-2.0 */
/* The few things C lacks that every module uses: sizes, bounds, growing arrays, a clock. */
#ifndef SP_UTIL_H
#define SP_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define SP_MIN(a, b) ((a) < (b) ? (a) : (b))
#define SP_MAX(a, b) ((a) > (b) ? (a) : (b))

uint64_t now_ns(int clockid);

/* Room for element n of a growing array (doubling); 0 or -ENOMEM, *p unchanged on failure. */
int array_reserve(void **p, size_t *cap, size_t n, size_t elem);

/* qsort that accepts an empty, NULL array (qsort itself may not be given NULL). */
static inline void sort_n(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

#endif
