// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "atomic_file.h"
#include "fileio.h"
#include "util.h"

/* The temporaries now open, for a signal handler to remove (stop.c); NULL slots are free. */
static char *volatile live[16];

static void live_add(char *tmp)
{
	for (size_t i = 0; i < ARRAY_SIZE(live); i++)
		if (!live[i]) {
			live[i] = tmp;
			return;
		}
}

static void live_del(const char *tmp)
{
	for (size_t i = 0; i < ARRAY_SIZE(live); i++)
		if (live[i] == tmp)
			live[i] = NULL;
}

void atomic_file__unlink_all(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(live); i++)
		if (live[i])
			unlink(live[i]);
}

static bool special(mode_t m)
{
	return S_ISCHR(m) || S_ISFIFO(m) || S_ISSOCK(m);
}

/* What path can be now (kind). */
enum { K_REPLACE, K_IN_PLACE, K_OWN_FD };

/* The directory part of path into dir ("." for a bare name); 0 or -ENAMETOOLONG. */
static int dir_of(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');
	size_t n = !slash ? 0 : slash == path ? 1 : (size_t)(slash - path);

	if (n + 2 > len)
		return -ENAMETOOLONG;
	memcpy(dir, n ? path : ".", n ? n : 1);
	dir[n ? n : 1] = 0;
	return 0;
}

/*
 * Whether someone other than the invoking user may have put a name in dir:
 * it is writable by its group or by all, or belongs to another user than
 * us and root.  Sticky or not: /tmp's sticky bit keeps others from
 * removing our names, not from planting theirs.
 */
static bool dir_shared(const char *dir)
{
	struct stat st;

	if (stat(dir, &st))
		return true;
	return (st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & (S_IWGRP | S_IWOTH));
}

/* The descriptor of ours that a canonical path names (/proc/PID/fd/N with our pid), or -1. */
static int own_fd(const char *path)
{
	char prefix[40];
	size_t n = (size_t)snprintf(prefix, sizeof(prefix), "/proc/%d/fd/", (int)getpid());
	long fd = 0;

	if (strncmp(path, prefix, n) || !path[n])
		return -1;
	for (const char *c = path + n; *c; c++) {
		if (*c < '0' || *c > '9' || fd > 1 << 20)
			return -1;
		fd = fd * 10 + (*c - '0');
	}
	return (int)fd;
}

/*
 * What path is now, following its symlinks one at a time: K_REPLACE to
 * write aside and rename over it (absent, a regular file, a symlink that
 * leads to one or nowhere: the link is replaced, never written through);
 * K_IN_PLACE to write into the device, FIFO or socket at *target; K_OWN_FD
 * for a descriptor of ours (/dev/stdout: *fd, whatever it holds); or
 * -errno.  A link or a FIFO that another user could have planted (theirs,
 * in a directory others can write, as /tmp) is replaced, never followed or
 * fed: a reader of theirs would get the output, or a FIFO without one hang
 * the command.  The kernel's protected_fifos, where set, covers O_CREAT
 * opens in sticky directories only; this holds for every directory, and
 * sockets.
 */
static int kind(const char *path, char *target, size_t len, int *fd)
{
	char dir[PATH_MAX], real[PATH_MAX], link[PATH_MAX];
	const char *base;
	struct stat st;
	int e;

	if ((size_t)snprintf(target, len, "%s", path) >= len)
		return -ENAMETOOLONG;
	for (int hops = 0;; hops++) {
		ssize_t n;

		if (lstat(target, &st))
			return errno == ENOENT ? K_REPLACE : -errno;
		if ((e = dir_of(target, dir, sizeof(dir))))
			return e;
		if (!S_ISLNK(st.st_mode))
			break;
		if (hops == 40)
			return -ELOOP;
		if (st.st_uid != geteuid() && dir_shared(dir))
			return K_REPLACE;
		/* /dev/stdout, /dev/fd/N: one of ours, by its canonical name. */
		base = strrchr(target, '/');
		base = base ? base + 1 : target;
		if (realpath(dir, real) && (size_t)snprintf(link, sizeof(link), "%s/%s", real, base) < sizeof(link) &&
		    (*fd = own_fd(link)) >= 0)
			return K_OWN_FD;
		n = readlink(target, link, sizeof(link) - 1);
		if (n < 0)
			return -errno;
		link[n] = 0;
		if (link[0] == '/') {
			snprintf(target, len, "%s", link);
		} else if (strchr(link, ':') && !strchr(link, '/')) {
			/* pipe:[N], socket:[N]: another process's descriptor, named by trusted links. */
			if (stat(target, &st))
				return -errno;
			return special(st.st_mode) ? K_IN_PLACE : S_ISDIR(st.st_mode) ? -EISDIR : -ENOTSUP;
		} else if ((size_t)snprintf(real, sizeof(real), "%s/%s", dir, link) >= sizeof(real)) {
			return -ENAMETOOLONG;
		} else {
			snprintf(target, len, "%s", real);
		}
	}
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (S_ISBLK(st.st_mode))
		return -ENOTSUP; /* a disk: never overwritten with a profile */
	if (!special(st.st_mode))
		return K_REPLACE;
	return st.st_uid == geteuid() || !dir_shared(dir) ? K_IN_PLACE : K_REPLACE;
}

/*
 * Opens what kind() found, checked again on the descriptor (it may have
 * been swapped since): 1, or 0 to write aside after all, or -errno.
 */
static int open_in_place(struct atomic_file *f, const char *target)
{
	struct stat st;
	char self[40];
	int pfd = open(target, O_PATH | O_CLOEXEC), fd;

	if (pfd < 0)
		return -errno;
	if (fstat(pfd, &st) || !special(st.st_mode)) {
		close(pfd); /* replaced meanwhile by a regular file: written aside and renamed instead */
		return 0;
	}
	/* The inode looked at, whatever its name leads to by now. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	close(pfd);
	if (fd < 0)
		return -errno;
	f->fd = fd;
	f->in_place = true;
	return 1;
}

/* /dev/stdout and the like: a copy of our own descriptor, its offset and O_APPEND kept. */
static int open_own_fd(struct atomic_file *f, int fd)
{
	struct stat st;
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fstat(fd, &st))
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (S_ISBLK(st.st_mode))
		return -ENOTSUP;
	if ((fl & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	f->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (f->fd < 0)
		return -errno;
	f->in_place = true;
	return 1;
}

int atomic_file__open(struct atomic_file *f, const char *path, mode_t mode, bool keep_old)
{
	char *target;
	mode_t mask;
	int e, own = -1;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->keep_old = keep_old;
	f->path = strdup(path);
	if (!f->path) {
		e = -ENOMEM;
		goto cleanup;
	}
	target = malloc(PATH_MAX);
	if (!target) {
		e = -ENOMEM;
		goto cleanup;
	}
	e = kind(path, target, PATH_MAX, &own);
	if (e == K_IN_PLACE)
		e = open_in_place(f, target);
	else if (e == K_OWN_FD)
		e = open_own_fd(f, own);
	free(target);
	if (e < 0)
		goto cleanup;
	if (e == 1)
		return 0;
	if (asprintf(&f->tmp, "%s.tmp-XXXXXX", path) < 0) {
		f->tmp = NULL;
		e = -ENOMEM;
		goto cleanup;
	}
	/* mkostemp creates the file 0600; the mode asked for, less the umask, as open(2) would. */
	f->fd = mkostemp(f->tmp, O_CLOEXEC);
	if (f->fd < 0) {
		e = -errno;
		goto cleanup;
	}
	live_add(f->tmp);
	mask = umask(0);
	umask(mask);
	mode &= ~mask;
	if (mode != 0600 && fchmod(f->fd, mode)) {
		e = -errno;
		live_del(f->tmp);
		unlink(f->tmp);
		close(f->fd);
		goto cleanup;
	}
	return 0;
cleanup:
	free(f->path);
	free(f->tmp);
	memset(f, 0, sizeof(*f));
	return e;
}

/* The stream's writes, which keep their errno: a FILE made by fdopen says only that one failed. */
static ssize_t stream_write(void *cookie, const char *p, size_t n)
{
	struct atomic_file *f = cookie;
	int e = write_all(f->fd, p, n);

	if (!e)
		return n;
	if (!f->werr)
		f->werr = e;
	errno = -e;
	return 0; /* fopencookie's error: no negative value */
}

static int stream_close(void *cookie)
{
	struct atomic_file *f = cookie;
	int e = close(f->fd);

	f->fd = -1;
	return e;
}

FILE *atomic_file__stdio(struct atomic_file *f)
{
	static const cookie_io_functions_t io = { .write = stream_write, .close = stream_close };

	if (!f->fp)
		f->fp = fopencookie(f, "w", io);
	return f->fp;
}

int atomic_file__error(const struct atomic_file *f, int e)
{
	return f && f->werr ? f->werr : e;
}

int atomic_file__retarget(struct atomic_file *f, const char *path)
{
	char *p = strdup(path);

	if (!p)
		return -ENOMEM;
	free(f->path);
	f->path = p;
	return 0;
}

int atomic_file__commit(struct atomic_file *f)
{
	char *old = NULL;
	int e = 0;

	/* NFS and friends report write errors at close. */
	if (f->fp ? fclose(f->fp) : close(f->fd))
		e = -errno;
	if (f->werr)
		e = f->werr;
	f->fp = NULL;
	f->fd = -1;
	if (e || f->in_place) {
		f->done = !e;
		return e;
	}
	if (f->keep_old) {
		if (asprintf(&old, "%s.old", f->path) < 0)
			return -ENOMEM;
		if (rename(f->path, old) && errno != ENOENT)
			e = -errno;
		free(old);
		if (e)
			return e;
	}
	if (rename(f->tmp, f->path))
		return -errno;
	live_del(f->tmp);
	f->done = true;
	return 0;
}

void atomic_file__release(struct atomic_file *f)
{
	if (!f || (!f->tmp && !f->in_place))
		return;
	if (f->fp)
		fclose(f->fp);
	else if (f->fd >= 0)
		close(f->fd);
	if (f->tmp) {
		live_del(f->tmp);
		if (!f->done)
			unlink(f->tmp);
	}
	free(f->tmp);
	free(f->path);
	memset(f, 0, sizeof(*f));
}
