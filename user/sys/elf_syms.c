// SPDX-License-Identifier: GPL-2.0
/*
 * An ELF file's symbols as perf 6.1 reads them (util/symbol-elf.c): the
 * symbol table, else the dynamic one, the PLT's entries, one alias per
 * address chosen as perf chooses, and the PT_LOAD segments that turn file
 * offsets into addresses.  The report's symbolizer and record's uprobe
 * lookup share it.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "demangle.h"
#include "elf_budget.h"
#include "elf_syms.h"
#include "fileio.h"
#include "map_guard.h"
#include "util.h"

static int cmp_sym(const void *a, const void *b)
{
	const struct elf_sym *x = a, *y = b;

	if (x->start != y->start)
		return (x->start > y->start) - (x->start < y->start);
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static int underscores(const char *s)
{
	int n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/*
 * Of two aliases at one address, the one perf shows (util/symbol.c's
 * choose_best_symbol), so that both tools name a frame alike: sized, then
 * not weak, then global, then fewer leading underscores, then longer, then
 * the first listed (pthread_rwlock_rdlock@GLIBC_2.2.5 before @@GLIBC_2.34).
 */
static bool better(const struct elf_sym *a, const struct elf_sym *b)
{
	bool asz = a->end > a->start, bsz = b->end > b->start;
	size_t al, bl;

	if (asz != bsz)
		return asz;
	if ((a->binding == STB_WEAK) != (b->binding == STB_WEAK))
		return b->binding == STB_WEAK;
	if ((a->binding == STB_GLOBAL) != (b->binding == STB_GLOBAL))
		return a->binding == STB_GLOBAL;
	if (underscores(a->name) != underscores(b->name))
		return underscores(a->name) < underscores(b->name);
	al = strlen(a->name);
	bl = strlen(b->name);
	if (al != bl)
		return al > bl;
	/* perf keeps the first in its tree, which is the file's order. */
	return a->seq < b->seq;
}

/*
 * Sorts, closes sizeless symbols at the next one, then keeps one of the
 * aliases at each address: perf's symbols__fixup_end, then
 * symbols__fixup_duplicate, in that order.  So of sizeless aliases (kallsyms
 * lists memcpy, __memcpy, __pi_memcpy at one address) the last listed takes
 * the size and wins, as perf shows __pi_memcpy.
 */
void elf_syms__finish(struct elf_syms *d)
{
	int j = 0;

	if (!d->nr_syms)
		return; /* sort_n(NULL, 0) is undefined */
	sort_n(d->syms, d->nr_syms, sizeof(*d->syms), cmp_sym);
	for (int i = 0; i + 1 < d->nr_syms; i++)
		if (d->syms[i].end <= d->syms[i].start)
			d->syms[i].end = d->syms[i + 1].start;
	for (int i = 0; i < d->nr_syms; i++) {
		if (j && d->syms[j - 1].start == d->syms[i].start) {
			if (better(&d->syms[i], &d->syms[j - 1])) {
				if (d->syms[j - 1].own_name)
					free(d->syms[j - 1].name);
				d->syms[j - 1] = d->syms[i];
			} else if (d->syms[i].own_name) {
				free(d->syms[i].name);
			}
			continue;
		}
		d->syms[j++] = d->syms[i];
	}
	d->nr_syms = j;
	/* A table is kept loaded for long (symbolizer__keep_tables): without what doubling left over. */
	if (d->cap_syms > (size_t)j + j / 8) {
		struct elf_sym *v = realloc(d->syms, j * sizeof(*v));

		if (v) {
			d->syms = v;
			d->cap_syms = j;
		}
	}
	/*
	 * Aliases that stayed sizeless: up to the next symbol; the last one to
	 * the end of the page after its own, as perf's fixup_end does.
	 */
	for (int i = 0; i < d->nr_syms; i++)
		if (d->syms[i].end <= d->syms[i].start)
			d->syms[i].end = i + 1 < d->nr_syms ? d->syms[i + 1].start
							     : ((d->syms[i].start + 4095) & ~4095ull) + 4096;
}

/* A block of names (struct elf_syms' names). */
struct elf_names {
	struct elf_names *next;
	size_t used, cap;
	char s[];
};

#define NAMES_BLOCK (64u << 10)

/* A copy of name in d's blocks; NULL: no memory. */
static char *names_dup(struct elf_syms *d, const char *name)
{
	size_t len = strlen(name) + 1;
	struct elf_names *b = d->names;

	if (!b || b->cap - b->used < len) {
		/* From 4 KiB, doubling to 64: a small library's names take little more than they need. */
		size_t grow = b && b->cap * 2 <= NAMES_BLOCK ? b->cap * 2 : b ? NAMES_BLOCK : 4096;
		size_t cap = len > grow / 4 ? len : grow - sizeof(*b);

		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->used = 0;
		b->cap = cap;
		/* A name of its own size goes behind the current block, which still has room. */
		if (cap == len && d->names) {
			b->next = d->names->next;
			d->names->next = b;
		} else {
			b->next = d->names;
			d->names = b;
		}
	}
	memcpy(b->s + b->used, name, len);
	b->used += len;
	return b->s + b->used - len;
}

static int add_sym(struct elf_syms *d, __u64 start, __u64 size, const char *name, int binding, bool copy)
{
	if (array_reserve((void **)&d->syms, &d->cap_syms, d->nr_syms, sizeof(*d->syms)))
		return -ENOMEM;
	d->syms[d->nr_syms].name = copy ? names_dup(d, name) : (char *)name;
	if (!d->syms[d->nr_syms].name)
		return -ENOMEM;
	d->syms[d->nr_syms].own_name = false;
	d->syms[d->nr_syms].start = start;
	d->syms[d->nr_syms].end = start + size;
	d->syms[d->nr_syms].binding = binding;
	d->syms[d->nr_syms].demangled = false;
	d->syms[d->nr_syms].object = false;
	d->syms[d->nr_syms].seq = d->nr_syms;
	d->nr_syms++;
	return 0;
}

int elf_syms__add(struct elf_syms *d, __u64 start, __u64 size, const char *name, int binding)
{
	return add_sym(d, start, size, name, binding, true);
}

int elf_syms__add_ref(struct elf_syms *d, __u64 start, __u64 size, const char *name, int binding)
{
	return add_sym(d, start, size, name, binding, false);
}

static pthread_once_t guard_once = PTHREAD_ONCE_INIT;

static void guard_install(void)
{
	map_guard__install();
}

/*
 * The string table of a file's symbols, mapped for names to point into:
 * the section's bytes, then a page of zeros, so that a name whose file was
 * rewritten since ends there at the latest, and with the map guard a file
 * cut short reads as zeros (no SIGBUS).  Its pages are let go once loaded:
 * a name read later comes back from the page cache.  NULL where it cannot
 * be (then names are copied).
 */
static const char *map_strs(struct elf_syms *d, struct elf_budget *b, size_t ndx)
{
	Elf_Scn *scn = b->fd >= 0 ? elf_getscn(b->elf, ndx) : NULL;
	size_t pg = sysconf(_SC_PAGESIZE), base, len;
	GElf_Shdr sh;
	char *m;

	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_STRTAB || !sh.sh_size || sh.sh_offset > b->size ||
	    sh.sh_size > b->size - sh.sh_offset)
		return NULL;
	base = sh.sh_offset & ~(pg - 1);
	len = sh.sh_offset + sh.sh_size - base;
	m = mmap(NULL, len + pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	if (mmap(m, len, PROT_READ, MAP_PRIVATE | MAP_FIXED, b->fd, base) == MAP_FAILED) {
		munmap(m, len + pg);
		return NULL;
	}
	pthread_once(&guard_once, guard_install);
	d->strs_map = m;
	d->strs_len = len + pg;
	return m + (sh.sh_offset - base);
}

/*
 * Function symbols from .symtab, else .dynsym; segments from the program
 * headers.  For naming addresses one alias per address is kept; a lookup by
 * name (all_aliases) needs every one ("nanosleep" is an alias of "__nanosleep").
 */
static Elf_Scn *section_named(struct elf_budget *b, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(b->elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(b->elf, scn))) {
		const char *n;

		if (gelf_getshdr(scn, sh) && (n = elf_budget_str(b, shstrndx, sh->sh_name)) && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/*
 * The PLT's entries as perf 6.1 names them (symbol-elf.c's
 * dso__synthesize_plt_symbols): NAME@plt for the i-th .rela.plt
 * relocation at .plt + (i + 1) * entsize, the first entry being the PLT's
 * header, and "@plt" where the relocation names no symbol (IRELATIVE).
 * Without them a call through the PLT counted as _init, or whatever
 * sizeless symbol came before.  A debug file's .plt is NOBITS: nothing.
 */
int elf_syms__add_plt(struct elf_syms *d, struct elf_budget *b)
{
	GElf_Shdr rel_sh, plt_sh, dyn_sh;
	Elf_Scn *rel = section_named(b, ".rela.plt", &rel_sh);
	Elf_Scn *plt = section_named(b, ".plt", &plt_sh), *dyn;
	Elf_Data *rels, *syms;
	char name[512];
	__u64 entsize = plt_sh.sh_entsize, addr;
	size_t n;

	if (!rel || !plt || plt_sh.sh_type != SHT_PROGBITS || rel_sh.sh_type != SHT_RELA || !rel_sh.sh_entsize ||
	    !entsize)
		return 0;
	dyn = elf_getscn(b->elf, rel_sh.sh_link);
	if (!dyn || !gelf_getshdr(dyn, &dyn_sh) || dyn_sh.sh_type != SHT_DYNSYM)
		return 0;
	rels = elf_budget_data(b, rel);
	syms = elf_budget_data(b, dyn);
	if (!rels || !syms)
		return 0;
	n = rel_sh.sh_size / rel_sh.sh_entsize;
	addr = plt_sh.sh_addr + entsize;
	for (size_t i = 0; i < n; i++, addr += entsize) {
		GElf_Rela r;
		GElf_Sym sym;
		const char *sname = "";
		char *demangled;
		int e;

		if (!gelf_getrela(rels, i, &r))
			break;
		if (addr + entsize > plt_sh.sh_addr + plt_sh.sh_size)
			break; /* a relocation count the section cannot hold */
		if (GELF_R_SYM(r.r_info) && gelf_getsym(syms, GELF_R_SYM(r.r_info), &sym))
			sname = elf_budget_str(b, dyn_sh.sh_link, sym.st_name) ?: "";
		/* perf demangles the name, then adds @plt: "operator delete@plt". */
		demangled = demangle(sname);
		snprintf(name, sizeof(name), "%s@plt", demangled ? demangled : sname);
		free(demangled);
		e = elf_syms__add(d, addr, entsize, name, STB_GLOBAL);
		if (e)
			return e;
		d->syms[d->nr_syms - 1].demangled = true;
	}
	return 0;
}

/*
 * The symbols perf 6.1 reads from a symbol table (symbol-elf.c's
 * dso__load_sym): functions and data objects, and labels (NOTYPE: ld.so's
 * _start, hand-written assembly's entry points) in a section whose name
 * says text or data.  Objects name no code, but they close the sizeless
 * symbol before them and take part in the choice among aliases, so they
 * are kept for perf's sake.  Symbols of sections that are not loaded
 * (SHF_ALLOC clear: .gnu.warning.*) are left out, as perf does.
 */
static bool elf_sym_kept(struct elf_budget *b, size_t shstrndx, const GElf_Sym *sym)
{
	int type = GELF_ST_TYPE(sym->st_info), vis = GELF_ST_VISIBILITY(sym->st_other);
	bool label = type == STT_NOTYPE && vis != STV_HIDDEN && vis != STV_INTERNAL;
	const char *sec;
	Elf_Scn *scn;
	GElf_Shdr sh;

	if (!sym->st_name || sym->st_shndx == SHN_UNDEF || sym->st_shndx >= SHN_LORESERVE || !sym->st_value)
		return false;
	if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_OBJECT && !label)
		return false;
	scn = elf_getscn(b->elf, sym->st_shndx);
	if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC))
		return false;
	if (!label)
		return true;
	sec = elf_budget_str(b, shstrndx, sh.sh_name);
	return sec && (strstr(sec, "text") || strstr(sec, "data"));
}

static int load_elf_syms(struct elf_syms *d, struct elf_budget *b, bool want_segs, bool all_aliases)
{
	Elf *elf = b->elf;
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	const char *strs = NULL;
	size_t phnum = 0;
	int err = 0;

	if (!elf || elf_kind(elf) != ELF_K_ELF)
		return b->err == -E2BIG ? b->err : -EINVAL;
	if (want_segs && !elf_getphdrnum(elf, &phnum) && phnum < 4096) {
		d->segs = calloc(phnum ? phnum : 1, sizeof(*d->segs));
		for (size_t i = 0; d->segs && i < phnum; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD)
				d->segs[d->nr_segs++] = (struct elf_seg){ ph.p_offset, ph.p_vaddr, ph.p_filesz };
		}
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			symtab = scn;
		else if (sh.sh_type == SHT_DYNSYM)
			dynsym = scn;
	}
	scn = symtab ? symtab : dynsym;
	if (scn) {
		GElf_Shdr sh;
		Elf_Data *data = elf_budget_data(b, scn);
		size_t n, shstrndx = 0, es = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);

		if (!gelf_getshdr(scn, &sh) || !data || !sh.sh_entsize || !es)
			return b->err ?: -EINVAL;
		/* Counted from the data read, whatever sh_entsize claims. */
		n = data->d_size / es;
		elf_getshdrstrndx(elf, &shstrndx);
		strs = d->strs_map ? NULL : map_strs(d, b, sh.sh_link);
		for (size_t i = 0; i < n && !err; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(data, i, &sym))
				break;
			if (!elf_sym_kept(b, shstrndx, &sym))
				continue;
			name = elf_budget_str(b, sh.sh_link, sym.st_name);
			if (!name || !*name)
				continue;
			/* The same name in the mapping, checked: it is what the table keeps. */
			if (strs && !strcmp(strs + sym.st_name, name))
				name = strs + sym.st_name;
			err = add_sym(d, sym.st_value, sym.st_size, name, GELF_ST_BIND(sym.st_info), name != strs + sym.st_name);
			if (!err)
				d->syms[d->nr_syms - 1].object = GELF_ST_TYPE(sym.st_info) == STT_OBJECT;
		}
	}
	/*
	 * perf synthesizes the PLT only when the symbol table gave it a symbol
	 * (dso__load: "if (ret > 0)"): a stripped PIE whose .dynsym holds only
	 * imports has no names at all there, PLT included.
	 */
	if (!err && d->nr_syms)
		err = elf_syms__add_plt(d, b);
	/* A table cut short by the budget is a hostile file's: none of it is trusted. */
	if (!err && b->err) {
		err = b->err;
		elf_syms__clear(d);
	}
	if (!all_aliases)
		elf_syms__finish(d);
	/* Read: its pages go back to the page cache, and come back for the few names asked for later. */
	elf_syms__drop_pages(d);
	return err;
}

void elf_syms__drop_pages(struct elf_syms *d)
{
	if (d && d->strs_map)
		madvise(d->strs_map, d->strs_len, MADV_DONTNEED);
}

int elf_syms__load_file(struct elf_syms *d, const char *file, bool want_segs, bool all_aliases)
{
	struct elf_budget b;
	int fd, err;

	fd = open_regular(file);
	if (fd < 0)
		return fd;
	elf_budget_begin(&b, fd, true, ELF_BUDGET_SYMS, file);
	err = load_elf_syms(d, &b, want_segs, all_aliases);
	elf_budget_end(&b);
	close(fd);
	return err;
}


int elf_syms__load_mem(struct elf_syms *d, void *image, size_t size)
{
	struct elf_budget b;
	int err;

	elf_budget_memory(&b, image, size, ELF_BUDGET_SYMS, "[vdso]");
	err = load_elf_syms(d, &b, true, false);
	elf_budget_end(&b);
	return err;
}

/* The .gnu_debuglink name of a file, where stripped binaries point at their symbols. */
int elf_debuglink(const char *file, char *out, size_t len)
{
	struct elf_budget b;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int fd, err = -ENOENT;
	Elf *elf;

	fd = open_regular(file);
	if (fd < 0)
		return fd;
	elf = elf_budget_begin(&b, fd, true, ELF_BUDGET_SYMS, file);
	if (elf && !elf_getshdrstrndx(elf, &shstrndx)) {
		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			Elf_Data *d;
			const char *name;

			if (!gelf_getshdr(scn, &sh))
				continue;
			name = elf_budget_str(&b, shstrndx, sh.sh_name);
			if (!name || strcmp(name, ".gnu_debuglink"))
				continue;
			d = elf_budget_data(&b, scn);
			if (d && d->d_buf && d->d_size > 1 && memchr(d->d_buf, 0, d->d_size)) {
				snprintf(out, len, "%s", (const char *)d->d_buf);
				err = 0;
			}
			break;
		}
	}
	elf_budget_end(&b);
	close(fd);
	return err;
}

bool elf_has_symtab(const char *file)
{
	struct elf_budget b;
	bool yes;
	int fd = open_regular(file);
	Elf *elf;
	Elf_Scn *scn = NULL;

	if (fd < 0)
		return false;
	/* Headers only: nothing is read but what elf_budget_begin checks. */
	elf = elf_budget_begin(&b, fd, true, 0, file);
	yes = false;
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB) {
			yes = true;
			break;
		}
	}
	elf_budget_end(&b);
	close(fd);
	return yes;
}


struct elf_sym *elf_syms__find(const struct elf_syms *d, __u64 addr)
{
	int lo = 0, hi = d->nr_syms - 1;

	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;

		if (d->syms[mid].start <= addr) {
			if (addr < d->syms[mid].end)
				return &d->syms[mid];
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return NULL;
}

/* File offset to ELF virtual address, through the PT_LOAD segments. */
__u64 elf_syms__to_vaddr(const struct elf_syms *d, __u64 off)
{
	for (int i = 0; i < d->nr_segs; i++)
		if (off >= d->segs[i].off && off < d->segs[i].off + d->segs[i].filesz)
			return off - d->segs[i].off + d->segs[i].vaddr;
	return off;
}

/*
 * C++ and Rust names are demangled the first time a sample lands in them: a
 * libstdc++ holds thousands, of which a profile touches a few.
 */
const char *elf_sym__name(struct elf_sym *sym)
{
	char *d;

	if (!sym->demangled) {
		sym->demangled = true;
		d = demangle(sym->name);
		if (d) {
			if (sym->own_name)
				free(sym->name);
			sym->name = d;
			sym->own_name = true;
		}
	}
	return sym->name;
}

int elf_syms__names_from_file(struct elf_syms *t, int fd, const __u32 *by_seq)
{
	__u32 *offs = malloc(SP_MAX(t->nr_syms, 1) * sizeof(*offs));

	if (!offs)
		return -ENOMEM;
	for (int i = 0; i < t->nr_syms; i++) {
		offs[i] = by_seq[t->syms[i].seq];
		if (t->syms[i].own_name)
			free(t->syms[i].name);
		t->syms[i].name = NULL;
		t->syms[i].own_name = false;
		t->syms[i].demangled = false;
	}
	while (t->names) {
		struct elf_names *next = t->names->next;

		free(t->names);
		t->names = next;
	}
	t->name_offs = offs;
	t->names_fd = fd;
	return 0;
}

const char *elf_syms__name(struct elf_syms *t, struct elf_sym *sym)
{
	/* As kallsyms_parse cuts a name, and the loader kept at most 255 bytes of it. */
	char buf[256];
	ssize_t n;

	if (!sym->name && t->name_offs) {
		n = pread(t->names_fd, buf, sizeof(buf) - 1, t->name_offs[sym - t->syms]);
		if (n <= 0)
			return "[unknown]";
		buf[n] = 0;
		buf[strcspn(buf, "\t \n")] = 0;
		sym->name = strdup(buf);
		if (!sym->name)
			return "[unknown]";
		sym->own_name = true;
	}
	return elf_sym__name(sym);
}

/* Versioned names ("malloc@@GLIBC_2.2.5") match their base name. */
static bool name_matches(const char *n, const char *func, bool versioned)
{
	size_t l = strlen(func);

	return !strncmp(n, func, l) && (!n[l] || (versioned && n[l] == '@'));
}

/* Index of the symbol named func in d, or -1; demangled: compare C++ names as perf shows them. */
static int find_named(const struct elf_syms *d, const char *func, bool demangled, int from)
{
	for (int i = from; i < d->nr_syms; i++) {
		char *dm;
		bool match;

		if (d->syms[i].object)
			continue; /* a variable is no place for a uprobe */
		dm = demangled ? demangle(d->syms[i].name) : NULL;
		match = demangled ? dm && name_matches(dm, func, false) : name_matches(d->syms[i].name, func, true);
		free(dm);
		if (match)
			return i;
	}
	return -1;
}

/*
 * Overloads share their demangled name: attaching to the first one found
 * would be a guess, so the caller gets their mangled names to choose from.
 * Aliases (one address, several names) are one function.
 */
static int check_unique(const struct elf_syms *d, const char *func, int idx, char *out, size_t len)
{
	__u64 starts[16];
	size_t used = 0;
	int n = 0;

	/* One pass on from the first match: each name is demangled once. */
	for (int i = idx; i >= 0 && n < (int)ARRAY_SIZE(starts); i = find_named(d, func, true, i + 1)) {
		bool seen = false;

		for (int k = 0; k < n && !seen; k++)
			seen = starts[k] == d->syms[i].start;
		if (seen)
			continue;
		starts[n] = d->syms[i].start;
		if (out && len && used < len)
			used += snprintf(out + used, len - used, "%s%s", n ? ", " : "", d->syms[i].name);
		n++;
	}
	return n > 1 ? -ENOTUNIQ : 0;
}

int elf_find_function(const char *path, const char *func, __u64 *file_offset, char *candidates,
			  size_t candidates_len)
{
	struct elf_syms d = {};
	int idx, e = elf_syms__load_file(&d, path, true, true);

	if (candidates && candidates_len)
		candidates[0] = 0;
	if (!e) {
		/* Mangled or plain names first, then "ns::Foo::get". */
		idx = find_named(&d, func, false, 0);
		if (idx < 0) {
			idx = find_named(&d, func, true, 0);
			if (idx >= 0)
				e = check_unique(&d, func, idx, candidates, candidates_len);
		}
		if (!e && idx < 0)
			e = -ENOENT;
		if (!e) {
			__u64 va = d.syms[idx].start;

			*file_offset = va;
			for (int k = 0; k < d.nr_segs; k++)
				if (va >= d.segs[k].vaddr && va < d.segs[k].vaddr + d.segs[k].filesz)
					*file_offset = va - d.segs[k].vaddr + d.segs[k].off;
		}
	} else if (e == -EINVAL) {
		e = -ENOEXEC;
	}
	elf_syms__clear(&d);
	return e;
}

int elf_syms_count(const char *path)
{
	struct elf_syms d = {};
	int e = elf_syms__load_file(&d, path, true, false), n = d.nr_syms;

	elf_syms__clear(&d);
	return e ? e : n;
}

void elf_syms__clear(struct elf_syms *d)
{
	if (!d)
		return;
	for (int i = 0; i < d->nr_syms; i++)
		if (d->syms[i].own_name)
			free(d->syms[i].name);
	while (d->names) {
		struct elf_names *next = d->names->next;

		free(d->names);
		d->names = next;
	}
	free(d->syms);
	free(d->segs);
	if (d->strs_map)
		munmap(d->strs_map, d->strs_len);
	if (d->name_offs) {
		free(d->name_offs);
		close(d->names_fd);
	}
	*d = (struct elf_syms){};
}
