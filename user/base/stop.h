/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How SIGINT, SIGTERM and SIGHUP stop a command: never ignored, whatever
 * the parent ignored (a shell starts background jobs with SIGINT ignored,
 * and `spanperf record & ... kill -INT $!` is how scripts end a recording,
 * as with perf), but for a SIGHUP ignored by nohup.  A command
 * that writes its outputs whole at the end (report, annotate) dies of the
 * signal at once, its temporaries removed; one that must finish a file
 * (record, stat) sees a flag that its loops poll (each skips what a
 * complete file does not need: copies to caches, build ids, a CMD that
 * ignores the signal), has a system call still blocked STOP_INTERRUPT_S
 * later interrupted and stderr sent to /dev/null (a stderr no one reads
 * must not keep the file from being finished), and is killed the same way
 * if it has not finished STOP_GRACE_S seconds after the signal, or at a
 * second signal: a hung open or write must never need SIGKILL.
 */
#ifndef SP_STOP_H
#define SP_STOP_H

#include <stdbool.h>

/* A stuck command's last chance to finish its file after the first signal. */
#define STOP_GRACE_S 5
/* When a system call still blocked after the first signal is interrupted. */
#define STOP_INTERRUPT_S 1

/*
 * What SIGPIPE (a reader of the output gone: `| head -1`) does to each kind
 * of command; none dies of it with its temporaries left behind.
 */
enum stop_pipe {
	STOP_PIPE_DIE,	  /* dies of it, its temporaries removed (report, annotate: filters) */
	STOP_PIPE_IGNORE, /* writes see EPIPE (record: its file is its output, not its messages) */
	STOP_PIPE_STOP,	  /* a stop request, once (top, stat: what they print is their output) */
};

/* Installs the handlers (first thing in main); finish: record's and stat's flag mode. */
void stop_init(bool finish, enum stop_pipe pipe);
/*
 * In a child before exec (async-signal-safe): INT, TERM, HUP and PIPE as
 * spanperf's parent gave them, so that CMD runs as it would without
 * spanperf (a nohup'd CMD keeps SIGHUP ignored, and no CMD inherits the
 * SIGPIPE spanperf ignores).
 */
void stop_child_signals(void);
/* A stop signal arrived (finish mode). */
bool stop_requested(void);
/*
 * What finishing a file can do without (copies into the build-id cache,
 * the build ids of mapped files, containers' JIT maps) goes on for this
 * long after a stop signal, then stops: Ctrl-C is how most recordings end,
 * and they keep what fits in that time; the file is written within about
 * a second of the signal.
 */
#define STOP_WORK_MS 600
/* A stop signal arrived more than STOP_WORK_MS ago: optional work stops now. */
bool stop_overdue(void);
/* The signal that asked to stop, or 0. */
int stop_signal(void);

#endif
