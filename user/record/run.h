/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The run: a command started after the events are enabled (forked first,
 * held at a pipe, as perf does), SIGINT/SIGTERM/SIGCHLD turned into flags
 * that a ppoll() wait observes without races, and the exit status passed on.
 */
#ifndef SP_RUN_H
#define SP_RUN_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct workload {
	pid_t pid;
	int go_fd;  /* parent writes here to let the child exec */
	int err_fd; /* child writes its exec errno here; EOF means exec succeeded */
	int status;
	bool exited;
};

/* Blocks SIGINT, SIGTERM, SIGHUP and SIGCHLD; runctl_wait unblocks them while it sleeps. */
void runctl_init(void);
/* Polls fds for up to timeout_ms; returns as soon as a signal arrives. */
int runctl_wait(struct pollfd *fds, int nfds, int timeout_ms);
bool runctl_stop_requested(void);
int runctl_stop_signal(void);

/* Forks CMD, which waits until workload__start. */
int workload__prepare(struct workload *w, char **argv);
/* Lets it exec; -errno (with err filled) if exec failed. */
int workload__start(struct workload *w, char **argv, char *err, size_t errlen);
/* True once it has exited (reaps it). */
bool workload__done(struct workload *w);
/* SIGTERM if still running, then reap. Accepts an unstarted workload. */
void workload__stop(struct workload *w);
/* The exit code to pass on: its own, or 128+signal. */
int workload__exit_code(const struct workload *w);

#endif
