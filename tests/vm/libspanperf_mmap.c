// SPDX-License-Identifier: GPL-2.0
/*
 * libspanperf's no-syscall task-clock (the "mmap" path: the event page and
 * the TSC) against read(2) of the same event, on a kernel whose pages offer
 * cap_user_time (the QEMU guest; this host's paravirtual clock does not).
 * Both handles read in turn around spins and sleeps (each sleep schedules
 * the thread out and back in, which rewrites the page): the difference of
 * the two must hold still, whatever it was at the start; a page not
 * rewritten at a switch would add each sleep, 0.5 ms, to it.  Prints one
 * line; exits 1 when the check fails.
 *
 *	libspanperf_mmap
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "spanperf/spanperf.h"

static volatile unsigned long sink;

static uint64_t now(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

int main(void)
{
	struct spanperf_counters *f, *r;
	uint64_t fv, rv, t0, tf, tr, cpu0;
	int64_t d, dmin = INT64_MAX, dmax = INT64_MIN;

	f = spanperf_counters_open("task-clock", 0);
	setenv("SPANPERF_NO_USER_READS", "1", 1);
	r = spanperf_counters_open("task-clock", 0);
	if (!f || !r) {
		printf("open: %s\n", spanperf_strerror());
		return 1;
	}
	if (strcmp(spanperf_counters_path(f, 0), "mmap")) {
		printf("task-clock took the %s path: this kernel's event page has no cap_user_time\n",
		       spanperf_counters_path(f, 0));
		return 1;
	}
	for (int i = 0; i < 1000; i++) { /* warm: TCG translates each path on first use */
		spanperf_counters_read(f, &fv);
		spanperf_counters_read(r, &rv);
	}
	cpu0 = now(CLOCK_THREAD_CPUTIME_ID);
	for (int i = 0; i < 300; i++) {
		uint64_t end = now(CLOCK_THREAD_CPUTIME_ID) + 200000;

		while (now(CLOCK_THREAD_CPUTIME_ID) < end)
			for (int j = 0; j < 100; j++)
				sink += j;
		if (i % 3 == 0)
			usleep(500);
		spanperf_counters_read(f, &fv);
		spanperf_counters_read(r, &rv);
		d = (int64_t)(fv - rv);
		dmin = d < dmin ? d : dmin;
		dmax = d > dmax ? d : dmax;
	}
	cpu0 = now(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	t0 = now(CLOCK_MONOTONIC);
	for (int i = 0; i < 200000; i++)
		spanperf_counters_read(f, &fv);
	tf = now(CLOCK_MONOTONIC) - t0;
	t0 = now(CLOCK_MONOTONIC);
	for (int i = 0; i < 200000; i++)
		spanperf_counters_read(r, &rv);
	tr = now(CLOCK_MONOTONIC) - t0;
	printf("over %.0f ms of CPU and 100 sleeps, mmap - read held within %.3f ms; %.0f ns a read against read(2)'s %.0f: %.3f\n",
	       cpu0 / 1e6, (dmax - dmin) / 1e6, tf / 2e5, tr / 2e5, (double)tf / (double)tr);
	/* Within two sleeps' worth, and at most a fifth of read(2) (the target). */
	return dmax - dmin < 1000000 && tf * 5 <= tr ? 0 : 1;
}
