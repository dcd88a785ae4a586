// SPDX-License-Identifier: GPL-2.0
/*
 * libspanperf's no-syscall task-clock (the "mmap" path: the event page and
 * the TSC) against read(2) of the same event, on a kernel whose pages offer
 * cap_user_time (the QEMU guest; this host's paravirtual clock does not).
 * Each mmap read is taken between two read(2)s of the same event, around
 * spins and 100 sleeps (each sleep schedules the thread out and back in,
 * which rewrites the page).  The two handles were opened a moment apart, so
 * their counts differ by a fixed c: the check is that one c puts every mmap
 * value between its two read(2)s, however long the emulator took between
 * them.  A page not rewritten at a switch would add each sleep, 0.5 ms, and
 * no c would fit.  Prints one line; exits 1 when the check fails.
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
	int64_t d, lo = INT64_MIN, hi = INT64_MAX;

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
		uint64_t end = now(CLOCK_THREAD_CPUTIME_ID) + 200000, r1, r2;

		while (now(CLOCK_THREAD_CPUTIME_ID) < end)
			for (int j = 0; j < 100; j++)
				sink += j;
		if (i % 3 == 0)
			usleep(500);
		spanperf_counters_read(r, &r1);
		spanperf_counters_read(f, &fv);
		spanperf_counters_read(r, &r2);
		/* c must lie in [fv - r2, fv - r1]: lo is the largest low end, hi the smallest high end. */
		d = (int64_t)(fv - r2);
		lo = d > lo ? d : lo;
		d = (int64_t)(fv - r1);
		hi = d < hi ? d : hi;
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
	printf("over %.0f ms of CPU and 100 sleeps, every mmap read fell between its two read(2)s for one offset "
	       "(slack %.3f ms); %.0f ns a read against read(2)'s %.0f: %.3f\n",
	       cpu0 / 1e6, (hi - lo) / 1e6, tf / 2e5, tr / 2e5, (double)tf / (double)tr);
	/* 50 us of slack for the emulator's clock; at most a fifth of read(2) (the target). */
	return lo <= hi + 50000 && tf * 5 <= tr ? 0 : 1;
}
