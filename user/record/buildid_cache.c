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
#include "fileio.h"
#include "hash.h"
#include "log.h"
#include "perf_buildid.h"

/* A mapped file larger than this is not worth a copy (nor the wait while recording). */
#define MAX_FILE_BYTES (512ull << 20)

struct buildid_cache {
	struct strpool seen;	/* build ids handled, hex */
	struct u64_map ns;	/* pid -> 1 + whether its mount namespace is ours */
	char our_ns[64];
	__u64 used, max;	/* bytes in the cache directory */
	bool keep, measured;
	unsigned kept, present, gone, denied, full, failed;
	unsigned linked, unlinked; /* entered in perf's ~/.debug, or not */
};

struct buildid_cache *buildid_cache__new(bool keep, __u64 max_bytes)
{
	struct buildid_cache *c = calloc(1, sizeof(*c));
	ssize_t n;

	if (!c)
		return NULL;
	c->keep = keep;
	c->max = max_bytes;
	n = readlink("/proc/self/ns/mnt", c->our_ns, sizeof(c->our_ns) - 1);
	c->our_ns[n > 0 ? n : 0] = 0;
	return c;
}

void buildid_cache__free(struct buildid_cache *c)
{
	if (!c)
		return;
	strpool_free(&c->seen);
	u64_map_free(&c->ns);
	free(c);
}

/*
 * Whether pid sees the files we see: its mount namespace is ours.  Asked
 * once per pid and exec (a process changes namespace with unshare or setns,
 * then execs what it runs there).
 */
static bool same_ns(struct buildid_cache *c, __u32 pid)
{
	uint64_t *v = u64_map_get(&c->ns, pid, true);
	char link[64], theirs[64];
	ssize_t n;

	if (v && *v)
		return *v == 2;
	snprintf(link, sizeof(link), "/proc/%u/ns/mnt", pid);
	n = readlink(link, theirs, sizeof(theirs) - 1);
	if (n <= 0)
		return true; /* gone, or not ours to read: nothing to do anyway */
	theirs[n] = 0;
	if (v)
		*v = strcmp(theirs, c->our_ns) ? 1 : 2;
	return !strcmp(theirs, c->our_ns);
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

/* perf report finds the copy too (perf_buildid.h); perf's cache is a courtesy, never a failure. */
static void link_for_perf(struct buildid_cache *c, const char *hex, const char *path, const char *copy)
{
	if (perf_buildid_link(hex, path, copy))
		c->unlinked++;
	else
		c->linked++;
}

void buildid_cache__exec(struct buildid_cache *c, __u32 pid)
{
	uint64_t *v = c ? u64_map_get(&c->ns, pid, false) : NULL;

	if (v)
		*v = 0;
}

int buildid_cache__note(struct buildid_cache *c, __u32 pid, __u64 start, __u64 end, const char *path,
			__u8 id[20], __u8 *size)
{
	char hex[2 * BUILD_ID_MAX + 1], here[2 * BUILD_ID_MAX + 1], dest[PATH_MAX], mapped[96];
	__u8 hid[BUILD_ID_MAX], hsize;
	bool deleted;
	size_t before;
	int fd, e;

	if (!c || path[0] != '/' || !strncmp(path, "/memfd:", 7))
		return 0;
	deleted = strstr(path, " (deleted)") != NULL;
	if (!deleted && same_ns(c, pid))
		return 0;
	snprintf(mapped, sizeof(mapped), "/proc/%u/map_files/%llx-%llx", pid, (unsigned long long)start,
		 (unsigned long long)end);
	if (buildid_from_file(mapped, id, size)) {
		c->gone++;
		return 0;
	}
	buildid_hex(id, *size, hex);
	here[0] = 0;
	if (!deleted && !buildid_from_file(path, hid, &hsize))
		buildid_hex(hid, hsize, here);
	if (!strcmp(here, hex))
		return 0; /* the same file as ours: a bind mount, a shared image */
	before = c->seen.n;
	if (!c->keep || !strpool_intern(&c->seen, hex, NULL) || c->seen.n == before)
		return 1; /* its build id in the file; the copy made already, or not wanted */
	if (buildid_cache_path(hex, dest, sizeof(dest))) {
		c->failed++;
		return 1;
	}
	if (!access(dest, R_OK)) {
		c->present++;
		link_for_perf(c, hex, path, dest);
		return 1;
	}
	fd = open_mapped(pid, start, end, path);
	if (fd < 0) {
		if (fd == -ENOENT || fd == -ESRCH)
			c->gone++;
		else
			c->denied++;
		return 1;
	}
	e = copy(c, fd, dest);
	close(fd);
	if (!e) {
		c->kept++;
		link_for_perf(c, hex, path, dest);
	} else if (e == -ENOSPC || e == -EFBIG) {
		c->full++;
	} else {
		c->failed++;
	}
	return 1;
}

void buildid_cache__report(const struct buildid_cache *c)
{
	if (!c || !(c->kept + c->present + c->gone + c->denied + c->full + c->failed))
		return;
	pr_debug("build-id cache: %u files kept from other mount namespaces or gone from their paths, %u there "
		 "already; %u could not be reached (process gone), %u not entered (permission), %u over the "
		 "cache's bound, %u failed to write; %u entered in perf's ~/.debug, %u could not be",
		 c->kept, c->present, c->gone, c->denied, c->full, c->failed, c->linked, c->unlinked);
}
