// SPDX-License-Identifier: GPL-2.0
/*
 * Inline tests: hot code in two static inline functions, one inside the
 * other, inside a real one (hot_loop), at -O2 -g.  Runs for argv[1] seconds.
 */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static inline __attribute__((always_inline)) unsigned long mix_inner(unsigned long x)
{
	x ^= x >> 13;
	x *= 0x9e3779b97f4a7c15ul;
	return x ^ (x >> 29);
}

static inline __attribute__((always_inline)) unsigned long mix_outer(unsigned long x)
{
	for (int i = 0; i < 64; i++)
		x = mix_inner(x + i);
	return x;
}

/* noipa: gcc would otherwise hoist the pure loop out of main's. */
__attribute__((noipa)) unsigned long hot_loop(unsigned long n)
{
	unsigned long acc = 0;

	for (unsigned long i = 0; i < n; i++)
		acc += mix_outer(i);
	return acc;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	struct timespec a, b;

	/* Seconds of its own CPU, not of the wall: a busy host gives the tests as many samples. */
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
	do {
		for (int k = 0; k < 100; k++)
			sink += hot_loop(10000 + (sink & 7));
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
	} while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < secs);
	return 0;
}
