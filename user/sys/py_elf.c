// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "buildid.h"
#include "fileio.h"
#include "hash.h"
#include "perf_data.h"
#include "py_elf.h"
#include "py_names.h"
#include "sbuf.h"
#include "sha256.h"
#include "util.h"

/* The file's address space: regions page-aligned, up to where x86-64's user half ends. */
#define PAGE 4096ull
#define SPACE_END (1ull << 46)
#define NAME_SUFFIX ".elf"

/* Each runtime's file, by its name's prefix (RUNTIME-BUILDID.elf) and the word its messages use. */
static const struct {
	const char *prefix, *word;
} runtimes[PY_ELF_RUNTIMES] = {
	[PY_ELF_PYTHON] = { "python-", "Python" },
	[PY_ELF_JAVA] = { "java-", "Java" },
};

struct region {
	__u64 pgoff, end;
};

struct esym {
	__u64 off, size;
	__u32 name; /* into strtab */
	/* Its lines (py_elf__add_lines): runs[lines, lines + nlines) in the lines blob, file index + 1 (0: none) */
	__u32 file, nlines;
	size_t lines;
	int firstlineno;
};

struct py_elf {
	char *dir;  /* OUTPUT.spanperf, absolute */
	char *name; /* RUNTIME-BUILDID.elf */
	char *path; /* dir/name */
	size_t prefix_len; /* of name's "RUNTIME-" */
	__u8 build_id[PY_ELF_BUILD_ID_SIZE];
	struct region *regions;
	size_t nr_regions, cap_regions;
	__u64 next;
	struct esym *syms;
	size_t nr_syms, cap_syms, dropped;
	struct sbuf strtab;
	struct strpool files; /* the lines' files, DWARF's file table in order */
	struct sbuf lines;    /* every symbol's runs */
};

/* The folder is ours to write in only if no one else could have put or changed anything there. */
static int check_dir(int dfd, const char *dir, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(dfd, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		snprintf(err, errlen, "%s is not a directory of ours that only we may write: no Python symbol file",
			 dir);
		return -EPERM;
	}
	return 0;
}

/* OUTPUT.spanperf, opened without following a symlink, and checked; -ENOENT if it is not there. */
static int open_dir(const char *dir, char *err, size_t errlen)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), e;

	if (dfd < 0) {
		e = -errno;
		/* ELOOP: a symlink; ENOTDIR: a file */
		if (e == -ELOOP || e == -ENOTDIR)
			snprintf(err, errlen, "%s is not a directory of ours that only we may write: no Python symbol file",
				 dir);
		return e == -ELOOP || e == -ENOTDIR ? -EPERM : e;
	}
	e = check_dir(dfd, dir, err, errlen);
	if (e) {
		close(dfd);
		return e;
	}
	return dfd;
}

/* The absolute folder of output: its directory made absolute, and its name + ".spanperf". */
static int folder_of(const char *output, char *out, size_t len)
{
	char dir[PATH_MAX], real[PATH_MAX];
	const char *base = strrchr(output, '/');

	if (base) {
		snprintf(dir, sizeof(dir), "%.*s", (int)((base - output) ? (base - output) : 1), output);
		base++;
	} else {
		snprintf(dir, sizeof(dir), ".");
		base = output;
	}
	if (!*base || !realpath(dir, real))
		return -EINVAL;
	if ((size_t)snprintf(out, len, "%s/%s.spanperf", strcmp(real, "/") ? real : "", base) >= len)
		return -ENAMETOOLONG;
	return 0;
}

static void new_build_id(__u8 *id, const char *path)
{
	struct {
		struct timespec ts;
		pid_t pid;
		char path[256];
	} seed = { .pid = getpid() };
	__u8 sha[SHA256_SIZE];
	struct sha256 h;

	/* Random: the symbols are known only at the end, and the id only has to tell this file from others. */
	if (getrandom(id, PY_ELF_BUILD_ID_SIZE, GRND_NONBLOCK) == PY_ELF_BUILD_ID_SIZE)
		return;
	clock_gettime(CLOCK_REALTIME, &seed.ts);
	snprintf(seed.path, sizeof(seed.path), "%.255s", path);
	sha256_init(&h);
	sha256_update(&h, &seed, sizeof(seed));
	sha256_final(&h, sha);
	memcpy(id, sha, PY_ELF_BUILD_ID_SIZE);
}

int py_elf__new(struct py_elf **out, const char *output, enum py_elf_runtime rt, char *err, size_t errlen)
{
	struct py_elf *w = NULL;
	char dir[PATH_MAX], hex[2 * PY_ELF_BUILD_ID_SIZE + 1];
	struct stat st;
	int e, dfd;

	*out = NULL;
	if (!output || (!stat(output, &st) && !S_ISREG(st.st_mode))) {
		snprintf(err, errlen, "-o %s is not a regular file: no %s symbol file beside it", output ? output : "(none)",
			 runtimes[rt].word);
		return -EOPNOTSUPP;
	}
	e = folder_of(output, dir, sizeof(dir));
	if (e) {
		snprintf(err, errlen, "cannot place a %s symbol file beside %s: %s", runtimes[rt].word, output,
			 strerror(-e));
		return e;
	}
	/* An existing folder must be ours now; a missing one is made at commit, if any such runtime ran. */
	dfd = open_dir(dir, err, errlen);
	if (dfd < 0 && dfd != -ENOENT) {
		if (dfd != -EPERM)
			snprintf(err, errlen, "cannot open %s: %s", dir, strerror(-dfd));
		return dfd;
	}
	if (dfd >= 0)
		close(dfd);
	w = calloc(1, sizeof(*w));
	if (!w)
		goto oom;
	w->next = PY_ELF_FIRST_PGOFF;
	new_build_id(w->build_id, dir);
	buildid_hex(w->build_id, PY_ELF_BUILD_ID_SIZE, hex);
	w->dir = strdup(dir);
	w->prefix_len = strlen(runtimes[rt].prefix);
	if (asprintf(&w->name, "%s%s" NAME_SUFFIX, runtimes[rt].prefix, hex) < 0) {
		w->name = NULL;
		goto oom;
	}
	if (!w->dir || asprintf(&w->path, "%s/%s", dir, w->name) < 0) {
		w->path = NULL;
		goto oom;
	}
	sbuf_add(&w->strtab, "", 1);
	if (w->strtab.err)
		goto oom;
	*out = w;
	return 0;
oom:
	py_elf__free(w);
	snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

const char *py_elf__path(const struct py_elf *w)
{
	return w->path;
}

const __u8 *py_elf__build_id(const struct py_elf *w)
{
	return w->build_id;
}

int py_elf__add_region(struct py_elf *w, __u64 len, __u64 *pgoff)
{
	__u64 span = (len + PAGE - 1) & ~(PAGE - 1);

	if (!len || span < len || span > SPACE_END - w->next)
		return -E2BIG;
	if (array_reserve((void **)&w->regions, &w->cap_regions, w->nr_regions, sizeof(*w->regions)))
		return -ENOMEM;
	w->regions[w->nr_regions++] = (struct region){ w->next, w->next + len };
	*pgoff = w->next;
	w->next += span;
	return 0;
}

/* The region holding [off, off + size): regions are in ascending order, as they were given out. */
static bool in_region(const struct py_elf *w, __u64 off, __u64 size)
{
	size_t lo = 0, hi = w->nr_regions;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w->regions[mid].end <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < w->nr_regions && w->regions[lo].pgoff <= off && size <= w->regions[lo].end - off;
}

/*
 * A process's string as the file keeps it: control bytes as '?'.  perf
 * prints symbols raw and reads addr2line's answers line by line, so a
 * newline in a file name (compile() takes any) would forge lines of both.
 */
static void add_clean(struct sbuf *b, const char *s)
{
	size_t at = b->len, n = strlen(s) + 1;

	if (sbuf_add(b, s, n))
		return;
	for (size_t i = at; i + 1 < at + n; i++)
		if ((unsigned char)b->p[i] < 0x20 || b->p[i] == 0x7f)
			b->p[i] = '?';
}

int py_elf__add_symbol(struct py_elf *w, __u64 off, __u64 size, const char *name)
{
	size_t at = w->strtab.len;

	if (!size || !name || !in_region(w, off, size))
		return -EINVAL;
	if (array_reserve((void **)&w->syms, &w->cap_syms, w->nr_syms, sizeof(*w->syms)))
		return -ENOMEM;
	add_clean(&w->strtab, name);
	if (w->strtab.err || w->strtab.len > UINT32_MAX) {
		w->strtab.len = at;
		return -ENOMEM;
	}
	w->syms[w->nr_syms++] = (struct esym){ .off = off, .size = size, .name = at };
	return 0;
}

int py_elf__add_lines(struct py_elf *w, __u64 off, const char *file, int firstlineno, const __u8 *runs,
		      size_t len)
{
	struct esym *e = NULL;
	size_t id, at = w->lines.len;
	struct sbuf clean = {};

	/* The symbol just added, as the recorder adds them; else the latest at off. */
	for (size_t i = w->nr_syms; i > 0 && !e; i--)
		if (w->syms[i - 1].off == off)
			e = &w->syms[i - 1];
	if (!e || !file || len > UINT32_MAX)
		return -EINVAL;
	add_clean(&clean, file);
	if (clean.err || !strpool_intern(&w->files, clean.p, &id) || sbuf_add(&w->lines, runs, len)) {
		sbuf_free(&clean);
		w->lines.len = at;
		return -ENOMEM;
	}
	sbuf_free(&clean);
	e->file = id + 1;
	e->firstlineno = firstlineno;
	e->lines = at;
	e->nlines = len;
	return 0;
}

size_t py_elf__symbols(const struct py_elf *w)
{
	return w->nr_syms;
}

size_t py_elf__dropped(const struct py_elf *w)
{
	return w->dropped;
}

static int by_off(const void *a, const void *b)
{
	const struct esym *x = a, *y = b;

	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return (x->name > y->name) - (x->name < y->name); /* the first added first */
}

/* Sorted, and a symbol that overlaps the one before it dropped: perf would name such an address by either. */
static void settle(struct py_elf *w)
{
	size_t n = 0;
	__u64 end = 0;

	sort_n(w->syms, w->nr_syms, sizeof(*w->syms), by_off);
	for (size_t i = 0; i < w->nr_syms; i++) {
		if (n && w->syms[i].off < end) {
			w->dropped++;
			continue;
		}
		end = w->syms[i].off + w->syms[i].size;
		w->syms[n++] = w->syms[i];
	}
	w->nr_syms = n;
}

/* ---- DWARF: a line table for perf's srcline, and the one compile unit that points at it ---- */

static void uleb(struct sbuf *b, __u64 v)
{
	do {
		__u8 c = v & 0x7f;

		v >>= 7;
		if (v)
			c |= 0x80;
		sbuf_add(b, &c, 1);
	} while (v);
}

static void sleb(struct sbuf *b, __s64 v)
{
	bool more = true;

	while (more) {
		__u8 c = v & 0x7f;

		v >>= 7; /* arithmetic on gcc and clang */
		more = !((v == 0 && !(c & 0x40)) || (v == -1 && (c & 0x40)));
		if (more)
			c |= 0x80;
		sbuf_add(b, &c, 1);
	}
}

static void u8(struct sbuf *b, __u8 v)
{
	sbuf_add(b, &v, 1);
}

#define DW_LNS_copy 1
#define DW_LNS_advance_pc 2
#define DW_LNS_advance_line 3
#define DW_LNS_set_file 4
#define DW_LNE_end_sequence 1
#define DW_LNE_set_address 2

/* The line register to line, with a row at the current address. */
static void dw_row(struct sbuf *b, long long *reg, long long line)
{
	if (line != *reg) {
		u8(b, DW_LNS_advance_line);
		sleb(b, line - *reg);
		*reg = line;
	}
	u8(b, DW_LNS_copy);
}

/*
 * One sequence per symbol with lines: its first two bytes (index -1, not
 * started) at its first line, then each run's 2 * n bytes at its line (0,
 * DWARF's "no line", where the code has none), to the symbol's end.
 */
static void dw_sequence(struct sbuf *b, const struct py_elf *w, const struct esym *e)
{
	struct py_runs_iter it;
	long long reg = 1;
	__u64 at = e->off, end = e->off + e->size;
	__u32 n;
	int line;
	bool none;

	u8(b, 0);
	uleb(b, 9);
	u8(b, DW_LNE_set_address);
	sbuf_add(b, &at, 8);
	u8(b, DW_LNS_set_file);
	uleb(b, e->file);
	dw_row(b, &reg, e->firstlineno > 0 ? e->firstlineno : 0);
	py_runs_iter_init(&it, (const __u8 *)w->lines.p + e->lines, e->nlines, e->firstlineno);
	for (__u64 step = 2; py_runs_next(&it, &n, &line, &none) && at + step < end; step = 2 * (__u64)n) {
		u8(b, DW_LNS_advance_pc);
		uleb(b, step);
		at += step;
		dw_row(b, &reg, none || line < 0 ? 0 : line);
	}
	u8(b, DW_LNS_advance_pc);
	uleb(b, end - at);
	u8(b, 0);
	uleb(b, 1);
	u8(b, DW_LNE_end_sequence);
}

/* .debug_line (version 4): the header with every file, then the sequences. */
static void dw_line(struct sbuf *b, const struct py_elf *w)
{
	static const __u8 std_lengths[12] = { 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1 };
	size_t len_at, hdr_at, hdr_start;
	__u32 v32;

	len_at = b->len;
	sbuf_zero(b, 4); /* unit_length, below */
	sbuf_add(b, &(__u16){ 4 }, 2);
	hdr_at = b->len;
	sbuf_zero(b, 4); /* header_length, below */
	hdr_start = b->len;
	u8(b, 1);		/* minimum_instruction_length */
	u8(b, 1);		/* maximum_operations_per_instruction */
	u8(b, 1);		/* default_is_stmt */
	u8(b, (__u8)-5);	/* line_base */
	u8(b, 14);		/* line_range */
	u8(b, 13);		/* opcode_base */
	sbuf_add(b, std_lengths, sizeof(std_lengths));
	u8(b, 0); /* no include directories: the files' names are whole */
	for (size_t i = 0; i < w->files.n; i++) {
		sbuf_add(b, w->files.str[i], strlen(w->files.str[i]) + 1);
		uleb(b, 0);
		uleb(b, 0);
		uleb(b, 0);
	}
	u8(b, 0);
	v32 = b->len - hdr_start;
	if (!b->err)
		memcpy(b->p + hdr_at, &v32, 4);
	for (size_t i = 0; i < w->nr_syms; i++)
		if (w->syms[i].file)
			dw_sequence(b, w, &w->syms[i]);
	v32 = b->len - len_at - 4;
	if (!b->err)
		memcpy(b->p + len_at, &v32, 4);
}

#define DW_TAG_compile_unit 0x11
#define DW_AT_name 0x03
#define DW_AT_stmt_list 0x10
#define DW_AT_low_pc 0x11
#define DW_AT_high_pc 0x12
#define DW_FORM_addr 0x01
#define DW_FORM_data8 0x07
#define DW_FORM_string 0x08
#define DW_FORM_sec_offset 0x17

/* .debug_abbrev and .debug_info: one compile unit over the text, whose lines are at .debug_line + 0. */
static void dw_info(struct sbuf *abbrev, struct sbuf *info, __u64 low, __u64 high)
{
	static const __u8 ab[] = { 1, DW_TAG_compile_unit, 0 /* no children */,
				   DW_AT_name, DW_FORM_string, DW_AT_stmt_list, DW_FORM_sec_offset,
				   DW_AT_low_pc, DW_FORM_addr, DW_AT_high_pc, DW_FORM_data8, 0, 0, 0 };
	static const char name[] = "python";
	__u32 len = 2 + 4 + 1 + 1 + sizeof(name) + 4 + 8 + 8;
	__u64 size = high - low;

	sbuf_add(abbrev, ab, sizeof(ab));
	sbuf_add(info, &len, 4);
	sbuf_add(info, &(__u16){ 4 }, 2);
	sbuf_zero(info, 4); /* debug_abbrev_offset */
	u8(info, 8);	    /* address_size */
	u8(info, 1);	    /* the compile unit's abbrev */
	sbuf_add(info, name, sizeof(name));
	sbuf_zero(info, 4); /* stmt_list */
	sbuf_add(info, &low, 8);
	sbuf_add(info, &size, 8);
}

/* ---- the image ---- */

/* A section: its header, its bytes (none for NOBITS). */
struct section {
	const char *name;
	Elf64_Shdr sh;
	struct sbuf data;
};

enum { SH_NULL, SH_TEXT, SH_NOTE, SH_SYMTAB, SH_STRTAB, SH_ABBREV, SH_INFO, SH_LINE, SH_SHSTRTAB, SH_NR };

/*
 * ELF header, the PT_LOAD and PT_NOTE headers, the note; then the other
 * sections' bytes and the section headers.  The PT_LOAD runs from offset 0
 * at address 0 to the last region's end, so a file offset is its address;
 * .text (NOBITS: no bytes) starts at the first region.
 */
int py_elf__image(struct py_elf *w, void **image, size_t *len)
{
	struct section sec[SH_NR] = {};
	struct sbuf b = {};
	Elf64_Ehdr eh = {};
	Elf64_Phdr ph[2] = {};
	Elf64_Nhdr nh = { .n_namesz = 4, .n_descsz = PY_ELF_BUILD_ID_SIZE, .n_type = NT_GNU_BUILD_ID };
	size_t note_off = sizeof(eh) + sizeof(ph), note_len = sizeof(nh) + 4 + PY_ELF_BUILD_ID_SIZE;
	__u64 text_end = w->next > PY_ELF_FIRST_PGOFF ? w->next : PY_ELF_FIRST_PGOFF + PAGE;
	bool lines = false;
	int nr = 0, e = 0;

	settle(w);
	for (size_t i = 0; i < w->nr_syms; i++)
		lines |= w->syms[i].file != 0;
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_ident[EI_OSABI] = ELFOSABI_NONE;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = sizeof(eh);
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = 2;
	eh.e_shentsize = sizeof(Elf64_Shdr);

	/* sh_offset == sh_addr: perf takes a symbol's file offset as value - (sh_addr - sh_offset). */
	sec[nr++] = (struct section){ .name = "", .sh = {} };
	sec[nr++] = (struct section){ .name = ".text", .sh = { .sh_type = SHT_NOBITS, .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
						 .sh_addr = PY_ELF_FIRST_PGOFF, .sh_offset = PY_ELF_FIRST_PGOFF,
						 .sh_size = text_end - PY_ELF_FIRST_PGOFF, .sh_addralign = 16 } };
	sec[nr++] = (struct section){ .name = ".note.gnu.build-id", .sh = { .sh_type = SHT_NOTE, .sh_flags = SHF_ALLOC,
							      .sh_addr = note_off, .sh_offset = note_off,
							      .sh_size = note_len, .sh_addralign = 4 } };
	sec[nr] = (struct section){ .name = ".symtab", .sh = { .sh_type = SHT_SYMTAB, .sh_link = SH_STRTAB, .sh_info = 1,
						 .sh_addralign = 8, .sh_entsize = sizeof(Elf64_Sym) } };
	sbuf_zero(&sec[nr].data, sizeof(Elf64_Sym)); /* symbol 0 */
	for (size_t i = 0; i < w->nr_syms; i++) {
		Elf64_Sym s = { .st_name = w->syms[i].name, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
				.st_shndx = SH_TEXT, .st_value = w->syms[i].off, .st_size = w->syms[i].size };

		sbuf_add(&sec[nr].data, &s, sizeof(s));
	}
	nr++;
	sec[nr] = (struct section){ .name = ".strtab", .sh = { .sh_type = SHT_STRTAB, .sh_addralign = 1 } };
	sbuf_add(&sec[nr++].data, w->strtab.p, w->strtab.len);
	if (lines) {
		sec[nr] = (struct section){ .name = ".debug_abbrev", .sh = { .sh_type = SHT_PROGBITS, .sh_addralign = 1 } };
		sec[nr + 1] = (struct section){ .name = ".debug_info", .sh = { .sh_type = SHT_PROGBITS, .sh_addralign = 1 } };
		dw_info(&sec[nr].data, &sec[nr + 1].data, PY_ELF_FIRST_PGOFF, text_end);
		nr += 2;
		sec[nr] = (struct section){ .name = ".debug_line", .sh = { .sh_type = SHT_PROGBITS, .sh_addralign = 1 } };
		dw_line(&sec[nr++].data, w);
	}
	sec[nr] = (struct section){ .name = ".shstrtab", .sh = { .sh_type = SHT_STRTAB, .sh_addralign = 1 } };
	eh.e_shstrndx = nr;
	eh.e_shnum = nr + 1;
	for (int i = 0; i <= nr; i++) {
		sec[i].sh.sh_name = sec[nr].data.len;
		sbuf_add(&sec[nr].data, sec[i].name, strlen(sec[i].name) + 1);
	}

	ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0, .p_vaddr = 0, .p_paddr = 0,
			      .p_filesz = note_off + note_len, .p_memsz = text_end, .p_align = PAGE };
	ph[1] = (Elf64_Phdr){ .p_type = PT_NOTE, .p_flags = PF_R, .p_offset = note_off, .p_vaddr = note_off,
			      .p_paddr = note_off, .p_filesz = note_len, .p_memsz = note_len, .p_align = 4 };
	sbuf_zero(&b, sizeof(eh));
	sbuf_add(&b, ph, sizeof(ph));
	sbuf_add(&b, &nh, sizeof(nh));
	sbuf_add(&b, "GNU", 4);
	sbuf_add(&b, w->build_id, PY_ELF_BUILD_ID_SIZE);
	/* The sections with bytes, each at its alignment (the symbols at 8). */
	for (int i = SH_SYMTAB; i <= nr; i++) {
		size_t align = sec[i].sh.sh_addralign ? sec[i].sh.sh_addralign : 1;

		e = e ?: sec[i].data.err;
		sbuf_zero(&b, (align - b.len % align) % align);
		sec[i].sh.sh_offset = b.len;
		sec[i].sh.sh_size = sec[i].data.len;
		sbuf_add(&b, sec[i].data.p, sec[i].data.len);
	}
	sbuf_zero(&b, (8 - b.len % 8) % 8);
	eh.e_shoff = b.len;
	for (int i = 0; i <= nr; i++)
		sbuf_add(&b, &sec[i].sh, sizeof(sec[i].sh));
	if (!b.err)
		memcpy(b.p, &eh, sizeof(eh));
	e = e ?: b.err;
	for (int i = 0; i <= nr; i++)
		sbuf_free(&sec[i].data);
	if (e) {
		sbuf_free(&b);
		return -ENOMEM;
	}
	*image = b.p;
	*len = b.len;
	return 0;
}

int py_elf__commit(struct py_elf *w, char *err, size_t errlen)
{
	char tmp[64];
	void *img = NULL;
	size_t len;
	int dfd = -1, fd = -1, e;

	if (!w->nr_regions)
		return 0;
	e = py_elf__image(w, &img, &len);
	if (e) {
		snprintf(err, errlen, "out of memory writing %s", w->path);
		return e;
	}
	/* As private as the perf.data (0600): the names are the processes' file paths. */
	if (mkdir(w->dir, 0700) && errno != EEXIST) {
		e = -errno;
		snprintf(err, errlen, "cannot create %s: %s", w->dir, strerror(errno));
		goto cleanup;
	}
	dfd = open_dir(w->dir, err, errlen);
	if (dfd < 0) {
		e = dfd;
		if (e != -EPERM)
			snprintf(err, errlen, "cannot open %s: %s", w->dir, strerror(-e));
		goto cleanup;
	}
	/* A temporary no one else can have made (O_EXCL), renamed over the final name in the same folder. */
	for (int i = 0; i < 100; i++) {
		__u32 r;

		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
			r = (__u32)getpid() << 8 ^ (__u32)i ^ (__u32)time(NULL);

		snprintf(tmp, sizeof(tmp), ".tmp-%08x-%.16s", r, w->name + w->prefix_len);
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0) {
		e = -errno;
		snprintf(err, errlen, "cannot write %s: %s", w->path, strerror(errno));
		goto cleanup;
	}
	e = write_all(fd, img, len);
	if (!e && close(fd))
		e = -errno;
	fd = -1;
	if (!e && renameat(dfd, tmp, dfd, w->name))
		e = -errno;
	if (e) {
		unlinkat(dfd, tmp, 0);
		snprintf(err, errlen, "cannot write %s: %s", w->path, strerror(-e));
	}
cleanup:
	if (fd >= 0) {
		close(fd);
		unlinkat(dfd, tmp, 0);
	}
	if (dfd >= 0)
		close(dfd);
	free(img);
	return e;
}

void py_elf__free(struct py_elf *w)
{
	if (!w)
		return;
	free(w->dir);
	free(w->name);
	free(w->path);
	free(w->regions);
	free(w->syms);
	sbuf_free(&w->strtab);
	strpool_free(&w->files);
	sbuf_free(&w->lines);
	free(w);
}

/* ---- pruning ---- */

/* A name of ours in the folder: RUNTIME-HEX.elf, of any runtime. */
static bool ours(const char *name)
{
	size_t n = strlen(name), s = strlen(NAME_SUFFIX);

	for (int rt = 0; rt < PY_ELF_RUNTIMES; rt++) {
		size_t p = strlen(runtimes[rt].prefix);
		size_t i = p;

		if (n <= p + s || strncmp(name, runtimes[rt].prefix, p) || strcmp(name + n - s, NAME_SUFFIX))
			continue;
		while (i < n - s && strchr("0123456789abcdef", name[i]))
			i++;
		return i == n - s;
	}
	return false;
}

/* A perf.data beside the folder that may name files in it: OUTPUT, OUTPUT.old, OUTPUT.STAMP[-N]. */
static bool names_files(const char *base, const char *name)
{
	size_t n = strlen(base);

	if (strncmp(name, base, n))
		return false;
	if (!name[n] || !strcmp(name + n, ".old"))
		return true;
	if (name[n] != '.' || strlen(name + n + 1) < 16)
		return false;
	for (const char *c = name + n + 1; *c; c++)
		if (!(*c >= '0' && *c <= '9') && *c != '-')
			return false;
	return true;
}

/* The build ids (hex) of our files that the perf.data at path names. */
static void add_named(const char *path, const char *dir, struct sbuf *keep)
{
	struct pd_reader *r = NULL;
	char err[256];
	size_t dl = strlen(dir);

	if (pd_reader__open(&r, path, NULL, err, sizeof(err)))
		return;
	for (int i = 0; i < r->meta.nr_build_ids; i++) {
		const struct pd_build_id *b = &r->meta.build_ids[i];

		if (strncmp(b->filename, dir, dl) || b->filename[dl] != '/' || !ours(b->filename + dl + 1))
			continue;
		sbuf_printf(keep, "%s%c", b->filename + dl + 1, 0);
	}
	pd_reader__free(r);
}

static bool kept(const struct sbuf *keep, const char *name)
{
	for (size_t i = 0; i < keep->len; i += strlen(keep->p + i) + 1)
		if (!strcmp(keep->p + i, name))
			return true;
	return false;
}

int py_elf_prune(const char *output)
{
	char dir[PATH_MAX], parent[PATH_MAX], err[256], path[PATH_MAX * 2];
	const char *base;
	struct sbuf keep = {};
	struct dirent *de;
	DIR *d = NULL;
	int dfd, e, removed = 0, left = 0;

	e = folder_of(output, dir, sizeof(dir));
	if (e)
		return e;
	dfd = open_dir(dir, err, sizeof(err));
	if (dfd < 0)
		return dfd == -ENOENT ? 0 : dfd;
	/* The perf.data files beside the folder, and what they name. */
	snprintf(parent, sizeof(parent), "%s", dir);
	*strrchr(parent, '/') = 0;
	base = strrchr(dir, '/') + 1;
	{
		char b[NAME_MAX + 1];
		DIR *pd = opendir(parent[0] ? parent : "/");

		snprintf(b, sizeof(b), "%.*s", (int)(strlen(base) - strlen(".spanperf")), base);
		while (pd && (de = readdir(pd))) {
			if (!names_files(b, de->d_name))
				continue;
			snprintf(path, sizeof(path), "%s/%s", parent, de->d_name);
			add_named(path, dir, &keep);
		}
		if (pd)
			closedir(pd);
	}
	if (keep.err) {
		e = keep.err;
		goto cleanup;
	}
	d = fdopendir(dfd);
	if (!d) {
		e = -errno;
		close(dfd);
		goto cleanup;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!ours(de->d_name) || kept(&keep, de->d_name)) {
			left++;
			continue;
		}
		if (!unlinkat(dirfd(d), de->d_name, 0))
			removed++;
		else
			left++;
	}
	if (!left)
		rmdir(dir);
	e = removed;
cleanup:
	if (d)
		closedir(d);
	sbuf_free(&keep);
	return e;
}
