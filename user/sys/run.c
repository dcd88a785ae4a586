// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "host.h"
#include "log.h"
#include "run.h"
#include "stop.h"
#include "util.h"

static void on_child(int sig)
{
	(void)sig; /* only to end the wait's ppoll */
}

void runctl_init(void)
{
	struct sigaction sa = { .sa_handler = on_child, .sa_flags = SA_RESTART | SA_NOCLDSTOP };

	/* INT, TERM and HUP are stop.c's: a flag, never blocked (a hung set-up must stay stoppable). */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
}

/* SIGUSR2 (record --switch-output): a flag the loop reads, like stop.c's, never blocked outside the wait. */
static volatile sig_atomic_t switch_sig;

static void on_switch(int sig)
{
	(void)sig;
	switch_sig = 1;
}

void runctl_catch_switch(void)
{
	struct sigaction sa = { .sa_handler = on_switch, .sa_flags = SA_RESTART };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, NULL);
}

bool runctl_switch_requested(void)
{
	bool r = switch_sig;

	switch_sig = 0;
	return r;
}

int runctl_wait(struct pollfd *fds, int nfds, int timeout_ms)
{
	struct timespec ts = { timeout_ms / 1000, (timeout_ms % 1000) * 1000000L };
	sigset_t block, orig;
	int n = 0;

	/*
	 * Blocked from the check to the ppoll, which unblocks them while it
	 * sleeps: a signal in between ends the sleep instead of being missed.
	 */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGCHLD);
	sigaddset(&block, SIGUSR2);
	sigprocmask(SIG_BLOCK, &block, &orig);
	if (!stop_requested() && !switch_sig)
		n = ppoll(fds, nfds, timeout_ms < 0 ? NULL : &ts, &orig);
	sigprocmask(SIG_SETMASK, &orig, NULL);
	return n;
}

bool runctl_stop_requested(void)
{
	return stop_requested();
}

int workload__prepare(struct workload *w, char **argv)
{
	int go[2] = { -1, -1 }, errp[2] = { -1, -1 };
	int err;

	memset(w, 0, sizeof(*w));
	w->go_fd = w->err_fd = -1;
	if (pipe2(go, O_CLOEXEC) || pipe2(errp, O_CLOEXEC)) {
		err = -errno;
		goto cleanup;
	}
	w->pid = fork();
	if (w->pid < 0) {
		err = -errno;
		w->pid = 0;
		goto cleanup;
	}
	if (w->pid == 0) {
		char c;
		int e;

		close(go[1]);
		close(errp[0]);
		stop_child_signals();
		signal(SIGCHLD, SIG_DFL);
		signal(SIGALRM, SIG_DFL);
		{
			sigset_t none;

			/* The command starts with no signal blocked, whatever spanperf blocks. */
			sigemptyset(&none);
			sigprocmask(SIG_SETMASK, &none, NULL);
		}
		/* EOF without a byte: the parent gave up; do not run. */
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[0], argv);
		e = errno;
		if (write(errp[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(errp[1]);
	w->go_fd = go[1];
	w->err_fd = errp[0];
	return 0;
cleanup:
	for (int i = 0; i < 2; i++) {
		if (go[i] >= 0)
			close(go[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	return err;
}

int workload__start(struct workload *w, char **argv, char *err, size_t errlen)
{
	int e = 0;
	ssize_t n;

	if (write(w->go_fd, "g", 1) != 1) {
		snprintf(err, errlen, "cannot start '%s': %s", argv[0], strerror(errno));
		return -errno;
	}
	close(w->go_fd);
	w->go_fd = -1;
	do
		n = read(w->err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(w->err_fd);
	w->err_fd = -1;
	if (n == sizeof(e)) {
		snprintf(err, errlen, "cannot run '%s': %s", argv[0], strerror(e));
		while (waitpid(w->pid, &w->status, 0) < 0 && errno == EINTR)
			;
		w->exited = true;
		return -e;
	}
	return 0;
}

bool workload__done(struct workload *w)
{
	if (!w->pid)
		return true;
	if (w->exited)
		return true;
	if (waitpid(w->pid, &w->status, WNOHANG) == w->pid)
		w->exited = true;
	return w->exited;
}

/* How long a CMD has to exit after the SIGTERM that ends a run. */
#define CMD_TERM_WAIT_NS (300ull * 1000000)

void workload__stop(struct workload *w)
{
	if (w->go_fd >= 0) {
		close(w->go_fd); /* an unstarted child sees EOF and exits */
		w->go_fd = -1;
	}
	if (w->err_fd >= 0) {
		close(w->err_fd);
		w->err_fd = -1;
	}
	if (!w->pid || w->exited)
		return;
	if (!workload__done(w)) {
		__u64 until = now_ns(CLOCK_MONOTONIC) + CMD_TERM_WAIT_NS;

		/*
		 * SIGTERM, then SIGKILL if it is still there a moment later: a
		 * CMD that ignores SIGTERM must not keep the file from being
		 * finished (perf record waits for it, and is stuck with it).
		 */
		kill(w->pid, SIGTERM);
		while (!workload__done(w) && now_ns(CLOCK_MONOTONIC) < until)
			usleep(5000);
		if (!w->exited) {
			kill(w->pid, SIGKILL);
			while (waitpid(w->pid, &w->status, 0) < 0 && errno == EINTR)
				;
			w->exited = true;
		}
	}
}

int workload__exit_code(const struct workload *w)
{
	if (!w->pid || !w->exited)
		return 0;
	if (WIFEXITED(w->status))
		return WEXITSTATUS(w->status);
	if (WIFSIGNALED(w->status))
		return 128 + WTERMSIG(w->status);
	return 1;
}

int run_check_privileges(void)
{
	if (have_bpf_privileges())
		return 0;
	pr_err("needs root, or CAP_BPF and CAP_PERFMON, to load BPF programs and open system-wide events");
	return -EPERM;
}

int run_check_targets(const struct int_list *pids, const struct int_list *tids)
{
	const struct int_list *l = pids->n ? pids : tids;

	for (int i = 0; i < l->n; i++) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d", l->v[i]);
		if (access(path, F_OK)) {
			pr_err("%s %d: no such %s", pids->n ? "-p" : "-t", l->v[i], pids->n ? "process" : "thread");
			return -ESRCH;
		}
	}
	return 0;
}

int run__prepare(struct run *r, char **cmd)
{
	int e;

	memset(r, 0, sizeof(*r));
	if (!cmd)
		return 0;
	e = workload__prepare(&r->wl, cmd);
	if (e) {
		pr_err("cannot fork for '%s': %s", cmd[0], strerror(-e));
		return e;
	}
	r->have_cmd = true;
	return 0;
}

int run__start(struct run *r, char **cmd, uint64_t start_ns, double duration)
{
	char err[512];
	int e;

	if (duration)
		r->deadline_ns = start_ns + (uint64_t)(duration * 1e9);
	if (!r->have_cmd)
		return 0;
	e = workload__start(&r->wl, cmd, err, sizeof(err));
	if (e)
		pr_err("%s", err);
	return e;
}

bool run__wait(struct run *r, struct pollfd *fds, int nfds, int timeout_ms)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);

	if (runctl_stop_requested() || (r->deadline_ns && now >= r->deadline_ns) ||
	    (r->have_cmd && workload__done(&r->wl)))
		return false;
	if (r->deadline_ns)
		timeout_ms = SP_MIN((uint64_t)timeout_ms, (r->deadline_ns - now) / 1000000 + 1);
	runctl_wait(fds, nfds, timeout_ms);
	return true;
}

void run__stop(struct run *r)
{
	/* A zeroed workload's fds read as 0: only a prepared one is stopped. */
	if (r->have_cmd)
		workload__stop(&r->wl);
}

int run__exit_code(const struct run *r)
{
	return r->have_cmd ? workload__exit_code(&r->wl) : 0;
}
