// SPDX-License-Identifier: GPL-2.0
/*
 * Ground truth for --call-graph dwarf: built with -O2 -fomit-frame-pointer,
 * so that frame-pointer chains break, and its hot code is reached through
 * code that is not ours: libc's qsort and bsearch call cmp_ints(), and
 * libdwarfcb.so (also without frame pointers) calls cb_work().
 *
 *   workload_dwarf MS    sorts and searches for MS of CPU, then calls
 *                        through the library for MS/4; prints the counts
 *
 * Each named function is noinline so that it is one frame in every chain:
 * main -> worker -> sort_round -> qsort -> ... -> cmp_ints
 *              \-> search_round -> bsearch -> cmp_ints
 *              \-> lib_round -> dwarfcb_each (lib) -> cb_work
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int dwarfcb_each(int *v, int n, int (*fn)(int *, int));

#define N 4096

static volatile long compares;

__attribute__((noinline)) int cmp_ints(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	compares++;
	return (x > y) - (x < y);
}

__attribute__((noinline)) int cb_work(int *v, int i)
{
	unsigned h = v[i];

	for (int k = 0; k < 64; k++)
		h = h * 2654435761u + k;
	return h & 1;
}

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((noinline)) void sort_round(int *v, unsigned *seed)
{
	for (int i = 0; i < N; i++)
		v[i] = rand_r(seed);
	qsort(v, N, sizeof(*v), cmp_ints);
}

__attribute__((noinline)) long search_round(int *v, unsigned *seed)
{
	long found = 0;

	for (int i = 0; i < N; i++) {
		int key = rand_r(seed);

		found += bsearch(&key, v, N, sizeof(*v), cmp_ints) != NULL;
	}
	return found;
}

__attribute__((noinline)) long lib_round(int *v)
{
	return dwarfcb_each(v, N, cb_work);
}

__attribute__((noinline)) long worker(double ms)
{
	static int v[N];
	unsigned seed = 1;
	long rounds = 0, sink = 0;
	double t0 = cpu_ms();

	while (cpu_ms() - t0 < ms) {
		sort_round(v, &seed);
		sink += search_round(v, &seed);
		rounds++;
	}
	t0 = cpu_ms();
	while (cpu_ms() - t0 < ms / 4)
		sink += lib_round(v);
	return rounds + (sink & 1);
}

int main(int argc, char **argv)
{
	double ms = argc > 1 ? atof(argv[1]) : 1000;
	long rounds = worker(ms);

	printf("{\"rounds\": %ld, \"compares\": %ld}\n", rounds, compares);
	return 0;
}
