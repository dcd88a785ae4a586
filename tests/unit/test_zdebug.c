// SPDX-License-Identifier: GPL-2.0
/*
 * The inflated copies of compressed debug files (zdebug.h): a copy holds
 * each section inflated, uncompressed in its headers, and is made once; a
 * file at the entry's name that is not this cache's copy of this source as
 * it is now (planted by another owner or with a mode others may write, a
 * symlink, another build id's copy, cut short, a source changed since) is
 * made again; a source claiming more than the bound, summed over its
 * sections, or more than zlib can hold, is refused before anything is
 * written and said once; a stream that inflates to other than it claims
 * leaves nothing; a source others may write is never copied; the directory
 * stays within its bound, the least recently used copies removed first.  The sources
 * are small ELF files written here.
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
#include <gelf.h>
#include <zlib.h>

#include "zdebug.h"

#define MAX (64ull << 20)
#define PAYLOAD (300u << 10)

static char dir[] = "/tmp/spanperf-zdebug-XXXXXX";
static char cache[PATH_MAX], src[PATH_MAX], entry[PATH_MAX + 64];
static const char hex[] = "deadbeef0102030405060708090a0b0c0d0e0f10";
static const char hex2[] = "deadbeef0102030405060708090a0b0c0d0e0f11";
static unsigned char payload[PAYLOAD];

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(cache, sizeof(cache), "%s/cache/zdebug", dir);
	snprintf(src, sizeof(src), "%s/src.debug", dir);
	snprintf(entry, sizeof(entry), "%s/%s.debug", cache, hex);
	/* DWARF-like: compressible, not constant. */
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (unsigned char)((i * 7) ^ (i >> 9));
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

static void put(int fd, const void *p, size_t n, off_t off)
{
	assert_int_equal(pwrite(fd, p, n, off), (ssize_t)n);
}

/*
 * src written as a debug file: a build-id note of id, then nsec sections
 * of the payload compressed, each claiming claim bytes (0: its true size),
 * then the section names and headers; mode as given.
 */
static void make_src(const char *id_hex, int nsec, __u64 claim, mode_t mode)
{
	static const char names[] = "\0.note.gnu.build-id\0.debug_info\0.shstrtab";
	unsigned char z[PAYLOAD + 1024], note[40] = { 4, 0, 0, 0, 20, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0 };
	uLongf zlen = sizeof(z);
	Elf64_Shdr sh[3 + 8] = { { 0 } };
	Elf64_Ehdr eh = { 0 };
	Elf64_Chdr ch = { .ch_type = ELFCOMPRESS_ZLIB, .ch_addralign = 8 };
	off_t off = sizeof(eh);
	int fd, n = 1;

	assert_true(nsec <= 8);
	for (int i = 0; i < 20; i++)
		sscanf(id_hex + 2 * i, "%2hhx", &note[16 + i]);
	assert_int_equal(compress2(z, &zlen, payload, sizeof(payload), 6), Z_OK);
	unlink(src);
	fd = open(src, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	put(fd, note, sizeof(note), off);
	sh[n++] = (Elf64_Shdr){ .sh_name = 1, .sh_type = SHT_NOTE, .sh_flags = SHF_ALLOC, .sh_offset = off,
				.sh_size = 36, .sh_addralign = 4 };
	off += sizeof(note);
	ch.ch_size = claim ? claim : sizeof(payload);
	for (int i = 0; i < nsec; i++) {
		put(fd, &ch, sizeof(ch), off);
		put(fd, z, zlen, off + sizeof(ch));
		sh[n++] = (Elf64_Shdr){ .sh_name = 20, .sh_type = SHT_PROGBITS, .sh_flags = SHF_COMPRESSED,
					.sh_offset = off, .sh_size = sizeof(ch) + zlen, .sh_addralign = 1 };
		off = (off + sizeof(ch) + zlen + 7) & ~7;
	}
	put(fd, names, sizeof(names), off);
	sh[n] = (Elf64_Shdr){ .sh_name = 32, .sh_type = SHT_STRTAB, .sh_offset = off, .sh_size = sizeof(names),
			      .sh_addralign = 1 };
	off = (off + sizeof(names) + 7) & ~7;
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shoff = off;
	eh.e_shnum = n + 1;
	eh.e_shstrndx = n;
	put(fd, sh, (n + 1) * sizeof(*sh), off);
	put(fd, &eh, sizeof(eh), 0);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

/* The copy for hex of src within max bytes, opened as the report does: >= 0, or -errno. */
static int open_copy_within(const char *id_hex, __u64 max)
{
	int fd = open(src, O_RDONLY | O_CLOEXEC), z;

	assert_true(fd >= 0);
	z = zdebug_open_in(cache, fd, id_hex, max);
	close(fd);
	return z;
}

static int open_copy(const char *id_hex)
{
	return open_copy_within(id_hex, MAX);
}

static off_t inode_size(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

/* What libelf reads of the copy at z: each debug section uncompressed, the payload. */
static void check_copy(int z, int nsec)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	int seen = 0;

	elf_version(EV_CURRENT);
	elf = elf_begin(z, ELF_C_READ, NULL);
	assert_non_null(elf);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		assert_non_null(gelf_getshdr(scn, &sh));
		if (sh.sh_name != 20)
			continue;
		assert_false(sh.sh_flags & SHF_COMPRESSED);
		assert_int_equal(sh.sh_addralign, 8);
		assert_int_equal(sh.sh_offset % 8, 0);
		d = elf_getdata(scn, NULL);
		assert_non_null(d);
		assert_int_equal(d->d_size, sizeof(payload));
		assert_memory_equal(d->d_buf, payload, sizeof(payload));
		seen++;
	}
	assert_int_equal(seen, nsec);
	elf_end(elf);
}

static void empty_cache(void)
{
	char cmd[PATH_MAX];

	snprintf(cmd, sizeof(cmd), "rm -rf %s/cache", dir);
	assert_int_equal(system(cmd), 0);
}

/* The number a shell command of the cache directory (fmt's %s) prints. */
static long long count_of(const char *fmt)
{
	char cmd[PATH_MAX + 64], out[32] = "";
	FILE *p;

	snprintf(cmd, sizeof(cmd), fmt, cache);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(out, sizeof(out), p));
	pclose(p);
	return atoll(out);
}

/* How many files the cache directory holds (temporaries included). */
static int nr_files(void)
{
	return (int)count_of("ls -A %s 2>/dev/null | wc -l");
}

static void test_made_once(void **state)
{
	struct stat st;
	ino_t first;
	int z;

	(void)state;
	empty_cache();
	make_src(hex, 2, 0, 0600);
	z = open_copy(hex);
	assert_true(z >= 0);
	check_copy(z, 2);
	close(z);
	/* Root's alone: the directory 0700, the copy 0600. */
	assert_int_equal(stat(cache, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(stat(entry, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	first = st.st_ino;
	/* Used again as it is. */
	z = open_copy(hex);
	assert_true(z >= 0);
	assert_int_equal(fstat(z, &st), 0);
	assert_int_equal(st.st_ino, first);
	close(z);
	assert_int_equal(nr_files(), 1);
	/* A file with nothing compressed has no copy. */
	empty_cache();
	make_src(hex, 0, 0, 0600);
	assert_int_equal(open_copy(hex), -ENOENT);
	assert_int_equal(nr_files(), 0);
}

/*
 * A byte of the entry's first inflated section changed: nothing the checks
 * read, so a copy still right after the next open was made again.
 */
static void scribble(void)
{
	struct stat st;
	int fd = open(entry, O_WRONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(stat(src, &st), 0);
	put(fd, "X", 1, st.st_size + 64);
	close(fd);
}

/* What is at the entry's name now is not used: a new copy replaces it, right. */
static void assert_remade(void)
{
	struct stat st;
	int z = open_copy(hex);

	assert_true(z >= 0);
	assert_int_equal(fstat(z, &st), 0);
	assert_int_equal(st.st_uid, geteuid());
	assert_int_equal(st.st_mode & 0777, 0600);
	check_copy(z, 2);
	close(z);
	assert_int_equal(lstat(entry, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(nr_files(), 1);
}

/* An empty cache, then the copy of a source of id with two sections, made. */
static void first_copy(const char *id_hex)
{
	int z;

	empty_cache();
	make_src(id_hex, 2, 0, 0600);
	z = open_copy(id_hex);
	assert_true(z >= 0);
	close(z);
}

static void test_planted(void **state)
{
	char cmd[PATH_MAX * 3];
	struct stat st;
	int z;

	(void)state;
	first_copy(hex);
	/* Its own copy, left alone: used as it is (the scribble stays). */
	scribble();
	z = open_copy(hex);
	assert_true(z >= 0);
	assert_int_equal(pread(z, cmd, 1, inode_size(src) + 64), 1);
	assert_int_equal(cmd[0], 'X');
	close(z);
	/* A mode others may write (the bytes are right, but not ours alone). */
	assert_int_equal(chmod(entry, 0644), 0);
	assert_remade();
	/* Another owner's file, exactly our copy otherwise. */
	if (geteuid() == 0) {
		scribble();
		assert_int_equal(chown(entry, 65534, 65534), 0);
		assert_remade();
	}
	/* A symlink to a copy elsewhere. */
	scribble();
	snprintf(cmd, sizeof(cmd), "cp -p %s %s/elsewhere && ln -sf %s/elsewhere %s", entry, dir, dir, entry);
	assert_int_equal(system(cmd), 0);
	assert_remade();
	/* Cut short by a byte. */
	scribble();
	assert_int_equal(stat(entry, &st), 0);
	assert_int_equal(truncate(entry, st.st_size - 1), 0);
	assert_remade();
}

static void test_other_build_id(void **state)
{
	char other[PATH_MAX + 64], cmd[PATH_MAX * 3];

	(void)state;
	/* The copy of another build's file, renamed to this build id's entry. */
	first_copy(hex2);
	snprintf(other, sizeof(other), "%s/%s.debug", cache, hex2);
	snprintf(cmd, sizeof(cmd), "mv %s %s", other, entry);
	assert_int_equal(system(cmd), 0);
	make_src(hex, 2, 0, 0600);
	scribble();
	assert_remade();
	/* The source changed in place since its copy (the same inode and size, another time): made again. */
	scribble();
	assert_int_equal(utimensat(AT_FDCWD, src, (struct timespec[2]){ { 1, 0 }, { 1, 0 } }, 0), 0);
	assert_remade();
}

static void test_huge_claims(void **state)
{
	char err[PATH_MAX + 16], line[512] = "";
	int saved = dup(2), efd;
	FILE *f;

	(void)state;
	empty_cache();
	snprintf(err, sizeof(err), "%s/stderr", dir);
	efd = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(efd >= 0 && saved >= 0);
	dup2(efd, 2);
	/* One section claiming a terabyte: refused from its header, nothing written or allocated. */
	make_src(hex, 1, 1ull << 40, 0600);
	assert_int_equal(open_copy(hex), -EFBIG);
	/* Each of two sections within the bound, their sum over it. */
	make_src(hex, 2, sizeof(payload), 0600);
	assert_int_equal(open_copy_within(hex, sizeof(payload) * 3 / 2), -EFBIG);
	/* Within the bound but past what zlib's ratio lets its bytes hold. */
	make_src(hex, 1, 256ull << 20, 0600);
	assert_int_equal(open_copy_within(hex, 1ull << 30), -EFBIG);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(efd);
	assert_int_equal(nr_files(), 0);
	/* Said once, naming the build id. */
	f = fopen(err, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	assert_non_null(strstr(line, hex));
	assert_null(fgets(line, sizeof(line), f));
	fclose(f);
}

static void test_stream_not_its_claim(void **state)
{
	(void)state;
	empty_cache();
	/* Inflating to more than claimed: stopped at the claim, nothing kept. */
	make_src(hex, 2, sizeof(payload) - 1, 0600);
	assert_int_equal(open_copy(hex), -EBADMSG);
	assert_int_equal(nr_files(), 0);
	/* To less: the same. */
	make_src(hex, 2, sizeof(payload) + 1, 0600);
	assert_int_equal(open_copy(hex), -EBADMSG);
	assert_int_equal(nr_files(), 0);
}

static void test_source_others_may_write(void **state)
{
	(void)state;
	empty_cache();
	make_src(hex, 2, 0, 0666);
	assert_int_equal(open_copy(hex), -EPERM);
	assert_int_equal(nr_files(), 0);
}

/* The bytes of the cache directory's files. */
static long long dir_bytes(void)
{
	return count_of("cat %s/* 2>/dev/null | wc -c");
}

static void test_directory_bound(void **state)
{
	char ids[8][sizeof(hex)], path[PATH_MAX + 64], first[PATH_MAX + 16];
	__u64 max = 1 << 20;
	ino_t ino0 = 0;
	struct stat st;
	int fd;

	(void)state;
	empty_cache();
	snprintf(first, sizeof(first), "%s/first.debug", dir);
	for (int i = 0; i < 8; i++) {
		int z;

		snprintf(ids[i], sizeof(ids[i]), "%.38s%02x", hex, 0x80 + i);
		make_src(ids[i], 2, 0, 0600);
		z = open_copy_within(ids[i], max);
		assert_true(z >= 0);
		if (!i) {
			assert_int_equal(fstat(z, &st), 0);
			ino0 = st.st_ino;
		}
		close(z);
		assert_true(dir_bytes() <= (long long)ZDEBUG_DIR_BYTES(max));
		if (!i) {
			assert_int_equal(rename(src, first), 0);
			continue;
		}
		/* Made in this order, whatever the clock's grain (ties would leave the order to qsort). */
		snprintf(path, sizeof(path), "%s/%s.debug", cache, ids[i]);
		assert_int_equal(utimensat(AT_FDCWD, path, (struct timespec[2]){ { i, 0 }, { i, 0 } }, 0), 0);
		/* The first copy used again each round, as it is: the most recently used, never the one removed. */
		fd = open(first, O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		z = zdebug_open_in(cache, fd, ids[0], max);
		assert_true(z >= 0);
		assert_int_equal(fstat(z, &st), 0);
		assert_int_equal(st.st_ino, ino0);
		close(z);
		close(fd);
	}
	snprintf(path, sizeof(path), "%s/%s.debug", cache, ids[0]);
	assert_int_equal(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/%s.debug", cache, ids[1]);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/%s.debug", cache, ids[7]);
	assert_int_equal(access(path, F_OK), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_made_once),
		cmocka_unit_test(test_planted),
		cmocka_unit_test(test_other_build_id),
		cmocka_unit_test(test_huge_claims),
		cmocka_unit_test(test_stream_not_its_claim),
		cmocka_unit_test(test_source_others_may_write),
		cmocka_unit_test(test_directory_bound),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
