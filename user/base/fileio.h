/* SPDX-License-Identifier: GPL-2.0 */
/* Small files in and out: procfs and sysfs values, whole files, writes that finish. */
#ifndef SP_FILEIO_H
#define SP_FILEIO_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

/* Reads a small text file (sysfs, procfs) into buf, NUL-terminated, trailing newline cut. */
int read_file_str(const char *path, char *buf, size_t size);
/* Reads a whole file; the caller frees *out. */
int read_file_all(const char *path, char **out, size_t *len);
/* The same from an open file, from where it stands; fd stays open. */
int read_fd_all(int fd, char **out, size_t *len);

/*
 * Opens a regular file for reading, or fails with -EINVAL: paths in a
 * perf.data, in another process's maps or its container are others' to
 * choose, and a device's open must never run (/dev/watchdog arms on open, a
 * serial port toggles DTR), nor a FIFO's block.  So the file is looked at
 * through an O_PATH descriptor first, which opens nothing, and opened for
 * reading (O_NONBLOCK) only once it is known to be a regular file.
 */
int open_regular(const char *path);
/* The same at dirfd; nofollow: a symlink as the last component is refused. */
int open_regular_at(int dirfd, const char *path, bool nofollow);
/* The file an O_PATH descriptor holds, opened for reading if it is regular; pathfd stays open. */
int open_regular_fd(int pathfd);

/*
 * Where caches go: $XDG_CACHE_HOME, else $HOME/.cache; and $HOME (perf's
 * ~/.debug).  As root, the environment's directory only if it is root's own
 * and no one else can write it or a directory above it (sudo -E keeps a
 * user's $HOME: root would write where the user's symlinks lead); else
 * root's home from the password database.  0 or -errno.
 */
int cache_home(char *out, size_t len);
int home_dir(char *out, size_t len);
/*
 * Whether dir, each directory above it that exists and where a symlink
 * among them leads are root's or ours, and writable by no one else (root's
 * sticky /tmp aside): what cache_home asks of the environment's directory.
 */
bool dir_is_ours(const char *dir);
/* A stream over the directory dfd's entries, from the first (dfd stays open and the caller's); NULL on failure. */
DIR *dir_entries(int dfd);
/*
 * A cache's directory, made if missing (0700), and opened only if it and
 * what is above it are ours (dir_is_ours) and it is the effective uid's,
 * mode 0700 or narrower, not a symlink: what root may write and remove in.
 * Its descriptor, or -errno (-EPERM: not ours).
 */
int cache_dir_open(const char *dir);

/*
 * Whether fd's bytes are no one's to change but root's or ours: a regular
 * file owned by root or us, writable by no group or other, not on FUSE (a
 * FUSE daemon says what owner a file has, and may serve other bytes at
 * each read).  What a cache asks of a file before it keeps what it read.
 */
bool file_is_fixed(int fd);

/*
 * A cache directory's bound, max bytes: what dfd holds (its regular files,
 * temporaries aside) measured once (*measured) and kept in *used; where
 * room more bytes do not fit, the least recently modified files removed
 * until they fit in three quarters of max (not one removal per store).
 * Temporaries (".tmp-" in the name) a killed process left are removed once
 * an hour old.  Returns how many files were removed.
 */
unsigned dir_make_room(int dfd, __u64 max, __u64 room, __u64 *used, bool *measured);

/* Creates the directories above a file's path (mode 0700); 0 or -errno. path is restored. */
int mkdir_parents(char *path);

/* write() all of it, retrying on EINTR and short writes. */
int write_all(int fd, const void *p, size_t n);
/* n bytes at off, retrying on EINTR and short transfers: 0, -errno, or -EIO at the file's end. */
int pread_full(int fd, void *buf, size_t n, off_t off);
int pwrite_full(int fd, const void *buf, size_t n, off_t off);

/* The error of a stdio write that just failed: errno's (ENOSPC, EPIPE), else -EIO. */
int stdio_error(void);

/*
 * A write's error (-errno) as a sentence's end: a full disk or quota names
 * the file system path is on, "no space left on /dev/vda1 (mounted at
 * /var)", so that the user knows what to free; anything else is
 * strerror's.  path may not exist (yet, or any more): its directory is
 * looked at then.  Returns buf.
 */
const char *write_strerror(int e, const char *path, char *buf, size_t len);
/* The same for what a descriptor is open on (stdout redirected to a file). */
const char *write_strerror_fd(int e, int fd, char *buf, size_t len);

#endif
