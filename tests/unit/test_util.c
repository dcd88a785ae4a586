// SPDX-License-Identifier: GPL-2.0
/* Small pure helpers: lists, numbers, /proc/PID/maps lines, ELF notes, maps, JSON. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "atomic_file.h"
#include "fileio.h"
#include "buildid.h"
#include "hash.h"
#include "parse.h"
#include "sbuf.h"
#include "sha256.h"
#include "sideband.h"
#include "util.h"

static void test_int_list(void **state)
{
	struct int_list l;

	(void)state;
	assert_int_equal(int_list_parse(&l, "5,1-3,2", true, 100), 0);
	assert_int_equal(l.n, 4);
	assert_int_equal(l.v[0], 1);
	assert_int_equal(l.v[3], 5);
	assert_true(int_list_has(&l, 2));
	assert_false(int_list_has(&l, 4));
	int_list_free(&l);
	assert_int_not_equal(int_list_parse(&l, "1-3", false, 100), 0); /* no ranges for pids */
	assert_int_not_equal(int_list_parse(&l, "101", true, 100), 0);
	assert_int_not_equal(int_list_parse(&l, ",", true, 100), 0);
	assert_int_not_equal(int_list_parse(&l, "", true, 100), 0);
	assert_int_not_equal(int_list_parse(&l, "3-", true, 100), 0);
	assert_null(l.v);
}

static void test_numbers(void **state)
{
	uint64_t v;
	double d;

	(void)state;
	assert_int_equal(parse_u64("0x10", &v, 0, 100), 0);
	assert_int_equal(v, 16);
	assert_int_equal(parse_u64("101", &v, 0, 100), -ERANGE);
	assert_int_equal(parse_u64("-1", &v, 0, 100), -EINVAL);
	assert_int_equal(parse_u64("1 ", &v, 0, 100), -EINVAL);
	assert_int_equal(parse_u64("", &v, 0, 100), -EINVAL);
	assert_int_equal(parse_seconds("0.25", &d), 0);
	assert_true(d == 0.25);
	assert_int_not_equal(parse_seconds("inf", &d), 0);
	assert_int_not_equal(parse_seconds("-1", &d), 0);
	assert_int_not_equal(parse_seconds("1s", &d), 0);
}

static void test_procmaps(void **state)
{
	struct procmap m;

	(void)state;
	assert_int_equal(procmaps_parse_line("55d0a0a00000-55d0a0a21000 r-xp 00002000 fd:01 1234567   "
					     "/usr/bin/my prog (deleted)\n", &m), 0);
	assert_int_equal(m.start, 0x55d0a0a00000);
	assert_int_equal(m.end, 0x55d0a0a21000);
	assert_int_equal(m.pgoff, 0x2000);
	assert_int_equal(m.maj, 0xfd);
	assert_int_equal(m.min, 1);
	assert_int_equal(m.ino, 1234567);
	assert_int_equal(m.prot, PROT_READ | PROT_EXEC);
	assert_int_equal(m.flags, MAP_PRIVATE);
	assert_string_equal(m.path, "/usr/bin/my prog (deleted)");
	assert_int_equal(procmaps_parse_line("7f00-7f01 rwxs 0 00:00 0\n", &m), 0);
	assert_string_equal(m.path, "//anon");
	assert_int_equal(m.flags, MAP_SHARED);
	assert_int_equal(procmaps_parse_line("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]", &m), 0);
	assert_string_equal(m.path, "[vsyscall]");
	assert_int_equal(procmaps_parse_line("garbage", &m), -EINVAL);
	assert_int_equal(procmaps_parse_line("2000-1000 r-xp 0 0:0 0 /x", &m), -EINVAL);
	assert_int_equal(procmaps_parse_line("", &m), -EINVAL);
}

static void test_notes(void **state)
{
	/* namesz 4 "GNU\0", descsz 20, type 3, then the id. */
	unsigned char notes[64] = { 4, 0, 0, 0, 20, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0 };
	unsigned char other[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0 };
	unsigned char both[76];
	__u8 id[BUILD_ID_MAX], size;
	char hex[41];

	(void)state;
	for (int i = 0; i < 20; i++)
		notes[16 + i] = i + 1;
	assert_int_equal(buildid_from_notes(notes, 36, id, &size), 0);
	assert_int_equal(size, 20);
	buildid_hex(id, size, hex);
	assert_string_equal(hex, "0102030405060708090a0b0c0d0e0f1011121314");
	/* Another note first, then ours. */
	memcpy(both, other, 12);
	memcpy(both + 12, notes, 36);
	assert_int_equal(buildid_from_notes(both, 48, id, &size), 0);
	assert_int_equal(buildid_from_notes(notes, 35, id, &size), -EINVAL); /* cut short */
	assert_int_equal(buildid_from_notes(other, 12, id, &size), -ENOENT);
	notes[4] = 0xff; /* descsz past the end */
	assert_int_not_equal(buildid_from_notes(notes, 36, id, &size), 0);
}

static void test_build_id_of_self(void **state)
{
	__u8 id[BUILD_ID_MAX], size;

	(void)state;
	/* Debian builds with --build-id; /proc/self/exe is this test binary. */
	assert_int_equal(buildid_from_file("/proc/self/exe", id, &size), 0);
	assert_int_equal(size, 20);
	assert_int_not_equal(buildid_from_file("/etc/hostname", id, &size), 0);
	assert_int_equal(buildid_from_file("/nonexistent", id, &size), -ENOENT);
}

static void test_dso_set(void **state)
{
	struct dso_set *s = dso_set__new();
	char name[64];

	(void)state;
	assert_non_null(s);
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 1000; i++) {
			snprintf(name, sizeof(name), "/lib/lib%d.so", i);
			assert_int_equal(dso_set__add(s, name), 0);
		}
	assert_int_equal(dso_set__add(s, "[vdso]"), 0);
	assert_int_equal(dso_set__add(s, "//anon"), 0);
	assert_int_equal(dso_set__count(s), 1000);
	dso_set__free(s);
	dso_set__free(NULL);
}

/* path's build id through the memo, as the agent's windows read it: from a descriptor each time. */
static int memo_id(struct buildid_memo *m, const char *path, __u8 id[BUILD_ID_MAX], __u8 *size)
{
	int fd = open(path, O_RDONLY), e;

	assert_true(fd >= 0);
	e = buildid_memo__fd(m, fd, id, size);
	close(fd);
	return e;
}

/*
 * buildid_memo reads a file's notes once while it stays the same file: a
 * copy of this test's own binary rewritten in place with another build id,
 * at the same size and with its old mtime put back, is read again (its
 * ctime moved); and a memo at its bound forgets, never mixes files up.
 */
static void test_buildid_memo(void **state)
{
	char dir[] = "/tmp/sp-bidmemo-XXXXXX", path[64], other[64];
	__u8 id[BUILD_ID_MAX], got[BUILD_ID_MAX], size, got_size;
	struct buildid_memo *m = buildid_memo__new(1);
	struct stat st;
	char *buf, *at;
	size_t len;
	FILE *f;

	(void)state;
	assert_non_null(m);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/lib.so", dir);
	snprintf(other, sizeof(other), "%s/other", dir);
	f = fopen(other, "w");
	assert_non_null(f);
	fputs("not ELF", f);
	fclose(f);
	assert_int_equal(buildid_from_file("/proc/self/exe", id, &size), 0);
	assert_int_equal(read_file_all("/proc/self/exe", &buf, &len), 0);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	fclose(f);
	for (int round = 0; round < 2; round++) { /* read, then kept */
		assert_int_equal(memo_id(m, path, got, &got_size), 0);
		assert_int_equal(got_size, size);
		assert_memory_equal(got, id, size);
	}
	/* The bound is one inode: the other file takes its place, and each still reads as itself. */
	assert_int_not_equal(memo_id(m, other, got, &got_size), 0);
	assert_int_equal(memo_id(m, path, got, &got_size), 0);
	assert_memory_equal(got, id, size);

	at = memmem(buf, len, id, size);
	assert_non_null(at);
	at[0] ^= 0xff;
	assert_int_equal(stat(path, &st), 0);
	f = fopen(path, "r+");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	fclose(f);
	assert_int_equal(utimensat(AT_FDCWD, path, (struct timespec[2]){ st.st_atim, st.st_mtim }, 0), 0);
	assert_int_equal(memo_id(m, path, got, &got_size), 0);
	assert_int_equal(got[0], (__u8)(id[0] ^ 0xff));
	assert_memory_equal(got + 1, id + 1, size - 1);
	assert_int_equal(buildid_memo__fd(NULL, -1, got, &got_size) < 0, 1);

	unlink(path);
	unlink(other);
	rmdir(dir);
	free(buf);
	buildid_memo__free(m);
	buildid_memo__free(NULL);
}

static void test_u64_map(void **state)
{
	struct u64_map m = {};

	(void)state;
	assert_null(u64_map_get(&m, 1, false));
	for (uint64_t i = 0; i < 10000; i++)
		*u64_map_get(&m, i * 7919, true) = i;
	assert_int_equal(m.n, 10000);
	for (uint64_t i = 0; i < 10000; i++)
		assert_int_equal(*u64_map_get(&m, i * 7919, false), i);
	assert_null(u64_map_get(&m, 3, false));
	/* Every other key out, then in again: the rest still found, and the map no bigger. */
	for (int round = 0; round < 2; round++) {
		size_t cap = m.cap;

		for (uint64_t i = 0; i < 10000; i += 2)
			u64_map_del(&m, i * 7919);
		u64_map_del(&m, 3);
		assert_int_equal(m.n, 5000);
		for (uint64_t i = 0; i < 10000; i++) {
			uint64_t *v = u64_map_get(&m, i * 7919, false);

			if (i % 2)
				assert_int_equal(*v, i);
			else
				assert_null(v);
		}
		for (uint64_t i = 0; i < 10000; i += 2)
			*u64_map_get(&m, i * 7919, true) = i;
		assert_int_equal(m.n, 10000);
		assert_int_equal(m.cap, cap);
	}
	u64_map_free(&m);
	/* 64 keys in 128 slots, in runs of probes: entries taken out of them one by one. */
	for (uint64_t k = 0; k < 64; k++)
		*u64_map_get(&m, k, true) = k + 1;
	for (uint64_t k = 0; k < 64; k += 3) {
		u64_map_del(&m, k);
		for (uint64_t x = 0; x < 64; x++) {
			uint64_t *v = u64_map_get(&m, x, false);

			if (x <= k && x % 3 == 0)
				assert_null(v);
			else
				assert_int_equal(*v, x + 1);
		}
	}
	u64_map_free(&m);
	u64_map_del(&m, 1); /* an empty map */
}

/* Colliding hashes still find their own entries; 10k strings keep stable ids and pointers. */
static bool eq_u64(const void *ctx, size_t idx)
{
	const uint64_t *c = ctx;

	return c[1 + idx] == c[0];
}

static void test_hindex_strpool(void **state)
{
	struct hindex m = {};
	uint64_t keys[1 + 100] = {};
	struct strpool p = {};
	const char *first[10000];
	char buf[32];
	size_t id;

	(void)state;
	for (size_t i = 0; i < 100; i++) {
		keys[1 + i] = i * 7;
		assert_int_equal(hindex_add(&m, i % 3, i), 0); /* three hashes for 100 entries */
	}
	for (size_t i = 0; i < 100; i++) {
		keys[0] = i * 7;
		assert_int_equal(hindex_find(&m, i % 3, eq_u64, keys), (long)i);
	}
	keys[0] = 5;
	assert_int_equal(hindex_find(&m, 2, eq_u64, keys), -1);
	hindex_free(&m);
	hindex_free(NULL);

	for (int i = 0; i < 10000; i++) {
		snprintf(buf, sizeof(buf), "s%d", i);
		first[i] = strpool_intern(&p, buf, &id);
		assert_non_null(first[i]);
		assert_int_equal(id, i);
	}
	for (int i = 0; i < 10000; i++) {
		snprintf(buf, sizeof(buf), "s%d", i);
		assert_ptr_equal(strpool_intern(&p, buf, &id), first[i]);
		assert_int_equal(id, i);
	}
	assert_int_equal(p.n, 10000);
	strpool_free(&p);
	strpool_free(NULL);
}

static void test_json(void **state)
{
	struct sbuf b = {};

	(void)state;
	sbuf_json_str(&b, "a\"b\\c\n\x01");
	sbuf_zero(&b, 1);
	assert_string_equal(b.p, "\"a\\\"b\\\\c\\u000a\\u0001\"");
	/*
	 * Not UTF-8 (RFC 3629): a stray byte, an overlong '/', a UTF-16
	 * surrogate, past U+10FFFF, cut short; each a U+FFFD, valid ones kept.
	 */
	b.len = 0;
	sbuf_json_str(&b, "\xff|\xc0\xaf|\xed\xa0\x80|\xf4\x90\x80\x80|\xe2\x82|\xc3\xa9\xf0\x9f\x98\x80\xed\x9f\xbf");
	sbuf_zero(&b, 1);
	assert_string_equal(b.p, "\"\\ufffd|\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd\\ufffd|\\ufffd\\ufffd|"
				 "\xc3\xa9\xf0\x9f\x98\x80\xed\x9f\xbf\"");
	sbuf_free(&b);
	/*
	 * What a strict decoder refuses is replaced, byte by byte: a lead byte
	 * past F4, an overlong form, a surrogate, a code point past U+10FFFF
	 * (fuzz_page found the first in a JIT symbol).  Valid ones pass.
	 */
	sbuf_json_str(&b, "\xff\x83|\xe0\x80\x80|\xed\xa0\x80|\xf4\x90\x80\x80|\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	sbuf_zero(&b, 1);
	assert_string_equal(b.p, "\"\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd\\ufffd|"
				 "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
	sbuf_free(&b);
	/* The same rule for raw UTF-8 (pprof's strings), to the length given: a sequence cut by it is none. */
	sbuf_add_utf8(&b, "a\xff" "b\xc3\xa9\xe2\x82\xac", 7);
	sbuf_zero(&b, 1);
	assert_string_equal(b.p, "a\xef\xbf\xbd" "b\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd");
	sbuf_free(&b);
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Replaced whole or not at all, with the mode asked for, the old file kept on request. */
static void test_atomic_file(void **state)
{
	char dir[] = "/tmp/spanperf-af-XXXXXX", path[64], old[80], buf[8] = "";
	struct atomic_file f;
	struct stat st;
	FILE *fp;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/out", dir);
	snprintf(old, sizeof(old), "%s.old", path);
	assert_int_equal(atomic_file__open(&f, path, 0644, true), 0);
	assert_int_equal(write(f.fd, "one", 3), 3);
	assert_int_equal(atomic_file__commit(&f), 0);
	atomic_file__release(&f);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_int_equal(count_entries(dir), 1); /* no .old of a file that did not exist */

	assert_int_equal(atomic_file__open(&f, path, 0600, true), 0);
	fp = atomic_file__stdio(&f);
	assert_non_null(fp);
	fputs("two", fp);
	assert_int_equal(atomic_file__commit(&f), 0);
	atomic_file__release(&f);
	fp = fopen(old, "r");
	assert_non_null(fp);
	assert_non_null(fgets(buf, sizeof(buf), fp));
	fclose(fp);
	assert_string_equal(buf, "one");

	/* Abandoned: the temporary goes, the file stays as it was. */
	assert_int_equal(atomic_file__open(&f, path, 0600, false), 0);
	assert_int_equal(write(f.fd, "three", 5), 5);
	assert_int_equal(count_entries(dir), 3);
	atomic_file__release(&f);
	assert_int_equal(count_entries(dir), 2);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 3);

	assert_int_equal(atomic_file__open(&f, "/nonexistent-dir/out", 0600, false), -ENOENT);
	atomic_file__release(&f);
	atomic_file__release(NULL);
	unlink(path);
	unlink(old);
	assert_int_equal(rmdir(dir), 0);
}

/* A full disk names its file system, found by the file's device in mountinfo; other errors are strerror's. */
static void test_write_strerror(void **state)
{
	char buf[512];

	(void)state;
	assert_string_equal(write_strerror(-EIO, "/proc/self/status", buf, sizeof(buf)), strerror(EIO));
	assert_string_equal(write_strerror(-ENOSPC, "/proc/self/status", buf, sizeof(buf)),
			    "no space left on proc (mounted at /proc)");
	/* A file not there yet: its directory's file system. */
	assert_string_equal(write_strerror(-EDQUOT, "/proc/no-such-file", buf, sizeof(buf)),
			    "disk quota exceeded on proc (mounted at /proc)");
	assert_non_null(strstr(write_strerror_fd(-ENOSPC, -1, buf, sizeof(buf)), "no space left on"));
}

/* FIPS 180-4's examples, and a million bytes fed in uneven pieces (the copy's 64 KiB reads are not block-aligned). */
static void check_sha256(void)
{
	static const struct { const char *in, *hex; } v[] = {
		{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
	};
	char hex[2 * SHA256_SIZE + 1], *a;
	uint8_t d[SHA256_SIZE];
	struct sha256 s;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		sha256_init(&s);
		sha256_update(&s, v[i].in, strlen(v[i].in));
		sha256_final(&s, d);
		sha256_hex(d, hex);
		assert_string_equal(hex, v[i].hex);
	}
	a = malloc(1000000);
	assert_non_null(a);
	memset(a, 'a', 1000000);
	sha256_init(&s);
	for (size_t off = 0, step = 1; off < 1000000; off += step, step = step * 7 % 4099 + 1)
		sha256_update(&s, a + off, off + step > 1000000 ? 1000000 - off : step);
	sha256_final(&s, d);
	sha256_hex(d, hex);
	assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(a);
}

/* Both ways: the CPU's SHA extensions where it has them, and the portable code. */
static void test_sha256(void **state)
{
	(void)state;
	check_sha256();
	sha256_use_cpu(false);
	check_sha256();
	sha256_use_cpu(true);
}

struct seen {
	int n, stop_at;
	__u32 last;
	bool self;
};

static int see(void *ctx, __u32 pid)
{
	struct seen *s = ctx;

	s->n++;
	s->last = pid;
	s->self |= pid == (__u32)getpid();
	return s->n == s->stop_at ? 7 : 0;
}

/* The processes a recording starts with: the list's in order, or all of /proc; fn's non-zero ends the walk. */
static void test_each_pid(void **state)
{
	struct int_list l;
	struct seen s = {};

	(void)state;
	assert_int_equal(int_list_parse(&l, "30,10,20", false, 100), 0);
	assert_int_equal(sideband_each_pid(&l, see, &s), 0);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.last, 30);
	s = (struct seen){ .stop_at = 2 };
	assert_int_equal(sideband_each_pid(&l, see, &s), 7);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.last, 20);
	int_list_free(&l);
	s = (struct seen){};
	assert_int_equal(sideband_each_pid(NULL, see, &s), 0);
	assert_true(s.self && s.n > 1);
}

/* A word: letters, digits and '_' only, at least one; n bounds it, not a NUL. */
static void test_str_is_word(void **state)
{
	(void)state;
	assert_true(str_is_word("sched_switch", 12));
	assert_true(str_is_word("9p", 2));
	assert_true(str_is_word("ab:cd", 2));
	assert_false(str_is_word("ab:cd", 3));
	assert_false(str_is_word("", 0));
	assert_false(str_is_word("a-b", 3));
	assert_false(str_is_word("caf\xc3\xa9", 5));
}

/*
 * A cache's directory: made 0700 and opened when ours; refused (nothing
 * made under it) when it is writable by others, or when a directory above
 * it is another user's symlink; never opened through a symlink.
 */
static void test_cache_dir_open(void **state)
{
	char d[] = "/tmp/sp-cdo-XXXXXX", p[128], q[128], cmd[160];
	struct stat st;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(d));
	snprintf(p, sizeof(p), "%s/a/b", d);
	fd = cache_dir_open(p);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	close(fd);
	assert_int_equal(chmod(p, 0777), 0);
	assert_int_equal(cache_dir_open(p), -EPERM);
	/* Root's symlink to a directory of root's: still not opened through it. */
	snprintf(q, sizeof(q), "%s/ln", d);
	assert_int_equal(symlink(p, q), 0);
	assert_int_equal(chmod(p, 0700), 0);
	assert_true(cache_dir_open(q) < 0);
	if (geteuid() == 0) {
		/* Another user's symlink above: their target gains nothing, not even the directory. */
		snprintf(q, sizeof(q), "%s/up", d);
		assert_int_equal(symlink(d, q), 0);
		assert_int_equal(lchown(q, 65534, 65534), 0);
		snprintf(q, sizeof(q), "%s/up/c", d);
		assert_int_equal(cache_dir_open(q), -EPERM);
		snprintf(q, sizeof(q), "%s/c", d);
		assert_int_equal(stat(q, &st), -1);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", d);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_int_list),  cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_procmaps),  cmocka_unit_test(test_notes),
		cmocka_unit_test(test_build_id_of_self), cmocka_unit_test(test_dso_set),
		cmocka_unit_test(test_buildid_memo),
		cmocka_unit_test(test_u64_map),	  cmocka_unit_test(test_json),
		cmocka_unit_test(test_hindex_strpool), cmocka_unit_test(test_atomic_file),
		cmocka_unit_test(test_sha256), cmocka_unit_test(test_write_strerror),
		cmocka_unit_test(test_each_pid),      cmocka_unit_test(test_str_is_word),
		cmocka_unit_test(test_cache_dir_open),
	};

	return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
