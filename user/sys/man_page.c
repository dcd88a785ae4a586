// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fileio.h"
#include "man_page.h"

extern char **environ;

/* A rendered page is tens of KiB; more is a renderer gone wrong. */
#define MAX_RENDERED (16u << 20)

/* The page as a file the renderer reads as its stdin: rewound before each try. */
static int page_fd(const char *roff)
{
	int fd = memfd_create("spanperf-man", MFD_CLOEXEC), e;

	if (fd < 0)
		return -errno;
	if (fd <= STDERR_FILENO) { /* stdin, out or err closed: keep the page clear of them */
		int hi = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);

		e = hi < 0 ? -errno : 0;
		close(fd);
		if (e)
			return e;
		fd = hi;
	}
	e = write_all(fd, roff, strlen(roff));
	if (e) {
		close(fd);
		return e;
	}
	return fd;
}

static int wait_status(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * argv with the page on its stdin and its stdout to out_fd (-1: ours).
 * Its exit status, or -errno when it cannot start (not installed).
 */
static int spawn(char *const argv[], int page, int out_fd, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	int e;

	if (lseek(page, 0, SEEK_SET) < 0)
		return -errno;
	e = posix_spawn_file_actions_init(&fa);
	if (e)
		return -e;
	e = posix_spawn_file_actions_adddup2(&fa, page, STDIN_FILENO);
	if (!e && out_fd >= 0)
		e = posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
	if (!e)
		e = posix_spawnp(pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	return -e;
}

/* The renderer's whole output in *out (malloc'ed), and its exit status; or -errno. */
static int render(char *const argv[], int page, char **out, size_t *len)
{
	size_t cap = 0, n = 0;
	char *buf = NULL;
	int p[2], e, st;
	pid_t pid;

	*out = NULL;
	*len = 0;
	if (pipe2(p, O_CLOEXEC))
		return -errno;
	e = spawn(argv, page, p[1], &pid);
	close(p[1]);
	if (e) {
		close(p[0]);
		return e;
	}
	for (;;) {
		ssize_t r;

		if (n == cap) {
			char *nb = cap < MAX_RENDERED ? realloc(buf, cap ? cap * 2 : 65536) : NULL;

			if (!nb) { /* too much, or no memory: let it die of the closed pipe */
				e = cap < MAX_RENDERED ? -ENOMEM : -EFBIG;
				break;
			}
			buf = nb;
			cap = cap ? cap * 2 : 65536;
		}
		r = read(p[0], buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			e = r < 0 ? -errno : 0;
			break;
		}
		n += r;
	}
	close(p[0]);
	st = wait_status(pid);
	if (e || st) {
		free(buf);
		return e ? e : st;
	}
	*out = buf;
	*len = n;
	return 0;
}

/*
 * Terminal renderers embolden and underline by overstriking (X\bX, _\bX),
 * which only a pager undoes: keep the last character of each, a whole UTF-8
 * sequence.
 */
static size_t plain_text(char *s, size_t n)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] != '\b') {
			s[o++] = s[i];
			continue;
		}
		while (o && ((unsigned char)s[o - 1] & 0xc0) == 0x80)
			o--;
		if (o)
			o--;
	}
	return o;
}

int man_page_show(const char *roff, const char *md)
{
	static char *const man[] = { "man", "-l", "-", NULL };
	/* -P-cbou: no escape sequences and no overstrikes, text only. */
	static char *const groff[] = { "groff", "-man", "-t", "-Tutf8", "-P-cbou", NULL };
	static char *const mandoc[] = { "mandoc", "-man", "-Tutf8", NULL };
	char *const *renderers[] = { groff, mandoc };
	int page = page_fd(roff), e = 0;
	size_t len;
	char *text;
	pid_t pid;

	fflush(stdout);
	if (page >= 0 && isatty(STDOUT_FILENO) && !spawn(man, page, -1, &pid) && !wait_status(pid))
		goto cleanup;
	for (size_t i = 0; page >= 0 && i < sizeof(renderers) / sizeof(renderers[0]); i++) {
		if (render(renderers[i], page, &text, &len) || !len)
			continue;
		len = plain_text(text, len);
		if (fwrite(text, 1, len, stdout) != len)
			e = -EIO;
		free(text);
		goto cleanup;
	}
	if (fputs(md, stdout) < 0)
		e = -EIO;
cleanup:
	if (page >= 0)
		close(page);
	if (fflush(stdout) && !e)
		e = -EIO;
	return e;
}
