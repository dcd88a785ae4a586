// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "atomic_file.h"
#include "buildid.h"
#include "buildid_cache.h"
#include "util.h"

/* A mapped file larger than this is not worth a copy (nor the wait while recording). */
#define MAX_FILE_BYTES (512ull << 20)

struct buildid_cache {
	struct strpool seen; /* build ids handled, hex */
	__u64 used, max;     /* bytes in the cache directory */
	bool measured;
	unsigned kept, present, same_here, gone, denied, full, failed;
};

struct buildid_cache *buildid_cache__new(bool enabled, __u64 max_bytes)
{
	struct buildid_cache *c;

	if (!enabled)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (c)
		c->max = max_bytes;
	return c;
}

void buildid_cache__free(struct buildid_cache *c)
{
	if (!c)
		return;
	strpool_free(&c->seen);
	free(c);
}

/* What the cache holds already: read once, on the first copy, not at every start. */
static void measure(struct buildid_cache *c, const char *some_entry)
{
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *d;

	c->measured = true;
	snprintf(dir, sizeof(dir), "%s", some_entry);
	if (strrchr(dir, '/'))
		*strrchr(dir, '/') = 0;
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		struct stat st;

		if (de->d_name[0] != '.' && !fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
		    S_ISREG(st.st_mode))
			c->used += st.st_size;
	}
	closedir(d);
}

/* The mapped file as the process sees it: its map_files link, else its root's path. */
static int open_mapped(__u32 pid, __u64 start, __u64 end, const char *path)
{
	char p[PATH_MAX + 64];
	int fd;

	snprintf(p, sizeof(p), "/proc/%u/map_files/%llx-%llx", pid, (unsigned long long)start,
		 (unsigned long long)end);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 || errno == ENOENT)
		return fd >= 0 ? fd : -ENOENT;
	snprintf(p, sizeof(p), "/proc/%u/root%s", pid, path);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

static int copy(struct buildid_cache *c, int in, const char *dest)
{
	char tmp[PATH_MAX];
	struct atomic_file af;
	struct stat st;
	char buf[65536];
	ssize_t n;
	int e;

	if (fstat(in, &st) || !S_ISREG(st.st_mode) || (__u64)st.st_size > MAX_FILE_BYTES)
		return -EFBIG;
	if (!c->measured)
		measure(c, dest);
	if (c->used + st.st_size > c->max)
		return -ENOSPC;
	snprintf(tmp, sizeof(tmp), "%s", dest);
	e = mkdir_parents(tmp);
	if (e)
		return e;
	/* Binaries of other users' containers: the copy is root's only. */
	e = atomic_file__open(&af, dest, 0600, false);
	if (e)
		return e;
	while ((n = read(in, buf, sizeof(buf))) > 0 && !e)
		e = write_all(af.fd, buf, n);
	if (n < 0 && !e)
		e = -errno;
	if (!e)
		e = atomic_file__commit(&af);
	atomic_file__release(&af);
	if (!e)
		c->used += st.st_size;
	return e;
}

void buildid_cache__note(struct buildid_cache *c, __u32 pid, __u64 start, __u64 end, const char *path,
			 const __u8 *id, __u8 size)
{
	char hex[2 * BUILD_ID_MAX + 1], here[2 * BUILD_ID_MAX + 1], dest[PATH_MAX];
	__u8 hid[BUILD_ID_MAX], hsize;
	size_t before;
	int fd, e;

	if (!c || !size || path[0] != '/')
		return;
	buildid_hex(id, size, hex);
	before = c->seen.n;
	if (!strpool_intern(&c->seen, hex, NULL) || c->seen.n == before)
		return; /* handled already (or no memory to remember it: try no more) */
	here[0] = 0;
	if (!buildid_from_file(path, hid, &hsize))
		buildid_hex(hid, hsize, here);
	if (!strcmp(here, hex)) {
		c->same_here++;
		return;
	}
	if (buildid_cache_path(hex, dest, sizeof(dest))) {
		c->failed++;
		return;
	}
	if (!access(dest, R_OK)) {
		c->present++;
		return;
	}
	fd = open_mapped(pid, start, end, path);
	if (fd < 0) {
		if (fd == -ENOENT || fd == -ESRCH)
			c->gone++;
		else
			c->denied++;
		return;
	}
	e = copy(c, fd, dest);
	close(fd);
	if (!e)
		c->kept++;
	else if (e == -ENOSPC || e == -EFBIG)
		c->full++;
	else
		c->failed++;
}

void buildid_cache__report(const struct buildid_cache *c)
{
	if (!c)
		return;
	pr_debug("build-id cache: %u files kept from other mount namespaces or gone from their paths, %u there "
		 "already; %u could not be reached (process gone), %u not entered (permission), %u over the "
		 "cache's bound, %u failed to write",
		 c->kept, c->present, c->gone, c->denied, c->full, c->failed);
}
