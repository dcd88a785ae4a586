/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What `spanperf list` shows: the events this machine can count or sample
 * (each one tried with perf_event_open, so "supported" means it opened
 * here), its tracepoints, and the span sources it can attach.
 */
#ifndef SP_EVENT_CATALOG_H
#define SP_EVENT_CATALOG_H

#include <stdbool.h>
#include <stdio.h>

/*
 * The whole page to out; all: the events that fail too, with the reason,
 * and every tracepoint by name.  0, or -errno after saying why.
 */
int event_catalog_print(FILE *out, bool all);

#endif
