// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/openat2.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

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

/* Receives one descriptor sent with SCM_RIGHTS, or -errno the sender wrote instead. */
static int recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	int err = 0, fd = -1;
	struct iovec iov = { &err, sizeof(err) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != sizeof(err))
		return -EIO;
	c = CMSG_FIRSTHDR(&msg);
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(c), sizeof(fd));
	if (err) {
		if (fd >= 0)
			close(fd);
		return err;
	}
	return fd >= 0 ? fd : -EIO;
}

static void send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {};
	int err = fd < 0 ? fd : 0;
	struct iovec iov = { &err, sizeof(err) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;

	if (fd >= 0) {
		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(fd));
	}
	if (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0)
		_exit(1);
}

/*
 * Without openat2 (before 5.6): a child chroots into the process's root,
 * where absolute symlinks and ".." stay, opens the name there (O_PATH,
 * O_NOFOLLOW), reopens it for reading through its own /proc/self/fd kept
 * from outside only if it is a regular file, and hands the descriptor back.
 * Magic links inside the container's /proc are not refused as
 * RESOLVE_NO_MAGICLINKS would: a container that shares the host's pid
 * namespace and procfs could still name a host file through them.
 */
int proc_open_in_root_forked(int pid, const char *path)
{
	int sv[2], rfd, fd;
	char root[64];
	pid_t child;

	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv)) {
		fd = -errno;
		close(rfd);
		return fd;
	}
	child = fork();
	if (child == 0) {
		int self = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC), pfd = -1;
		char name[16];

		close(sv[0]);
		fd = -EACCES;
		if (self >= 0 && !fchdir(rfd) && !chroot(".")) {
			pfd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
			fd = pfd < 0 ? -errno : -EINVAL;
		}
		if (pfd >= 0) {
			struct stat st, now;

			snprintf(name, sizeof(name), "%d", pfd);
			if (!fstat(pfd, &st) && S_ISREG(st.st_mode)) {
				fd = openat(self, name, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
				if (fd < 0)
					fd = -errno;
				else if (fstat(fd, &now) || now.st_ino != st.st_ino || now.st_dev != st.st_dev)
					fd = -EINVAL;
			}
		}
		send_fd(sv[1], fd);
		_exit(0);
	}
	close(sv[1]);
	close(rfd);
	if (child < 0) {
		close(sv[0]);
		return -errno;
	}
	fd = recv_fd(sv[0]);
	close(sv[0]);
	while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
		;
	return fd;
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
	if (pfd < 0 && errno == ENOSYS) {
		close(rfd);
		return proc_open_in_root_forked(pid, path);
	}
	fd = pfd < 0 ? -errno : open_regular_fd(pfd);
	if (pfd >= 0)
		close(pfd);
	close(rfd);
	return fd;
}
