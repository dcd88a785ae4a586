// SPDX-License-Identifier: GPL-2.0
/* A library whose hot functions are static: stripped, they have no name. */
#include <stdint.h>

static volatile uint64_t lib_sink;

__attribute__((noinline)) static uint64_t lib_mix(uint64_t x)
{
	for (int i = 0; i < 200; i++) {
		x ^= x >> 17;
		x *= 0xff51afd7ed558ccdull;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

__attribute__((noinline)) static uint64_t lib_spin(uint64_t n)
{
	uint64_t acc = 0;

	for (uint64_t i = 0; i < n; i++)
		acc += lib_mix(i);
	__asm__ volatile("" : "+r"(acc));
	return acc;
}

uint64_t dbgwork_run(uint64_t n)
{
	uint64_t r = lib_spin(n) + 1;

	lib_sink = r;
	return r;
}
