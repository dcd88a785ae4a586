// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/auxv.h>
#include <sys/stat.h>

#include "buildid.h"
#include "demangle.h"
#include "kallsyms.h"
#include "symbols.h"
#include "util.h"

struct symbol {
	__u64 start, end;
	char *name;
	int seq;	 /* load order: aliases at one address keep it, as in perf's tree */
	int binding;	 /* STB_*, for choosing among aliases */
	bool demangled; /* name is final (see sym_name) */
	bool object;	 /* STT_OBJECT: names no function (see elf_sym_kept) */
};

struct segment {
	__u64 off, vaddr, filesz;
};

struct dso {
	char *path, *short_name;
	char build_id[2 * BUILD_ID_MAX + 1]; /* as recorded */
	bool kernel, jit, loaded;
	struct symbol *syms;
	int nr_syms;
	size_t cap_syms;
	struct segment *segs;
	int nr_segs;
	struct sym_dso_info info;
	int id;
};

/*
 * time: from when the map is the process's (its mmap, or the fork that
 * gave the child a copy); order: when it was really mapped, so that of two
 * maps over one address the later mapping wins, copies included.
 */
struct map {
	__u64 start, end, pgoff, time, order;
	struct dso *dso;
};

/*
 * A process's maps over time.  A fork that starts a process under a pid
 * (pid reuse included) is a boundary: maps from before it are not the
 * process's after it.  An exec is not, as in perf: inside execve the user
 * registers still point into the old image, and the new image's maps win
 * where they overlap the old ones, being later.  An exec still changes
 * what an address means, so it starts a new epoch for caches.
 */
struct bounds {
	__u64 *t; /* ascending */
	int nr;
};

struct proc_maps {
	__s32 pid;
	struct map *maps;
	int nr, cap;
	bool sorted;
	struct bounds forks, execs;
	struct dso *jit; /* /tmp/perf-PID.map, loaded on first miss */
	bool jit_tried;
	char jit_name[32], jit_path[32]; /* perf's dso for anonymous code: "[JIT] tid PID" */
};

struct symbolizer {
	char root[PATH_MAX];
	const struct pd_meta *recorded;
	struct dso **dsos;
	int nr_dsos;
	struct hindex dso_idx; /* over dsos, by path */
	struct proc_maps *procs;
	int nr_procs, cap_procs;
	struct u64_map proc_by_pid;
	struct dso *kernel;
	struct sym_dso_info *infos;
	int from_cache; /* dsos read from record's build-id cache */
};

static int cmp_sym(const void *a, const void *b)
{
	const struct symbol *x = a, *y = b;

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
static bool better(const struct symbol *a, const struct symbol *b)
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
static void finish_symbols(struct dso *d)
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
				free(d->syms[j - 1].name);
				d->syms[j - 1] = d->syms[i];
			} else {
				free(d->syms[i].name);
			}
			continue;
		}
		d->syms[j++] = d->syms[i];
	}
	d->nr_syms = j;
	/*
	 * Aliases that stayed sizeless: up to the next symbol; the last one to
	 * the end of the page after its own, as perf's fixup_end does.
	 */
	for (int i = 0; i < d->nr_syms; i++)
		if (d->syms[i].end <= d->syms[i].start)
			d->syms[i].end = i + 1 < d->nr_syms ? d->syms[i + 1].start
							     : ((d->syms[i].start + 4095) & ~4095ull) + 4096;
}

static int add_symbol(struct dso *d, __u64 start, __u64 size, const char *name, int binding)
{
	if (array_reserve((void **)&d->syms, &d->cap_syms, d->nr_syms, sizeof(*d->syms)))
		return -ENOMEM;
	d->syms[d->nr_syms].name = strdup(name);
	if (!d->syms[d->nr_syms].name)
		return -ENOMEM;
	d->syms[d->nr_syms].start = start;
	d->syms[d->nr_syms].end = start + size;
	d->syms[d->nr_syms].binding = binding;
	d->syms[d->nr_syms].demangled = false;
	d->syms[d->nr_syms].object = false;
	d->syms[d->nr_syms].seq = d->nr_syms;
	d->nr_syms++;
	return 0;
}

/*
 * Function symbols from .symtab, else .dynsym; segments from the program
 * headers.  For naming addresses one alias per address is kept; a lookup by
 * name (all_aliases) needs every one ("nanosleep" is an alias of "__nanosleep").
 */
static Elf_Scn *section_named(Elf *elf, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (gelf_getshdr(scn, sh) && (n = elf_strptr(elf, shstrndx, sh->sh_name)) && !strcmp(n, name))
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
static int add_plt_syms(struct dso *d, Elf *elf)
{
	GElf_Shdr rel_sh, plt_sh, dyn_sh;
	Elf_Scn *rel = section_named(elf, ".rela.plt", &rel_sh);
	Elf_Scn *plt = section_named(elf, ".plt", &plt_sh), *dyn;
	Elf_Data *rels, *syms;
	char name[512];
	__u64 entsize = plt_sh.sh_entsize, addr;
	size_t n;

	if (!rel || !plt || plt_sh.sh_type != SHT_PROGBITS || rel_sh.sh_type != SHT_RELA || !rel_sh.sh_entsize ||
	    !entsize)
		return 0;
	dyn = elf_getscn(elf, rel_sh.sh_link);
	if (!dyn || !gelf_getshdr(dyn, &dyn_sh) || dyn_sh.sh_type != SHT_DYNSYM)
		return 0;
	rels = elf_getdata(rel, NULL);
	syms = elf_getdata(dyn, NULL);
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
			sname = elf_strptr(elf, dyn_sh.sh_link, sym.st_name) ?: "";
		/* perf demangles the name, then adds @plt: "operator delete@plt". */
		demangled = demangle(sname);
		snprintf(name, sizeof(name), "%s@plt", demangled ? demangled : sname);
		free(demangled);
		e = add_symbol(d, addr, entsize, name, STB_GLOBAL);
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
static bool elf_sym_kept(Elf *elf, size_t shstrndx, const GElf_Sym *sym)
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
	scn = elf_getscn(elf, sym->st_shndx);
	if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC))
		return false;
	if (!label)
		return true;
	sec = elf_strptr(elf, shstrndx, sh.sh_name);
	return sec && (strstr(sec, "text") || strstr(sec, "data"));
}

static int load_elf_syms(struct dso *d, Elf *elf, bool want_segs, bool all_aliases)
{
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	size_t phnum = 0;
	int err = 0;

	if (!elf || elf_kind(elf) != ELF_K_ELF)
		return -EINVAL;
	if (want_segs && !elf_getphdrnum(elf, &phnum) && phnum < 4096) {
		d->segs = calloc(phnum ? phnum : 1, sizeof(*d->segs));
		for (size_t i = 0; d->segs && i < phnum; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD)
				d->segs[d->nr_segs++] = (struct segment){ ph.p_offset, ph.p_vaddr, ph.p_filesz };
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
		Elf_Data *data = elf_getdata(scn, NULL);
		size_t n, shstrndx = 0;

		if (!gelf_getshdr(scn, &sh) || !data || !sh.sh_entsize)
			return -EINVAL;
		n = sh.sh_size / sh.sh_entsize;
		elf_getshdrstrndx(elf, &shstrndx);
		for (size_t i = 0; i < n && !err; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(data, i, &sym))
				break;
			if (!elf_sym_kept(elf, shstrndx, &sym))
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || !*name)
				continue;
			err = add_symbol(d, sym.st_value, sym.st_size, name, GELF_ST_BIND(sym.st_info));
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
		err = add_plt_syms(d, elf);
	if (!all_aliases)
		finish_symbols(d);
	return err;
}

static int load_elf_file(struct dso *d, const char *file, bool want_segs, bool all_aliases)
{
	int fd, err;
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open_regular(file);
	if (fd < 0)
		return fd;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	err = load_elf_syms(d, elf, want_segs, all_aliases);
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

/*
 * The PLT of the mapped file itself, for symbols read from a debug file
 * (whose .plt is NOBITS); not if the file changed since the recording.
 * The caller finishes the symbols.
 */
static void add_plt_of(struct dso *d, const char *file)
{
	__u8 id[BUILD_ID_MAX], size;
	char hex[2 * BUILD_ID_MAX + 1];
	int fd;
	Elf *elf;

	if (d->build_id[0]) {
		if (buildid_from_file(file, id, &size))
			return;
		buildid_hex(id, size, hex);
		if (strcmp(hex, d->build_id))
			return;
	}
	fd = open_regular(file);
	if (fd < 0)
		return;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF)
		add_plt_syms(d, elf);
	if (elf)
		elf_end(elf);
	close(fd);
}

static int load_elf(struct dso *d, const char *file, bool want_segs)
{
	return load_elf_file(d, file, want_segs, false);
}

static int load_elf_mem(struct dso *d, void *image, size_t size)
{
	Elf *elf = elf_memory(image, size);
	int err = load_elf_syms(d, elf, true, false);

	if (elf)
		elf_end(elf);
	return err;
}

/* The .gnu_debuglink name of a file, where stripped binaries point at their symbols. */
static int debuglink(const char *file, char *out, size_t len)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int fd, err = -ENOENT;
	Elf *elf;

	fd = open_regular(file);
	if (fd < 0)
		return fd;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && !elf_getshdrstrndx(elf, &shstrndx)) {
		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			Elf_Data *d;
			const char *name;

			if (!gelf_getshdr(scn, &sh))
				continue;
			name = elf_strptr(elf, shstrndx, sh.sh_name);
			if (!name || strcmp(name, ".gnu_debuglink"))
				continue;
			d = elf_getdata(scn, NULL);
			if (d && d->d_buf && d->d_size > 1 && memchr(d->d_buf, 0, d->d_size)) {
				snprintf(out, len, "%s", (const char *)d->d_buf);
				err = 0;
			}
			break;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

static bool has_symtab(const char *file)
{
	bool yes;
	int fd = open_regular(file);
	Elf *elf;
	Elf_Scn *scn = NULL;

	if (fd < 0)
		return false;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	yes = false;
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB) {
			yes = true;
			break;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return yes;
}

static void ensure_loaded(struct symbolizer *s, struct dso *d);

/*
 * [vdso]: every process of a kernel shares one image, so this process's own
 * copy is the recorded one, as long as the kernel is the recorded one.
 */
static void load_vdso(struct symbolizer *s, struct dso *d)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	char line[512];
	size_t size = 0;
	FILE *f;

	if (!base || s->root[0])
		return;
	/* Only this kernel's vdso is ours to read: the kernel's build id must match. */
	ensure_loaded(s, s->kernel);
	if (s->kernel->build_id[0] && !s->kernel->nr_syms)
		return;
	f = fopen("/proc/self/maps", "re");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (strstr(line, "[vdso]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo == base)
			size = hi - lo;
	}
	if (f)
		fclose(f);
	if (size)
		load_elf_mem(d, (void *)base, size);
}

/*
 * perf's own copy of a file by build id ($HOME/.debug, which perf record
 * fills, and record's perf_buildid.c too): LINK/elf, or LINK itself in
 * perf's older layout.  Not with a --root of fixtures.
 */
static int perf_cache_path(const struct symbolizer *s, const char *hex, char *out, size_t len)
{
	const char *home = getenv("HOME");
	struct stat st;
	int n;

	if (s->root[0] || !home || !*home || strlen(hex) < 3)
		return -ENOENT;
	n = snprintf(out, len, "%s/.debug/.build-id/%.2s/%s", home, hex, hex + 2);
	if (n < 0 || (size_t)n + 4 >= len || stat(out, &st))
		return -ENOENT;
	if (S_ISDIR(st.st_mode))
		strcat(out, "/elf");
	return access(out, R_OK) ? -ENOENT : 0;
}

static void load_user_dso(struct symbolizer *s, struct dso *d)
{
	char file[PATH_MAX * 2], dbg[PATH_MAX * 3], link[256], dir[PATH_MAX];
	__u8 id[BUILD_ID_MAX], size;
	char hex[2 * BUILD_ID_MAX + 1];

	snprintf(file, sizeof(file), "%s%s", s->root, d->path);
	/* A build id recorded for the file: its debug file first, then the file if it still matches. */
	if (d->build_id[0]) {
		snprintf(dbg, sizeof(dbg), "%s/usr/lib/debug/.build-id/%.2s/%s.debug", s->root, d->build_id,
			 d->build_id + 2);
		if (!access(dbg, R_OK) && !load_elf_file(d, dbg, true, true) && d->nr_syms) {
			add_plt_of(d, file);
			finish_symbols(d);
			return;
		}
		hex[0] = 0;
		if (!buildid_from_file(file, id, &size))
			buildid_hex(id, size, hex);
		if (strcmp(hex, d->build_id)) {
			/*
			 * Gone, changed, or another mount namespace's file (a
			 * container's): the copy record kept by build id, if any;
			 * never the file that is there now.
			 */
			if ((!buildid_cache_path(d->build_id, dbg, sizeof(dbg)) && !access(dbg, R_OK) &&
			     !load_elf(d, dbg, true)) ||
			    (!perf_cache_path(s, d->build_id, dbg, sizeof(dbg)) && !load_elf(d, dbg, true)))
				s->from_cache++;
			return;
		}
	}
	if (load_elf(d, file, true))
		return;
	if (has_symtab(file) || debuglink(file, link, sizeof(link)))
		return;
	/* Stripped: follow .gnu_debuglink to /usr/lib/debug/DIR/NAME or DIR/.debug/NAME. */
	snprintf(dir, sizeof(dir), "%s", d->path);
	if (strrchr(dir, '/'))
		*strrchr(dir, '/') = 0;
	snprintf(dbg, sizeof(dbg), "%s/usr/lib/debug%s/%s", s->root, dir, link);
	if (access(dbg, R_OK))
		snprintf(dbg, sizeof(dbg), "%s%s/.debug/%s", s->root, dir, link);
	if (!access(dbg, R_OK)) {
		struct dso tmp = {};

		if (!load_elf_file(&tmp, dbg, false, true) && tmp.nr_syms > d->nr_syms) {
			add_plt_of(&tmp, file);
			finish_symbols(&tmp);
			for (int i = 0; i < d->nr_syms; i++)
				free(d->syms[i].name);
			free(d->syms);
			d->syms = tmp.syms;
			d->nr_syms = tmp.nr_syms;
			d->cap_syms = tmp.cap_syms;
		} else {
			for (int i = 0; i < tmp.nr_syms; i++)
				free(tmp.syms[i].name);
			free(tmp.syms);
		}
	}
}

struct kload {
	struct dso *d;
};

static int add_ksym(void *ctx, __u64 addr, char type, const char *name, size_t n)
{
	struct kload *k = ctx;
	char buf[256];

	if (!addr || (type != 't' && type != 'T' && type != 'w' && type != 'W'))
		return 0;
	snprintf(buf, sizeof(buf), "%.*s", (int)SP_MIN(n, sizeof(buf) - 1), name);
	/* kallsyms: T is global, t local, W/w weak. */
	return add_symbol(k->d, addr, 0, buf,
			  type == 'T' ? STB_GLOBAL : type == 't' ? STB_LOCAL : STB_WEAK) ? 1 : 0;
}

static void load_kallsyms(struct symbolizer *s, struct dso *d)
{
	char path[PATH_MAX + 32], *text = NULL;
	__u8 id[BUILD_ID_MAX], size;
	char hex[2 * BUILD_ID_MAX + 1];
	struct kload k = { d };
	__u64 text_addr = d->info.pgoff, running;
	size_t len;

	if (s->root[0]) {
		snprintf(path, sizeof(path), "%s/proc/kallsyms", s->root);
		if (read_file_all(path, &text, &len))
			return;
	} else if (!d->build_id[0] || !text_addr || kallsyms_read_cache(d->build_id, text_addr, &text, &len)) {
		/*
		 * No copy of the recorded kernel's: only the running kernel's own,
		 * if it is the one, loaded where it was (KASLR moves it per boot).
		 */
		if (d->build_id[0]) {
			if (buildid_kernel(id, &size))
				return;
			buildid_hex(id, size, hex);
			if (strcmp(hex, d->build_id))
				return;
		}
		if (text_addr && (kallsyms_text_start(&running) || running != text_addr))
			return;
		if (kallsyms_read_proc(&text, &len))
			return;
	}
	kallsyms_parse(text, len, add_ksym, &k);
	free(text);
	finish_symbols(d);
}

/* What perf 6.1 takes for anonymous memory (map.c's is_anon_memory): its code is a JIT's. */
static bool perf_anon(const char *path)
{
	return !strcmp(path, "//anon") || !strncmp(path, "/dev/zero", 9) || !strncmp(path, "/anon_hugepage", 14);
}

/* JIT code: "START SIZE NAME" lines of /tmp/perf-PID.map. */
static struct dso *load_perf_map(struct symbolizer *s, __s32 pid)
{
	char path[PATH_MAX + 32], line[1024];
	struct dso *d;
	FILE *f;

	snprintf(path, sizeof(path), "%s/tmp/perf-%d.map", s->root, pid);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	d = calloc(1, sizeof(*d));
	if (!d) {
		fclose(f);
		return NULL;
	}
	d->jit = d->loaded = true;
	d->id = -1;
	d->path = strdup(path + strlen(s->root));
	/* perf's name for it (dsos.c's dso__set_basename), whatever the process's comm. */
	snprintf(line, sizeof(line), "[JIT] tid %d", pid);
	d->short_name = strdup(line);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, size;
		int n = 0;

		if (sscanf(line, "%llx %llx %n", &start, &size, &n) != 2 || !n)
			continue;
		line[strcspn(line, "\n")] = 0;
		if (add_symbol(d, start, size ? size : 1, line + n, STB_GLOBAL))
			break;
	}
	fclose(f);
	finish_symbols(d);
	return d;
}

static const char *recorded_build_id(const struct pd_meta *m, const char *path, bool kernel)
{
	for (int i = 0; m && i < m->nr_build_ids; i++) {
		const struct pd_build_id *b = &m->build_ids[i];

		if (kernel ? !strcmp(b->filename, "[kernel.kallsyms]") : !strcmp(b->filename, path)) {
			static char hex[2 * BUILD_ID_MAX + 1];

			buildid_hex(b->id, b->size, hex);
			return hex;
		}
	}
	return "";
}

static void dso_free(struct dso *d)
{
	if (!d)
		return;
	for (int i = 0; i < d->nr_syms; i++)
		free(d->syms[i].name);
	free(d->syms);
	free(d->segs);
	free(d->path);
	free(d->short_name);
	free(d);
}

static bool dso_eq(const void *ctx, size_t idx)
{
	const void *const *c = ctx;
	const struct dso *d = ((const struct symbolizer *)c[0])->dsos[idx];

	return !strcmp(d->path, c[1]) && !strcmp(d->build_id, c[2]);
}

/*
 * A dso is a file name and the build id it had: a container's /usr/bin/x
 * and the host's are two dsos.  build_id: from the mapping's record, else
 * NULL for the one the BUILD_ID feature gives the name.
 */
static struct dso *dso_get(struct symbolizer *s, const char *path, bool kernel, const char *build_id)
{
	const char *key = kernel ? "[kernel.kallsyms]" : path;
	const char *bid = build_id ? build_id : recorded_build_id(s->recorded, key, kernel);
	__u64 h = hash_mix(hash_str(key), hash_str(bid));
	const void *ctx[3] = { s, key, bid };
	long i = hindex_find(&s->dso_idx, h, dso_eq, ctx);
	struct dso *d, **nd;

	if (i >= 0)
		return s->dsos[i];
	d = calloc(1, sizeof(*d));
	nd = realloc(s->dsos, (s->nr_dsos + 1) * sizeof(*nd));
	if (!d || !nd) {
		free(d);
		if (nd)
			s->dsos = nd;
		return NULL;
	}
	s->dsos = nd;
	d->path = strdup(key);
	d->short_name = strdup(kernel ? "[kernel.kallsyms]" : strrchr(key, '/') ? strrchr(key, '/') + 1 : key);
	if (!d->path || !d->short_name) {
		free(d->path);
		free(d->short_name);
		free(d);
		return NULL;
	}
	d->kernel = kernel;
	snprintf(d->build_id, sizeof(d->build_id), "%s", bid);
	d->id = s->nr_dsos;
	if (hindex_add(&s->dso_idx, h, s->nr_dsos)) {
		dso_free(d);
		return NULL;
	}
	s->dsos[s->nr_dsos++] = d;
	return d;
}

struct symbolizer *symbolizer__new(const struct pd_meta *recorded, const char *root)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	snprintf(s->root, sizeof(s->root), "%s", root ? root : "");
	s->recorded = recorded;
	elf_version(EV_CURRENT);
	s->kernel = dso_get(s, "[kernel.kallsyms]", true, NULL);
	if (!s->kernel) {
		symbolizer__free(s);
		return NULL;
	}
	return s;
}

void symbolizer__free(struct symbolizer *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->nr_dsos; i++)
		dso_free(s->dsos[i]);
	for (int i = 0; i < s->nr_procs; i++) {
		free(s->procs[i].maps);
		free(s->procs[i].forks.t);
		free(s->procs[i].execs.t);
		dso_free(s->procs[i].jit);
	}
	free(s->dsos);
	free(s->procs);
	free(s->infos);
	hindex_free(&s->dso_idx);
	u64_map_free(&s->proc_by_pid);
	free(s);
}

static struct proc_maps *proc_get(struct symbolizer *s, __s32 pid, bool create)
{
	uint64_t *v = u64_map_get(&s->proc_by_pid, (__u32)pid, create);

	if (!v)
		return NULL;
	if (!*v) {
		if (s->nr_procs == s->cap_procs) {
			struct proc_maps *n = realloc(s->procs, (s->cap_procs = s->cap_procs ? s->cap_procs * 2 : 64) * sizeof(*n));

			if (!n)
				return NULL;
			s->procs = n;
		}
		memset(&s->procs[s->nr_procs], 0, sizeof(s->procs[0]));
		s->procs[s->nr_procs].pid = pid;
		*v = ++s->nr_procs;
	}
	return &s->procs[*v - 1];
}

static bool is_module(const char *f)
{
	size_t n = strlen(f);

	if (f[0] == '[')
		return strncmp(f, "[kernel.kallsyms]", 17) && n > 2 && f[n - 1] == ']';
	return strstr(f, ".ko") && f[0] == '/';
}

/* The dso named as perf names modules: "[brd]" for [brd] and for .../brd.ko.xz alike. */
static struct dso *module_dso(struct symbolizer *s, const char *filename)
{
	char name[80];
	const char *base = strrchr(filename, '/');
	size_t n;

	if (filename[0] == '[') {
		snprintf(name, sizeof(name), "%s", filename);
	} else {
		base = base ? base + 1 : filename;
		n = strcspn(base, ".");
		snprintf(name, sizeof(name), "[%.*s]", (int)SP_MIN(n, 64), base);
		for (char *p = name; *p; p++)
			if (*p == '-')
				*p = '_';
	}
	return dso_get(s, name, false, NULL);
}

static int push_map(struct proc_maps *p, struct map m)
{
	if (p->nr == p->cap) {
		struct map *n = realloc(p->maps, (p->cap ? p->cap * 2 : 16) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		p->maps = n;
		p->cap = p->cap ? p->cap * 2 : 16;
	}
	p->maps[p->nr++] = m;
	p->sorted = false;
	return 0;
}

int symbolizer__add_map(struct symbolizer *s, __s32 pid, __u64 start, __u64 len, __u64 pgoff,
			const char *filename, __u64 time, bool kernel, const char *build_id)
{
	struct proc_maps *p = proc_get(s, kernel ? -1 : pid, true);
	struct dso *d;

	if (!p)
		return -ENOMEM;
	if (!len || start + len < start)
		return 0;
	/* A module ("[brd]", or perf's path to brd.ko) names its frames; kallsyms still has their symbols. */
	d = !kernel ? dso_get(s, filename, false, build_id) : is_module(filename) ? module_dso(s, filename) : s->kernel;
	if (!d)
		return -ENOMEM;
	if (push_map(p, (struct map){ start, start + len, pgoff, time, time, d }))
		return -ENOMEM;
	if (!d->info.limit) {
		d->info = (struct sym_dso_info){ d->path, d->build_id, start, start + len, pgoff, kernel };
	}
	return 0;
}

static int add_bound(struct bounds *b, __u64 t)
{
	__u64 *n = realloc(b->t, (b->nr + 1) * sizeof(*n));
	int i;

	if (!n)
		return -ENOMEM;
	b->t = n;
	/* Side-band arrives almost in time order: insert from the back. */
	for (i = b->nr; i > 0 && n[i - 1] > t; i--)
		n[i] = n[i - 1];
	n[i] = t;
	b->nr++;
	return 0;
}

/* The boundaries around t: the latest at or before it (0 if none) and the next (or ~0). */
static __u64 bound_at(const struct bounds *b, __u64 t, __u64 *next)
{
	int lo = 0, hi = b->nr;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (b->t[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (next)
		*next = lo < b->nr ? b->t[lo] : ~0ull;
	return lo ? b->t[lo - 1] : 0;
}

__u64 symbolizer__epoch(struct symbolizer *s, __s32 pid, __u64 t)
{
	struct proc_maps *p = proc_get(s, pid, false);

	return p ? SP_MAX(bound_at(&p->forks, t, NULL), bound_at(&p->execs, t, NULL)) : 0;
}

int symbolizer__exec(struct symbolizer *s, __s32 pid, __u64 time)
{
	struct proc_maps *p = proc_get(s, pid, true);

	return p ? add_bound(&p->execs, time) : -ENOMEM;
}

int symbolizer__fork(struct symbolizer *s, __s32 ppid, __s32 pid, __u64 time)
{
	struct proc_maps *child, *parent;
	__u64 b;
	int nr;

	if (ppid == pid)
		return 0; /* a thread: it shares its process's maps */
	child = proc_get(s, pid, true);
	if (!child || add_bound(&child->forks, time))
		return -ENOMEM;
	/* proc_get may move the array: look the parent up after the child. */
	parent = proc_get(s, ppid, false);
	if (!parent)
		return 0;
	b = bound_at(&parent->forks, time, NULL);
	nr = parent->nr; /* parent == child cannot be: pids differ */
	for (int i = 0; i < nr; i++) {
		struct map m = parent->maps[i];

		if (m.time > time || m.time < b)
			continue; /* not the parent's at the fork */
		m.time = time;
		if (push_map(child, m))
			return -ENOMEM;
	}
	return 0;
}

static int cmp_map(const void *a, const void *b)
{
	const struct map *x = a, *y = b;

	if (x->start != y->start)
		return (x->start > y->start) - (x->start < y->start);
	return (x->order > y->order) - (x->order < y->order);
}

/*
 * The map covering ip at time t: of the maps the process had then (since
 * the fork that started it), the latest mapped; if none yet, the earliest one
 * after t in the same address space, since a sample may come before its
 * mapping's record.
 */
static struct map *find_map(struct proc_maps *p, __u64 ip, __u64 t)
{
	struct map *best = NULL, *later = NULL;
	int lo = 0, hi = p->nr - 1, last = -1;
	__u64 next, b = bound_at(&p->forks, t, &next);

	if (!p->sorted) {
		sort_n(p->maps, p->nr, sizeof(*p->maps), cmp_map);
		p->sorted = true;
	}
	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;

		if (p->maps[mid].start <= ip) {
			last = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	/* Overlaps (re-mappings over time, forked copies) are few: look back a little. */
	for (int i = last; i >= 0 && i > last - 256; i--) {
		struct map *m = &p->maps[i];

		if (ip >= m->end || m->time < b || m->time >= next)
			continue; /* another process under this pid */
		if (m->time <= t) {
			if (!best || m->order > best->order)
				best = m;
		} else if (!later || m->time < later->time) {
			later = m;
		}
	}
	return best ? best : later;
}

static struct symbol *find_sym(const struct dso *d, __u64 addr)
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
static __u64 to_vaddr(const struct dso *d, __u64 off)
{
	for (int i = 0; i < d->nr_segs; i++)
		if (off >= d->segs[i].off && off < d->segs[i].off + d->segs[i].filesz)
			return off - d->segs[i].off + d->segs[i].vaddr;
	return off;
}

static void ensure_loaded(struct symbolizer *s, struct dso *d)
{
	if (d->loaded)
		return;
	d->loaded = true;
	if (d->kernel)
		load_kallsyms(s, d);
	else if (!strcmp(d->path, "[vdso]"))
		load_vdso(s, d);
	else if (d->path[0] == '/' && d->path[1] != '/')
		load_user_dso(s, d);
}

/*
 * C++ and Rust names are demangled the first time a sample lands in them: a
 * libstdc++ holds thousands, of which a profile touches a few.
 */
static const char *sym_name(struct symbol *sym)
{
	char *d;

	if (!sym->demangled) {
		sym->demangled = true;
		d = demangle(sym->name);
		if (d) {
			free(sym->name);
			sym->name = d;
		}
	}
	return sym->name;
}

void symbolizer__resolve(struct symbolizer *s, __s32 pid, __u64 ip, __u64 t, bool kernel, struct sym *out)
{
	struct proc_maps *p = proc_get(s, kernel ? -1 : pid, false);
	struct map *m = p ? find_map(p, ip, t) : NULL;
	struct symbol *sym;

	memset(out, 0, sizeof(*out));
	out->name = "[unknown]";
	out->dso = "[unknown]";
	out->path = "";
	out->build_id = "";
	out->dso_id = -1;
	out->kernel = kernel;
	out->offset = ip;
	if (kernel) {
		/*
		 * Module text lies outside [_text, _etext): kallsyms knows its
		 * symbols all the same, and a module's map, if the file has one,
		 * gives the frame its module's name, as perf shows it.
		 */
		struct dso *named = m && m->dso != s->kernel ? m->dso : s->kernel;

		ensure_loaded(s, s->kernel);
		out->dso = named->short_name;
		out->path = named->path;
		out->build_id = named->build_id;
		out->dso_id = named->id;
		sym = find_sym(s->kernel, ip);
		if (sym) {
			out->name = sym_name(sym);
			out->offset = ip - sym->start;
			out->sym_start = sym->start;
			out->sym_end = sym->end;
			out->known = true;
		}
		return;
	}
	if (m) {
		struct dso *d = m->dso;

		out->file_offset = ip - m->start + m->pgoff;
		out->offset = out->file_offset;
		out->dso = d->short_name;
		out->path = d->path;
		out->build_id = d->build_id;
		out->dso_id = d->id;
		ensure_loaded(s, d);
		sym = find_sym(d, to_vaddr(d, out->file_offset));
		if (sym) {
			out->name = sym_name(sym);
			out->offset = to_vaddr(d, out->file_offset) - sym->start;
			out->sym_start = sym->start;
			out->sym_end = sym->end;
			out->known = true;
			return;
		}
		/* Anonymous executable memory is where JITs put code. */
		if (strcmp(d->path, "//anon") && strncmp(d->path, "[anon", 5) && strncmp(d->path, "/memfd:", 7) &&
		    !perf_anon(d->path))
			return;
		if (perf_anon(d->path) && p) {
			/*
			 * perf's map of anonymous code is the perf map, found or
			 * not: dso "[JIT] tid PID", addresses as they are.
			 */
			if (!p->jit_name[0]) {
				snprintf(p->jit_name, sizeof(p->jit_name), "[JIT] tid %d", pid);
				snprintf(p->jit_path, sizeof(p->jit_path), "/tmp/perf-%d.map", pid);
			}
			out->dso = p->jit_name;
			out->path = p->jit_path;
			out->build_id = "";
			out->dso_id = -1;
			out->file_offset = 0;
			out->offset = ip;
		}
	}
	if (p && !p->jit_tried) {
		p->jit_tried = true;
		p->jit = load_perf_map(s, pid);
	}
	if (p && p->jit && (sym = find_sym(p->jit, ip))) {
		out->name = sym_name(sym);
		out->dso = p->jit->short_name;
		out->path = p->jit->path;
		out->offset = ip - sym->start;
		out->sym_start = sym->start;
		out->sym_end = sym->end;
		out->known = true;
	}
}

int symbolizer__map(struct symbolizer *s, __s32 pid, __u64 ip, __u64 t, struct sym_map *out)
{
	struct proc_maps *p = proc_get(s, pid, false);
	struct map *m = p ? find_map(p, ip, t) : NULL;

	if (!m || m->dso->kernel)
		return -ENOENT;
	*out = (struct sym_map){ m->start, m->end, m->pgoff, m->dso->path, m->dso->short_name,
				 m->dso->build_id, m->dso->id };
	return 0;
}

int symbolizer__from_cache(const struct symbolizer *s)
{
	return s->from_cache;
}

int symbolizer__dsos(struct symbolizer *s, const struct sym_dso_info **out)
{
	free(s->infos);
	s->infos = calloc(s->nr_dsos ? s->nr_dsos : 1, sizeof(*s->infos));
	if (!s->infos)
		return -ENOMEM;
	for (int i = 0; i < s->nr_dsos; i++)
		s->infos[i] = s->dsos[i]->info.path ? s->dsos[i]->info
			      : (struct sym_dso_info){ s->dsos[i]->path, s->dsos[i]->build_id, 0, 0, 0, s->dsos[i]->kernel };
	*out = s->infos;
	return s->nr_dsos;
}

/* Versioned names ("malloc@@GLIBC_2.2.5") match their base name. */
static bool name_matches(const char *n, const char *func, bool versioned)
{
	size_t l = strlen(func);

	return !strncmp(n, func, l) && (!n[l] || (versioned && n[l] == '@'));
}

/* Index of the symbol named func in d, or -1; demangled: compare C++ names as perf shows them. */
static int find_named(const struct dso *d, const char *func, bool demangled, int from)
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
static int check_unique(const struct dso *d, const char *func, int idx, char *out, size_t len)
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

int symbols_find_function(const char *path, const char *func, __u64 *file_offset, char *candidates,
			  size_t candidates_len)
{
	struct dso d = {};
	int idx, e = load_elf_file(&d, path, true, true);

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
	for (int i = 0; i < d.nr_syms; i++)
		free(d.syms[i].name);
	free(d.syms);
	free(d.segs);
	return e;
}

int symbols_load_elf_count(const char *path)
{
	struct dso d = {};
	int e = load_elf(&d, path, true), n = d.nr_syms;

	for (int i = 0; i < d.nr_syms; i++)
		free(d.syms[i].name);
	free(d.syms);
	free(d.segs);
	return e ? e : n;
}
