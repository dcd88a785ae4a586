// SPDX-License-Identifier: GPL-2.0
/* debuginfod tests: a program whose hot functions are static, to be stripped. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

uint64_t dbgwork_run(uint64_t n);
static volatile uint64_t sink;

__attribute__((noinline)) static uint64_t app_hash(uint64_t x)
{
	for (int i = 0; i < 300; i++) {
		x ^= x << 7;
		x ^= x >> 9;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

__attribute__((noinline)) static void app_work(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		sink += app_hash(i);
	sink += dbgwork_run(n);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	struct timespec a, b;

	/* Seconds of its own CPU, not of the wall: the tests count its samples, which a busy host
	 * would otherwise thin (two hogs and a query load left 0 of 300 over 2 s of wall). */
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
	do {
		app_work(2000);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
	} while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < secs);
	printf("%llu\n", (unsigned long long)sink);
	return 0;
}
