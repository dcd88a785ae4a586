// SPDX-License-Identifier: GPL-2.0
/*
 * The ELF read budget: a file that declares many sections over one sparse
 * hole is read only up to its budget, whatever reader asks, and nothing
 * stays held after; a real file reads as before.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "buildid.h"
#include "elf_budget.h"
#include "elf_syms.h"
#include "fileio.h"

/*
 * A copy of this test binary at path, with nr more headers of type over one
 * sparse hole of hole bytes; its own notes made plain data (no build id to
 * stop a scan at).
 */
static void craft(const char *path, unsigned nr, __u32 type, __u64 hole, __u64 entsize)
{
	int in = open("/proc/self/exe", O_RDONLY), out = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	struct stat st;
	Elf64_Ehdr eh;
	Elf64_Shdr *sh;
	char *img;
	__u64 hole_off, shoff;

	assert_true(in >= 0 && out >= 0 && !fstat(in, &st));
	img = malloc(st.st_size);
	assert_non_null(img);
	assert_int_equal(pread(in, img, st.st_size, 0), st.st_size);
	memcpy(&eh, img, sizeof(eh));
	sh = calloc(eh.e_shnum + nr, sizeof(*sh));
	assert_non_null(sh);
	memcpy(sh, img + eh.e_shoff, eh.e_shnum * sizeof(*sh));
	for (unsigned i = 0; i < eh.e_shnum; i++)
		if (sh[i].sh_type == SHT_NOTE)
			sh[i].sh_type = SHT_PROGBITS;
	hole_off = (st.st_size + 4095) & ~4095ull;
	shoff = hole_off + hole;
	for (unsigned i = 0; i < nr; i++)
		sh[eh.e_shnum + i] = (Elf64_Shdr){ .sh_type = type, .sh_offset = hole_off, .sh_size = hole,
						   .sh_addralign = 8, .sh_entsize = entsize };
	eh.e_shnum += nr;
	eh.e_shoff = shoff;
	memcpy(img, &eh, sizeof(eh));
	assert_int_equal(pwrite(out, img, st.st_size, 0), st.st_size);
	assert_int_equal(pwrite(out, sh, eh.e_shnum * sizeof(*sh), shoff), (ssize_t)(eh.e_shnum * sizeof(*sh)));
	free(sh);
	free(img);
	close(in);
	close(out);
}

static char dir[] = "/tmp/sp-elfbudget-XXXXXX";

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[64];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

static void assert_nothing_held(void)
{
	struct elf_budget_stats st;

	elf_budget_stats(&st);
	assert_int_equal(st.held, 0);
}

static void test_real_files_read(void **state)
{
	__u8 id[BUILD_ID_MAX], size;
	int fd = open_regular("/proc/self/exe");

	(void)state;
	assert_int_equal(buildid_from_file("/proc/self/exe", id, &size), 0);
	assert_true(elf_syms_count("/proc/self/exe") > 10);
	assert_int_equal(elf_budget_vet(fd, ELF_BUDGET_DWARF, NULL), 0);
	close(fd);
	assert_nothing_held();
}

static void test_many_note_headers(void **state)
{
	char path[64];
	__u8 id[BUILD_ID_MAX], size;
	struct elf_budget_stats before, after;

	(void)state;
	snprintf(path, sizeof(path), "%s/notes", dir);
	craft(path, 1000, SHT_NOTE, 1 << 20, 0);
	elf_budget_stats(&before);
	/* Each 1 MiB over the hole: the first fits, the second is over; 1 GB before the budget. */
	assert_int_not_equal(buildid_from_file(path, id, &size), 0);
	elf_budget_stats(&after);
	assert_true(after.bytes - before.bytes <= ELF_BUDGET_NOTES);
	assert_true(after.refused > before.refused);
	assert_nothing_held();
}

static void test_many_small_sections_counted(void **state)
{
	char path[64];
	struct elf_budget b;
	Elf_Scn *scn = NULL;
	unsigned read = 0;
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/small", dir);
	craft(path, 500, SHT_PROGBITS, 64, 0);
	fd = open_regular(path);
	assert_true(fd >= 0);
	assert_non_null(elf_budget_begin(&b, fd, false, 1 << 30, path));
	while ((scn = elf_nextscn(b.elf, scn)))
		read += elf_budget_data(&b, scn) != NULL;
	assert_int_equal(b.err, -E2BIG);
	assert_true(read <= ELF_BUDGET_SECTIONS);
	/* Asked again, a kept section costs nothing more. */
	assert_true(b.used <= (1u << 30));
	elf_budget_end(&b);
	close(fd);
	assert_nothing_held();
}

/* One symbol table over a 600 MiB hole: libelf would have read it all, and its strings. */
static void test_symbols_over_budget(void **state)
{
	char path[64];
	struct elf_budget_stats before, after;

	(void)state;
	snprintf(path, sizeof(path), "%s/syms", dir);
	craft(path, 1, SHT_SYMTAB, 600ull << 20, sizeof(Elf64_Sym));
	elf_budget_stats(&before);
	assert_int_equal(elf_syms_count(path), -EFBIG);
	elf_budget_stats(&after);
	assert_true(after.bytes - before.bytes < (1u << 20));
	assert_nothing_held();
}

/* libdw maps what it is given: sections summed past the file's size overlap, which no real file's do. */
static void test_dwarf_overlap(void **state)
{
	char path[64];
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/dwarf1", dir);
	craft(path, 1, SHT_PROGBITS, 1 << 20, 0);
	fd = open_regular(path);
	assert_int_equal(elf_budget_vet(fd, ELF_BUDGET_DWARF, path), 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/dwarf2", dir);
	craft(path, 2, SHT_PROGBITS, 1 << 20, 0);
	fd = open_regular(path);
	assert_int_equal(elf_budget_vet(fd, ELF_BUDGET_DWARF, path), -EFBIG);
	close(fd);
	assert_nothing_held();
}

static void test_extended_section_count(void **state)
{
	char path[64];
	__u8 id[BUILD_ID_MAX], size;
	Elf64_Ehdr eh;
	Elf64_Shdr sh0;
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/ext", dir);
	craft(path, 0, 0, 4096, 0);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &eh, sizeof(eh), 0), sizeof(eh));
	assert_int_equal(pread(fd, &sh0, sizeof(sh0), eh.e_shoff), sizeof(sh0));
	/* A quarter of a billion sections claimed in section 0: libelf would set up every one. */
	eh.e_shnum = 0;
	sh0.sh_size = 1ull << 28;
	assert_int_equal(pwrite(fd, &eh, sizeof(eh), 0), sizeof(eh));
	assert_int_equal(pwrite(fd, &sh0, sizeof(sh0), eh.e_shoff), sizeof(sh0));
	assert_int_equal(buildid_from_fd(fd, id, &size), -E2BIG);
	close(fd);
}

/*
 * The facts readers' two steps: an x86-64 ELF64 file known as one (and an
 * image that says another machine, or no ELF, not), and bytes at a link
 * address read from the PT_LOAD that holds them, never past its file part.
 */
static void test_x86_64_and_vaddr_reads(void **state)
{
	int fd = open_regular("/proc/self/exe");
	struct elf_budget b = {};
	GElf_Ehdr eh;
	struct stat st;
	size_t nph;
	char *img;
	__u8 buf[4];
	bool found = false;
	Elf *elf;

	(void)state;
	assert_true(fd >= 0 && !fstat(fd, &st));
	elf_version(EV_CURRENT);
	elf = elf_budget_begin(&b, fd, false, ELF_BUDGET_SYMS, NULL);
	assert_true(elf_is_x86_64(elf, &eh));
	assert_int_equal(elf_getphdrnum(elf, &nph), 0);
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		assert_non_null(gelf_getphdr(elf, i, &ph));
		if (ph.p_type != PT_LOAD || ph.p_offset || ph.p_filesz < 8)
			continue;
		/* The segment at file offset 0 begins with the ELF magic. */
		assert_int_equal(elf_pread_vaddr(fd, elf, ph.p_vaddr, buf, 4), 0);
		assert_memory_equal(buf, ELFMAG, 4);
		/* Across the end of its file part, and at an address where a sum wraps: not read. */
		assert_int_equal(elf_pread_vaddr(fd, elf, ph.p_vaddr + ph.p_filesz - 2, buf, 4), -ENOENT);
		assert_int_equal(elf_pread_vaddr(fd, elf, ~0ull - 1, buf, 4), -ENOENT);
		found = true;
		break;
	}
	assert_true(found);
	elf_budget_end(&b);
	assert_false(elf_is_x86_64(NULL, &eh));

	img = malloc(st.st_size);
	assert_non_null(img);
	assert_int_equal(pread(fd, img, st.st_size, 0), st.st_size);
	((Elf64_Ehdr *)img)->e_machine = EM_AARCH64;
	elf = elf_budget_memory(&b, img, st.st_size, ELF_BUDGET_SYMS, NULL);
	assert_non_null(elf);
	assert_false(elf_is_x86_64(elf, &eh));
	elf_budget_end(&b);
	free(img);
	close(fd);
	assert_nothing_held();
}

struct sym_seen {
	unsigned n;	   /* symbols handed over */
	char first[64];	   /* the first one's name */
	const char *until; /* stop there, returning 7 */
};

static int see_sym(const char *name, const GElf_Sym *sym, void *ctx)
{
	struct sym_seen *s = ctx;

	(void)sym;
	if (!s->n++)
		snprintf(s->first, sizeof(s->first), "%s", name);
	return s->until && !strcmp(name, s->until) ? 7 : 0;
}

/* The first defined symbol of path's first table of type, read without the helper; "" if none. */
static void first_defined(const char *path, Elf64_Word type, char *name, size_t len)
{
	int fd = open_regular(path);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;

	assert_non_null(elf);
	name[0] = 0;
	while (!name[0] && (scn = elf_nextscn(elf, scn))) {
		Elf_Data *data = elf_getdata(scn, NULL);
		GElf_Shdr sh;
		GElf_Sym sym;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !data)
			continue;
		for (size_t i = 1; i < sh.sh_size / sh.sh_entsize && gelf_getsym(data, i, &sym); i++)
			if (sym.st_shndx != SHN_UNDEF) {
				snprintf(name, len, "%s", elf_strptr(elf, sh.sh_link, sym.st_name));
				break;
			}
	}
	elf_end(elf);
	close(fd);
}

static struct sym_seen each_sym(const char *path, Elf64_Word first, const char *until, int want)
{
	struct sym_seen s = { .until = until };
	struct elf_budget b = {};
	int fd = open_regular(path);

	assert_non_null(elf_budget_begin(&b, fd, false, ELF_BUDGET_SYMS, path));
	assert_int_equal(elf_budget_each_sym(&b, first, see_sym, &s), want);
	elf_budget_end(&b);
	close(fd);
	return s;
}

/*
 * The runtimes' symbol walk: the table asked for first, then the other;
 * stopped where the callback says, with what it said; a table too large or
 * with entries of another size passed over unread.
 */
static void test_each_sym(void **state)
{
	char path[64], sym1[64], dyn1[64];
	struct elf_budget_stats before, after;
	struct sym_seen all, s;

	(void)state;
	elf_version(EV_CURRENT);
	first_defined("/proc/self/exe", SHT_SYMTAB, sym1, sizeof(sym1));
	first_defined("/proc/self/exe", SHT_DYNSYM, dyn1, sizeof(dyn1));
	assert_true(sym1[0]); /* the test binaries keep their .symtab */
	all = each_sym("/proc/self/exe", SHT_SYMTAB, NULL, 0);
	assert_string_equal(all.first, sym1);
	s = each_sym("/proc/self/exe", SHT_DYNSYM, NULL, 0);
	assert_string_equal(s.first, dyn1[0] ? dyn1 : sym1);
	assert_int_equal(s.n, all.n);
	s = each_sym("/proc/self/exe", SHT_SYMTAB, "main", 7);
	assert_true(s.n >= 1 && s.n <= all.n);

	snprintf(path, sizeof(path), "%s/bigsyms", dir);
	craft(path, 1, SHT_SYMTAB, 65ull << 20, sizeof(Elf64_Sym));
	elf_budget_stats(&before);
	s = each_sym(path, SHT_SYMTAB, NULL, 0);
	elf_budget_stats(&after);
	assert_int_equal(s.n, all.n);
	assert_true(after.bytes - before.bytes < (16u << 20));
	snprintf(path, sizeof(path), "%s/oddsyms", dir);
	craft(path, 1, SHT_DYNSYM, 4096, sizeof(Elf64_Sym) + 8);
	s = each_sym(path, SHT_DYNSYM, NULL, 0);
	assert_int_equal(s.n, all.n);
	assert_nothing_held();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_files_read),
		cmocka_unit_test(test_many_note_headers),
		cmocka_unit_test(test_many_small_sections_counted),
		cmocka_unit_test(test_symbols_over_budget),
		cmocka_unit_test(test_dwarf_overlap),
		cmocka_unit_test(test_extended_section_count),
		cmocka_unit_test(test_x86_64_and_vaddr_reads),
		cmocka_unit_test(test_each_sym),
	};

	return cmocka_run_group_tests_name("elf_budget", tests, setup, teardown);
}
