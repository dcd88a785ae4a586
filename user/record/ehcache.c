// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <xxhash.h>

#include "atomic_file.h"
#include "ehcache.h"
#include "fileio.h"
#include "sha256.h"
#include "util.h"

#define EH_CACHE_MAGIC "SPEHTAB"
/* 2: rows say where rbx was saved, and know SP_EH_RBX and SP_EH_RA_RDI (issue 40).
 * 3: rows for glibc's _init, which has no FDE (ehframe.c's init_rows).
 * 4: the entry's sum is entry_sum's 64-bit one, not SHA-256. */
#define EH_CACHE_VERSION 4
#define EH_CACHE_SUFFIX ".eht"

/* An entry's header, then its rows (struct sp_eh_row, as the BPF side reads them). */
struct eh_cache_hdr {
	char magic[8];
	__u32 version, row_size;
	__u8 id[BUILD_ID_MAX];
	__u8 id_size, pad[3];
	__u8 digest[SHA256_SIZE];
	__u64 nr, fdes, cannot, plt, signal;
	__u32 from_debug_frame, pad2;
	__u8 sum[SHA256_SIZE]; /* entry_sum of this header (sum zeroed) and the rows, in its first 8 bytes */
};

struct eh_cache {
	char dir[PATH_MAX];
	int dfd;
	__u64 max, used;
	bool measured;
	__u64 quiet_ns; /* EH_MEMO_QUIET_NS, or a test's */
	long memos, memo_max; /* memo files in the directory (-1: not counted yet), and EH_MEMO_MAX or a test's */
	struct eh_cache_stats st;
};

/*
 * A file's digest remembered, so that the key of a file no one changed
 * since is not hashed again: SHA-256 of every CFI section of every mapped
 * file was most of the table scan's CPU on a host running big programs
 * (record -a -g -d 0.2 beside two clang builds: 38-55 ms hashing 96
 * files' 25 MB of rows' sections, at each start).  Named by the file's
 * device and inode, it holds what fstat said of the file when it was
 * hashed, and is used only while fstat still says all of it.
 *
 * Only for files whose bytes no one but root (or us) can change
 * (file_is_fixed, as for storing a table) on a local file system: there a
 * write moves ctime, which nobody can set back, and a new file at a reused
 * inode has a ctime of its own.  A network file system's attributes may
 * lag its bytes: hashed every time, as before.  And only for a file
 * unchanged for EH_MEMO_QUIET_NS before it was hashed: a write in the
 * same clock tick as the fstat, after it, would leave ctime as it was.
 *
 * Still, fstat's fields are not the bytes: a device number is reused (a
 * loop device mounted again), an image edited offline keeps them all
 * (debugfs sets ctime).  So a memo serves lookups only; a table is stored
 * under a digest hashed from the bytes (eh_cache__key_hashed), and a memo
 * is written only from such a hash.
 */
#define EH_MEMO_MAGIC "SPEHDIG"
#define EH_MEMO_VERSION 1
#define EH_MEMO_SUFFIX ".ehd"
#define EH_MEMO_QUIET_NS 2000000000ull
/*
 * Memo files the directory may hold: a memo is named by device and inode,
 * so a host whose files get new ones at each start (an overlay mounted
 * again, a container's image restarted) would add memos at every run,
 * with every table a hit and no store ever measuring the directory.
 * 4,096 is some 40 runs' worth of all-new files (record -a here keys 95);
 * past it they are all removed, each written again at its file's next hash.
 */
#define EH_MEMO_MAX 4096

struct eh_memo {
	char magic[8];
	__u32 version, pad;
	__u64 dev, ino, size, mode, uid, gid;
	__s64 mtime_s, mtime_ns, ctime_s, ctime_ns;
	__u8 digest[SHA256_SIZE];
	__u64 sum; /* XXH64 of all the above */
};

struct eh_cache *eh_cache__new(__u64 max_bytes)
{
	struct eh_cache *c;
	char home[PATH_MAX];
	int n;

	if (getenv("SPANPERF_NO_EH_CACHE") || cache_home(home, sizeof(home)))
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->dfd = -1;
	c->max = max_bytes;
	c->quiet_ns = EH_MEMO_QUIET_NS;
	c->memos = -1;
	c->memo_max = EH_MEMO_MAX;
	n = snprintf(c->dir, sizeof(c->dir), "%s/spanperf/ehtab", home);
	if (n < 0 || (size_t)n >= sizeof(c->dir))
		goto fail;
	/* Ours, and no one else's to write in or swap: else the tables are built as before. */
	c->dfd = cache_dir_open(c->dir);
	if (c->dfd < 0)
		goto fail;
	return c;
fail:
	eh_cache__free(c);
	return NULL;
}

void eh_cache__free(struct eh_cache *c)
{
	if (!c)
		return;
	if (c->dfd >= 0)
		close(c->dfd);
	free(c);
}

/* Local file systems, whose inodes' ctime moves at every write of theirs (the memo's condition). */
static bool local_fs(int fd)
{
	static const long local[] = {
		0xEF53,	    /* ext2/3/4 */
		0x58465342, /* xfs */
		0x9123683E, /* btrfs */
		0x01021994, /* tmpfs */
		0x794c7630, /* overlayfs */
		0x73717368, /* squashfs */
		0xF2F52010, /* f2fs */
		0x2fc12fc1, /* zfs */
	};
	struct statfs sfs;

	if (fstatfs(fd, &sfs))
		return false;
	for (size_t i = 0; i < sizeof(local) / sizeof(local[0]); i++)
		if ((long)sfs.f_type == local[i])
			return true;
	return false;
}

static void memo_of(const struct stat *st, struct eh_memo *m)
{
	memset(m, 0, sizeof(*m));
	memcpy(m->magic, EH_MEMO_MAGIC, sizeof(m->magic));
	m->version = EH_MEMO_VERSION;
	m->dev = st->st_dev;
	m->ino = st->st_ino;
	m->size = st->st_size;
	m->mode = st->st_mode;
	m->uid = st->st_uid;
	m->gid = st->st_gid;
	m->mtime_s = st->st_mtim.tv_sec;
	m->mtime_ns = st->st_mtim.tv_nsec;
	m->ctime_s = st->st_ctim.tv_sec;
	m->ctime_ns = st->st_ctim.tv_nsec;
}

static void memo_name(const struct stat *st, char *out, size_t len)
{
	snprintf(out, len, "%llx-%llx.v%d" EH_MEMO_SUFFIX, (unsigned long long)st->st_dev,
		 (unsigned long long)st->st_ino, EH_MEMO_VERSION);
}

/* The digest remembered for the file fstat described as st: 0, else -ENOENT (a damaged entry removed). */
static int memo_load(struct eh_cache *c, const struct stat *st, __u8 digest[SHA256_SIZE])
{
	char name[64];
	struct eh_memo want, m;
	struct stat ms;
	int fd, e = -EBADMSG;

	memo_name(st, name, sizeof(name));
	fd = openat(c->dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -ENOENT;
	/* Ours alone, whole, summed: as read_entry checks a table's file. */
	memo_of(st, &want);
	if (!fstat(fd, &ms) && S_ISREG(ms.st_mode) && ms.st_uid == geteuid() && !(ms.st_mode & 077) &&
	    ms.st_size == sizeof(m) && !pread_full(fd, &m, sizeof(m), 0) &&
	    m.sum == XXH64(&m, offsetof(struct eh_memo, sum), 0)) {
		/* A memo of another stat of the file (it changed since): stale, not damaged. */
		e = memcmp(&m, &want, offsetof(struct eh_memo, digest)) ? -ENOENT : 0;
		if (!e)
			memcpy(digest, m.digest, SHA256_SIZE);
	}
	close(fd);
	if (e == -EBADMSG) {
		c->st.refused++;
		unlinkat(c->dfd, name, 0);
	}
	return e ? -ENOENT : 0;
}

/* The memo files in the directory counted, or (clear) removed: how many there were. */
static long memo_files(struct eh_cache *c, bool clear)
{
	size_t sl = strlen(EH_MEMO_SUFFIX);
	struct dirent *de;
	long n = 0;
	DIR *d = dir_entries(c->dfd);

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);

		if (len <= sl || strcmp(de->d_name + len - sl, EH_MEMO_SUFFIX) || strstr(de->d_name, ".tmp-"))
			continue;
		if (clear && !unlinkat(c->dfd, de->d_name, 0))
			c->st.evicted++;
		n++;
	}
	closedir(d);
	return n;
}

static void memo_store(struct eh_cache *c, const struct stat *st, const __u8 digest[SHA256_SIZE])
{
	char name[64], path[PATH_MAX + sizeof(name) + 1];
	struct atomic_file af;
	struct eh_memo m;
	int e;

	memo_of(st, &m);
	memcpy(m.digest, digest, SHA256_SIZE);
	m.sum = XXH64(&m, offsetof(struct eh_memo, sum), 0);
	/*
	 * Not worth measuring the directory for (a readdir and an fstatat of
	 * each of its thousands of entries: 8 ms of a start under load, for
	 * the first memo of a run): counted once a table's store measured it,
	 * and evicted with the tables, oldest first, when one makes room.
	 */
	if (c->measured && c->used + sizeof(m) > c->max)
		return;
	/*
	 * Their number bounded too (EH_MEMO_MAX): a readdir, no stat, at a
	 * run's first memo; runs whose files all had one count nothing.
	 */
	if (c->memos < 0)
		c->memos = memo_files(c, false);
	if (c->memos >= c->memo_max) {
		memo_files(c, true);
		c->memos = 0;
	}
	memo_name(st, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", c->dir, name);
	e = atomic_file__open(&af, path, 0600, false);
	if (!e)
		e = write_all(af.fd, &m, sizeof(m));
	if (!e)
		e = atomic_file__commit(&af);
	atomic_file__release(&af);
	if (!e) {
		c->used += sizeof(m);
		c->memos++;
	}
}

static bool same_stat(const struct stat *a, const struct stat *b)
{
	struct eh_memo x, y;

	memo_of(a, &x);
	memo_of(b, &y);
	return !memcmp(&x, &y, sizeof(x));
}

/* fd's key, its digest remembered where may_remember and a memo says it, else hashed (and remembered). */
static int key_of(struct eh_cache *c, int fd, const __u8 *id, __u8 id_size, bool may_remember,
		  struct eh_cache_key *k)
{
	struct stat st, after;
	struct timespec ts;
	bool memo;
	__u64 t0, wall;
	int e;

	if (!c)
		return -ENOENT;
	t0 = now_ns(CLOCK_MONOTONIC);
	memset(k, 0, sizeof(*k));
	k->id_size = SP_MIN(id_size, BUILD_ID_MAX);
	memcpy(k->id, id, k->id_size);
	memo = file_is_fixed(fd) && local_fs(fd) && !fstat(fd, &st);
	if (memo && may_remember && !memo_load(c, &st, k->digest)) {
		c->st.remembered++;
		k->remembered = true;
		e = 0;
		goto out;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	wall = ts.tv_sec * 1000000000ull + ts.tv_nsec;
	e = ehtab_digest(fd, k->digest);
	/*
	 * Unchanged while hashed, and quiet long enough before (the memo's
	 * conditions above).  Written from a hash only, never from another
	 * memo: a stale memo is overwritten by the first hash of the file.
	 */
	if (!e && memo && !fstat(fd, &after) && same_stat(&st, &after) && st.st_ctim.tv_sec >= 0 &&
	    st.st_ctim.tv_sec * 1000000000ull + st.st_ctim.tv_nsec + c->quiet_ns <= wall)
		memo_store(c, &st, k->digest);
out:
	c->st.digest_ns += now_ns(CLOCK_MONOTONIC) - t0;
	return e;
}

int eh_cache__key(struct eh_cache *c, int fd, const __u8 *id, __u8 id_size, struct eh_cache_key *k)
{
	return key_of(c, fd, id, id_size, true, k);
}

int eh_cache__key_hashed(struct eh_cache *c, int fd, const __u8 *id, __u8 id_size, struct eh_cache_key *k)
{
	return key_of(c, fd, id, id_size, false, k);
}

void eh_cache__set_quiet_ns(struct eh_cache *c, __u64 ns)
{
	if (c)
		c->quiet_ns = ns;
}

void eh_cache__set_memo_max(struct eh_cache *c, long n)
{
	if (c)
		c->memo_max = n;
}

static int key_debug(struct eh_cache *c, int fd, int debug_fd, const __u8 *id, __u8 id_size, bool may_remember,
		     struct eh_cache_key *k)
{
	static const char version[] = "spanperf ehtab with its debug file 1";
	struct eh_cache_key dk;
	struct sha256 h;
	int e = key_of(c, fd, id, id_size, may_remember, k) ?: key_of(c, debug_fd, id, id_size, may_remember, &dk);

	if (e)
		return e;
	k->remembered |= dk.remembered;
	/* Another name than the file's alone: its table is another (ehtab_from_fds adds the .debug_frame). */
	sha256_init(&h);
	sha256_update(&h, version, sizeof(version));
	sha256_update(&h, k->digest, SHA256_SIZE);
	sha256_update(&h, dk.digest, SHA256_SIZE);
	sha256_final(&h, k->digest);
	return 0;
}

int eh_cache__key_debug(struct eh_cache *c, int fd, int debug_fd, const __u8 *id, __u8 id_size,
			struct eh_cache_key *k)
{
	return key_debug(c, fd, debug_fd, id, id_size, true, k);
}

int eh_cache__key_debug_hashed(struct eh_cache *c, int fd, int debug_fd, const __u8 *id, __u8 id_size,
			       struct eh_cache_key *k)
{
	return key_debug(c, fd, debug_fd, id, id_size, false, k);
}

/* "BUILDID.DIGEST.eht" ("none" for a file without a build id). */
static void entry_name(const struct eh_cache_key *k, char *out, size_t len)
{
	char id[2 * BUILD_ID_MAX + 1], dg[2 * SHA256_SIZE + 1];

	if (k->id_size)
		buildid_hex(k->id, k->id_size, id);
	else
		strcpy(id, "none");
	sha256_hex(k->digest, dg);
	/*
	 * The version in the name: two spanperf builds of different versions on
	 * one host (a worktree beside an install) would otherwise each refuse
	 * and rewrite the other's entries at every start; the unused ones age
	 * out with the rest (dir_make_room).
	 */
	snprintf(out, len, "%s.%s.v%d" EH_CACHE_SUFFIX, id, dg, EH_CACHE_VERSION);
}

/*
 * The entry's sum finds a file damaged since this cache wrote it (a write
 * cut short that the rename did not cover, a bad disk), which is all a sum
 * kept in the file itself can do: whoever could write the file could write
 * a sum to match, SHA-256 or not.  Others are kept out by the checks on the
 * directory's and the file's owner and mode (read_entry), and which rows a
 * file gets by the key's SHA-256 of the bytes parsed (ehtab_digest).  So
 * this sum is a fast 64-bit one, libxxhash's XXH64: SHA-256 of the rows
 * was 5% of a recorder's start (record -a -g -d 0.2), XXH64 a fifth of it.
 */
static __u64 sum64(const void *p, size_t n)
{
	return XXH64(p, n, 0);
}

/* The header's sum (its sum field zeroed) mixed with the rows': into out's first 8 bytes, the rest zero. */
static void entry_sum(const struct eh_cache_hdr *h, const struct sp_eh_row *rows, __u8 out[SHA256_SIZE])
{
	struct eh_cache_hdr copy = *h;
	__u64 v[2];

	memset(copy.sum, 0, sizeof(copy.sum));
	v[0] = sum64(&copy, sizeof(copy));
	v[1] = sum64(rows, h->nr * sizeof(*rows));
	v[0] = sum64(v, sizeof(v));
	memset(out, 0, SHA256_SIZE);
	memcpy(out, v, 8);
}

/*
 * The entry open at fd, checked whole against k: 0 with its rows in tab,
 * else -EBADMSG.  Its rows are read where place says, if it says (else
 * into the heap, tab's own): checked there, so the bytes checked are the
 * bytes used.
 */
static int read_entry(int fd, const struct eh_cache_key *k, size_t max_rows, eh_cache_place_fn place, void *ctx,
		      struct ehtab *tab)
{
	struct eh_cache_hdr h;
	struct stat st;
	__u8 sum[SHA256_SIZE];
	struct sp_eh_row *rows = NULL, *placed = NULL;
	int e = -EBADMSG;

	/* Ours alone: a file someone else made or could write is not one this cache wrote. */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) ||
	    (size_t)st.st_size < sizeof(h) || pread_full(fd, &h, sizeof(h), 0))
		return -EBADMSG;
	if (memcmp(h.magic, EH_CACHE_MAGIC, sizeof(h.magic)) || h.version != EH_CACHE_VERSION ||
	    h.row_size != sizeof(struct sp_eh_row) || h.id_size != k->id_size || memcmp(h.id, k->id, k->id_size) ||
	    memcmp(h.digest, k->digest, sizeof(h.digest)) || !h.nr || h.nr > max_rows ||
	    (__u64)st.st_size != sizeof(h) + h.nr * sizeof(*rows))
		return h.nr > max_rows && (__u64)st.st_size == sizeof(h) + h.nr * sizeof(*rows) ? -E2BIG : -EBADMSG;
	placed = place ? place(ctx, h.nr) : NULL;
	rows = placed ?: malloc(h.nr * sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	if (pread_full(fd, rows, h.nr * sizeof(*rows), sizeof(h)))
		goto cleanup;
	entry_sum(&h, rows, sum);
	if (memcmp(sum, h.sum, sizeof(sum)))
		goto cleanup;
	/* Sorted, as the BPF search needs: the checksum says the bytes are ours, this that they are a table. */
	for (__u64 i = 1; i < h.nr; i++)
		if (rows[i].pc < rows[i - 1].pc)
			goto cleanup;
	memset(tab, 0, sizeof(*tab));
	tab->rows = rows;
	tab->nr = h.nr;
	tab->fdes = h.fdes;
	tab->cannot = h.cannot;
	tab->plt = h.plt;
	tab->signal = h.signal;
	tab->from_debug_frame = h.from_debug_frame;
	rows = NULL;
	e = 0;
cleanup:
	if (rows != placed)
		free(rows);
	return e;
}

int eh_cache__load(struct eh_cache *c, const struct eh_cache_key *k, size_t max_rows, struct ehtab *tab)
{
	return eh_cache__load_at(c, k, max_rows, NULL, NULL, tab);
}

int eh_cache__load_at(struct eh_cache *c, const struct eh_cache_key *k, size_t max_rows, eh_cache_place_fn place,
		      void *ctx, struct ehtab *tab)
{
	char name[2 * BUILD_ID_MAX + 2 * SHA256_SIZE + 16];
	__u64 t0;
	int fd, e;

	if (!c)
		return -ENOENT;
	t0 = now_ns(CLOCK_MONOTONIC);
	entry_name(k, name, sizeof(name));
	/* O_NONBLOCK: whatever is there is opened without waiting (a FIFO is refused by read_entry). */
	fd = openat(c->dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		e = errno == ENOENT ? -ENOENT : -EBADMSG;
	} else {
		e = read_entry(fd, k, max_rows, place, ctx, tab);
		/* Recently used: the last to be evicted. */
		if (!e)
			futimens(fd, NULL);
		close(fd);
	}
	if (e == -EBADMSG) {
		c->st.refused++;
		unlinkat(c->dfd, name, 0);
	}
	if (!e)
		c->st.hits++;
	else
		c->st.misses++;
	c->st.load_ns += now_ns(CLOCK_MONOTONIC) - t0;
	return e == -EBADMSG || e == -ENOENT ? e : (e ? -ENOENT : 0);
}

bool eh_cache__storable(int fd)
{
	return file_is_fixed(fd);
}

void eh_cache__store(struct eh_cache *c, const struct eh_cache_key *k, const struct ehtab *tab)
{
	char name[2 * BUILD_ID_MAX + 2 * SHA256_SIZE + 16], path[PATH_MAX + sizeof(name) + 1];
	struct eh_cache_hdr h = { .magic = EH_CACHE_MAGIC };
	struct atomic_file af;
	__u64 size;
	int e;

	if (!c || !tab->nr)
		return;
	/* A memo's digest may be stale (eh_cache__key_hashed): never a name for rows to keep. */
	if (k->remembered) {
		c->st.store_failed++;
		return;
	}
	size = sizeof(h) + tab->nr * sizeof(*tab->rows);
	if (size > c->max / 4) {
		c->st.store_failed++;
		return;
	}
	c->st.evicted += dir_make_room(c->dfd, c->max, size, &c->used, &c->measured);
	if (c->used + size > c->max) {
		c->st.store_failed++;
		return;
	}
	h.version = EH_CACHE_VERSION;
	h.row_size = sizeof(*tab->rows);
	h.id_size = k->id_size;
	memcpy(h.id, k->id, k->id_size);
	memcpy(h.digest, k->digest, sizeof(h.digest));
	h.nr = tab->nr;
	h.fdes = tab->fdes;
	h.cannot = tab->cannot;
	h.plt = tab->plt;
	h.signal = tab->signal;
	h.from_debug_frame = tab->from_debug_frame;
	entry_sum(&h, tab->rows, h.sum);
	entry_name(k, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", c->dir, name);
	/* A new temporary (O_EXCL), 0600, renamed over any entry of the same name: no reader sees half. */
	e = atomic_file__open(&af, path, 0600, false);
	if (!e)
		e = write_all(af.fd, &h, sizeof(h)) ?: write_all(af.fd, tab->rows, tab->nr * sizeof(*tab->rows));
	if (!e)
		e = atomic_file__commit(&af);
	atomic_file__release(&af);
	if (e) {
		c->st.store_failed++;
		return;
	}
	c->used += size;
	c->st.stored++;
}

void eh_cache__stats(const struct eh_cache *c, struct eh_cache_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!c) {
		st->off = true;
		return;
	}
	*st = c->st;
}
