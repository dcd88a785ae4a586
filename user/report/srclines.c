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

/* A dso's DWARF, opened on its first address. */
struct sdso {
	int state; /* 0: not opened; 1: usable; -1: no DWARF */
	Dwfl *dwfl;
	Dwfl_Module *mod;
};

struct entry {
	int dso_id;
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

void srclines__free(struct srclines *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->cap_dsos; i++)
		if (s->dsos[i].dwfl)
			dwfl_end(s->dsos[i].dwfl);
	for (size_t i = 0; i < s->nr; i++)
		free((void *)s->e[i].info.frames);
	free(s->dsos);
	free(s->e);
	hindex_free(&s->idx);
	strpool_free(&s->strs);
	free(s->debug_path);
	free(s);
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

		if (dwfl_module_getdwarf(d->mod, &bias))
			d->state = 1;
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

static int lookup_dwarf(struct srclines *s, struct sdso *d, __u64 vaddr, struct src_info *out)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = dwfl_module_addrdie(d->mod, vaddr, &bias), *scopes = NULL;
	Dwarf_Line *line;
	struct src_frame *f = NULL;
	int n, nr = 0, alloc = 8;
	const char *next_line;

	if (!cu)
		return 0;
	line = dwarf_getsrc_die(cu, vaddr - bias);
	if (line) {
		int ln = 0;
		const char *file = dwarf_linesrc(line, NULL, NULL);

		dwarf_lineno(line, &ln);
		out->srcline = fileline(s, file, ln);
	}
	n = dwarf_getscopes(cu, vaddr - bias, &scopes);
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

static bool entry_eq(const void *ctx, size_t idx)
{
	const void *const *c = ctx;
	const struct entry *e = &((const struct srclines *)c[0])->e[idx];
	const struct entry *k = c[1];

	return e->dso_id == k->dso_id && e->vaddr == k->vaddr;
}

int srclines__lookup(struct srclines *s, int dso_id, __u64 vaddr, struct src_info *out)
{
	struct entry k = { dso_id, vaddr, {} };
	const void *ctx[2] = { s, &k };
	__u64 h = hash_mix(hash_mix(0, (__u64)(dso_id + 1)), vaddr);
	long i = hindex_find(&s->idx, h, entry_eq, ctx);
	struct sdso *d;
	int e;

	*out = none;
	if (i >= 0) {
		*out = s->e[i].info;
		return 0;
	}
	d = open_dso(s, dso_id);
	if (d && (e = lookup_dwarf(s, d, vaddr, &k.info)))
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
