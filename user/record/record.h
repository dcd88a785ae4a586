/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The recorder: the one call that records what `spanperf record` asks for
 * (struct record_opts, record_opts.h).  The recording is a list of sources
 * (source.h) drained by one loop into one writer.
 */
#ifndef SP_RECORD_H
#define SP_RECORD_H

#include "record_opts.h"

/*
 * Records as o says until -d, CMD's exit or a signal, and completes the
 * file; argc/argv are the command line the file's header keeps.  Returns
 * 0 and the exit code to pass on in *exit_code, or -errno once said why.
 */
int record__run(const struct record_opts *o, int argc, char **argv, int *exit_code);

#endif
