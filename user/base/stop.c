// SPDX-License-Identifier: GPL-2.0
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "atomic_file.h"
#include "stop.h"
#include "util.h"

static volatile sig_atomic_t stop_sig, finish_mode, interrupted;
static int devnull = -1;
static struct timespec stop_ts; /* when the first stop signal came (CLOCK_MONOTONIC) */

/* Async-signal-safe: unlink, signal and raise only. */
static void die(int sig)
{
	atomic_file__unlink_all();
	signal(sig, SIG_DFL);
	raise(sig); /* delivered when the handler returns: the exit status says which signal */
}

static void on_stop(int sig)
{
	if (!finish_mode || stop_sig) {
		die(sig);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &stop_ts); /* async-signal-safe */
	stop_sig = sig;
	alarm(STOP_INTERRUPT_S);
}

/*
 * STOP_INTERRUPT_S after the stop: this handler has no SA_RESTART, so a
 * system call still blocked (a write to a stderr that no one reads, a full
 * pipe) returns EINTR, and what is said from then on goes to /dev/null, so
 * that the file is finished.  STOP_GRACE_S after it: nothing could, die.
 */
static void on_alarm(int sig)
{
	(void)sig;
	if (!stop_sig)
		return;
	if (!interrupted) {
		interrupted = 1;
		if (devnull >= 0)
			dup2(devnull, STDERR_FILENO);
		alarm(STOP_GRACE_S - STOP_INTERRUPT_S);
		return;
	}
	die(stop_sig);
}

/* Which of these the parent left ignored (a bit per index), for stop_child_signals. */
enum { I_INT, I_TERM, I_HUP, I_PIPE };
static const int handled[] = { [I_INT] = SIGINT, [I_TERM] = SIGTERM, [I_HUP] = SIGHUP, [I_PIPE] = SIGPIPE };
static unsigned inherited_ign;

/*
 * SIGPIPE as a stop request: once only, since every later write to the
 * gone reader raises it again, and a second stop signal would kill.
 */
static void on_pipe(int sig)
{
	if (stop_sig)
		return;
	clock_gettime(CLOCK_MONOTONIC, &stop_ts);
	stop_sig = sig;
	alarm(STOP_INTERRUPT_S);
}

void stop_init(bool finish, enum stop_pipe pipe)
{
	/* SA_RESTART: a flag is all the handler leaves; set-up's system calls go on. */
	struct sigaction sa = { .sa_handler = on_stop, .sa_flags = SA_RESTART };
	sigset_t set;

	finish_mode = finish;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ARRAY_SIZE(handled); i++) {
		struct sigaction old;

		if (!sigaction(handled[i], NULL, &old) && old.sa_handler == SIG_IGN)
			inherited_ign |= 1u << i;
	}
	for (size_t i = I_INT; i <= I_HUP; i++) {
		/*
		 * Only nohup's SIGHUP stays ignored: a shell ignores SIGINT in
		 * every background job, and perf installs its handler whatever
		 * the parent ignored.
		 */
		if (i == I_HUP && (inherited_ign & (1u << I_HUP)))
			continue;
		sigaction(handled[i], &sa, NULL);
	}
	if (pipe == STOP_PIPE_IGNORE || (pipe == STOP_PIPE_DIE && (inherited_ign & (1u << I_PIPE)))) {
		signal(SIGPIPE, SIG_IGN);
	} else {
		sa.sa_handler = pipe == STOP_PIPE_STOP ? on_pipe : on_stop;
		sigaction(SIGPIPE, &sa, NULL);
	}
	sa.sa_handler = on_alarm;
	sa.sa_flags = 0; /* interrupts what blocks: see on_alarm */
	sigaction(SIGALRM, &sa, NULL);
	if (finish)
		devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	/* Whatever the parent blocked (a shell's job control, timeout(1)), ours are delivered. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGPIPE);
	sigaddset(&set, SIGALRM);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

void stop_child_signals(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(handled); i++)
		signal(handled[i], inherited_ign & (1u << i) ? SIG_IGN : SIG_DFL);
}

bool stop_requested(void)
{
	return stop_sig != 0;
}

bool stop_overdue(void)
{
	struct timespec now;

	if (!stop_sig)
		return false;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - stop_ts.tv_sec) * 1000000000ll + (now.tv_nsec - stop_ts.tv_nsec) >
	       STOP_WORK_MS * 1000000ll;
}

int stop_signal(void)
{
	return stop_sig;
}
