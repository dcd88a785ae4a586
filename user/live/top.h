/* SPDX-License-Identifier: GPL-2.0 */
/*
 * spanperf top: perf top's refreshing table from the recorder's own BPF
 * sampling, read live (live_record.h).  Each refresh is a window of -d
 * seconds: a profile (or, with --spans, the span join) built as its
 * records come, drawn from the table's rows, and freed when the next one
 * is drawn.  Nothing goes to a file.
 */
#ifndef SP_TOP_H
#define SP_TOP_H

#include "top_opts.h"

/*
 * Runs top until -n refreshes, q or a signal; says what went wrong, once.
 * Returns the exit status: 0, or 1.
 */
int top_run(struct top_opts *o, int argc, char **argv);

#endif
