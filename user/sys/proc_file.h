/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Files that another process names (its mappings, its container's paths),
 * opened by root without being steered by them.  A name from maps or an
 * MMAP2 record is the process's, resolved in its mount namespace and under
 * its root; on the host it may be anything (a device, a FIFO, a symlink out
 * of the container).  So such a file is reached only through
 * /proc/PID/map_files (the mapped inode itself), or by openat2() from
 * /proc/PID/root with RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, never by its
 * name on the host; every open is O_PATH first and becomes a read only for
 * a regular file (open_regular_fd).
 */
#ifndef SP_PROC_FILE_H
#define SP_PROC_FILE_H

#include <linux/types.h>

/*
 * The file pid has mapped at [start, end): its map_files entry; failing
 * that (map_files needs CAP_SYS_ADMIN), path under its root, unless the
 * name is a deleted file's (" (deleted)": another file may have it now).
 * A read-only descriptor of a regular file, or -errno (-ENOENT: gone).
 */
int proc_open_mapped(int pid, __u64 start, __u64 end, const char *path);
/*
 * path as pid sees it, resolved inside its root: absolute symlinks and ".."
 * stay in the container, a magic link (/proc/PID/root, /proc/self/fd/N) is
 * refused, and so is a symlink as the last component.  Where openat2 is
 * missing (before Linux 5.6), proc_open_in_root_walk.
 */
int proc_open_in_root(int pid, const char *path);
/*
 * The same without openat2: one component at a time (O_PATH | O_NOFOLLOW),
 * symlinks followed by hand inside the root, any component on procfs
 * refused (-ELOOP).  In this process: no fork, nothing to wait for.
 */
int proc_open_in_root_walk(int pid, const char *path);
/*
 * The directory dir as pid sees it, resolved as proc_open_in_root resolves
 * (the walk where openat2 is missing): an O_PATH descriptor, which stays
 * usable after pid exits and its mount namespace is torn down.  -errno
 * (-ESRCH: gone, -ENOTDIR: not a directory).
 */
int proc_open_dir_in_root(int pid, const char *dir);
/* name (one component) in a directory so held: a regular file, never through a symlink or blocking; -errno. */
int proc_open_in_dir(int dirfd, const char *name);

#endif
