/* SPDX-License-Identifier: GPL-2.0 */
/*
 * spanperf stat: per-thread counters from the BPF switch program
 * (record/counters.h), read as the run goes and at its end, printed the way
 * perf stat prints them or as JSON lines with perf stat -j's fields, and
 * served to Prometheus with --serve (stat_serve.h).  cmd/ fills struct
 * stat_opts (stat_opts.h) from argv and calls stat__run().
 */
#ifndef SP_STAT_H
#define SP_STAT_H

#include <stddef.h>

#include "stat_opts.h"

/* --serve's value: PORT, :PORT, ADDR:PORT or [ADDR6]:PORT; 0, or -EINVAL with one sentence in err. */
int stat_serve_addr_check(const char *addr, char *err, size_t errlen);

/*
 * Counts as o says until -d, CMD's exit or a signal, printing -I's reports
 * on the way and the totals at the end.  0 and the exit code to pass on in
 * *exit_code (CMD's), or -errno once said why.
 */
int stat__run(const struct stat_opts *o, int *exit_code);

#endif
