/* SPDX-License-Identifier: GPL-2.0 */
/* The few things C lacks that every module uses: sizes, bounds, growing arrays, a clock. */
#ifndef SP_UTIL_H
#define SP_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define SP_MIN(a, b) ((a) < (b) ? (a) : (b))
#define SP_MAX(a, b) ((a) > (b) ? (a) : (b))

/*
 * A binary search: the first index of [0, n) where before (an expression
 * of the index i) is false, given that it holds up to some index and not
 * from there on; n if it holds everywhere.  before: "a[i].start <= key"
 * finds the entries up to key, "a[i].tid < tid" the first of tid.
 */
#define SP_PARTITION(n, i, before)                       \
	({                                               \
		size_t lo_ = 0, hi_ = (n);               \
		while (lo_ < hi_) {                      \
			size_t i = lo_ + (hi_ - lo_) / 2; \
			if (before)                      \
				lo_ = i + 1;             \
			else                             \
				hi_ = i;                 \
		}                                        \
		lo_;                                     \
	})

uint64_t now_ns(int clockid);

/* Whether s's n bytes are a word: ASCII letters, digits and '_', at least one (an identifier's characters). */
bool str_is_word(const char *s, size_t n);
/* Room for element n of a growing array (doubling); 0 or -ENOMEM, *p unchanged on failure. */
int array_reserve(void **p, size_t *cap, size_t n, size_t elem);

/* qsort that accepts an empty, NULL array (qsort itself may not be given NULL). */
static inline void sort_n(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

#endif
