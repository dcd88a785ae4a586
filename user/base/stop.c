// SPDX-License-Identifier: GPL-2.0
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "atomic_file.h"
#include "stop.h"

static volatile sig_atomic_t stop_sig, finish_mode;

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
	stop_sig = sig;
	alarm(STOP_GRACE_S);
}

static void on_alarm(int sig)
{
	(void)sig;
	if (stop_sig)
		die(stop_sig);
}

void stop_init(bool finish)
{
	/* SA_RESTART: a flag is all the handler leaves; set-up's system calls go on. */
	struct sigaction sa = { .sa_handler = on_stop, .sa_flags = SA_RESTART };
	sigset_t set;

	finish_mode = finish;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < 3; i++) {
		static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
		struct sigaction old;

		/* Ignored by the parent (nohup, a background job's SIGINT): stays ignored, as for any program. */
		if (!sigaction(sigs[i], NULL, &old) && old.sa_handler == SIG_IGN)
			continue;
		sigaction(sigs[i], &sa, NULL);
	}
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	/* Whatever the parent blocked (a shell's job control, timeout(1)), ours are delivered. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGALRM);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

bool stop_requested(void)
{
	return stop_sig != 0;
}

int stop_signal(void)
{
	return stop_sig;
}
