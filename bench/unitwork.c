// SPDX-License-Identifier: GPL-2.0
/*
 * bench/unitwork THREADS SECONDS ITERS DEPTH: fixed units of work, timed by
 * the thread's own CPU clock, for the whole-path section.
 *
 * Each of THREADS threads runs units for SECONDS of wall time: a call chain
 * DEPTH frames deep whose innermost frame spins ITERS iterations.  A
 * sampling interrupt, its program, its chain walk and its ring write run on
 * the interrupted thread's CPU clock (this kernel has no IRQ time
 * accounting), so what a profiler costs the workload is the growth of a
 * unit's CPU time.  It prints the median unit over every thread, in ns, as
 * JSON: a unit the host slowed or preempted in the middle moves the median
 * little.  Built twice by the Makefile, with and without frame pointers.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_UNITS 100000

static long iters, depth;
static double secs;

struct worker {
	pthread_t t;
	long n;
	long *ns;
};

static __attribute__((noinline)) long leaf(long x)
{
	for (long i = 0; i < iters; i++)
		x = x * 6364136223846793005L + 1442695040888963407L;
	return x;
}

/* Not a tail call: the result is used after the call, so each level keeps its frame. */
static __attribute__((noinline)) long level(long d, long x)
{
	if (d <= 1)
		return leaf(x) ^ d;
	return level(d - 1, x + d) * 3 + d;
}

static long ns_of(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	long end = ns_of(CLOCK_MONOTONIC) + (long)(secs * 1e9);
	volatile long sink = 0;

	while (w->n < MAX_UNITS && ns_of(CLOCK_MONOTONIC) < end) {
		long t0 = ns_of(CLOCK_THREAD_CPUTIME_ID);

		sink += level(depth, sink);
		w->ns[w->n++] = ns_of(CLOCK_THREAD_CPUTIME_ID) - t0;
	}
	return NULL;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct worker *ws;
	long *all, n = 0;
	int threads;

	if (argc != 5) {
		fprintf(stderr, "usage: unitwork THREADS SECONDS ITERS DEPTH\n");
		return 1;
	}
	threads = atoi(argv[1]);
	secs = atof(argv[2]);
	iters = atol(argv[3]);
	depth = atol(argv[4]);
	if (threads < 1 || threads > 256 || secs <= 0 || iters < 1 || depth < 1 || depth > 100) {
		fprintf(stderr, "unitwork: bad arguments\n");
		return 1;
	}
	ws = calloc(threads, sizeof(*ws));
	all = calloc((size_t)threads * MAX_UNITS, sizeof(*all));
	if (!ws || !all)
		return 1;
	for (int i = 0; i < threads; i++) {
		ws[i].ns = all + (size_t)i * MAX_UNITS;
		if (pthread_create(&ws[i].t, NULL, run, &ws[i]))
			return 1;
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(ws[i].t, NULL);
		for (long j = 0; j < ws[i].n; j++)
			all[n++] = ws[i].ns[j];
	}
	if (!n)
		return 1;
	qsort(all, n, sizeof(*all), cmp_long);
	printf("{\"units\": %ld, \"median_ns\": %ld, \"p25_ns\": %ld, \"p75_ns\": %ld}\n", n, all[n / 2], all[n / 4],
	       all[3 * n / 4]);
	return 0;
}
