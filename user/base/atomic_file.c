// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "atomic_file.h"

int atomic_file__open(struct atomic_file *f, const char *path, mode_t mode, bool keep_old)
{
	int e;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->keep_old = keep_old;
	f->path = strdup(path);
	if (!f->path || asprintf(&f->tmp, "%s.tmp-XXXXXX", path) < 0) {
		f->tmp = NULL;
		e = -ENOMEM;
		goto cleanup;
	}
	/* mkostemp creates the file 0600; anything wider is asked for. */
	f->fd = mkostemp(f->tmp, O_CLOEXEC);
	if (f->fd < 0) {
		e = -errno;
		goto cleanup;
	}
	if (mode != 0600 && fchmod(f->fd, mode)) {
		e = -errno;
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
	if (e)
		return e;
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
	f->done = true;
	return 0;
}

void atomic_file__release(struct atomic_file *f)
{
	if (!f || !f->tmp)
		return;
	if (f->fp)
		fclose(f->fp);
	else if (f->fd >= 0)
		close(f->fd);
	if (!f->done)
		unlink(f->tmp);
	free(f->tmp);
	free(f->path);
	memset(f, 0, sizeof(*f));
}
