// SPDX-License-Identifier: GPL-2.0
/*
 * The .eh_frame -> unwind rows converter: CFI written by hand for each kind
 * of row (the rules gcc and glibc emit, the PLT's expression, a signal
 * frame, CFI no row can hold), bad input, and this very program's CFI.
 */
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "ehframe.h"

#define SEC_ADDR 0x2000 /* where the test's .eh_frame is loaded */

struct cfi {
	uint8_t b[4096];
	size_t n;
};

static void put(struct cfi *c, const void *p, size_t n)
{
	assert_true(c->n + n <= sizeof(c->b));
	if (n) /* an FDE without instructions puts none, from NULL: memcpy may not be given it */
		memcpy(c->b + c->n, p, n);
	c->n += n;
}

static void put32(struct cfi *c, uint32_t v)
{
	put(c, &v, 4);
}

/* A CIE (augmentation "zR", or "zRS" for a signal frame): CFA = rsp + 8, RA at CFA - 8. Returns its offset. */
static size_t cie(struct cfi *c, bool signal)
{
	static const uint8_t body[] = { 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x1b, 0x0c, 7, 8, 0x90, 1 };
	static const uint8_t sbody[] = { 0, 0, 0, 0, 1, 'z', 'R', 'S', 0, 1, 0x78, 16, 1, 0x1b, 0x0c, 7, 8, 0x90, 1 };
	size_t at = c->n;
	const uint8_t *b = signal ? sbody : body;
	size_t n = signal ? sizeof(sbody) : sizeof(body);
	uint8_t pad[8] = {};

	put32(c, n + (4 - n % 4) % 4);
	put(c, b, n);
	put(c, pad, (4 - n % 4) % 4);
	return at;
}

/* An FDE of cie_at for [pc, pc + len) running insns. */
static void fde(struct cfi *c, size_t cie_at, uint32_t pc, uint32_t len, const uint8_t *insns, size_t n)
{
	size_t body = 4 + 4 + 4 + 1 + n, pad = (4 - body % 4) % 4;
	uint8_t zero[4] = {};
	int32_t rel;

	put32(c, body + pad);
	put32(c, c->n - cie_at); /* the CIE pointer: back from this field */
	rel = (int32_t)(pc - (SEC_ADDR + c->n));
	put(c, &rel, 4);
	put32(c, len);
	put(c, zero, 1); /* augmentation data length */
	put(c, insns, n);
	put(c, zero, pad);
}

/* A one-segment x86-64 ELF around cfi (as .eh_frame, or .debug_frame), as a memfd. */
static int elf_with(const struct cfi *c, const char *secname)
{
	static const char names[] = "\0.shstrtab\0.eh_frame\0.debug_frame";
	uint8_t buf[8192] = {};
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	Elf64_Phdr *ph = (Elf64_Phdr *)(buf + sizeof(*eh));
	Elf64_Shdr *sh = (Elf64_Shdr *)(buf + sizeof(*eh) + sizeof(*ph));
	size_t names_at = sizeof(*eh) + sizeof(*ph) + 3 * sizeof(*sh), sec_at = names_at + sizeof(names);
	int fd = memfd_create("ehframe", MFD_CLOEXEC);

	assert_true(fd >= 0 && sec_at + c->n <= sizeof(buf));
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_machine = EM_X86_64;
	eh->e_phoff = sizeof(*eh);
	eh->e_shoff = sizeof(*eh) + sizeof(*ph);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 1;
	eh->e_shentsize = sizeof(*sh);
	eh->e_shnum = 3;
	eh->e_shstrndx = 1;
	/* Code at vaddr 0x1000 is at file offset 0x400: rows are in file offsets. */
	*ph = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_vaddr = 0x1000, .p_offset = 0x400,
			    .p_filesz = 0x1000, .p_memsz = 0x1000 };
	sh[1] = (Elf64_Shdr){ .sh_type = SHT_STRTAB, .sh_name = 1, .sh_offset = names_at, .sh_size = sizeof(names) };
	sh[2] = (Elf64_Shdr){ .sh_type = SHT_PROGBITS, .sh_name = !strcmp(secname, ".eh_frame") ? 11 : !strcmp(secname, ".debug_frame") ? 21 : 0,
			      .sh_addr = SEC_ADDR, .sh_offset = sec_at, .sh_size = c->n };
	memcpy(buf + names_at, names, sizeof(names));
	memcpy(buf + sec_at, c->b, c->n);
	assert_int_equal(write(fd, buf, sec_at + c->n), (ssize_t)(sec_at + c->n));
	return fd;
}

static void expect(const struct ehtab *t, uint32_t vaddr, int kind, int rbp, int cfa_off)
{
	const struct sp_eh_row *r = ehtab_find(t, vaddr - 0x1000 + 0x400);

	assert_non_null(r);
	assert_int_equal(SP_EH_KIND(r->kind), kind);
	if (kind == SP_EH_RSP || kind == SP_EH_RBP || kind == SP_EH_PLT) {
		assert_int_equal(r->cfa_off, cfa_off);
		assert_int_equal(r->rbp, rbp);
	}
}

static void test_kinds(void **state)
{
	/* gcc's prologue: push %rbp; mov %rsp,%rbp; ...; leave (remembered state); ret. */
	static const uint8_t prologue[] = { 0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6, 0x0a, 0x50, 0x0c, 7, 8, 0x41, 0x0b };
	/* .plt: the CFA expression binutils writes (lit11). */
	static const uint8_t plt[] = { 0x0e, 16, 0x46, 0x0e, 24, 0x4a, 0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a,
				       0x33, 0x24, 0x22 };
	/* Another CFA expression (DW_OP_breg7 8; DW_OP_deref): no row can hold it. */
	static const uint8_t expr[] = { 0x0f, 3, 0x77, 8, 0x06 };
	/* _start: the return address is undefined, the outermost frame. */
	static const uint8_t start[] = { 0x07, 16 };
	/* CFA = rdi + 0: a register a row does not track. */
	static const uint8_t rdi[] = { 0x44, 0x0c, 5, 0 };
	struct cfi c = {};
	struct ehtab t;
	size_t k = cie(&c, false), ks;
	int fd;

	(void)state;
	fde(&c, k, 0x1100, 0x60, prologue, sizeof(prologue));
	fde(&c, k, 0x1200, 0x20, plt, sizeof(plt));
	fde(&c, k, 0x1300, 0x10, expr, sizeof(expr));
	fde(&c, k, 0x1400, 0x10, start, sizeof(start));
	fde(&c, k, 0x1500, 0x10, rdi, sizeof(rdi));
	ks = cie(&c, true);
	fde(&c, ks, 0x1600, 0x10, NULL, 0);
	put32(&c, 0); /* the terminator */
	fd = elf_with(&c, ".eh_frame");
	assert_int_equal(ehtab_from_fd(fd, 1 << 16, &t), 0);
	assert_int_equal(t.fdes, 6);
	assert_null(ehtab_find(&t, 0x1100 - 0x1000 + 0x400 - 1)); /* below every row */
	expect(&t, 0x1100, SP_EH_RSP, 0, 8);
	expect(&t, 0x1101, SP_EH_RSP, -2, 16);
	expect(&t, 0x1103, SP_EH_RSP, -2, 16);
	expect(&t, 0x1104, SP_EH_RBP, -2, 16);
	expect(&t, 0x1113, SP_EH_RBP, -2, 16);
	expect(&t, 0x1114, SP_EH_RSP, -2, 8); /* after leave: rbp still saved where it was */
	expect(&t, 0x1115, SP_EH_RBP, -2, 16); /* restore_state: the remembered rules, CFA included */
	expect(&t, 0x115f, SP_EH_RBP, -2, 16);
	expect(&t, 0x1160, SP_EH_GAP, 0, 0); /* past the FDE: frame pointers */
	expect(&t, 0x1200, SP_EH_RSP, 0, 16);
	expect(&t, 0x1206, SP_EH_RSP, 0, 24);
	expect(&t, 0x1210, SP_EH_PLT, 0, 11);
	expect(&t, 0x1300, SP_EH_CANNOT, 0, 0);
	expect(&t, 0x1400, SP_EH_END, 0, 0);
	expect(&t, 0x1500, SP_EH_RSP, 0, 8);
	expect(&t, 0x1504, SP_EH_CANNOT, 0, 0);
	expect(&t, 0x1600, SP_EH_SIGNAL, 0, 0);
	for (size_t i = 1; i < t.nr; i++)
		assert_true(t.rows[i].pc > t.rows[i - 1].pc);
	ehtab_free(&t);
	close(fd);
}

/* The kind byte's rbx slot and a row's CFA offset at vaddr. */
static void expect_rbx(const struct ehtab *t, uint32_t vaddr, int kind, int cfa_off, int rbx)
{
	const struct sp_eh_row *r = ehtab_find(t, vaddr - 0x1000 + 0x400);

	assert_non_null(r);
	assert_int_equal(SP_EH_KIND(r->kind), kind);
	assert_int_equal(r->cfa_off, cfa_off);
	assert_int_equal(SP_EH_RBX_SLOT(r->kind), rbx);
}

/*
 * glibc's own CFI for the two places a new process's chains were cut
 * (issue 40): ld.so's lazy-binding trampoline, whose CFA is at rbx, and
 * vfork, whose return address waits in rdi; and where a frame saved rbx.
 */
static void test_rbx_and_vfork(void **state)
{
	/*
	 * _dl_runtime_resolve: the PLT pushed 16 bytes; push %rbx; mov %rsp,%rbx;
	 * ...; mov %rbx,%rsp (CFA at rsp again); pop %rbx.
	 */
	static const uint8_t resolve[] = { 0x0e, 24, 0x41, 0x0e, 32, 0x83, 4, 0x43, 0x0d, 3, 0x6a, 0x0d, 7,
					   0x44, 0xc3, 0x0e, 8 };
	/* vfork: pop %rdi (the return address into rdi); syscall; push %rdi. */
	static const uint8_t vfork[] = { 0x41, 0x0e, 0, 0x09, 16, 5, 0x48, 0x0e, 8 };
	/* The return address in rax: no row. */
	static const uint8_t rax[] = { 0x41, 0x0e, 0, 0x09, 16, 0 };
	/* rbx saved 128 bytes below the CFA: further than a slot says. */
	static const uint8_t far[] = { 0x41, 0x0e, 136, 1, 0x83, 16 };
	struct cfi c = {};
	struct ehtab t;
	size_t k = cie(&c, false);
	int fd;

	(void)state;
	fde(&c, k, 0x1100, 0x40, resolve, sizeof(resolve));
	fde(&c, k, 0x1200, 0x20, vfork, sizeof(vfork));
	fde(&c, k, 0x1300, 0x10, rax, sizeof(rax));
	fde(&c, k, 0x1400, 0x10, far, sizeof(far));
	put32(&c, 0);
	fd = elf_with(&c, ".eh_frame");
	assert_int_equal(ehtab_from_fd(fd, 1 << 16, &t), 0);
	expect_rbx(&t, 0x1100, SP_EH_RSP, 24, 0);
	expect_rbx(&t, 0x1101, SP_EH_RSP, 32, 4); /* rbx at CFA - 32 */
	expect_rbx(&t, 0x1104, SP_EH_RBX, 32, 4);
	expect_rbx(&t, 0x112e, SP_EH_RSP, 32, 4);
	expect_rbx(&t, 0x1132, SP_EH_RSP, 8, 0); /* restored */
	expect_rbx(&t, 0x1200, SP_EH_RSP, 8, 0);
	expect_rbx(&t, 0x1201, SP_EH_RA_RDI, 0, 0);
	expect_rbx(&t, 0x1209, SP_EH_RA_RDI, 8, 0);
	expect(&t, 0x1301, SP_EH_CANNOT, 0, 0);
	expect_rbx(&t, 0x1401, SP_EH_RSP, 136, SP_EH_RBX_LOST);
	ehtab_free(&t);
	close(fd);
}

static void test_bad_input(void **state)
{
	static const uint8_t prologue[] = { 0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6 };
	/* An opcode no DWARF version has, then more rules: the FDE keeps the rows before it. */
	static const uint8_t garbage[] = { 0x41, 0x0e, 16, 0x3e, 0x41, 0x0e, 24 };
	/* restore_state with nothing remembered. */
	static const uint8_t unbalanced[] = { 0x41, 0x0b };
	struct cfi c = {};
	struct ehtab t;
	size_t k = cie(&c, false);
	int fd;

	(void)state;
	fde(&c, k, 0x1100, 0x20, prologue, sizeof(prologue));
	fde(&c, k, 0x1200, 0x20, garbage, sizeof(garbage));
	fde(&c, k, 0x1300, 0x20, unbalanced, sizeof(unbalanced));
	fde(&c, k, 0x1400, 0x20, prologue, sizeof(prologue));
	/* An FDE whose length runs past the section: what came before stays. */
	put32(&c, 0x1000);
	put32(&c, 4);
	fd = elf_with(&c, ".eh_frame");
	assert_int_equal(ehtab_from_fd(fd, 1 << 16, &t), 0);
	expect(&t, 0x1104, SP_EH_RBP, -2, 16);
	expect(&t, 0x1200, SP_EH_RSP, 0, 8);
	expect(&t, 0x1201, SP_EH_CANNOT, 0, 0); /* where the garbage began: no guess */
	expect(&t, 0x1220, SP_EH_GAP, 0, 0);
	expect(&t, 0x1300, SP_EH_RSP, 0, 8);
	expect(&t, 0x1301, SP_EH_CANNOT, 0, 0);
	expect(&t, 0x1404, SP_EH_RBP, -2, 16);
	ehtab_free(&t);
	/* Too many rows for the room given. */
	assert_int_equal(ehtab_from_fd(fd, 3, &t), -E2BIG);
	assert_null(t.rows);
	close(fd);
	/* Not an ELF file; an ELF file without CFI. */
	fd = memfd_create("ehframe", MFD_CLOEXEC);
	assert_int_equal(write(fd, "#!/bin/sh\n", 10), 10);
	assert_int_equal(ehtab_from_fd(fd, 1 << 16, &t), -EINVAL);
	close(fd);
	memset(&c, 0, sizeof(c));
	fd = elf_with(&c, ".text");
	assert_int_equal(ehtab_from_fd(fd, 1 << 16, &t), -ENOENT);
	close(fd);
	assert_int_equal(ehtab_from_path("/dev/zero", 1 << 16, &t), -EINVAL);
}

/*
 * A file cut short anywhere (a copy interrupted, a file being written):
 * the section header then promises bytes that are not there.  Each cut
 * gives rows of the FDEs wholly present, or an error, never a row from
 * past the end.
 */
static void test_truncated(void **state)
{
	static const uint8_t prologue[] = { 0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6 };
	struct cfi c = {};
	struct ehtab t;
	size_t k = cie(&c, false);
	struct stat st;
	int fd;

	(void)state;
	for (int i = 0; i < 8; i++)
		fde(&c, k, 0x1100 + i * 0x40, 0x20, prologue, sizeof(prologue));
	fd = elf_with(&c, ".eh_frame");
	assert_int_equal(fstat(fd, &st), 0);
	for (off_t len = st.st_size; len >= 0; len--) {
		assert_int_equal(ftruncate(fd, len), 0);
		if (ehtab_from_fd(fd, 1 << 16, &t))
			continue;
		assert_true(t.nr > 0);
		for (size_t i = 1; i < t.nr; i++)
			assert_true(t.rows[i].pc > t.rows[i - 1].pc);
		/* Nothing beyond the last FDE's code. */
		assert_true(t.rows[t.nr - 1].pc <= 0x1100 + 7 * 0x40 + 0x20 - 0x1000 + 0x400);
		ehtab_free(&t);
	}
	close(fd);
}

static void test_debug_frame(void **state)
{
	/* .debug_frame: CIE id ~0, version 1, no augmentation, absolute 8-byte addresses. */
	static const uint8_t cie_body[] = { 0xff, 0xff, 0xff, 0xff, 1, 0, 1, 0x78, 16, 0x0c, 7, 8, 0x90, 1 };
	static const uint8_t insns[] = { 0x41, 0x0e, 16, 0x86, 2 };
	struct cfi c = {};
	struct ehtab t;
	uint64_t pc = 0x1100, len = 0x20;
	uint8_t pad[4] = {};
	int fd;

	(void)state;
	put32(&c, sizeof(cie_body) + 2);
	put(&c, cie_body, sizeof(cie_body));
	put(&c, pad, 2);
	put32(&c, 4 + 16 + sizeof(insns) + 3);
	put32(&c, 0); /* the CIE at offset 0 */
	put(&c, &pc, 8);
	put(&c, &len, 8);
	put(&c, insns, sizeof(insns));
	put(&c, pad, 3);
	fd = elf_with(&c, ".debug_frame");
	assert_int_equal(ehtab_from_fd(fd, 1 << 16, &t), 0);
	assert_true(t.from_debug_frame);
	expect(&t, 0x1100, SP_EH_RSP, 0, 8);
	expect(&t, 0x1101, SP_EH_RSP, -2, 16);
	expect(&t, 0x1120, SP_EH_GAP, 0, 0);
	ehtab_free(&t);
	close(fd);
}

/* A plain function of this program (built with CFI): CFA = rsp + 8 at its first instruction. */
__attribute__((noinline)) int ehframe_probe_fn(int x)
{
	return x * 3 + 1;
}

static void test_this_program(void **state)
{
	unsigned long lo, hi, off, want = (unsigned long)(uintptr_t)ehframe_probe_fn;
	const struct sp_eh_row *r = NULL;
	char line[4096], perms[8];
	struct ehtab t;
	FILE *f;

	(void)state;
	assert_int_equal(ehtab_from_path("/proc/self/exe", 1 << 22, &t), 0);
	assert_true(t.nr > 10 && t.fdes > 5);
	f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %7s %lx", &lo, &hi, perms, &off) == 4 && want >= lo && want < hi)
			r = ehtab_find(&t, want - lo + off);
	fclose(f);
	assert_non_null(r);
	assert_int_equal(r->kind, SP_EH_RSP);
	assert_int_equal(r->cfa_off, 8);
	assert_int_equal(ehframe_probe_fn(1), 4);
	ehtab_free(&t);
}

/* glibc's _init, which has no FDE: its rows from its known bytes (ehframe.c's init_rows). */
extern void _init(void);

static void test_init_rows(void **state)
{
	unsigned long lo, hi, off, at = (unsigned long)(uintptr_t)_init, base = 0;
	static const struct { unsigned step; int cfa_off; } want[] = { { 0, 8 }, { 4, 16 }, { 16, 16 }, { 22, 8 } };
	const uint8_t *code = (const uint8_t *)(uintptr_t)at;
	unsigned pre = code[0] == 0xf3 ? 4 : 0; /* endbr64 under CET */
	char line[4096], perms[8];
	struct ehtab t;
	FILE *f;

	(void)state;
	assert_int_equal(ehtab_from_path("/proc/self/exe", 1 << 22, &t), 0);
	f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %7s %lx", &lo, &hi, perms, &off) == 4 && at >= lo && at < hi)
			base = lo - off;
	fclose(f);
	assert_true(base != 0);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct sp_eh_row *r = ehtab_find(&t, at + (i ? pre : 0) + want[i].step - base);

		assert_non_null(r);
		assert_int_equal(r->kind, SP_EH_RSP);
		assert_int_equal(r->cfa_off, want[i].cfa_off);
		assert_int_equal(r->rbp, 0);
	}
	ehtab_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_rbx_and_vfork),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_debug_frame),
		cmocka_unit_test(test_this_program),
		cmocka_unit_test(test_init_rows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
