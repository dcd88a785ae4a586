/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The run, as record and stat share it: the checks before anything is
 * opened, a command started after the events are enabled (forked first,
 * held at a pipe, as perf does), stop signals (stop.h) and SIGCHLD observed
 * by a ppoll() wait without races, the -d deadline, and the
 * exit status passed on.
 */
#ifndef SP_RUN_H
#define SP_RUN_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "parse.h"

struct workload {
	pid_t pid;
	int go_fd;  /* parent writes here to let the child exec */
	int err_fd; /* child writes its exec errno here; EOF means exec succeeded */
	int status;
	bool exited;
};

/* SIGCHLD ends the wait; INT, TERM and HUP are stop.h's flag, which the wait sees too. */
void runctl_init(void);
/* Polls fds for up to timeout_ms; returns as soon as a signal arrives. */
int runctl_wait(struct pollfd *fds, int nfds, int timeout_ms);
bool runctl_stop_requested(void);
/*
 * SIGUSR2 as perf's --switch-output takes it: a flag, as the stop signals
 * are (it ends a wait, and is seen at the next one if it came outside),
 * and runctl_switch_requested() says, once, that it came.
 */
void runctl_catch_switch(void);
bool runctl_switch_requested(void);

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

/* Root, or CAP_BPF and CAP_PERFMON; otherwise says so once and returns -EPERM. */
int run_check_privileges(void);
/* -p/-t: every process or thread listed exists now; otherwise names one and returns -ESRCH. */
int run_check_targets(const struct int_list *pids, const struct int_list *tids);

/* The command (if any) and the deadline that end a run, besides a signal. */
struct run {
	struct workload wl;
	bool have_cmd;
	uint64_t deadline_ns; /* CLOCK_MONOTONIC; 0 for none */
};

/* Forks cmd (NULL: no command), held until run__start; says why on failure. */
int run__prepare(struct run *r, char **cmd);
/* Sets the deadline, duration seconds (0: none) after start_ns, and lets the command exec. */
int run__start(struct run *r, char **cmd, uint64_t start_ns, double duration);
/*
 * False, without waiting, once the run is over: a stop signal, the deadline
 * passed or the command exited.  Otherwise waits up to timeout_ms (cut at
 * the deadline) for fds or a signal, and returns true.
 */
bool run__wait(struct run *r, struct pollfd *fds, int nfds, int timeout_ms);
/* Stops the command if it still runs; accepts a zeroed run. */
void run__stop(struct run *r);
/* The command's exit code to pass on, or 0 without one. */
int run__exit_code(const struct run *r);

#endif
