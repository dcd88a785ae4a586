// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <linux/openat2.h>

#include "atomic_file.h"
#include "buildid.h"
#include "buildid_cache.h"
#include "fileio.h"
#include "hash.h"
#include "jit_maps.h"
#include "log.h"
#include "perf_buildid.h"
#include "proc_file.h"
#include "sha256.h"
#include "stop.h"
#include "util.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* A mapped file larger than this is not worth a copy (nor the wait while recording). */
#define MAX_FILE_BYTES (512ull << 20)

/* A copy to make at the end: the mapped inode, held open, and the size it had then. */
struct pending {
	int fd;
	__u64 size;
	dev_t dev;
	ino_t ino;
	char hex[2 * BUILD_ID_MAX + 1];
	char *path;
};

/*
 * Files held open for a copy: each costs a descriptor until the end of the
 * recording, so at most half of what RLIMIT_NOFILE allows (the rest are
 * counted as over the bound), and never more than this.
 */
#define MAX_PENDING 16384

struct buildid_cache {
	struct pending *pending;
	size_t nr_pending, cap_pending, max_pending;
	struct strpool seen;	/* files handled: "HEX DEV:INO" */
	struct pd_digest *digests; /* the copies made, for every file of the recording (rotations too) */
	size_t nr_digests, cap_digests;
	struct u64_map ns;	/* pid -> 1 + whether its mount namespace is ours */
	char our_ns[64];
	__u64 used, max;	/* bytes in the cache directory */
	bool keep, measured, link_perf;
	unsigned kept, present, gone, denied, full, failed, late, claimed, ambiguous, evicted;
	unsigned linked, unlinked; /* entered in perf's ~/.debug, or not */
};

struct buildid_cache *buildid_cache__new(bool keep, bool link_perf, __u64 max_bytes)
{
	struct buildid_cache *c = calloc(1, sizeof(*c));
	struct rlimit lim;
	ssize_t n;

	if (!c)
		return NULL;
	c->keep = keep;
	c->link_perf = link_perf;
	c->max_pending = MAX_PENDING;
	if (!getrlimit(RLIMIT_NOFILE, &lim) && lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur / 2 < MAX_PENDING)
		c->max_pending = lim.rlim_cur / 2;
	c->max = max_bytes;
	n = readlink("/proc/self/ns/mnt", c->our_ns, sizeof(c->our_ns) - 1);
	c->our_ns[n > 0 ? n : 0] = 0;
	return c;
}

void buildid_cache__free(struct buildid_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nr_pending; i++) {
		close(c->pending[i].fd);
		free(c->pending[i].path);
	}
	free(c->pending);
	free(c->digests);
	strpool_free(&c->seen);
	u64_map_free(&c->ns);
	free(c);
}

/*
 * Whether our name path is the mapped file itself: the inode the kernel
 * named maj:min ino.  Then any process's mapping of it is the host's file,
 * in whichever namespace (what note concludes anyway once it has opened
 * the mapping).
 */
static bool host_has(const char *path, __u32 maj, __u32 min, __u64 ino)
{
	/*
	 * path is the process's to choose (a container names what it likes),
	 * and is looked up here in our namespace, as root, before anything
	 * says the process shares it: a lookup must not reach into another
	 * file system, where an automount (autofs -hosts: /net/HOST/x mounts
	 * NFS from HOST) would run on its word and block this thread.  A stat,
	 * even with AT_NO_AUTOMOUNT, mounts the components before the last;
	 * RESOLVE_NO_XDEV stops at the first mount point crossed, before the
	 * lookup inside it.  No symlinks either (the kernel's names have none;
	 * a symlink as the last component would be its own inode, not the
	 * file): a file elsewhere than on the root's mount, or named so, takes
	 * the namespace check instead, as does a kernel without openat2.
	 */
	struct open_how how = { .flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
				.resolve = RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	struct stat st;
	bool same;
	int fd;

	if (!ino || path[0] != '/')
		return false;
	fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	if (fd < 0)
		return false;
	same = !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_ino == ino && major(st.st_dev) == maj &&
	       minor(st.st_dev) == min;
	close(fd);
	return same;
}

/*
 * Whether pid sees the file it mapped at path as we do: its mount namespace
 * is ours, asked once per pid and exec (a process changes namespace with
 * unshare or setns, then execs what it runs there); or, before that is
 * asked, our name is its inode.  That is a stat of a name whose dentries
 * are warm, where the readlink of a new pid's ns/mnt looks up its /proc
 * directory first: record -a -g -d 4 on this host (other builds starting
 * ~25 processes a second) read 94 of them, 5.2 ms of the recorder's CPU
 * (perf record -e cpu-clock -g around it).  The inode says nothing of the
 * namespace, so it is not noted: the pid's next mapping may be of a file
 * only it sees.
 */
static bool same_file(struct buildid_cache *c, __u32 pid, const char *path, __u32 maj, __u32 min, __u64 ino)
{
	uint64_t *v = u64_map_get(&c->ns, pid, true);
	char link[64], theirs[64];
	ssize_t n;

	if (v && *v)
		return *v == 2;
	if (host_has(path, maj, min, ino))
		return true;
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

/* A copy another recording may still be making (atomic_file's temporary) for this long. */
#define TMP_STALE_S 3600

/* An entry of the cache: BUILD-ID.SHA256, or BUILD-ID alone (kept before the digests). */
static bool is_entry(const char *name)
{
	size_t n = strspn(name, "0123456789abcdef");

	if (!n || !name[n])
		return n > 0;
	return name[n] == '.' && strspn(name + n + 1, "0123456789abcdef") == 2 * SHA256_SIZE &&
	       !name[n + 1 + 2 * SHA256_SIZE];
}

/* Whether name is a copy this recording relies on (made by it, this file's or an earlier rotation's). */
static bool is_ours(const struct buildid_cache *c, const char *name)
{
	char hex[2 * BUILD_ID_MAX + 1], sha[2 * SHA256_SIZE + 1];
	size_t n = strcspn(name, ".");

	if (!name[n])
		return false;
	for (size_t i = 0; i < c->nr_digests; i++) {
		buildid_hex(c->digests[i].id, c->digests[i].size, hex);
		sha256_hex(c->digests[i].sha256, sha);
		if (strlen(hex) == n && !strncmp(name, hex, n) && !strcmp(name + n + 1, sha))
			return true;
	}
	return false;
}

struct victim {
	struct timespec mtime;
	__u64 size;
	char *name;
};

static int cmp_victim(const void *a, const void *b)
{
	const struct victim *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

/*
 * A cache at its bound makes room for need more bytes by removing the
 * copies written longest ago (a copy of the same bytes kept again is
 * rewritten, so its time is its last recording's), never this recording's
 * own: without it a cache filled once, by recordings long since done,
 * kept nothing again, and every later recording's containers went
 * unnamed.  The oldest recordings lose their copies first, as with any
 * bounded cache.  A temporary is another recording's copy in progress
 * unless it is TMP_STALE_S old (left by a recording killed mid-copy).
 */
static void evict(struct buildid_cache *c, const char *dir, __u64 need)
{
	struct victim *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	time_t now = time(NULL);
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		struct stat st;

		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (is_entry(de->d_name) ? is_ours(c, de->d_name) :
		    !(strstr(de->d_name, ".tmp-") && st.st_mtime < now - TMP_STALE_S))
			continue;
		if (array_reserve((void **)&v, &cap, n, sizeof(*v)))
			break;
		v[n] = (struct victim){ .mtime = st.st_mtim, .size = st.st_size, .name = strdup(de->d_name) };
		if (v[n].name)
			n++;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_victim);
	for (size_t i = 0; i < n && c->used + need > c->max; i++) {
		if (unlinkat(dirfd(d), v[i].name, 0) && errno != ENOENT)
			continue;
		c->used -= SP_MIN(c->used, v[i].size);
		c->evicted++;
	}
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	closedir(d);
}

/*
 * Copies at most min(size at open, MAX_FILE_BYTES) bytes: the file may grow
 * meanwhile (its owner maps it, deletes it and grows it).  The copy is
 * entered only if its own build id is the one it is kept under, and under
 * the SHA-256 of the bytes copied (buildid_cache_entry), which the
 * recording keeps: a copy made for another recording under the same build
 * id, whatever its bytes and whichever came first, is another file.
 */
static int copy(struct buildid_cache *c, const struct pending *p, char *dest, size_t destlen, __u64 deadline,
		__u8 sha[SHA256_SIZE])
{
	char buf[65536], hex[2 * BUILD_ID_MAX + 1];
	__u8 id[BUILD_ID_MAX], size;
	struct atomic_file af;
	struct sha256 h;
	struct stat st;
	__u64 done = 0, limit = p->size;
	bool replaces;
	int e;

	if (limit > MAX_FILE_BYTES)
		return -EFBIG;
	e = buildid_cache_path(p->hex, dest, destlen);
	if (e)
		return e;
	if (!c->measured)
		measure(c, dest);
	if (c->used + limit > c->max) {
		char dir[PATH_MAX];

		snprintf(dir, sizeof(dir), "%s", dest);
		if (strrchr(dir, '/'))
			*strrchr(dir, '/') = 0;
		evict(c, dir, limit);
	}
	if (c->used + limit > c->max)
		return -ENOSPC;
	e = mkdir_parents(dest);
	if (e)
		return e;
	/* Named once its bytes are known: a provisional name, retargeted at the end. */
	if (strlen(dest) + 5 > destlen)
		return -ENAMETOOLONG;
	strcat(dest, ".new");
	/* Binaries of other users' containers: the copy is root's only. */
	e = atomic_file__open(&af, dest, 0600, false);
	if (e)
		return e;
	sha256_init(&h);
	while (!e && done < limit) {
		ssize_t n = pread(p->fd, buf, SP_MIN(sizeof(buf), limit - done), done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			e = n < 0 ? -errno : -EIO; /* shrunk meanwhile: not the file it was */
			break;
		}
		e = write_all(af.fd, buf, n);
		sha256_update(&h, buf, n);
		done += n;
		if (!e && (stop_overdue() || now_ns(CLOCK_MONOTONIC) > deadline))
			e = -ETIME;
	}
	sha256_final(&h, sha);
	if (!e) {
		e = buildid_from_fd(af.fd, id, &size);
		if (!e) {
			buildid_hex(id, size, hex);
			if (strcmp(hex, p->hex))
				e = -EBADMSG;
		}
	}
	e = e ?: buildid_cache_entry(p->hex, sha, dest, destlen);
	replaces = !e && !lstat(dest, &st);
	e = e ?: atomic_file__retarget(&af, dest);
	e = e ?: atomic_file__commit(&af);
	atomic_file__release(&af);
	/* The same bytes again (the same file, recorded before): replaced, not added. */
	if (!e && !replaces)
		c->used += done;
	else if (!e)
		c->present++;
	return e;
}

/*
 * perf report finds the copy too (perf_buildid.h), with --perf-cache only:
 * ~/.debug is global, and an entry there decides what perf reads for every
 * file of that build id.  So never under the id of a file the host has
 * under another name (a container's file claiming libc's id is not libc).
 * perf's cache is a courtesy, never a failure.
 */
/* Whether the recording lists a host file of build id hex under another name than path. */
/* The host's files' build ids, as hex, sorted: each pending copy is checked in log n, not n. */
struct host_id {
	char hex[2 * BUILD_ID_MAX + 1];
	const char *path;
};

static int cmp_host_id(const void *a, const void *b)
{
	return strcmp(((const struct host_id *)a)->hex, ((const struct host_id *)b)->hex);
}

/* The host's files only: the containers' that follow them are what is being checked.  NULL if none, or no memory. */
static struct host_id *host_ids(const struct pd_meta *host, size_t *n)
{
	size_t nr = host && host->nr_host_build_ids > 0 ? (size_t)host->nr_host_build_ids : 0;
	struct host_id *v = nr ? calloc(nr, sizeof(*v)) : NULL;

	*n = v ? nr : 0;
	for (size_t i = 0; i < *n; i++) {
		buildid_hex(host->build_ids[i].id, host->build_ids[i].size, v[i].hex);
		v[i].path = host->build_ids[i].filename;
	}
	if (v)
		qsort(v, nr, sizeof(*v), cmp_host_id);
	return v;
}

/* A host file other than path has the build id hex. */
static bool hosts_id(const struct host_id *v, size_t n, const char *hex, const char *path)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(v[mid].hex, hex) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n && !strcmp(v[lo].hex, hex); lo++)
		if (strcmp(v[lo].path, path))
			return true;
	return false;
}

/* Only for copies kept: never under a host file's build id, which finish has ruled out. */
static void link_for_perf(struct buildid_cache *c, const char *hex, const char *path, const char *copy)
{
	if (!c->link_perf)
		return;
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

int buildid_cache__note(struct buildid_cache *c, __u32 pid, __u64 start, __u64 end, const char *path, __u32 maj,
			__u32 min, __u64 ino, __u8 id[20], __u8 *size)
{
	char hex[2 * BUILD_ID_MAX + 1], key[2 * BUILD_ID_MAX + 40];
	struct stat st, here;
	struct pending *p;
	bool deleted;
	size_t before;
	int fd;

	/* Anonymous memory has no file to keep (a JIT's names: jit_maps.h). */
	if (!c || path[0] != '/' || !strncmp(path, "/memfd:", 7) || jit_maps__anon(path))
		return 0;
	deleted = strstr(path, " (deleted)") != NULL;
	if (!deleted && same_file(c, pid, path, maj, min, ino))
		return 0;
	/* The mapped inode itself: its name on the host is never opened (proc_file.h). */
	fd = proc_open_mapped(pid, start, end, path);
	if (fd < 0) {
		if (fd == -ENOENT || fd == -ESRCH)
			c->gone++;
		else
			c->denied++;
		return 0;
	}
	if (fstat(fd, &st) || buildid_from_fd(fd, id, size)) {
		close(fd);
		c->gone++;
		return 0;
	}
	/* The same inode as the host's at that name (a bind mount, a shared image): looked at, not opened. */
	if (!deleted && !stat(path, &here) && here.st_dev == st.st_dev && here.st_ino == st.st_ino) {
		close(fd);
		return 0;
	}
	buildid_hex(id, *size, hex);
	/*
	 * One copy per file, not per build id: two files that claim one id
	 * are both copied, and the recording relies on neither if their bytes
	 * differ (buildid_cache__finish).
	 */
	snprintf(key, sizeof(key), "%s %llx:%llx", hex, (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	before = c->seen.n;
	if (!c->keep || !strpool_intern(&c->seen, key, NULL) || c->seen.n == before) {
		close(fd);
		return 1; /* its build id in the file; the copy made already, or not wanted */
	}
	/* Copied at the end, off the ring-drain path, from the inode held open now. */
	if (c->nr_pending >= c->max_pending ||
	    array_reserve((void **)&c->pending, &c->cap_pending, c->nr_pending, sizeof(*c->pending))) {
		close(fd);
		c->full++;
		return 1;
	}
	p = &c->pending[c->nr_pending];
	*p = (struct pending){ .fd = fd, .size = st.st_size, .dev = st.st_dev, .ino = st.st_ino, .path = strdup(path) };
	snprintf(p->hex, sizeof(p->hex), "%s", hex);
	if (!p->path) {
		close(fd);
		c->failed++;
		return 1;
	}
	c->nr_pending++;
	return 1;
}

static int digest_cmp(const void *a, const void *b)
{
	const struct pd_digest *x = a, *y = b;

	return memcmp(x, y, offsetof(struct pd_digest, sha256) + sizeof(x->sha256));
}

/*
 * The digests the recording relies on, into m: one per build id.  Two
 * copies under one id with different bytes (a file that claims another's
 * id, seen in the same recording) leave that id without one: the report
 * then uses no copy for it rather than the wrong one.
 */
static int put_digests(struct buildid_cache *c, struct pd_meta *m)
{
	size_t n = 0;

	/* With -N too: the recording made no copy, so no entry there is its own. */
	m->digests_kept = true;
	if (!c->nr_digests)
		return 0;
	m->digests = calloc(c->nr_digests, sizeof(*m->digests));
	if (!m->digests)
		return -ENOMEM;
	qsort(c->digests, c->nr_digests, sizeof(*c->digests), digest_cmp);
	for (size_t i = 0, j; i < c->nr_digests; i = j) {
		bool same = true;

		for (j = i + 1; j < c->nr_digests && c->digests[j].size == c->digests[i].size &&
				!memcmp(c->digests[j].id, c->digests[i].id, c->digests[i].size); j++)
			same = same && !memcmp(c->digests[j].sha256, c->digests[i].sha256, SHA256_SIZE);
		if (same)
			m->digests[n++] = c->digests[i];
		else
			c->ambiguous++;
	}
	m->nr_digests = n;
	return 0;
}

static void keep_digest(struct buildid_cache *c, const char *hex, const __u8 sha[SHA256_SIZE])
{
	struct pd_digest *d;
	size_t n = strlen(hex) / 2;

	if (array_reserve((void **)&c->digests, &c->cap_digests, c->nr_digests, sizeof(*c->digests)))
		return;
	d = &c->digests[c->nr_digests++];
	memset(d, 0, sizeof(*d));
	d->size = n;
	for (size_t i = 0; i < n; i++) {
		unsigned v = 0;

		sscanf(hex + 2 * i, "%2x", &v);
		d->id[i] = v;
	}
	memcpy(d->sha256, sha, SHA256_SIZE);
}

void buildid_cache__finish(struct buildid_cache *c, __u64 budget_ns, struct pd_meta *m)
{
	__u64 deadline = now_ns(CLOCK_MONOTONIC) + budget_ns;
	char dest[PATH_MAX];
	size_t nhost = 0;
	struct host_id *host = c && c->nr_pending ? host_ids(m, &nhost) : NULL;
	/* Without memory for the index no container file can be cleared of claiming a host id: none is kept. */
	bool no_index = c && c->nr_pending && m && m->nr_host_build_ids > 0 && !host;

	for (size_t i = 0; c && i < c->nr_pending; i++) {
		struct pending *p = &c->pending[i];
		__u8 sha[SHA256_SIZE];
		int e = -ETIME;

		/* A container's file that claims a host file's build id: that id's entry is the host's. */
		if (no_index || hosts_id(host, nhost, p->hex, p->path))
			e = -EEXIST;
		else if (!stop_overdue() && now_ns(CLOCK_MONOTONIC) < deadline)
			e = copy(c, p, dest, sizeof(dest), deadline, sha);
		if (!e) {
			c->kept++;
			keep_digest(c, p->hex, sha);
			link_for_perf(c, p->hex, p->path, dest);
		} else if (e == -ENOSPC || e == -EFBIG) {
			c->full++;
		} else if (e == -ETIME) {
			c->late++;
		} else if (e == -EEXIST) {
			c->claimed++;
		} else {
			c->failed++;
		}
		close(p->fd);
		free(p->path);
	}
	free(host);
	if (c) {
		c->nr_pending = 0;
		if (put_digests(c, m))
			pr_warn("out of memory: the build-id cache's copies will not be used by report");
	}
}

void buildid_cache__report(const struct buildid_cache *c)
{
	if (!c || !(c->kept + c->present + c->gone + c->denied + c->full + c->failed + c->late + c->claimed +
		    c->evicted))
		return;
	pr_debug("build-id cache: %u files kept from other mount namespaces or gone from their paths (%u of them "
		 "with the same bytes there already); %u could not be reached (process gone), %u not entered "
		 "(permission), %u over the cache's bound, %u failed to write or changed while copied, %u left for "
		 "lack of time, %u not kept as they claim a host file's build id, %u build ids left without a copy "
		 "as files of different bytes claimed them; %u entered in perf's ~/.debug, %u could not be; "
		 "%u older copies removed for room",
		 c->kept, c->present, c->gone, c->denied, c->full, c->failed, c->late, c->claimed, c->ambiguous,
		 c->linked, c->unlinked, c->evicted);
}
