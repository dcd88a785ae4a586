// SPDX-License-Identifier: GPL-2.0
/*
 * Two libraries from this one source (workload_remap): REMAP_FRAME bytes
 * of frame each, both above 127 so that the code differs in an immediate
 * only and the loop lies at the same offsets in both, under other CFI (the
 * CFA at rsp plus another frame size).  A rule kept for a pc of the first,
 * unmapped since, would read the second's return address from the wrong
 * slot.  Built without frame pointers: every step is the tables'.
 */
#include <stdint.h>
#include <time.h>

#ifndef REMAP_FRAME
#define REMAP_FRAME 200
#endif

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Spins until the process has used ms more CPU. */
__attribute__((noinline)) void remap_leaf(double ms)
{
	volatile uint64_t frame[REMAP_FRAME / 8];
	double end = cpu_ms() + ms;

	frame[0] = 0;
	while (cpu_ms() < end)
		for (int i = 0; i < 20000; i++)
			frame[0] += (uint64_t)i * i;
	__asm__ volatile("" ::: "memory");
}
