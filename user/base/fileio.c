// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>

#include "fileio.h"
#include "sbuf.h"
#include "util.h"

int read_file_str(const char *path, char *buf, size_t size)
{
	int fd, err = 0;
	ssize_t n;

	if (!size)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0) {
		err = -errno;
		n = 0;
	}
	buf[n] = 0;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	close(fd);
	return err;
}

int read_file_all(const char *path, char **out, size_t *len)
{
	int fd, err;

	*out = NULL;
	*len = 0;
	fd = open_regular(path);
	if (fd < 0)
		return fd;
	err = read_fd_all(fd, out, len);
	close(fd);
	return err;
}

int read_fd_all(int fd, char **out, size_t *len)
{
	struct sbuf b = {};
	char tmp[65536];
	struct stat st;
	int err = 0;
	ssize_t n;

	*out = NULL;
	*len = 0;
	/*
	 * Its size known, the bytes go straight into a buffer of that size and
	 * its NUL: a 270 MB spans file was otherwise copied once more, and again
	 * at each doubling.  What it grew by since comes through tmp.
	 */
	if (!fstat(fd, &st) && st.st_size > 0 && (unsigned long long)st.st_size < SIZE_MAX / 2) {
		b.p = malloc(st.st_size + 1);
		b.cap = b.p ? st.st_size + 1 : 0;
	}
	for (;;) {
		bool direct = b.cap - b.len > 1;

		n = direct ? read(fd, b.p + b.len, b.cap - b.len - 1) : read(fd, tmp, sizeof(tmp));
		if (!n)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto cleanup;
		}
		if (direct)
			b.len += n;
		else if ((err = sbuf_add(&b, tmp, n)))
			goto cleanup;
	}
	err = sbuf_zero(&b, 1); /* NUL-terminate text files for the caller */
	if (err)
		goto cleanup;
	*out = b.p;
	*len = b.len - 1;
	b.p = NULL;
cleanup:
	sbuf_free(&b);
	return err;
}

int open_regular_fd(int pathfd)
{
	struct stat st, now;
	char self[64];
	int fd;

	if (fstat(pathfd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	/* The inode the O_PATH descriptor holds, whatever its name leads to by now. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pathfd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &now) || now.st_dev != st.st_dev || now.st_ino != st.st_ino || !S_ISREG(now.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

int open_regular_at(int dirfd, const char *path, bool nofollow)
{
	int pfd = openat(dirfd, path, O_PATH | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0)), fd;

	if (pfd < 0)
		return -errno;
	fd = open_regular_fd(pfd);
	close(pfd);
	return fd;
}

int open_regular(const char *path)
{
	return open_regular_at(AT_FDCWD, path, false);
}

int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = write(fd, c, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		c += w;
		n -= w;
	}
	return 0;
}

/* pread or pwrite until n bytes moved. */
static int prw_full(int fd, char *p, size_t n, off_t off, bool wr)
{
	while (n) {
		ssize_t k = wr ? pwrite(fd, p, n, off) : pread(fd, p, n, off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		p += k;
		n -= k;
		off += k;
	}
	return 0;
}

int pread_full(int fd, void *buf, size_t n, off_t off)
{
	return prw_full(fd, buf, n, off, false);
}

int pwrite_full(int fd, const void *buf, size_t n, off_t off)
{
	return prw_full(fd, (char *)buf, n, off, true);
}

int stdio_error(void)
{
	return errno ? -errno : -EIO;
}

#ifndef FUSE_SUPER_MAGIC
#define FUSE_SUPER_MAGIC 0x65735546
#endif

bool file_is_fixed(int fd)
{
	struct statfs sfs;
	struct stat st;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (st.st_uid != 0 && st.st_uid != geteuid()) ||
	    (st.st_mode & 022))
		return false;
	return !fstatfs(fd, &sfs) && sfs.f_type != FUSE_SUPER_MAGIC;
}

/* A temporary a killed process left behind is removed once this old. */
#define STALE_TMP_S 3600

struct victim {
	struct timespec mtime;
	__u64 size;
	char name[NAME_MAX + 1];
};

static int cmp_victim(const void *a, const void *b)
{
	const struct victim *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	return (x->mtime.tv_nsec > y->mtime.tv_nsec) - (x->mtime.tv_nsec < y->mtime.tv_nsec);
}

unsigned dir_make_room(int dfd, __u64 max, __u64 room, __u64 *used, bool *measured)
{
	struct victim *v = NULL;
	size_t n = 0, cap = 0;
	unsigned removed = 0;
	struct dirent *de;
	DIR *d;

	if (*measured && *used + room <= max)
		return 0;
	d = dir_entries(dfd);
	if (!d)
		return 0;
	*used = 0;
	while ((de = readdir(d))) {
		struct stat st;

		if (de->d_name[0] == '.' || fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		if (strstr(de->d_name, ".tmp-")) {
			if (st.st_mtime + STALE_TMP_S < time(NULL))
				unlinkat(dfd, de->d_name, 0);
			continue;
		}
		*used += st.st_size;
		if (array_reserve((void **)&v, &cap, n, sizeof(*v)))
			continue;
		v[n].mtime = st.st_mtim;
		v[n].size = st.st_size;
		snprintf(v[n].name, sizeof(v[n].name), "%s", de->d_name);
		n++;
	}
	closedir(d);
	*measured = true;
	if (*used + room > max) {
		qsort(v, n, sizeof(*v), cmp_victim);
		for (size_t i = 0; i < n && *used + room > max / 4 * 3; i++) {
			if (unlinkat(dfd, v[i].name, 0))
				continue;
			*used -= SP_MIN(*used, v[i].size);
			removed++;
		}
	}
	free(v);
	return removed;
}

int mkdir_parents(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0700) && errno != EEXIST) {
			*p = '/';
			return -errno;
		}
		*p = '/';
	}
	return 0;
}

/* Made by root (or us), and writable by no one else but in a sticky directory of root's (/tmp). */
static bool stat_is_ours(const struct stat *st)
{
	bool mine = st->st_uid == 0 || st->st_uid == geteuid();
	bool shared = S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX) && st->st_uid == 0;

	return mine && (S_ISLNK(st->st_mode) || !(st->st_mode & 022) || shared);
}

/*
 * Whether root may write under dir: every part of it that exists, and what
 * a symlink there leads to, is ours (stat_is_ours).  What is not a
 * directory is ours too if so: writing under it fails, and says so.
 */
bool dir_is_ours(const char *dir)
{
	char p[PATH_MAX];
	size_t n = strlen(dir);

	if (dir[0] != '/' || n >= sizeof(p))
		return false;
	memcpy(p, dir, n + 1);
	while (n > 0) {
		struct stat st, target;

		if (!lstat(p, &st)) {
			if (!stat_is_ours(&st) || (S_ISLNK(st.st_mode) && !stat(p, &target) && !stat_is_ours(&target)))
				return false;
		} else if (errno != ENOENT) {
			return false;
		}
		while (n > 0 && p[n - 1] != '/')
			n--;
		while (n > 1 && p[n - 1] == '/')
			n--;
		if (n <= 1)
			break;
		p[n] = 0;
	}
	return true;
}

DIR *dir_entries(int dfd)
{
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	/* A dup shares the offset: another stream's reading must not start this one midway. */
	rewinddir(d);
	return d;
}

int cache_dir_open(const char *dir)
{
	char p[PATH_MAX];
	struct stat st;
	int n = snprintf(p, sizeof(p), "%s/x", dir), dfd;

	if (n < 0 || (size_t)n >= sizeof(p))
		return -ENAMETOOLONG;
	/* Before too: nothing is made under a directory of someone else's (a symlink of theirs). */
	if (!dir_is_ours(dir) || mkdir_parents(p) || !dir_is_ours(dir))
		return -EPERM;
	/* O_NOFOLLOW and the owner again: what was checked by name is what is opened. */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (fstat(dfd, &st) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(dfd);
		return -EPERM;
	}
	return dfd;
}

/* The environment's directory, if it is ours to write in as root (sudo -E keeps a user's). */
static const char *env_dir(const char *name)
{
	const char *v = getenv(name);

	if (!v || !*v)
		return NULL;
	return geteuid() != 0 || dir_is_ours(v) ? v : NULL;
}

static const char *own_home(void)
{
	const char *home = env_dir("HOME");
	struct passwd *pw;

	if (home)
		return home;
	pw = getpwuid(geteuid());
	return pw && pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : NULL;
}

int cache_home(char *out, size_t len)
{
	const char *xdg = env_dir("XDG_CACHE_HOME"), *home = own_home();
	int n;

	if (xdg)
		n = snprintf(out, len, "%s", xdg);
	else if (home)
		n = snprintf(out, len, "%s/.cache", home);
	else
		return -ENOENT;
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int home_dir(char *out, size_t len)
{
	const char *home = own_home();
	int n;

	if (!home)
		return -ENOENT;
	n = snprintf(out, len, "%s", home);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* mountinfo's octal escapes (\040 for a space) undone, in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = 0;
}

/*
 * The mount of dev in our mount namespace: its source (a device, or the
 * file system's own name, tmpfs) and its mount point.  Of several (bind
 * mounts), the one with the longest mount point that path is under.
 */
static bool mount_of(dev_t dev, const char *path, char *src, size_t srclen, char *mnt, size_t mntlen)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0, best = 0;
	bool found = false;

	if (!f)
		return false;
	while (getline(&line, &cap, f) > 0) {
		unsigned maj, min;
		char *point, *dash, *fstype, *source, *save = NULL;
		size_t n;

		/* ID PARENT MAJ:MIN ROOT POINT OPTIONS... - FSTYPE SOURCE SUPEROPTIONS */
		if (sscanf(line, "%*u %*u %u:%u", &maj, &min) != 2 || makedev(maj, min) != dev)
			continue;
		dash = strstr(line, " - ");
		if (!dash)
			continue;
		*dash = 0;
		if (!strtok_r(line, " ", &save) || !strtok_r(NULL, " ", &save) || !strtok_r(NULL, " ", &save) ||
		    !strtok_r(NULL, " ", &save) || !(point = strtok_r(NULL, " ", &save)))
			continue;
		save = NULL;
		if (!(fstype = strtok_r(dash + 3, " ", &save)) || !(source = strtok_r(NULL, " ", &save)))
			continue;
		unescape(point);
		unescape(source);
		n = strlen(point);
		/* Scored by how much of path it holds: 0 for none, so the first match stands without a better one. */
		n = path && !strncmp(path, point, n) && (path[n] == '/' || !path[n] || n == 1) ? n + 1 : 0;
		if (found && n <= best)
			continue;
		best = n;
		snprintf(src, srclen, "%s", strcmp(source, "none") ? source : fstype);
		snprintf(mnt, mntlen, "%s", point);
		found = true;
	}
	free(line);
	fclose(f);
	return found;
}

static const char *say_write_error(int e, const struct stat *st, const char *path, char *buf, size_t len)
{
	char src[256], mnt[PATH_MAX];

	if (e != -ENOSPC && e != -EDQUOT) {
		snprintf(buf, len, "%s", strerror(-e));
		return buf;
	}
	if (st && mount_of(st->st_dev, path, src, sizeof(src), mnt, sizeof(mnt)))
		snprintf(buf, len, "%s on %s (mounted at %s)", e == -ENOSPC ? "no space left" : "disk quota exceeded",
			 src, mnt);
	else
		snprintf(buf, len, "%s on its device", e == -ENOSPC ? "no space left" : "disk quota exceeded");
	return buf;
}

const char *write_strerror(int e, const char *path, char *buf, size_t len)
{
	char dir[PATH_MAX], real[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat st;
	bool ok = !stat(path, &st);

	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash == path ? 1 : slash - path) : 1, slash ? path : ".");
	if (!ok)
		ok = !stat(dir, &st);
	return say_write_error(e, ok ? &st : NULL, realpath(dir, real) ? real : NULL, buf, len);
}

const char *write_strerror_fd(int e, int fd, char *buf, size_t len)
{
	struct stat st;

	return say_write_error(e, fstat(fd, &st) ? NULL : &st, NULL, buf, len);
}
