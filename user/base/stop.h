/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How SIGINT, SIGTERM and SIGHUP stop a command: never ignored.  A command
 * that writes its outputs whole at the end (report, annotate) dies of the
 * signal at once, its temporaries removed; one that must finish a file
 * (record, stat) sees a flag that its loops poll, and is killed the same
 * way if it has not finished STOP_GRACE_S seconds later, or at a second
 * signal: a hung open or write must never need SIGKILL.
 */
#ifndef SP_STOP_H
#define SP_STOP_H

#include <stdbool.h>

/* A stuck command's last chance to finish its file after the first signal. */
#define STOP_GRACE_S 5

/* Installs the handlers (first thing in main); finish: record's and stat's flag mode. */
void stop_init(bool finish);
/* A stop signal arrived (finish mode). */
bool stop_requested(void);
/* The signal that asked to stop, or 0. */
int stop_signal(void);

#endif
