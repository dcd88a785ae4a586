// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/openat2.h>
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

int proc_open_in_root(int pid, const char *path)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC | O_NOFOLLOW,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	char root[64];
	int rfd, pfd, fd;

	if (path[0] != '/' || deleted_name(path))
		return -ENOENT;
	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	pfd = syscall(SYS_openat2, rfd, path, &how, sizeof(how));
	fd = pfd < 0 ? (errno == ENOSYS ? -EOPNOTSUPP : -errno) : open_regular_fd(pfd);
	if (pfd >= 0)
		close(pfd);
	close(rfd);
	return fd;
}
