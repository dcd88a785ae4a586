// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/statfs.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "proc_file.h"
#include "fileio.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

static bool deleted_name(const char *path)
{
	size_t n = strlen(path);

	return n >= 10 && !strcmp(path + n - 10, " (deleted)");
}

int proc_open_mapped(int pid, __u64 start, __u64 end, const char *path)
{
	char p[96];
	int pfd, fd;

	snprintf(p, sizeof(p), "/proc/%d/map_files/%llx-%llx", pid, (unsigned long long)start,
		 (unsigned long long)end);
	/* O_PATH follows the magic link to the mapped inode without opening it. */
	pfd = open(p, O_PATH | O_CLOEXEC);
	if (pfd >= 0) {
		fd = open_regular_fd(pfd);
		close(pfd);
		return fd;
	}
	if (errno == ENOENT || deleted_name(path) || path[0] != '/')
		return -ENOENT;
	return proc_open_in_root(pid, path);
}

/* The kernel's MAXSYMLINKS: symlinks followed in one resolution. */
#define MAX_HOPS 40
/* Directories held open at once on the way down (one per component not yet undone by ".."). */
#define MAX_DEPTH 256

/*
 * One component from the front of *rest (skipping slashes) into comp:
 * 1, or 0 at the end, or -ENAMETOOLONG.
 */
static int next_component(const char **rest, char *comp, size_t len)
{
	const char *p = *rest + strspn(*rest, "/");
	size_t n = strcspn(p, "/");

	if (!n)
		return 0;
	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(comp, p, n);
	comp[n] = 0;
	*rest = p + n;
	return 1;
}

static bool on_procfs(int fd)
{
	struct statfs sf;

	return !fstatfs(fd, &sf) && sf.f_type == PROC_SUPER_MAGIC;
}

/*
 * openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) by hand, for kernels
 * without it: every component is opened O_PATH | O_NOFOLLOW from the
 * directory before it, held open, so that ".." goes back to where the walk
 * came from and never above root (a rename meanwhile changes nothing), and
 * a symlink is read and followed here, an absolute one from root, at most
 * MAX_HOPS of them.  Any component on procfs is refused (-ELOOP, as
 * openat2 refuses a magic link): /proc/PID/root, /proc/self/fd/N and their
 * like are how a name leaves a root, and they live only there.  A symlink
 * as the last component is returned itself, as O_NOFOLLOW does.  No fork,
 * no chroot: nothing here follows a link the kernel resolves.
 */
static int walk_in_root(int rootfd, const char *path)
{
	char *buf = malloc(2 * PATH_MAX), *tmp = malloc(2 * PATH_MAX), comp[NAME_MAX + 1];
	int stack[MAX_DEPTH], depth = 0, hops = 0, fd = -1, err;
	const char *rest;

	stack[0] = rootfd;
	if (!buf || !tmp) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (strlen(path) >= 2 * PATH_MAX) {
		err = -ENAMETOOLONG;
		goto cleanup;
	}
	strcpy(buf, path);
	rest = buf;
	for (;;) {
		struct stat st;
		bool last;

		err = next_component(&rest, comp, sizeof(comp));
		if (err < 0)
			goto cleanup;
		if (!err) {
			/* Ends on a directory (root, ".", ".."): the caller refuses it as not a regular file. */
			err = fcntl(stack[depth], F_DUPFD_CLOEXEC, 0);
			if (err < 0)
				err = -errno;
			goto cleanup;
		}
		if (!strcmp(comp, "."))
			continue;
		if (!strcmp(comp, "..")) {
			if (depth)
				close(stack[depth--]);
			continue;
		}
		last = !rest[strspn(rest, "/")];
		fd = openat(stack[depth], comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			err = -errno;
			goto cleanup;
		}
		if (on_procfs(fd)) {
			err = -ELOOP;
			goto cleanup;
		}
		if (fstat(fd, &st)) {
			err = -errno;
			goto cleanup;
		}
		if (S_ISLNK(st.st_mode) && !last) {
			ssize_t n;

			if (++hops > MAX_HOPS) {
				err = -ELOOP;
				goto cleanup;
			}
			n = readlinkat(fd, "", tmp, PATH_MAX);
			if (n <= 0 || n >= PATH_MAX || strlen(rest) + n + 2 > 2 * PATH_MAX) {
				err = n < 0 ? -errno : -ENAMETOOLONG;
				goto cleanup;
			}
			close(fd);
			fd = -1;
			/* The target, then what was left of the path after the link. */
			tmp[n] = '/';
			strcpy(tmp + n + 1, rest);
			strcpy(buf, tmp);
			rest = buf;
			if (buf[0] == '/')
				while (depth)
					close(stack[depth--]);
			continue;
		}
		if (last) {
			err = fd;
			fd = -1;
			goto cleanup;
		}
		if (!S_ISDIR(st.st_mode)) {
			err = -ENOTDIR;
			goto cleanup;
		}
		if (depth + 1 >= MAX_DEPTH) {
			err = -ENAMETOOLONG;
			goto cleanup;
		}
		stack[++depth] = fd;
		fd = -1;
	}
cleanup:
	if (fd >= 0)
		close(fd);
	while (depth)
		close(stack[depth--]);
	free(buf);
	free(tmp);
	return err;
}

/*
 * SPANPERF_NO_OPENAT2=1 takes the path of kernels before 5.6 on this one:
 * for tests (tests/integration/test_safety.py), since every kernel the
 * suite runs on has openat2.
 */
static bool no_openat2(void)
{
	static int no = -1;

	if (no < 0) {
		const char *e = getenv("SPANPERF_NO_OPENAT2");

		no = e && *e && strcmp(e, "0");
	}
	return no;
}

/*
 * path resolved inside pid's root, with openat2 (flags: O_PATH and what
 * else the caller needs) or, where it is missing or walk says so, one
 * component at a time: an O_PATH descriptor, or -errno (-ESRCH: gone).
 */
static int resolve_in_root(int pid, const char *path, __u64 flags, bool walk)
{
	struct open_how how = { .flags = flags, .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	char root[64];
	int rfd, fd;

	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	walk = walk || no_openat2();
	fd = walk ? -1 : syscall(SYS_openat2, rfd, path, &how, sizeof(how));
	if (fd < 0 && (walk || errno == ENOSYS))
		fd = walk_in_root(rfd, path);
	else if (fd < 0)
		fd = -errno;
	close(rfd);
	return fd;
}

/* The regular file at path inside pid's root: a read-only descriptor, or -errno. */
static int open_in_root(int pid, const char *path, bool walk)
{
	int pfd, fd;

	if (path[0] != '/' || deleted_name(path))
		return -ENOENT;
	pfd = resolve_in_root(pid, path, O_PATH | O_CLOEXEC | O_NOFOLLOW, walk);
	if (pfd < 0)
		return pfd;
	fd = open_regular_fd(pfd);
	close(pfd);
	return fd;
}

int proc_open_in_root_walk(int pid, const char *path)
{
	return open_in_root(pid, path, true);
}

int proc_open_in_root(int pid, const char *path)
{
	return open_in_root(pid, path, false);
}

int proc_open_dir_in_root(int pid, const char *dir)
{
	struct stat st;
	int fd;

	if (dir[0] != '/')
		return -ENOENT;
	fd = resolve_in_root(pid, dir, O_PATH | O_DIRECTORY | O_CLOEXEC, false);
	if (fd >= 0 && (fstat(fd, &st) || !S_ISDIR(st.st_mode))) {
		close(fd);
		fd = -ENOTDIR;
	}
	return fd;
}

int proc_open_in_dir(int dirfd, const char *name)
{
	int pfd, fd;

	if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	pfd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	fd = open_regular_fd(pfd);
	close(pfd);
	return fd;
}
