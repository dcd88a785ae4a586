// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "elf_budget.h"
#include "log.h"
#include "util.h"

/* The process's reads: files come from several threads (debuginfod's checks). */
static struct {
	__u64 files, bytes, refused, held, held_max;
	int warned;
} run;

void elf_budget_stats(struct elf_budget_stats *st)
{
	st->files = __atomic_load_n(&run.files, __ATOMIC_RELAXED);
	st->bytes = __atomic_load_n(&run.bytes, __ATOMIC_RELAXED);
	st->refused = __atomic_load_n(&run.refused, __ATOMIC_RELAXED);
	st->held = __atomic_load_n(&run.held, __ATOMIC_RELAXED);
	st->held_max = __atomic_load_n(&run.held_max, __ATOMIC_RELAXED);
}

/*
 * The file's name for a message: the caller's, else what the descriptor
 * says; another user chose it, so control characters never reach the
 * terminal.
 */
static const char *file_name(const struct elf_budget *b, char *buf, size_t len)
{
	char link[64];
	ssize_t n;

	if (b->name) {
		snprintf(buf, len, "%s", b->name);
		n = strlen(buf);
	} else {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", b->fd);
		n = b->fd >= 0 ? readlink(link, buf, len - 1) : -1;
		if (n <= 0)
			return "an ELF file";
		buf[n] = 0;
	}
	for (ssize_t i = 0; i < n; i++)
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			buf[i] = '?';
	return buf;
}

void elf_budget_say(void)
{
	struct elf_budget_stats st;

	elf_budget_stats(&st);
	if (!st.files)
		return;
	pr_debug("ELF reads: %llu files, %.1f MB in all, at most %.1f MB held at once; %llu files read only in part "
		 "(over their budget: a real file never is)",
		 (unsigned long long)st.files, st.bytes / 1e6, st.held_max / 1e6, (unsigned long long)st.refused);
}

static int refuse(struct elf_budget *b, int err)
{
	const char *what = err == -E2BIG ? "sections or headers" : "bytes";
	char name[PATH_MAX];

	if (b->err)
		return b->err;
	b->err = err;
	__atomic_add_fetch(&run.refused, 1, __ATOMIC_RELAXED);
	/* Once per process at warning level: a host may hold many such files, and -v names each. */
	if (!__atomic_exchange_n(&run.warned, 1, __ATOMIC_RELAXED))
		pr_warn("%s: read only in part: it has more %s than a real ELF file (%llu bytes, %d sections "
			"for this use); files like it are named with -v",
			file_name(b, name, sizeof(name)), what, (unsigned long long)b->limit, ELF_BUDGET_SECTIONS);
	else
		pr_debug("%s: read only in part: it has more %s than a real ELF file (%llu bytes, %d sections)",
			 file_name(b, name, sizeof(name)), what, (unsigned long long)b->limit, ELF_BUDGET_SECTIONS);
	return err;
}

/*
 * Section ndx costs bytes.  keep: libelf keeps them until the end, so a
 * second call costs nothing and they count to the process's total held.
 */
static int charge(struct elf_budget *b, size_t ndx, __u64 bytes, bool keep)
{
	unsigned i;
	__u64 now, max;

	for (i = 0; i < b->nr_seen && b->seen[i].ndx != ndx; i++)
		;
	if (i < b->nr_seen && keep && b->seen[i].kept)
		return 0;
	if (b->err)
		return b->err; /* a file found hostile once is read no further */
	if (i == b->nr_seen) {
		if (i == ELF_BUDGET_SECTIONS)
			return refuse(b, -E2BIG);
		b->seen[i].ndx = ndx;
		b->seen[i].kept = false;
		b->nr_seen++;
	}
	if (bytes > b->limit - b->used)
		return refuse(b, -EFBIG);
	if (keep) {
		now = __atomic_add_fetch(&run.held, bytes, __ATOMIC_RELAXED);
		if (now > ELF_BUDGET_HELD) {
			__atomic_sub_fetch(&run.held, bytes, __ATOMIC_RELAXED);
			return refuse(b, -EFBIG);
		}
		max = __atomic_load_n(&run.held_max, __ATOMIC_RELAXED);
		while (now > max && !__atomic_compare_exchange_n(&run.held_max, &max, now, true, __ATOMIC_RELAXED,
								 __ATOMIC_RELAXED))
			;
		b->held += bytes;
		b->seen[i].kept = true;
	}
	b->used += bytes;
	__atomic_add_fetch(&run.bytes, bytes, __ATOMIC_RELAXED);
	return 0;
}

/* len bytes at off of the file or the image: all of them, or -EINVAL (shorter than its headers say). */
static int src_read(const struct elf_budget *b, __u64 off, void *buf, size_t len)
{
	char *p = buf;

	if (off > b->size || len > b->size - off)
		return -EINVAL;
	if (b->fd < 0) {
		memcpy(buf, (const char *)b->image + off, len);
		return 0;
	}
	while (len) {
		ssize_t n = pread(b->fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return -EINVAL; /* truncated meanwhile */
		p += n;
		len -= n;
		off += n;
	}
	return 0;
}

static __u64 field(const __u8 *p, int n, bool msb)
{
	__u64 v = 0;

	for (int i = 0; i < n; i++)
		v |= (__u64)p[i] << 8 * (msb ? n - 1 - i : i);
	return v;
}

/*
 * The ELF header, before libelf sets up a structure per section and reads
 * every header: the counts, extended numbering (the real count in section
 * 0's header) included.  0, -EINVAL (not ELF), -E2BIG.
 */
static int check_headers(const struct elf_budget *b)
{
	__u8 eh[64], sh0[64];
	__u64 shoff, shnum, phnum;
	bool is64, msb;

	if (src_read(b, 0, eh, EI_NIDENT) || memcmp(eh, ELFMAG, SELFMAG))
		return -EINVAL;
	if ((eh[EI_CLASS] != ELFCLASS32 && eh[EI_CLASS] != ELFCLASS64) ||
	    (eh[EI_DATA] != ELFDATA2LSB && eh[EI_DATA] != ELFDATA2MSB))
		return -EINVAL;
	is64 = eh[EI_CLASS] == ELFCLASS64;
	msb = eh[EI_DATA] == ELFDATA2MSB;
	if (src_read(b, 0, eh, is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr)))
		return -EINVAL;
	shoff = is64 ? field(eh + offsetof(Elf64_Ehdr, e_shoff), 8, msb) : field(eh + offsetof(Elf32_Ehdr, e_shoff), 4, msb);
	phnum = field(eh + (is64 ? offsetof(Elf64_Ehdr, e_phnum) : offsetof(Elf32_Ehdr, e_phnum)), 2, msb);
	shnum = field(eh + (is64 ? offsetof(Elf64_Ehdr, e_shnum) : offsetof(Elf32_Ehdr, e_shnum)), 2, msb);
	if ((!shnum && shoff) || phnum == PN_XNUM) {
		if (src_read(b, shoff, sh0, is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr)))
			return -EINVAL;
		if (!shnum)
			shnum = is64 ? field(sh0 + offsetof(Elf64_Shdr, sh_size), 8, msb)
				     : field(sh0 + offsetof(Elf32_Shdr, sh_size), 4, msb);
		if (phnum == PN_XNUM)
			phnum = field(sh0 + (is64 ? offsetof(Elf64_Shdr, sh_info) : offsetof(Elf32_Shdr, sh_info)), 4,
				      msb);
	}
	return shnum > ELF_BUDGET_HEADERS || phnum > ELF_BUDGET_HEADERS ? -E2BIG : 0;
}

/* Mapped only if no one else can truncate the file under us (a SIGBUS mid-read). */
static bool ours(const struct stat *st)
{
	return (st->st_uid == 0 || st->st_uid == geteuid()) && !(st->st_mode & 022);
}

static Elf *begin(struct elf_budget *b, Elf_Cmd cmd)
{
	int e;

	__atomic_add_fetch(&run.files, 1, __ATOMIC_RELAXED);
	e = check_headers(b);
	if (e) {
		if (e == -E2BIG)
			refuse(b, e);
		b->err = e;
		return NULL;
	}
	b->elf = b->fd >= 0 ? elf_begin(b->fd, cmd, NULL) : elf_memory((char *)b->image, b->size);
	if (!b->elf)
		b->err = -EINVAL;
	return b->elf;
}

void elf_budget_init(struct elf_budget *b, int fd, __u64 file_size, __u64 limit, const char *name)
{
	memset(b, 0, sizeof(*b));
	b->fd = fd;
	b->size = file_size;
	b->limit = SP_MIN(limit, file_size);
	b->name = name;
}

Elf *elf_budget_begin(struct elf_budget *b, int fd, bool map, __u64 limit, const char *name)
{
	struct stat st;

	elf_budget_init(b, fd, 0, 0, name);
	if (elf_version(EV_CURRENT) == EV_NONE) {
		b->err = -EINVAL;
		return NULL;
	}
	if (fstat(fd, &st)) {
		b->err = -errno;
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		b->err = -EINVAL;
		return NULL;
	}
	elf_budget_init(b, fd, st.st_size, limit, name);
	return begin(b, map && ours(&st) ? ELF_C_READ_MMAP : ELF_C_READ);
}

Elf *elf_budget_memory(struct elf_budget *b, const void *image, size_t size, __u64 limit, const char *name)
{
	elf_budget_init(b, -1, size, limit, name);
	b->image = image;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		b->err = -EINVAL;
		return NULL;
	}
	return begin(b, ELF_C_READ);
}

void elf_budget_end(struct elf_budget *b)
{
	if (!b)
		return;
	if (b->elf)
		elf_end(b->elf);
	b->elf = NULL;
	__atomic_sub_fetch(&run.held, b->held, __ATOMIC_RELAXED);
	b->held = 0;
}

Elf_Data *elf_budget_data(struct elf_budget *b, Elf_Scn *scn)
{
	GElf_Shdr sh;

	if (!scn || !gelf_getshdr(scn, &sh) || charge(b, elf_ndxscn(scn), sh.sh_type == SHT_NOBITS ? 0 : sh.sh_size, true))
		return NULL;
	return elf_getdata(scn, NULL);
}

const char *elf_budget_str(struct elf_budget *b, size_t ndx, size_t off)
{
	Elf_Scn *scn = elf_getscn(b->elf, ndx);
	GElf_Shdr sh;

	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_STRTAB || charge(b, ndx, sh.sh_size, true))
		return NULL;
	return elf_strptr(b->elf, ndx, off);
}

/* Checks [off, off + len) of scn against the section and the file, and charges it. */
static int reserve(struct elf_budget *b, Elf_Scn *scn, __u64 off, size_t len, GElf_Shdr *sh)
{
	if (!scn || !gelf_getshdr(scn, sh) || sh->sh_type == SHT_NOBITS || off > sh->sh_size ||
	    len > sh->sh_size - off || sh->sh_offset > b->size || sh->sh_size > b->size - sh->sh_offset)
		return -EINVAL;
	return charge(b, elf_ndxscn(scn), len, false);
}

/* The file's byte order to ours, in place. */
static int to_memory(struct elf_budget *b, Elf_Type type, void *buf, size_t len)
{
	const char *ident = elf_getident(b->elf, NULL);
	int host = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
	Elf_Data d = { .d_buf = buf, .d_type = type, .d_size = len, .d_version = EV_CURRENT };

	if (type == ELF_T_BYTE || !ident || ident[EI_DATA] == host)
		return 0;
	return gelf_xlatetom(b->elf, &d, &d, ident[EI_DATA]) ? 0 : -EINVAL;
}

int elf_budget_read(struct elf_budget *b, Elf_Scn *scn, Elf_Type type, __u64 off, void *buf, size_t len)
{
	GElf_Shdr sh;
	int e = reserve(b, scn, off, len, &sh);

	return e ?: src_read(b, sh.sh_offset + off, buf, len) ?: to_memory(b, type, buf, len);
}

void *elf_budget_copy(struct elf_budget *b, Elf_Scn *scn, Elf_Type type, size_t *len)
{
	GElf_Shdr sh;
	void *buf;
	int e;

	*len = 0;
	if (!scn || !gelf_getshdr(scn, &sh)) {
		errno = EINVAL;
		return NULL;
	}
	e = reserve(b, scn, 0, sh.sh_size, &sh);
	buf = e ? NULL : malloc(sh.sh_size ? sh.sh_size : 1);
	if (!e && !buf)
		e = -ENOMEM;
	if (!e)
		e = src_read(b, sh.sh_offset, buf, sh.sh_size) ?: to_memory(b, type, buf, sh.sh_size);
	if (e) {
		free(buf);
		errno = -e;
		return NULL;
	}
	*len = sh.sh_size;
	return buf;
}

int elf_budget_take(struct elf_budget *b, size_t ndx, __u64 bytes)
{
	return charge(b, ndx, bytes, false);
}

/*
 * What libdw inflates a compressed section to: ELF's own compression (its
 * Chdr's ch_size), or the GNU .zdebug kind ("ZLIB" and a big-endian size).
 */
static __u64 inflated(struct elf_budget *b, const GElf_Shdr *sh, const char *name)
{
	bool is64 = gelf_getclass(b->elf) == ELFCLASS64;
	bool msb = elf_getident(b->elf, NULL)[EI_DATA] == ELFDATA2MSB;
	__u8 h[24];

	if (sh->sh_flags & SHF_COMPRESSED) {
		if (src_read(b, sh->sh_offset, h, is64 ? sizeof(Elf64_Chdr) : sizeof(Elf32_Chdr)))
			return 0;
		return is64 ? field(h + offsetof(Elf64_Chdr, ch_size), 8, msb)
			    : field(h + offsetof(Elf32_Chdr, ch_size), 4, msb);
	}
	if (name && !strncmp(name, ".zdebug", 7) && !src_read(b, sh->sh_offset, h, 12) && !memcmp(h, "ZLIB", 4))
		return field(h + 4, 8, true);
	return 0;
}

int elf_budget_vet(int fd, __u64 limit, const char *name)
{
	struct elf_budget b;
	Elf_Scn *scn = NULL;
	__u64 raw = 0, inflate = 0;
	size_t shstrndx = 0;
	int e = 0;

	if (!elf_budget_begin(&b, fd, false, limit, name)) {
		e = b.err;
		goto cleanup;
	}
	if (elf_kind(b.elf) != ELF_K_ELF) {
		e = -EINVAL;
		goto cleanup;
	}
	elf_getshdrstrndx(b.elf, &shstrndx);
	/*
	 * Sections are not read, only their headers: libdw maps the file, so
	 * plain sections cost no memory unless they overlap (summed past the
	 * file's size), and compressed ones cost what they inflate to.
	 */
	while (!e && (scn = elf_nextscn(b.elf, scn))) {
		GElf_Shdr sh;
		const char *sname;
		__u64 n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		raw += sh.sh_size;
		sname = shstrndx ? elf_budget_str(&b, shstrndx, sh.sh_name) : NULL;
		n = inflated(&b, &sh, sname);
		if (n > limit || inflate > limit - n || raw > b.size)
			e = refuse(&b, -EFBIG);
		else
			inflate += n;
		if (!e && b.err)
			e = b.err;
	}
cleanup:
	elf_budget_end(&b);
	return e;
}

bool elf_is_x86_64(Elf *elf, GElf_Ehdr *eh)
{
	return elf && elf_kind(elf) == ELF_K_ELF && gelf_getehdr(elf, eh) && eh->e_ident[EI_CLASS] == ELFCLASS64 &&
	       eh->e_machine == EM_X86_64;
}

/* Larger symbol tables are no runtime's (libjvm's is a few MiB): not read. */
#define MAX_SYMTAB_BYTES (64u << 20)

static int each_sym_of(struct elf_budget *b, Elf_Scn *scn, const GElf_Shdr *sh, elf_sym_fn fn, void *ctx)
{
	Elf_Data *data;
	size_t n;

	if (sh->sh_entsize != gelf_fsize(b->elf, ELF_T_SYM, 1, EV_CURRENT) || sh->sh_size > MAX_SYMTAB_BYTES ||
	    !(data = elf_budget_data(b, scn)))
		return 0;
	n = data->d_size / sh->sh_entsize;
	for (size_t i = 1; i < n; i++) {
		const char *name;
		GElf_Sym sym;
		int r;

		if (!gelf_getsym(data, i, &sym))
			break;
		if (sym.st_shndx == SHN_UNDEF || !(name = elf_budget_str(b, sh->sh_link, sym.st_name)))
			continue;
		r = fn(name, &sym, ctx);
		if (r)
			return r;
	}
	return 0;
}

int elf_budget_each_sym(struct elf_budget *b, Elf64_Word first, elf_sym_fn fn, void *ctx)
{
	Elf64_Word other = first == SHT_SYMTAB ? SHT_DYNSYM : SHT_SYMTAB;

	for (int pass = 0; pass < 2; pass++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(b->elf, scn))) {
			GElf_Shdr sh;
			int r;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != (pass ? other : first))
				continue;
			r = each_sym_of(b, scn, &sh, fn, ctx);
			if (r)
				return r;
		}
	}
	return 0;
}

int elf_pread_vaddr(int fd, Elf *elf, __u64 vaddr, void *buf, size_t len)
{
	size_t nph;

	if (elf_getphdrnum(elf, &nph))
		return -EINVAL;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_filesz && len <= ph.p_filesz - (vaddr - ph.p_vaddr))
			return pread(fd, buf, len, ph.p_offset + vaddr - ph.p_vaddr) == (ssize_t)len ? 0 : -EIO;
	}
	return -ENOENT;
}
