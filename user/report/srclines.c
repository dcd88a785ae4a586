// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "buildid.h"
#include "debuginfo.h"
#include "demangle.h"
#include "elf_budget.h"
#include "fileio.h"
#include "hash.h"
#include "srclines.h"
#include "util.h"

/* Nested inlines deeper than this are cut, as perf cuts at 1024. */
#define MAX_NEST 256

/* A function's address range in its CU, and where its DIE is. */
struct fn_range {
	__u64 lo, hi;
	__u64 reach; /* the highest hi of this and every earlier range: overlaps are found by it */
	Dwarf_Off die;
};

/* The functions of one CU with code, sorted by lo: found once, on the CU's first address. */
struct cu_fns {
	struct fn_range *r;
	size_t nr;
};

/* A dso's DWARF, opened on its first address, released by srclines__release. */
struct sdso {
	int state; /* 0: not opened; 1: usable; -1: no DWARF */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Dwarf *dw;
	/* libelf's mapping of the DWARF's file, where it is one (find_dwarf_map): pages read are dropped */
	const char *map;
	size_t map_len;
	struct u64_map cu_idx; /* CU DIE offset + 1 -> index into cus + 1 */
	struct cu_fns *cus;
	size_t nr_cus, cap_cus;
};

struct entry {
	int dso_id;
	bool frames; /* info's frames were looked for, not only its line */
	__u64 vaddr;
	struct src_info info;
};

struct srclines {
	struct symbolizer *sym;
	bool full_path;
	struct sdso *dsos;
	size_t cap_dsos;
	struct entry *e;
	size_t nr, cap;
	struct hindex idx;
	struct strpool strs;
	char *debug_path;
	Dwfl_Callbacks cb;
};

static const struct src_info none;

struct srclines *srclines__new(struct symbolizer *sym, bool full_path)
{
	struct srclines *s = calloc(1, sizeof(*s));
	struct rlimit rl;

	if (!s)
		return NULL;
	s->sym = sym;
	s->full_path = full_path;
	s->debug_path = strdup(":.debug:/usr/lib/debug");
	if (!s->debug_path) {
		free(s);
		return NULL;
	}
	s->cb.find_elf = dwfl_build_id_find_elf;
	s->cb.find_debuginfo = debuginfo_dwfl_find;
	s->cb.debuginfo_path = &s->debug_path;
	/* Each dso with lines holds a file or two open: a whole host has hundreds. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	return s;
}

static void sdso_close(struct sdso *d)
{
	if (d->dwfl)
		dwfl_end(d->dwfl);
	for (size_t i = 0; i < d->nr_cus; i++)
		free(d->cus[i].r);
	free(d->cus);
	u64_map_free(&d->cu_idx);
	memset(d, 0, sizeof(*d));
}

void srclines__release(struct srclines *s)
{
	if (s)
		for (size_t i = 0; i < s->cap_dsos; i++)
			sdso_close(&s->dsos[i]);
}

void srclines__free(struct srclines *s)
{
	if (!s)
		return;
	srclines__release(s);
	for (size_t i = 0; i < s->nr; i++)
		free((void *)s->e[i].info.frames);
	free(s->dsos);
	free(s->e);
	hindex_free(&s->idx);
	strpool_free(&s->strs);
	free(s->debug_path);
	free(s);
}

/*
 * Whether [p, p + len) is inside one mapping of a file (not memory libelf
 * read the file into): the pages of such a mapping that no one wrote to can
 * be dropped and are read again from the file when touched.
 */
static bool mapped_file(const void *p, size_t len)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[PATH_MAX + 128];
	bool yes = false;

	if (!f)
		return false;
	while (!yes && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, ino;

		if (sscanf(line, "%lx-%lx %*s %*s %*s %lu", &lo, &hi, &ino) == 3 && ino &&
		    lo <= (unsigned long)p && (unsigned long)p + len <= hi)
			yes = true;
	}
	fclose(f);
	return yes;
}

/*
 * The file libdw reads the DWARF from, where its pages may be dropped while
 * a unit is indexed: libelf's own private mapping of it.  It is writable,
 * but libdwfl writes to it only to relocate an ET_REL file's sections (a
 * whole -g --inline report leaves none of its pages dirty), and a dropped
 * page that was never written reads again as the file.  Else none.
 */
static void find_dwarf_map(struct sdso *d)
{
	Elf *elf = dwarf_getelf(d->dw);
	GElf_Ehdr eh;
	size_t len = 0;
	char *raw = elf ? elf_rawfile(elf, &len) : NULL;

	if (!raw || !len || !gelf_getehdr(elf, &eh) || (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) ||
	    !mapped_file(raw, len))
		return;
	d->map = raw;
	d->map_len = len;
}

/*
 * The pages of the DWARF's file before p, read already, out of memory: the
 * file holds them, and they come back if read again.  A unit of a large C++
 * program is tens of MB of DIEs, all read once to index its functions and
 * few of them again (issue 41: 67 MB with inline frames, perf's 26 MB).
 */
static void drop_before(const struct sdso *d, const void *p)
{
	uintptr_t lo = (uintptr_t)d->map, at = (uintptr_t)p, page = (uintptr_t)sysconf(_SC_PAGESIZE);

	if (!d->map || at <= lo || at >= lo + d->map_len)
		return;
	lo = (lo + page - 1) & ~(page - 1);
	at &= ~(page - 1);
	if (at > lo)
		madvise((void *)lo, at - lo, MADV_DONTNEED);
}

/* Every this many units of intern_units' walk, the pages behind it are dropped. */
#define DROP_UNITS 16

/*
 * Every unit of the DWARF known to libdw, once, with the pages read for it
 * dropped as the walk goes.  libdw 0.188 learns of units only in order,
 * reading each one's header: its address table (dwarf_getaranges) does so
 * for every unit, and finding one unit's DIE for each unit before it.  A
 * header per unit is a page per unit, and the kernel maps 64 KB around
 * each: all of libc's 5.8 MB of .debug_info, for one inline frame (issue
 * 41), at the report's peak.  Walked here first, the same units are known
 * at a cost of a few pages at a time.
 */
static void intern_units(struct sdso *d)
{
	Dwarf_CU *cu = NULL, *next;
	size_t n = 0;

	while (d->map && !dwarf_get_units(d->dw, cu, &next, NULL, NULL, NULL, NULL)) {
		cu = next;
		if (++n % DROP_UNITS == 0) {
			Dwarf_Die die;

			if (dwarf_cu_die(cu, &die, NULL, NULL, NULL, NULL, NULL, NULL))
				drop_before(d, die.addr);
		}
	}
}

/* The dso's module in a Dwfl of its own, at its ELF addresses (bias 0). */
static struct sdso *open_dso(struct srclines *s, int dso_id)
{
	struct sdso *d;
	const char *file;
	int fd;

	if (dso_id < 0)
		return NULL;
	if ((size_t)dso_id >= s->cap_dsos) {
		size_t old = s->cap_dsos;

		if (array_reserve((void **)&s->dsos, &s->cap_dsos, dso_id, sizeof(*s->dsos)))
			return NULL;
		memset(s->dsos + old, 0, (s->cap_dsos - old) * sizeof(*s->dsos));
	}
	d = &s->dsos[dso_id];
	if (d->state)
		return d->state > 0 ? d : NULL;
	d->state = -1;
	file = symbolizer__elf_file(s->sym, dso_id);
	if (!file || (fd = open_regular(file)) < 0)
		return NULL;
	/* What libdw will read of it, bounded first (elf_budget.h). */
	if (elf_budget_vet(fd, ELF_BUDGET_DWARF, file)) {
		close(fd);
		return NULL;
	}
	/* A debug file of compressed DWARF is read from its inflated copy, mapped, not inflated into the heap. */
	fd = debuginfo_inflated(fd);
	d->dwfl = dwfl_begin(&s->cb);
	if (!d->dwfl) {
		close(fd);
		return NULL;
	}
	/* libdw owns fd from here. */
	d->mod = dwfl_report_elf(d->dwfl, file, file, fd, 0, false);
	dwfl_report_end(d->dwfl, NULL, NULL);
	if (d->mod) {
		Dwarf_Addr bias;

		if ((d->dw = dwfl_module_getdwarf(d->mod, &bias))) {
			d->state = 1;
			find_dwarf_map(d);
			intern_units(d);
		}
	}
	if (d->state < 0) {
		dwfl_end(d->dwfl);
		d->dwfl = NULL;
	}
	return d->state > 0 ? d : NULL;
}

static const char *intern(struct srclines *s, const char *str)
{
	return str ? strpool_intern(&s->strs, str, NULL) : NULL;
}

static const char *fileline(struct srclines *s, const char *file, int line)
{
	char buf[PATH_MAX + 32];
	const char *base;

	/* Line 0 is DWARF's "no line" (compiler-made code): perf shows sym+off there too. */
	if (!file || !*file || line <= 0)
		return NULL;
	base = s->full_path ? file : strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
	snprintf(buf, sizeof(buf), "%s:%d", base, line);
	return intern(s, buf);
}

/* A function's name as DWARF gives it: its linkage name demangled as perf would, else its name. */
static const char *die_name(struct srclines *s, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	const char *r;
	char *dm;

	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	if (n && (dm = demangle(n))) {
		r = intern(s, dm);
		free(dm);
		return r;
	}
	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
	return intern(s, n ? n : "??");
}

/* The call site of an inlined subroutine: its caller's file and line. */
static const char *call_site(struct srclines *s, Dwarf_Die *cu, Dwarf_Die *inl)
{
	Dwarf_Attribute a;
	Dwarf_Word file = 0, line = 0;
	Dwarf_Files *files;
	size_t nfiles;
	const char *name;

	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &a), &file) ||
	    dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &a), &line))
		return NULL;
	if (dwarf_getsrcfiles(cu, &files, &nfiles) || file >= nfiles)
		return NULL;
	name = dwarf_filesrc(files, file, NULL, NULL);
	return fileline(s, name, (int)line);
}

static int frames_by_scopes(struct srclines *s, Dwarf_Die *cu, Dwarf_Addr pc, struct src_info *out)
{
	Dwarf_Die *scopes = NULL;
	struct src_frame *f = NULL;
	int n, nr = 0, alloc = 8;
	const char *next_line;

	n = dwarf_getscopes(cu, pc, &scopes);
	if (n <= 0) {
		free(scopes);
		return 0;
	}
	f = calloc(alloc, sizeof(*f));
	if (!f) {
		free(scopes);
		return -ENOMEM;
	}
	/*
	 * Innermost first: each inlined subroutine, then the function they are
	 * all in.  The scopes of a pc stop at its innermost inlined instance;
	 * those of that instance's DIE go on to its caller, and so on.
	 */
	next_line = out->srcline;
	for (int i = 0; i < n && nr < MAX_NEST;) {
		int tag = dwarf_tag(&scopes[i]);
		Dwarf_Die *outer = NULL;
		int m;

		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram) {
			i++;
			continue;
		}
		f[nr].name = die_name(s, &scopes[i]);
		f[nr].srcline = next_line;
		nr++;
		if (tag == DW_TAG_subprogram)
			break;
		next_line = call_site(s, cu, &scopes[i]);
		m = dwarf_getscopes_die(&scopes[i], &outer);
		free(scopes);
		scopes = outer;
		n = m;
		i = 1; /* [0] is the instance itself */
		if (nr == alloc) {
			struct src_frame *g = realloc(f, (alloc *= 2) * sizeof(*f));

			if (!g) {
				free(f);
				free(scopes);
				return -ENOMEM;
			}
			f = g;
		}
	}
	free(scopes);
	out->frames = f;
	out->nr = nr;
	return 0;
}

/*
 * Tags whose children may hold functions with code, though they have none
 * themselves.  Not the types: a class holds its methods' declarations, and
 * their code's DIEs sit outside it (DW_AT_specification), so that a CU's
 * types, most of a C++ CU, are skipped by their DW_AT_sibling, never read.
 */
static bool is_container(int tag)
{
	return tag == DW_TAG_namespace || tag == DW_TAG_module;
}

/* Every this many DIEs of a unit's walk, those behind it are dropped (drop_before). */
#define DROP_EVERY 4096

static int add_fns(struct sdso *d, struct cu_fns *c, size_t *cap, Dwarf_Die *parent, int depth, size_t *seen)
{
	Dwarf_Die child;

	if (depth > 32 || dwarf_child(parent, &child))
		return 0;
	do {
		int tag = dwarf_tag(&child);

		if (++*seen % DROP_EVERY == 0)
			drop_before(d, child.addr);

		if (tag == DW_TAG_subprogram) {
			Dwarf_Addr base, lo, hi;
			ptrdiff_t off = 0;

			while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0) {
				if (lo >= hi)
					continue;
				if (array_reserve((void **)&c->r, cap, c->nr, sizeof(*c->r)))
					return -ENOMEM;
				c->r[c->nr++] = (struct fn_range){ lo, hi, 0, dwarf_dieoffset(&child) };
			}
		} else if (is_container(tag)) {
			int e = add_fns(d, c, cap, &child, depth + 1, seen);

			if (e)
				return e;
		}
	} while (!dwarf_siblingof(&child, &child));
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct fn_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : x->die < y->die ? -1 : x->die > y->die;
}

/*
 * The functions with code of cu, sorted: what dwarf_getscopes would scan
 * DIE by DIE for every address (the CU's whole top level, types included,
 * where a large C++ CU has hundreds of thousands) is read once.
 */
static struct cu_fns *cu_fns(struct sdso *d, Dwarf_Die *cu)
{
	uint64_t *slot = u64_map_get(&d->cu_idx, dwarf_dieoffset(cu) + 1, true);
	struct cu_fns c = {};
	size_t cap = 0, seen = 0;

	if (!slot)
		return NULL;
	if (*slot)
		return &d->cus[*slot - 1];
	if (array_reserve((void **)&d->cus, &d->cap_cus, d->nr_cus, sizeof(*d->cus)))
		return NULL;
	if (add_fns(d, &c, &cap, cu, 0, &seen)) {
		free(c.r);
		return NULL;
	}
	if (c.nr)
		qsort(c.r, c.nr, sizeof(*c.r), cmp_range);
	for (size_t i = 0; i < c.nr; i++)
		c.r[i].reach = i && c.r[i - 1].reach > c.r[i].hi ? c.r[i - 1].reach : c.r[i].hi;
	d->cus[d->nr_cus] = c;
	*slot = ++d->nr_cus;
	return &d->cus[*slot - 1];
}

/* The first function in DIE order whose code holds pc, as dwarf_getscopes would find it. */
static bool fn_at(struct sdso *d, const struct cu_fns *c, Dwarf_Addr pc, Dwarf_Die *out)
{
	size_t lo = 0, hi = c->nr;
	Dwarf_Off best = 0;
	bool found = false;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->r[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Ranges before lo start at or before pc; those whose reach passes pc may hold it. */
	for (size_t i = lo; i-- > 0 && c->r[i].reach > pc;)
		if (c->r[i].hi > pc && (!found || c->r[i].die < best)) {
			best = c->r[i].die;
			found = true;
		}
	return found && dwarf_offdie(d->dw, best, out);
}

/* Scopes with code whose children may hold inlined functions, as dwarf_getscopes descends them. */
static bool is_code_scope(int tag)
{
	return tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block || tag == DW_TAG_try_block ||
	       tag == DW_TAG_catch_block || tag == DW_TAG_with_stmt || tag == DW_TAG_entry_point;
}

/*
 * The functions at pc inside the function fn, innermost first: one descent
 * through the scopes holding pc, each inlined instance's call site the line
 * of the frame outside it.  -ENOMEM, else 0.
 */
static int frames_in(struct srclines *s, Dwarf_Die *cu, Dwarf_Die *fn, Dwarf_Addr pc, struct src_info *out)
{
	Dwarf_Die *chain = malloc(MAX_NEST * sizeof(*chain)), cur = *fn, child;
	struct src_frame *f;
	const char *next_line = out->srcline;
	int n = 0;

	if (!chain)
		return -ENOMEM;
	chain[n++] = *fn;
	while (n < MAX_NEST && !dwarf_child(&cur, &child)) {
		bool in = false;

		do {
			if (is_code_scope(dwarf_tag(&child)) && dwarf_haspc(&child, pc) > 0) {
				in = true;
				break;
			}
		} while (!dwarf_siblingof(&child, &child));
		if (!in)
			break;
		cur = child;
		if (dwarf_tag(&cur) == DW_TAG_inlined_subroutine)
			chain[n++] = cur;
	}
	f = calloc(n, sizeof(*f));
	if (!f) {
		free(chain);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		Dwarf_Die *die = &chain[n - 1 - i];

		f[i].name = die_name(s, die);
		f[i].srcline = next_line;
		if (i < n - 1)
			next_line = call_site(s, cu, die);
	}
	free(chain);
	out->frames = f;
	out->nr = n;
	return 0;
}

/*
 * The line of vaddr (where line is true), and with frames the functions
 * there: those index the CU's functions, every top-level DIE of it, which
 * for a large C++ unit is most of its pages.
 */
static int lookup_dwarf(struct srclines *s, struct sdso *d, __u64 vaddr, bool line_too, bool frames,
			struct src_info *out)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = dwfl_module_addrdie(d->mod, vaddr, &bias), fn;
	Dwarf_Line *line;
	struct cu_fns *c;

	if (!cu)
		return 0;
	line = line_too ? dwarf_getsrc_die(cu, vaddr - bias) : NULL;
	if (line) {
		int ln = 0;
		const char *file = dwarf_linesrc(line, NULL, NULL);

		dwarf_lineno(line, &ln);
		out->srcline = fileline(s, file, ln);
	}
	if (!frames)
		return 0;
	c = cu_fns(d, cu);
	if (!c)
		return -ENOMEM;
	if (fn_at(d, c, vaddr - bias, &fn))
		return frames_in(s, cu, &fn, vaddr - bias, out);
	/*
	 * Code outside the unit's own ranges is in none of its scopes: libdwfl
	 * gives the unit whose range starts below the address (_start's, the
	 * unit of main), and libdw's walk of all its DIEs, tens of MB in a large
	 * C++ unit, would find nothing.
	 */
	if ((dwarf_hasattr(cu, DW_AT_ranges) || dwarf_hasattr(cu, DW_AT_high_pc)) && dwarf_haspc(cu, vaddr - bias) == 0)
		return 0;
	/* Code the index does not reach (a nested function, an imported unit's): libdw's own walk. */
	return frames_by_scopes(s, cu, vaddr - bias, out);
}

static bool entry_eq(const void *ctx, size_t idx)
{
	const void *const *c = ctx;
	const struct entry *e = &((const struct srclines *)c[0])->e[idx];
	const struct entry *k = c[1];

	return e->dso_id == k->dso_id && e->vaddr == k->vaddr;
}

int srclines__lookup(struct srclines *s, int dso_id, __u64 vaddr, struct src_info *out)
{
	return srclines__lookup_as(s, dso_id, vaddr, true, out);
}

int srclines__lookup_as(struct srclines *s, int dso_id, __u64 vaddr, bool frames, struct src_info *out)
{
	struct entry k = { dso_id, frames, vaddr, {} };
	const void *ctx[2] = { s, &k };
	__u64 h = hash_mix(hash_mix(0, (__u64)(dso_id + 1)), vaddr);
	long i = hindex_find(&s->idx, h, entry_eq, ctx);
	struct sdso *d;
	int e;

	*out = none;
	if (i >= 0 && frames && !s->e[i].frames) {
		/* Its line was looked up alone: its functions now, from the line found then. */
		struct entry *x = &s->e[i];

		d = open_dso(s, dso_id);
		if (d && (e = lookup_dwarf(s, d, vaddr, false, true, &x->info)))
			return e;
		x->frames = true;
	}
	if (i >= 0) {
		*out = s->e[i].info;
		return 0;
	}
	d = open_dso(s, dso_id);
	if (d && (e = lookup_dwarf(s, d, vaddr, true, frames, &k.info)))
		return e;
	if (array_reserve((void **)&s->e, &s->cap, s->nr, sizeof(*s->e))) {
		free((void *)k.info.frames);
		return -ENOMEM;
	}
	s->e[s->nr] = k;
	if (hindex_add(&s->idx, h, s->nr))
		return -ENOMEM;
	*out = s->e[s->nr++].info;
	return 0;
}

const char *srclines__intern(struct srclines *s, const char *str)
{
	return intern(s, str);
}
