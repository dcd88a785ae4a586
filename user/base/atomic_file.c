// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "atomic_file.h"
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

/*
 * What path is now: 0 to replace it (absent, a regular file, or a symlink
 * that leads to neither a special file nor a directory: the link itself is
 * replaced, never written through), 1 to write into it (a device, FIFO or
 * socket, or a symlink to one, such as /dev/stdout), or -errno.
 */
static int kind(const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (S_ISLNK(st.st_mode) && stat(path, &st))
		return 0; /* dangling: a new file takes the link's place */
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (S_ISBLK(st.st_mode))
		return -ENOTSUP; /* a disk: never overwritten with a profile */
	return special(st.st_mode) ? 1 : 0;
}

static int open_in_place(struct atomic_file *f, const char *path)
{
	struct stat st;
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !special(st.st_mode)) {
		close(fd); /* replaced meanwhile by a regular file: written aside and renamed instead */
		return 0;
	}
	f->fd = fd;
	f->in_place = true;
	return 1;
}

int atomic_file__open(struct atomic_file *f, const char *path, mode_t mode, bool keep_old)
{
	mode_t mask;
	int e;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->keep_old = keep_old;
	f->path = strdup(path);
	if (!f->path) {
		e = -ENOMEM;
		goto cleanup;
	}
	e = kind(path);
	if (e == 1)
		e = open_in_place(f, path);
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

FILE *atomic_file__stdio(struct atomic_file *f)
{
	if (!f->fp)
		f->fp = fdopen(f->fd, "w");
	return f->fp;
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
