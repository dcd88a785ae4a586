// SPDX-License-Identifier: GPL-2.0
/*
 * The unwind-table cache (ehcache.h): a table kept is read back as it was
 * parsed; a file with the same build id but other CFI bytes never finds
 * another's table; an entry that is not exactly what this cache wrote
 * (another's table under the name, rows changed, cut short, another owner,
 * a mode others may write, a symlink) is refused, removed and counted; the
 * directory stays under its bound; a table is kept only from a file no one
 * else may change; a digest is remembered only for a file unchanged since,
 * and only as its memo says it.  This program's own executable is the
 * file, copied into a scratch folder.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <xxhash.h>

#include "ehcache.h"
#include "ehframe.h"

#define MAX_ROWS (1 << 22)

static char dir[] = "/tmp/spanperf-ehcache-XXXXXX";
static char exe[PATH_MAX], entries[PATH_MAX];

static int setup(void **state)
{
	char cmd[PATH_MAX * 2];

	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(exe, sizeof(exe), "%s/prog", dir);
	snprintf(cmd, sizeof(cmd), "cp /proc/%d/exe %s", getpid(), exe);
	if (system(cmd))
		return -1;
	snprintf(entries, sizeof(entries), "%s/cache/spanperf/ehtab", dir);
	/* Where cache_home looks first: a folder of ours, so honoured as root too. */
	snprintf(cmd, sizeof(cmd), "%s/cache", dir);
	setenv("XDG_CACHE_HOME", cmd, 1);
	unsetenv("SPANPERF_NO_EH_CACHE");
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

/* The empty cache directory: each test starts from nothing kept. */
static void empty_cache(void)
{
	char cmd[PATH_MAX];

	snprintf(cmd, sizeof(cmd), "rm -rf %s/cache", dir);
	assert_int_equal(system(cmd), 0);
}

static const __u8 bid[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

/* The key and the parsed table of path, claiming build id bid. */
static void key_of(struct eh_cache *c, const char *path, struct eh_cache_key *k, struct ehtab *tab)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(eh_cache__key(c, fd, bid, sizeof(bid), k), 0);
	if (tab)
		assert_int_equal(ehtab_from_fd(fd, MAX_ROWS, tab), 0);
	close(fd);
}

/* The one entry in the directory (there must be exactly one). */
static void only_entry(char *out, size_t len)
{
	char cmd[PATH_MAX + 64];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "ls %s | grep -c '\\.eht$'", entries);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_true(fgets(out, len, p) != NULL);
	pclose(p);
	assert_int_equal(atoi(out), 1);
	snprintf(cmd, sizeof(cmd), "ls %s/*.eht", entries);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_true(fgets(out, len, p) != NULL);
	pclose(p);
	out[strcspn(out, "\n")] = 0;
}

static void test_round_trip(void **state)
{
	struct eh_cache_stats st;
	struct eh_cache_key k;
	struct ehtab tab, back;
	struct eh_cache *c;
	char path[PATH_MAX];
	struct stat sb;

	(void)state;
	empty_cache();
	c = eh_cache__new(EH_CACHE_MAX_BYTES);
	assert_non_null(c);
	key_of(c, exe, &k, &tab);
	assert_int_equal(eh_cache__load(c, &k, MAX_ROWS, &back), -ENOENT);
	eh_cache__store(c, &k, &tab);
	assert_int_equal(eh_cache__load(c, &k, MAX_ROWS, &back), 0);
	assert_int_equal(back.nr, tab.nr);
	assert_memory_equal(back.rows, tab.rows, tab.nr * sizeof(*tab.rows));
	assert_int_equal(back.fdes, tab.fdes);
	ehtab_free(&back);
	/* Too many rows for the room left now: a miss, not a refusal (the entry stays). */
	assert_int_equal(eh_cache__load(c, &k, tab.nr - 1, &back), -ENOENT);
	eh_cache__stats(c, &st);
	assert_int_equal(st.hits, 1);
	assert_int_equal(st.stored, 1);
	assert_int_equal(st.refused, 0);
	/* Root's alone: the directory 0700, the entry 0600. */
	assert_int_equal(stat(entries, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0700);
	only_entry(path, sizeof(path));
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	ehtab_free(&tab);
	eh_cache__free(c);
}

/* Where fd's .eh_frame lies. */
static void eh_frame_of(const char *path, off_t *off, size_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf64_Ehdr eh;
	Elf64_Shdr *sh, *ns;
	char *names;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &eh, sizeof(eh), 0), sizeof(eh));
	sh = calloc(eh.e_shnum, sizeof(*sh));
	assert_non_null(sh);
	assert_int_equal(pread(fd, sh, eh.e_shnum * sizeof(*sh), eh.e_shoff), (ssize_t)(eh.e_shnum * sizeof(*sh)));
	ns = &sh[eh.e_shstrndx];
	names = calloc(1, ns->sh_size + 1);
	assert_non_null(names);
	assert_int_equal(pread(fd, names, ns->sh_size, ns->sh_offset), (ssize_t)ns->sh_size);
	*size = 0;
	for (int i = 0; i < eh.e_shnum; i++)
		if (sh[i].sh_name < ns->sh_size && !strcmp(names + sh[i].sh_name, ".eh_frame")) {
			*off = sh[i].sh_offset;
			*size = sh[i].sh_size;
		}
	assert_true(*size > 64);
	free(names);
	free(sh);
	close(fd);
}

/* path's one byte of .eh_frame, 8 before its end (the last FDE's instructions), made other. */
static void flip_cfi_byte(const char *path)
{
	size_t size;
	off_t off = 0;
	__u8 b;
	int fd;

	eh_frame_of(path, &off, &size);
	fd = open(path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &b, 1, off + size - 8), 1);
	b ^= 0x5a;
	assert_int_equal(pwrite(fd, &b, 1, off + size - 8), 1);
	close(fd);
}

/*
 * A forger's file: the same build id (a note any program may write) and
 * the same size, one byte of its .eh_frame other.  It never finds the
 * real file's table, nor the real file its table; and its entry renamed
 * to the real file's name is refused.
 */
static void test_forged(void **state)
{
	char forged[PATH_MAX], cmd[PATH_MAX * 3], path[PATH_MAX];
	struct eh_cache_key k, fk;
	struct ehtab tab, ftab, back;
	struct eh_cache_stats st;
	struct eh_cache *c;

	(void)state;
	empty_cache();
	snprintf(forged, sizeof(forged), "%s/forged", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s", exe, forged);
	assert_int_equal(system(cmd), 0);
	/* A byte of the last FDE's instructions (whatever it was: the bytes are other). */
	flip_cfi_byte(forged);

	c = eh_cache__new(EH_CACHE_MAX_BYTES);
	assert_non_null(c);
	key_of(c, exe, &k, &tab);
	key_of(c, forged, &fk, NULL);
	assert_memory_equal(k.id, fk.id, sizeof(bid));
	assert_memory_not_equal(k.digest, fk.digest, sizeof(k.digest));
	/* The forger's table (rows of its own) kept first: the real file still misses, and parses its own. */
	ftab = tab;
	ftab.rows = malloc(tab.nr * sizeof(*tab.rows));
	assert_non_null(ftab.rows);
	memcpy(ftab.rows, tab.rows, tab.nr * sizeof(*tab.rows));
	for (size_t i = 0; i < ftab.nr; i++)
		ftab.rows[i].cfa_off += 8;
	eh_cache__store(c, &fk, &ftab);
	assert_int_equal(eh_cache__load(c, &k, MAX_ROWS, &back), -ENOENT);
	/* Its entry under the real file's name: the header says another digest, so refused and removed. */
	only_entry(path, sizeof(path));
	eh_cache__store(c, &k, &tab);
	assert_int_equal(eh_cache__load(c, &k, MAX_ROWS, &back), 0);
	ehtab_free(&back);
	{
		/* path is the forger's entry (the only one before the real one was stored). */
		char real[PATH_MAX];
		FILE *p;

		snprintf(cmd, sizeof(cmd), "ls %s/*.eht | grep -v -F %s", entries, path);
		p = popen(cmd, "r");
		assert_non_null(p);
		assert_true(fgets(real, sizeof(real), p) != NULL);
		pclose(p);
		real[strcspn(real, "\n")] = 0;
		assert_int_equal(rename(path, real), 0);
	}
	assert_int_equal(eh_cache__load(c, &k, MAX_ROWS, &back), -EBADMSG);
	eh_cache__stats(c, &st);
	assert_int_equal(st.refused, 1);
	assert_int_equal(st.hits, 1);
	/* Removed: the next load misses and the table is built again. */
	assert_int_equal(eh_cache__load(c, &k, MAX_ROWS, &back), -ENOENT);
	ehtab_free(&tab);
	ehtab_free(&ftab);
	eh_cache__free(c);
}

/* A place for the rows (eh_cache__load_at): a buffer of the test's, its size and how often asked. */
struct place {
	struct sp_eh_row *buf;
	size_t cap, asked;
};

static struct sp_eh_row *place_in(void *ctx, size_t nr)
{
	struct place *pl = ctx;

	pl->asked++;
	return nr <= pl->cap ? pl->buf : NULL;
}

/*
 * Rows read where the caller says are the table's, checked there: a good
 * entry's rows are the parsed ones and tab points at them; a damaged one is
 * refused as from the heap; no room offered, read into the heap as before.
 */
static void test_placed(void **state)
{
	struct eh_cache_key k;
	struct ehtab tab, back;
	struct eh_cache *c;
	struct place pl = {};
	char path[PATH_MAX];
	struct stat sb;
	int fd;
	__u8 b;

	(void)state;
	empty_cache();
	c = eh_cache__new(EH_CACHE_MAX_BYTES);
	assert_non_null(c);
	key_of(c, exe, &k, &tab);
	pl.cap = tab.nr;
	pl.buf = calloc(pl.cap, sizeof(*pl.buf));
	assert_non_null(pl.buf);
	assert_int_equal(eh_cache__load_at(c, &k, MAX_ROWS, place_in, &pl, &back), -ENOENT);
	assert_int_equal(pl.asked, 0);
	eh_cache__store(c, &k, &tab);
	assert_int_equal(eh_cache__load_at(c, &k, MAX_ROWS, place_in, &pl, &back), 0);
	assert_int_equal(pl.asked, 1);
	assert_ptr_equal(back.rows, pl.buf);
	assert_int_equal(back.nr, tab.nr);
	assert_memory_equal(pl.buf, tab.rows, tab.nr * sizeof(*tab.rows));
	/* Too small a place: the heap, which tab owns. */
	pl.cap = tab.nr - 1;
	assert_int_equal(eh_cache__load_at(c, &k, MAX_ROWS, place_in, &pl, &back), 0);
	assert_ptr_not_equal(back.rows, pl.buf);
	assert_memory_equal(back.rows, tab.rows, tab.nr * sizeof(*tab.rows));
	ehtab_free(&back);
	/* A row changed on disk: refused though read into the place, and removed. */
	pl.cap = tab.nr;
	only_entry(path, sizeof(path));
	assert_int_equal(stat(path, &sb), 0);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &b, 1, sb.st_size - 3), 1);
	b ^= 1;
	assert_int_equal(pwrite(fd, &b, 1, sb.st_size - 3), 1);
	close(fd);
	assert_int_equal(eh_cache__load_at(c, &k, MAX_ROWS, place_in, &pl, &back), -EBADMSG);
	assert_true(access(path, F_OK) != 0);
	free(pl.buf);
	ehtab_free(&tab);
	eh_cache__free(c);
}

enum damage { FLIP_ROW, CUT, GROW, MODE, OWNER, SYMLINK, DAMAGES };

/* Every kind of damage to a good entry: each refused, removed and counted; the table then kept again. */
static void test_damaged(void **state)
{
	struct eh_cache_key k;
	struct ehtab tab, back;
	struct eh_cache_stats st;
	struct eh_cache *c;
	char path[PATH_MAX], other[PATH_MAX + 8];
	unsigned want = 0;

	(void)state;
	empty_cache();
	c = eh_cache__new(EH_CACHE_MAX_BYTES);
	assert_non_null(c);
	key_of(c, exe, &k, &tab);
	for (int d = 0; d < DAMAGES; d++) {
		struct stat sb;
		int fd;
		__u8 b;

		eh_cache__store(c, &k, &tab);
		only_entry(path, sizeof(path));
		assert_int_equal(stat(path, &sb), 0);
		switch (d) {
		case FLIP_ROW:
			fd = open(path, O_RDWR);
			assert_int_equal(pread(fd, &b, 1, sb.st_size - 3), 1);
			b ^= 1;
			assert_int_equal(pwrite(fd, &b, 1, sb.st_size - 3), 1);
			close(fd);
			break;
		case CUT:
			assert_int_equal(truncate(path, sb.st_size - 8), 0);
			break;
		case GROW:
			assert_int_equal(truncate(path, sb.st_size + 8), 0);
			break;
		case MODE:
			assert_int_equal(chmod(path, 0622), 0);
			break;
		case OWNER:
			if (geteuid() != 0) {
				unlink(path);
				continue;
			}
			assert_int_equal(chown(path, 65534, 65534), 0);
			break;
		case SYMLINK:
			snprintf(other, sizeof(other), "%s.real", path);
			assert_int_equal(rename(path, other), 0);
			assert_int_equal(symlink(other, path), 0);
			break;
		}
		assert_int_equal(eh_cache__load(c, &k, MAX_ROWS, &back), -EBADMSG);
		want++;
		assert_true(access(path, F_OK) != 0);
		if (d == SYMLINK)
			unlink(other);
	}
	eh_cache__stats(c, &st);
	assert_int_equal(st.refused, want);
	assert_int_equal(st.hits, 0);
	/* Built again, kept again, used. */
	eh_cache__store(c, &k, &tab);
	assert_int_equal(eh_cache__load(c, &k, MAX_ROWS, &back), 0);
	assert_memory_equal(back.rows, tab.rows, tab.nr * sizeof(*tab.rows));
	ehtab_free(&back);
	ehtab_free(&tab);
	eh_cache__free(c);
}

/* Many tables into a small bound: the oldest go, the directory stays under it, the newest is there. */
static void test_bound(void **state)
{
	struct eh_cache_key k;
	struct ehtab tab, back;
	struct eh_cache_stats st;
	struct eh_cache *c;
	__u64 entry, total = 0;
	char cmd[PATH_MAX + 64];
	FILE *p;

	(void)state;
	empty_cache();
	c = eh_cache__new(EH_CACHE_MAX_BYTES);
	key_of(c, exe, &k, &tab);
	eh_cache__free(c);
	entry = 256 + tab.nr * sizeof(*tab.rows);
	c = eh_cache__new(entry * 6);
	assert_non_null(c);
	for (int i = 0; i < 20; i++) {
		k.digest[0] = i; /* twenty files' keys, as far as the cache can tell */
		eh_cache__store(c, &k, &tab);
	}
	assert_int_equal(eh_cache__load(c, &k, MAX_ROWS, &back), 0);
	ehtab_free(&back);
	k.digest[0] = 0;
	assert_int_equal(eh_cache__load(c, &k, MAX_ROWS, &back), -ENOENT);
	eh_cache__stats(c, &st);
	assert_int_equal(st.stored, 20);
	assert_true(st.evicted >= 14);
	snprintf(cmd, sizeof(cmd), "du -sb --apparent-size %s | cut -f1", entries);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_true(fscanf(p, "%llu", (unsigned long long *)&total) == 1);
	pclose(p);
	assert_true(total <= entry * 6 + 4096);
	ehtab_free(&tab);
	eh_cache__free(c);
}

/* Kept only from a file no one else may change: the owner's or root's, writable by no group or other. */
static void test_storable(void **state)
{
	char path[PATH_MAX + 16];
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/owned", dir);
	fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fchmod(fd, 0755), 0);
	assert_true(eh_cache__storable(fd));
	assert_int_equal(fchmod(fd, 0775), 0);
	assert_false(eh_cache__storable(fd));
	assert_int_equal(fchmod(fd, 0757), 0);
	assert_false(eh_cache__storable(fd));
	if (geteuid() == 0) {
		assert_int_equal(fchmod(fd, 0755), 0);
		assert_int_equal(fchown(fd, 65534, 65534), 0);
		assert_false(eh_cache__storable(fd));
	}
	close(fd);
}

/*
 * A table built with a debug file is keyed by both files' bytes: never the
 * file's own table, and another once the debug file's CFI changes.
 */
static void test_debug_key(void **state)
{
	struct eh_cache_key alone, with, changed;
	char dbg[PATH_MAX + 16], cmd[PATH_MAX * 3];
	struct eh_cache *c;
	size_t size;
	off_t off;
	char byte;
	int fd, dfd;

	(void)state;
	empty_cache();
	snprintf(dbg, sizeof(dbg), "%s/prog.debug", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s", exe, dbg);
	assert_int_equal(system(cmd), 0);
	c = eh_cache__new(EH_CACHE_MAX_BYTES);
	assert_non_null(c);
	fd = open(exe, O_RDONLY | O_CLOEXEC);
	dfd = open(dbg, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0 && dfd >= 0);
	assert_int_equal(eh_cache__key(c, fd, bid, sizeof(bid), &alone), 0);
	assert_int_equal(eh_cache__key_debug(c, fd, dfd, bid, sizeof(bid), &with), 0);
	assert_memory_not_equal(alone.digest, with.digest, SHA256_SIZE);
	eh_frame_of(dbg, &off, &size);
	assert_int_equal(pread(dfd, &byte, 1, off + size / 2), 1);
	byte ^= 0x55;
	assert_int_equal(pwrite(dfd, &byte, 1, off + size / 2), 1);
	assert_int_equal(eh_cache__key_debug(c, fd, dfd, bid, sizeof(bid), &changed), 0);
	assert_memory_not_equal(with.digest, changed.digest, SHA256_SIZE);
	close(fd);
	close(dfd);
	eh_cache__free(c);
}

/* How many digests' memos the directory holds. */
static int memos(void)
{
	char cmd[PATH_MAX + 64], out[32];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "ls %s | grep -c '\\.ehd$'", entries);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_true(fgets(out, sizeof(out), p) != NULL);
	pclose(p);
	return atoi(out);
}

static void key_at(struct eh_cache *c, const char *path, struct eh_cache_key *k)
{
	key_of(c, path, k, NULL);
}

/*
 * A file's digest is remembered once it was quiet long enough, and used
 * only while fstat says the same: grown, the file is hashed again; a memo
 * not as written is refused and removed; a file others may write is never
 * remembered.
 */
static void test_memo(void **state)
{
	char path[PATH_MAX + 16], quiet[PATH_MAX + 16], cmd[PATH_MAX * 5];
	struct eh_cache_key kf, k1, k2, k3, k4;
	struct eh_cache_stats st;
	struct eh_cache *c, *d;
	FILE *p;
	int fd;

	(void)state;
	empty_cache();
	snprintf(path, sizeof(path), "%s/memo", dir);
	snprintf(quiet, sizeof(quiet), "%s/fresh", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s && cp %s %s", exe, path, exe, quiet);
	assert_int_equal(system(cmd), 0);
	c = eh_cache__new(EH_CACHE_MAX_BYTES);
	d = eh_cache__new(EH_CACHE_MAX_BYTES);
	assert_non_null(c);
	assert_non_null(d);
	/* Just copied: not quiet for the default 2 s, so never remembered. */
	key_at(d, quiet, &kf);
	key_at(d, quiet, &k2);
	eh_cache__stats(d, &st);
	assert_int_equal(st.remembered, 0);
	assert_int_equal(memos(), 0);
	assert_memory_equal(kf.digest, k2.digest, SHA256_SIZE);
	eh_cache__set_quiet_ns(c, 0);
	key_at(c, path, &k1);
	assert_int_equal(memos(), 1);
	key_at(c, path, &k2);
	eh_cache__stats(c, &st);
	assert_int_equal(st.remembered, 1);
	assert_memory_equal(k1.digest, k2.digest, SHA256_SIZE);
	/* The same bytes as the fresh copy: the same key, remembered or hashed. */
	assert_memory_equal(k1.digest, kf.digest, SHA256_SIZE);
	/* Grown by a byte: the digest (which covers the size) is another, hashed, not remembered. */
	assert_int_equal(truncate(path, lseek(fd = open(path, O_RDONLY), 0, SEEK_END) + 1), 0);
	close(fd);
	key_at(c, path, &k3);
	eh_cache__stats(c, &st);
	assert_int_equal(st.remembered, 1);
	assert_memory_not_equal(k1.digest, k3.digest, SHA256_SIZE);
	/* Its memo's digest changed: refused, removed, hashed again to what the bytes say. */
	snprintf(cmd, sizeof(cmd), "ls %s/*.ehd", entries);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_true(fgets(cmd, sizeof(cmd), p) != NULL);
	pclose(p);
	cmd[strcspn(cmd, "\n")] = 0;
	fd = open(cmd, O_RDWR);
	assert_true(fd >= 0);
	{
		__u8 b;

		assert_int_equal(pread(fd, &b, 1, 100), 1);
		b ^= 1;
		assert_int_equal(pwrite(fd, &b, 1, 100), 1);
	}
	close(fd);
	key_at(c, path, &k4);
	eh_cache__stats(c, &st);
	assert_int_equal(st.remembered, 1);
	assert_int_equal(st.refused, 1);
	assert_memory_equal(k3.digest, k4.digest, SHA256_SIZE);
	/* Writable by others: hashed every time, whatever its memo. */
	assert_int_equal(chmod(path, 0666), 0);
	key_at(c, path, &k4);
	key_at(c, path, &k4);
	eh_cache__stats(c, &st);
	assert_int_equal(st.remembered, 1);
	assert_memory_equal(k3.digest, k4.digest, SHA256_SIZE);
	eh_cache__free(c);
	eh_cache__free(d);
}

/* The memo's layout on disk (ehcache.c's struct eh_memo), to forge one as a stale memo would read. */
struct memo_file {
	char magic[8];
	__u32 version, pad;
	__u64 dev, ino, size, mode, uid, gid;
	__s64 mtime_s, mtime_ns, ctime_s, ctime_ns;
	__u8 digest[SHA256_SIZE];
	__u64 sum;
};

/*
 * A stale memo: made for the bytes of one file, its fields (device, inode,
 * size, mode, owner, times) matching a file whose bytes are others (a loop
 * device's number reused, an image edited offline with ctime set back).
 * Its digest serves a lookup, but no table is ever stored under it: the
 * key to store under is hashed (eh_cache__key_hashed), and that rewrites
 * the memo.
 */
static void test_stale_memo(void **state)
{
	char a[PATH_MAX + 16], b[PATH_MAX + 16], cmd[PATH_MAX * 5];
	struct eh_cache_key ka, stale, real, again;
	struct eh_cache_stats st;
	struct ehtab tab, back;
	struct memo_file m;
	struct eh_cache *c;
	struct stat sb;
	FILE *p;
	int fd;

	(void)state;
	assert_int_equal(sizeof(m), 136);
	empty_cache();
	snprintf(a, sizeof(a), "%s/stale-a", dir);
	snprintf(b, sizeof(b), "%s/stale-b", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s && cp %s %s", exe, a, exe, b);
	assert_int_equal(system(cmd), 0);
	/* b: a's build id and size, another byte of CFI. */
	flip_cfi_byte(b);
	c = eh_cache__new(EH_CACHE_MAX_BYTES);
	assert_non_null(c);
	eh_cache__set_quiet_ns(c, 0);
	key_at(c, a, &ka);
	assert_false(ka.remembered);
	assert_int_equal(memos(), 1);

	/* a's memo, renamed and refitted to b's fstat: what a reused device number makes of it. */
	snprintf(cmd, sizeof(cmd), "ls %s/*.ehd", entries);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_true(fgets(cmd, sizeof(cmd), p) != NULL);
	pclose(p);
	cmd[strcspn(cmd, "\n")] = 0;
	fd = open(cmd, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, &m, sizeof(m)), sizeof(m));
	close(fd);
	assert_int_equal(unlink(cmd), 0);
	assert_int_equal(stat(b, &sb), 0);
	m.dev = sb.st_dev;
	m.ino = sb.st_ino;
	m.size = sb.st_size;
	m.mode = sb.st_mode;
	m.uid = sb.st_uid;
	m.gid = sb.st_gid;
	m.mtime_s = sb.st_mtim.tv_sec;
	m.mtime_ns = sb.st_mtim.tv_nsec;
	m.ctime_s = sb.st_ctim.tv_sec;
	m.ctime_ns = sb.st_ctim.tv_nsec;
	m.sum = XXH64(&m, offsetof(struct memo_file, sum), 0);
	snprintf(cmd, sizeof(cmd), "%s/%llx-%llx.v1.ehd", entries, (unsigned long long)sb.st_dev,
		 (unsigned long long)sb.st_ino);
	fd = open(cmd, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, &m, sizeof(m)), sizeof(m));
	close(fd);

	/* The lookup's key: a's digest, remembered for b's bytes. */
	key_of(c, b, &stale, &tab);
	assert_true(stale.remembered);
	assert_memory_equal(stale.digest, ka.digest, SHA256_SIZE);
	/* b's rows are not kept under it. */
	eh_cache__store(c, &stale, &tab);
	eh_cache__stats(c, &st);
	assert_int_equal(st.stored, 0);
	assert_int_equal(st.store_failed, 1);
	assert_int_equal(eh_cache__load(c, &stale, MAX_ROWS, &back), -ENOENT);
	/* The key to store under is b's own digest, and its memo is b's from now on. */
	fd = open(b, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(eh_cache__key_hashed(c, fd, bid, sizeof(bid), &real), 0);
	close(fd);
	assert_false(real.remembered);
	assert_memory_not_equal(real.digest, ka.digest, SHA256_SIZE);
	eh_cache__store(c, &real, &tab);
	assert_int_equal(eh_cache__load(c, &stale, MAX_ROWS, &back), -ENOENT);
	assert_int_equal(eh_cache__load(c, &real, MAX_ROWS, &back), 0);
	assert_int_equal(back.nr, tab.nr);
	assert_memory_equal(back.rows, tab.rows, tab.nr * sizeof(*tab.rows));
	ehtab_free(&back);
	key_at(c, b, &again);
	assert_true(again.remembered);
	assert_memory_equal(again.digest, real.digest, SHA256_SIZE);
	ehtab_free(&tab);
	eh_cache__free(c);
}

/*
 * Memo files are bounded in number whatever the tables do: memos left by
 * earlier runs count, and once the bound is reached they are removed, each
 * to be written again at its file's next hash.  Each copy is a new inode,
 * as each start is to a host whose overlay gets a new device number.
 */
static void test_memo_bound(void **state)
{
	char path[PATH_MAX + 32], cmd[PATH_MAX * 3];
	struct eh_cache_key k;
	struct eh_cache_stats st;
	struct eh_cache *c;
	int fd;

	(void)state;
	empty_cache();
	c = eh_cache__new(EH_CACHE_MAX_BYTES);
	assert_non_null(c);
	/* Five left by earlier runs (their content is never read here). */
	for (int i = 0; i < 5; i++) {
		snprintf(path, sizeof(path), "%s/0-%x.v1.ehd", entries, i);
		fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
		assert_true(fd >= 0);
		close(fd);
	}
	assert_int_equal(memos(), 5);
	eh_cache__set_quiet_ns(c, 0);
	eh_cache__set_memo_max(c, 4);
	for (int i = 0; i < 10; i++) {
		snprintf(path, sizeof(path), "%s/bound-%d", dir, i);
		snprintf(cmd, sizeof(cmd), "cp %s %s", exe, path);
		assert_int_equal(system(cmd), 0);
		key_at(c, path, &k);
		assert_true(memos() >= 1 && memos() <= 4);
		assert_int_equal(memos(), i % 4 + 1);
	}
	eh_cache__stats(c, &st);
	assert_int_equal(st.evicted, 5 + 4 + 4);
	eh_cache__free(c);
	/* Another run counts what this one left: 2 of 4, so two more fit before they go. */
	c = eh_cache__new(EH_CACHE_MAX_BYTES);
	assert_non_null(c);
	eh_cache__set_quiet_ns(c, 0);
	eh_cache__set_memo_max(c, 4);
	for (int i = 10; i < 13; i++) {
		snprintf(path, sizeof(path), "%s/bound-%d", dir, i);
		snprintf(cmd, sizeof(cmd), "cp %s %s", exe, path);
		assert_int_equal(system(cmd), 0);
		key_at(c, path, &k);
	}
	assert_int_equal(memos(), 1);
	eh_cache__free(c);
}

static void test_off(void **state)
{
	(void)state;
	setenv("SPANPERF_NO_EH_CACHE", "1", 1);
	assert_null(eh_cache__new(EH_CACHE_MAX_BYTES));
	unsetenv("SPANPERF_NO_EH_CACHE");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip), cmocka_unit_test(test_forged), cmocka_unit_test(test_damaged),
		cmocka_unit_test(test_bound), cmocka_unit_test(test_storable), cmocka_unit_test(test_debug_key),
		cmocka_unit_test(test_off), cmocka_unit_test(test_placed), cmocka_unit_test(test_memo),
		cmocka_unit_test(test_stale_memo), cmocka_unit_test(test_memo_bound),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
