/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A file written under a temporary name next to its final one and renamed
 * over it at the end: readers see the old file or the new one, never half
 * of one, and a failure or an interrupted run leaves nothing behind.
 */
#ifndef SP_ATOMIC_FILE_H
#define SP_ATOMIC_FILE_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

struct atomic_file {
	char *path, *tmp;
	int fd;	  /* the temporary, open for writing */
	FILE *fp; /* set by atomic_file__stdio, which then owns fd */
	int werr; /* the first write error the stream met (-errno), or 0 */
	bool keep_old, done;
	bool in_place; /* a device, FIFO or socket (or a symlink to one): written into, tmp is NULL */
};

/*
 * Creates "<path>.tmp-XXXXXX" with the given mode less the umask: in path's
 * own directory, since rename is atomic within one file system only, and
 * now, so that an unwritable directory is reported before any work is done.
 * With keep_old, commit keeps an existing file as "<path>.old", as perf
 * record does.  Only a regular file or an absent one is replaced so (a
 * symlink is replaced, never written through); an existing device, FIFO or
 * socket, or a symlink to one (-o /dev/null, --pprof /dev/stdout), is
 * written in place, and a directory is -EISDIR.
 * 0 or -errno; on failure *f is zeroed and needs no release.
 */
int atomic_file__open(struct atomic_file *f, const char *path, mode_t mode, bool keep_old);
/*
 * A stdio stream on the temporary (NULL with errno on failure); f must not
 * move while it is open.  The first write error it meets is kept in
 * f->werr: a renderer that says -EIO of a failed fwrite is then told as
 * what it was (atomic_file__error), a full disk most often.
 */
FILE *atomic_file__stdio(struct atomic_file *f);
/* The error to say of a write to f that failed with e: the stream's own, if it met one. */
int atomic_file__error(const struct atomic_file *f, int e);
/*
 * Closes the temporary and renames it to path (or fails with the stream's
 * first write error).  No fsync, as perf: the rename still replaces whole
 * files, and a profile is not worth the wait.
 */
int atomic_file__commit(struct atomic_file *f);
/*
 * Commit to another name in the same directory (rename stays within one
 * file system), e.g. a name stamped when the file is done; 0 or -ENOMEM.
 */
int atomic_file__retarget(struct atomic_file *f, const char *path);
/* Closes and removes the temporary unless committed; accepts NULL and a zeroed struct. */
void atomic_file__release(struct atomic_file *f);
/* Removes every temporary not yet committed: async-signal-safe, for a dying process. */
void atomic_file__unlink_all(void);

#endif
