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
#include "perf_data.h"
#include "py_elf.h"
#include "sbuf.h"
#include "sha256.h"
#include "util.h"

/* The file's address space: regions page-aligned, up to where x86-64's user half ends. */
#define PAGE 4096ull
#define SPACE_END (1ull << 46)
#define NAME_PREFIX "python-"
#define NAME_SUFFIX ".elf"

struct region {
	__u64 pgoff, end;
};

struct esym {
	__u64 off, size;
	__u32 name; /* into strtab */
};

struct py_elf {
	char *dir;  /* OUTPUT.spanperf, absolute */
	char *name; /* python-BUILDID.elf */
	char *path; /* dir/name */
	__u8 build_id[PY_ELF_BUILD_ID_SIZE];
	struct region *regions;
	size_t nr_regions, cap_regions;
	__u64 next;
	struct esym *syms;
	size_t nr_syms, cap_syms, dropped;
	struct sbuf strtab;
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
		snprintf(dir, sizeof(dir), "%.*s", (int)(base - output ? base - output : 1), output);
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

int py_elf__new(struct py_elf **out, const char *output, char *err, size_t errlen)
{
	struct py_elf *w = NULL;
	char dir[PATH_MAX], hex[2 * PY_ELF_BUILD_ID_SIZE + 1];
	struct stat st;
	int e, dfd;

	*out = NULL;
	if (!output || (!stat(output, &st) && !S_ISREG(st.st_mode))) {
		snprintf(err, errlen, "-o %s is not a regular file: no Python symbol file beside it", output ? output : "(none)");
		return -EOPNOTSUPP;
	}
	e = folder_of(output, dir, sizeof(dir));
	if (e) {
		snprintf(err, errlen, "cannot place a Python symbol file beside %s: %s", output, strerror(-e));
		return e;
	}
	/* An existing folder must be ours now; a missing one is made at commit, if any Python ran. */
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
	if (asprintf(&w->name, NAME_PREFIX "%s" NAME_SUFFIX, hex) < 0) {
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

int py_elf__add_symbol(struct py_elf *w, __u64 off, __u64 size, const char *name)
{
	size_t at = w->strtab.len;

	if (!size || !name || !in_region(w, off, size))
		return -EINVAL;
	if (array_reserve((void **)&w->syms, &w->cap_syms, w->nr_syms, sizeof(*w->syms)))
		return -ENOMEM;
	sbuf_add(&w->strtab, name, strlen(name) + 1);
	if (w->strtab.err || w->strtab.len > UINT32_MAX) {
		w->strtab.len = at;
		return -ENOMEM;
	}
	w->syms[w->nr_syms++] = (struct esym){ off, size, at };
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

static const char shstrtab[] = "\0.text\0.note.gnu.build-id\0.symtab\0.strtab\0.shstrtab";
enum { SH_NULL, SH_TEXT, SH_NOTE, SH_SYMTAB, SH_STRTAB, SH_SHSTRTAB, SH_NR };

static __u32 shname(const char *name)
{
	for (size_t i = 0; i < sizeof(shstrtab); i += strlen(shstrtab + i) + 1)
		if (!strcmp(shstrtab + i, name))
			return i;
	return 0;
}

/*
 * ELF header, the PT_LOAD and PT_NOTE headers, the note; then the symbols,
 * their names and the section headers.  The PT_LOAD runs from offset 0 at
 * address 0 to the last region's end, so a file offset is its address; the
 * .text (NOBITS: no bytes) starts at the first region.
 */
int py_elf__image(struct py_elf *w, void **image, size_t *len)
{
	struct sbuf b = {};
	Elf64_Ehdr eh = {};
	Elf64_Phdr ph[2] = {};
	Elf64_Shdr sh[SH_NR] = {};
	Elf64_Nhdr nh = { .n_namesz = 4, .n_descsz = PY_ELF_BUILD_ID_SIZE, .n_type = NT_GNU_BUILD_ID };
	size_t note_off = sizeof(eh) + sizeof(ph), note_len = sizeof(nh) + 4 + PY_ELF_BUILD_ID_SIZE;
	size_t sym_off, str_off, shs_off, sh_off;
	__u64 text_end = w->next > PY_ELF_FIRST_PGOFF ? w->next : PY_ELF_FIRST_PGOFF + PAGE;

	settle(w);
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
	eh.e_shnum = SH_NR;
	eh.e_shstrndx = SH_SHSTRTAB;

	sym_off = (note_off + note_len + 7) & ~7ul;
	str_off = sym_off + (w->nr_syms + 1) * sizeof(Elf64_Sym);
	shs_off = str_off + w->strtab.len;
	sh_off = (shs_off + sizeof(shstrtab) + 7) & ~7ul;
	eh.e_shoff = sh_off;

	ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0, .p_vaddr = 0, .p_paddr = 0,
			      .p_filesz = note_off + note_len, .p_memsz = text_end, .p_align = PAGE };
	ph[1] = (Elf64_Phdr){ .p_type = PT_NOTE, .p_flags = PF_R, .p_offset = note_off, .p_vaddr = note_off,
			      .p_paddr = note_off, .p_filesz = note_len, .p_memsz = note_len, .p_align = 4 };
	/* sh_offset == sh_addr: perf takes a symbol's file offset as value - (sh_addr - sh_offset). */
	sh[SH_TEXT] = (Elf64_Shdr){ .sh_name = shname(".text"), .sh_type = SHT_NOBITS,
				    .sh_flags = SHF_ALLOC | SHF_EXECINSTR, .sh_addr = PY_ELF_FIRST_PGOFF,
				    .sh_offset = PY_ELF_FIRST_PGOFF, .sh_size = text_end - PY_ELF_FIRST_PGOFF,
				    .sh_addralign = 16 };
	sh[SH_NOTE] = (Elf64_Shdr){ .sh_name = shname(".note.gnu.build-id"), .sh_type = SHT_NOTE,
				    .sh_flags = SHF_ALLOC, .sh_addr = note_off, .sh_offset = note_off,
				    .sh_size = note_len, .sh_addralign = 4 };
	sh[SH_SYMTAB] = (Elf64_Shdr){ .sh_name = shname(".symtab"), .sh_type = SHT_SYMTAB, .sh_offset = sym_off,
				      .sh_size = (w->nr_syms + 1) * sizeof(Elf64_Sym), .sh_link = SH_STRTAB,
				      .sh_info = 1, .sh_addralign = 8, .sh_entsize = sizeof(Elf64_Sym) };
	sh[SH_STRTAB] = (Elf64_Shdr){ .sh_name = shname(".strtab"), .sh_type = SHT_STRTAB, .sh_offset = str_off,
				      .sh_size = w->strtab.len, .sh_addralign = 1 };
	sh[SH_SHSTRTAB] = (Elf64_Shdr){ .sh_name = shname(".shstrtab"), .sh_type = SHT_STRTAB,
					.sh_offset = shs_off, .sh_size = sizeof(shstrtab), .sh_addralign = 1 };

	sbuf_add(&b, &eh, sizeof(eh));
	sbuf_add(&b, ph, sizeof(ph));
	sbuf_add(&b, &nh, sizeof(nh));
	sbuf_add(&b, "GNU", 4);
	sbuf_add(&b, w->build_id, PY_ELF_BUILD_ID_SIZE);
	sbuf_zero(&b, sym_off - b.len);
	sbuf_zero(&b, sizeof(Elf64_Sym)); /* symbol 0 */
	for (size_t i = 0; i < w->nr_syms; i++) {
		Elf64_Sym s = { .st_name = w->syms[i].name, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
				.st_shndx = SH_TEXT, .st_value = w->syms[i].off, .st_size = w->syms[i].size };

		sbuf_add(&b, &s, sizeof(s));
	}
	sbuf_add(&b, w->strtab.p, w->strtab.len);
	sbuf_add(&b, shstrtab, sizeof(shstrtab));
	sbuf_zero(&b, sh_off - b.len);
	sbuf_add(&b, sh, sizeof(sh));
	if (b.err) {
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
	if (mkdir(w->dir, 0755) && errno != EEXIST) {
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

		snprintf(tmp, sizeof(tmp), ".tmp-%08x-%.16s", r, w->name + strlen(NAME_PREFIX));
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
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
	free(w);
}

/* ---- pruning ---- */

/* A name of ours in the folder: python-HEX.elf. */
static bool ours(const char *name)
{
	size_t n = strlen(name), p = strlen(NAME_PREFIX), s = strlen(NAME_SUFFIX);

	if (n <= p + s || strncmp(name, NAME_PREFIX, p) || strcmp(name + n - s, NAME_SUFFIX))
		return false;
	for (size_t i = p; i < n - s; i++)
		if (!strchr("0123456789abcdef", name[i]))
			return false;
	return true;
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
