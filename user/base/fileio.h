/* SPDX-License-Identifier: GPL-2.0 */
/* Small files in and out: procfs and sysfs values, whole files, writes that finish. */
#ifndef SP_FILEIO_H
#define SP_FILEIO_H

#include <stddef.h>

/* Reads a small text file (sysfs, procfs) into buf, NUL-terminated, trailing newline cut. */
int read_file_str(const char *path, char *buf, size_t size);
/* Reads a whole file; the caller frees *out. */
int read_file_all(const char *path, char **out, size_t *len);

/*
 * Opens a regular file for reading, or fails with -EINVAL: paths in a
 * perf.data are the file's to choose, and a FIFO or device there must not
 * block or be read.
 */
int open_regular(const char *path);

/* Creates the directories above a file's path (mode 0700); 0 or -errno. path is restored. */
int mkdir_parents(char *path);

/* write() all of it, retrying on EINTR and short writes. */
int write_all(int fd, const void *p, size_t n);

#endif
