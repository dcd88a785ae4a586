/* SPDX-License-Identifier: GPL-2.0 */
/* What the library's files share; nothing here is exported. */
#ifndef SP_LIB_INTERNAL_H
#define SP_LIB_INTERNAL_H

#include "spanperf/spanperf.h"

/* Sets this thread's spanperf_strerror() sentence and errno; returns code (a negative errno). */
int sp_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Bumped in each child of fork(). */
extern unsigned sp_fork_gen;

#endif
