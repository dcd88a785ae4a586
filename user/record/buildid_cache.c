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
#include "perf_buildid.h"
#include "util.h"

/* A mapped file larger than this is not worth a copy (nor the wait while recording). */
#define MAX_FILE_BYTES (512ull << 20)

/*
 * Where each build id stands.  A process that was gone (or whose root was
 * not entered) leaves its build id pending: a later process mapping the
 * same file may still be there, as the long-lived server after its
 * short-lived setup script.
 */
enum { NOT_TRIED, PENDING_GONE, PENDING_DENIED, DONE };

struct buildid_cache {
	struct strpool seen; /* build ids met, hex */
	__u8 *state;	     /* per seen id */
	size_t nr_state, cap_state;
	__u64 used, max; /* bytes in the cache directory */
	bool measured;
	unsigned kept, present, same_here, full, failed;
	unsigned linked, unlinked; /* entered in perf's ~/.debug, or not */
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
	free(c->state);
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

/* perf report finds the copy too (perf_buildid.h); perf's cache is a courtesy, never a failure. */
static void link_for_perf(struct buildid_cache *c, const char *hex, const char *path, const char *copy)
{
	if (perf_buildid_link(hex, path, copy))
		c->unlinked++;
	else
		c->linked++;
}

/* One attempt for a build id not DONE; returns its new state. */
static int try_keep(struct buildid_cache *c, __u32 pid, __u64 start, __u64 end, const char *path, const char *hex)
{
	char here[2 * BUILD_ID_MAX + 1], dest[PATH_MAX];
	__u8 hid[BUILD_ID_MAX], hsize;
	int fd, e;

	here[0] = 0;
	if (!buildid_from_file(path, hid, &hsize))
		buildid_hex(hid, hsize, here);
	if (!strcmp(here, hex)) {
		c->same_here++;
		return DONE;
	}
	if (buildid_cache_path(hex, dest, sizeof(dest))) {
		c->failed++;
		return DONE;
	}
	if (!access(dest, R_OK)) {
		c->present++;
		link_for_perf(c, hex, path, dest);
		return DONE;
	}
	fd = open_mapped(pid, start, end, path);
	if (fd < 0)
		return fd == -ENOENT || fd == -ESRCH ? PENDING_GONE : PENDING_DENIED;
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
	return DONE;
}

void buildid_cache__note(struct buildid_cache *c, __u32 pid, __u64 start, __u64 end, const char *path,
			 const __u8 *id, __u8 size)
{
	char hex[2 * BUILD_ID_MAX + 1];
	size_t i;

	if (!c || !size || path[0] != '/')
		return;
	buildid_hex(id, size, hex);
	/* No memory to remember it: try no more. */
	if (!strpool_intern(&c->seen, hex, &i) || array_reserve((void **)&c->state, &c->cap_state, i, 1))
		return;
	while (c->nr_state <= i)
		c->state[c->nr_state++] = NOT_TRIED;
	if (c->state[i] != DONE)
		c->state[i] = try_keep(c, pid, start, end, path, hex);
}

void buildid_cache__report(const struct buildid_cache *c)
{
	unsigned gone = 0, denied = 0;

	if (!c)
		return;
	for (size_t i = 0; i < c->nr_state; i++) {
		gone += c->state[i] == PENDING_GONE;
		denied += c->state[i] == PENDING_DENIED;
	}
	pr_debug("build-id cache: %u files kept from other mount namespaces or gone from their paths, %u there "
		 "already; %u could not be reached (process gone), %u not entered (permission), %u over the "
		 "cache's bound, %u failed to write; %u entered in perf's ~/.debug, %u could not be",
		 c->kept, c->present, gone, denied, c->full, c->failed, c->linked, c->unlinked);
}
