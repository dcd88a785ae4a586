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
#include "debuginfo.h"
#include "elf_budget.h"
#include "elf_syms.h"
#include "fileio.h"
#include "hash.h"
#include "host.h"
#include "kallsyms.h"
#include "log.h"
#include "py_names.h"
#include "sha256.h"
#include "symbols.h"
#include "util.h"

struct dso {
	char *path, *short_name;
	char build_id[2 * BUILD_ID_MAX + 1]; /* as recorded */
	bool kernel, jit, loaded;
	bool full;   /* a full symbol table was found (.symtab, its own or a debug file's) */
	bool sampled; /* an address was resolved in it: its debug file is worth fetching */
	char *elf;   /* the ELF file read for it (the file, record's copy or a debug file), for DWARF */
	struct elf_syms tab;
	__u64 used; /* the symbolizer's trims before its last lookup: the oldest is unloaded first */
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
 * A Python code object's slot in a process (py_names.h): named at time
 * first, seen again (a later window's copy of the record) up to last.
 */
struct py_slot {
	__u64 start, end, first, last;
	const char *name, *file; /* the symbolizer's pool */
	__u8 *lines;		 /* line runs */
	__u32 lines_len;
	int firstlineno;
	bool java; /* a JVM's method (PY_NAMES_JAVA): its frames' dso says so */
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
	__u64 *t;     /* ascending */
	__s32 *from;  /* forks: the parent at each, whose maps then the child sees */
	int nr;
};

struct proc_maps {
	__s32 pid;
	struct map *maps;
	int nr, cap;
	unsigned long dropped; /* maps past MAX_MAPS_PER_PROC */
	bool sorted;
	struct bounds forks, execs;
	struct dso *jit; /* /tmp/perf-PID.map, loaded on first miss */
	bool jit_tried;
	char jit_name[32], jit_path[32]; /* perf's dso for anonymous code: "[JIT] tid PID" */
	bool exited;	 /* symbolizer__exit: gone at exit_time, to be let go at a trim */
	__u64 exit_time;
	/* Python code objects named in it, by slot start, then time; py_at: start -> the latest */
	struct py_slot **py;
	size_t nr_py, cap_py;
	struct u64_map py_at;
	/*
	 * When an address of it changed meaning without a fork or exec: a slot
	 * named over others, a map made over named slots.  Caches keyed by
	 * symbolizer__epoch then start anew.
	 */
	struct bounds renamed;
};

struct symbolizer {
	char root[PATH_MAX];
	bool any_perf_map_owner;
	const struct pd_meta *recorded;
	struct dso **dsos;
	int nr_dsos;
	struct hindex dso_idx; /* over dsos, by path */
	struct hindex bid_idx; /* over recorded->build_ids, by file name (the first of each) */
	bool bid_indexed;
	struct proc_maps **procs; /* each apart: outputs keep pointers to its names while processes come */
	size_t nr_procs, cap_procs;
	struct u64_map proc_by_pid;
	struct dso *kernel;
	struct sym_dso_info *infos;
	int from_cache; /* dsos read from record's build-id cache */
	int rejected;	/* cache entries whose bytes are not what the recording copied */
	struct u64_map digest_idx; /* hash of a build id's hex -> 1 + its row in recorded->digests */
	struct u64_map verified;   /* hash of an entry's path -> 1 used, 2 not */
	bool digests_indexed;
	/*
	 * symbolizer__keep_tables: at most keep_max tables, keep_syms symbols
	 * loaded after a trim; gen counts the trims.  What a trim unloads is
	 * freed at the next one: names resolved before it stay valid that long.
	 */
	size_t keep_max, keep_syms;
	__u64 gen;
	/*
	 * Kernel code no map covers (BPF programs: their kallsyms come and go
	 * while a run lasts) was sampled since kallsyms was read, at trim
	 * kernel_gen: it is read again now and then (KERNEL_REREAD_TRIMS).
	 */
	bool kernel_unmapped;
	__u64 kernel_gen;
	struct strpool py_strs; /* Python frames' names and files */
	__u64 py_named, py_repeats;
	struct retired {
		struct elf_syms tab;
		char *elf;
		struct dso *jit; /* a JIT's perf map, whole */
		struct proc_maps *proc; /* an exited process, whole */
	} *retired;
	size_t nr_retired, cap_retired;
};

/*
 * The PLT of the mapped file itself, for symbols read from a debug file
 * (whose .plt is NOBITS); not if the file changed since the recording.
 * The caller finishes the symbols.
 */
static void add_plt_of(struct elf_syms *t, const char *build_id, const char *file)
{
	__u8 id[BUILD_ID_MAX], size;
	char hex[2 * BUILD_ID_MAX + 1];
	struct elf_budget b;
	int fd;
	Elf *elf;

	if (build_id[0]) {
		if (buildid_from_file(file, id, &size))
			return;
		buildid_hex(id, size, hex);
		if (strcmp(hex, build_id))
			return;
	}
	fd = open_regular(file);
	if (fd < 0)
		return;
	elf = elf_budget_begin(&b, fd, true, ELF_BUDGET_SYMS, file);
	if (elf && elf_kind(elf) == ELF_K_ELF)
		elf_syms__add_plt(t, &b);
	elf_budget_end(&b);
	close(fd);
}

static void ensure_loaded(struct symbolizer *s, struct dso *d);

/*
 * [vdso]: every process of a kernel shares one image, so this process's own
 * copy is the recorded one, as long as the kernel is the recorded one.
 */
static void load_vdso(struct symbolizer *s, struct dso *d)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	size_t size;

	if (!base || s->root[0])
		return;
	/* Only this kernel's vdso is ours to read: the kernel's build id must match. */
	ensure_loaded(s, s->kernel);
	if (s->kernel->build_id[0] && !s->kernel->tab.nr_syms)
		return;
	size = host_own_vdso_size(base);
	if (size)
		elf_syms__load_mem(&d->tab, (void *)base, size);
}

/*
 * perf's own copy of a file by build id ($HOME/.debug, which perf record
 * fills, and record's perf_buildid.c too): LINK/elf, or LINK itself in
 * perf's older layout.  Not with a --root of fixtures.
 */
static int perf_cache_path(const struct symbolizer *s, const char *hex, char *out, size_t len)
{
	char home[PATH_MAX];
	struct stat st;
	int n;

	if (s->root[0] || home_dir(home, sizeof(home)) || strlen(hex) < 3)
		return -ENOENT;
	n = snprintf(out, len, "%s/.debug/.build-id/%.2s/%s", home, hex, hex + 2);
	if (n < 0 || (size_t)n + 4 >= len || stat(out, &st))
		return -ENOENT;
	if (S_ISDIR(st.st_mode))
		strcat(out, "/elf");
	return access(out, R_OK) ? -ENOENT : 0;
}

/* The SHA-256 the recording holds for its copy of build id hex, or NULL. */
static const __u8 *recorded_digest(struct symbolizer *s, const char *hex)
{
	const struct pd_meta *m = s->recorded;
	char other[2 * BUILD_ID_MAX + 1];
	uint64_t *v;

	if (!m || !m->nr_digests)
		return NULL;
	if (!s->digests_indexed) {
		s->digests_indexed = true;
		for (int i = 0; i < m->nr_digests; i++) {
			buildid_hex(m->digests[i].id, m->digests[i].size, other);
			v = u64_map_get(&s->digest_idx, hash_str(other), true);
			if (v && !*v)
				*v = i + 1;
		}
	}
	v = u64_map_get(&s->digest_idx, hash_str(hex), false);
	if (!v || !*v)
		return NULL;
	buildid_hex(m->digests[*v - 1].id, m->digests[*v - 1].size, other);
	return strcmp(other, hex) ? NULL : m->digests[*v - 1].sha256;
}

/* Copies past this are not record's (buildid_cache.c keeps at most 512 MiB a file). */
#define MAX_CACHED_BYTES (512ull << 20)

/*
 * A cache entry is used only if it is what it is kept as: its own build id
 * is the one asked for, no one but root or us could have put it there (a
 * user's file in a cache root reads would name root's frames), and, where
 * the recording holds one, its bytes have the digest of the copy the
 * recording made: a file that claims the same build id is not that copy,
 * whichever came first.  Checked once per path.
 */
static bool cached_is(struct symbolizer *s, const char *path, const char *build_id)
{
	const __u8 *want = recorded_digest(s, build_id);
	__u8 id[BUILD_ID_MAX], size, sha[SHA256_SIZE];
	char hex[2 * BUILD_ID_MAX + 1];
	uint64_t *memo = u64_map_get(&s->verified, hash_mix(hash_str(path), hash_str(build_id)), true);
	struct stat st;
	int fd;
	bool ok;

	if (memo && *memo)
		return *memo == 1;
	fd = open_regular(path);
	if (fd < 0)
		return false; /* not there: nothing to remember */
	ok = !fstat(fd, &st) && (st.st_uid == 0 || st.st_uid == geteuid()) && !(st.st_mode & 022) &&
	     !buildid_from_fd(fd, id, &size);
	if (ok) {
		buildid_hex(id, size, hex);
		ok = !strcmp(hex, build_id);
	}
	if (ok && want && (sha256_of_fd(fd, MAX_CACHED_BYTES, sha) || memcmp(sha, want, SHA256_SIZE))) {
		s->rejected++;
		pr_debug("%s: not used, its bytes are not those the recording copied", path);
		ok = false;
	}
	close(fd);
	if (memo)
		*memo = ok ? 1 : 2;
	return ok;
}

int symbolizer__cache_entry(struct symbolizer *s, const char *hex, char *out, size_t len)
{
	const __u8 *want = recorded_digest(s, hex);
	int e;

	if (want)
		e = buildid_cache_entry(hex, want, out, len);
	else if (s->recorded && s->recorded->digests_kept)
		return -ENOENT; /* the recording made no copy of it: any entry there is another's */
	else
		e = buildid_cache_path(hex, out, len); /* a recording from before the digests */
	if (e)
		return e;
	return cached_is(s, out, hex) ? 0 : -ENOENT;
}

int symbolizer__cache_rejected(const struct symbolizer *s)
{
	return s->rejected;
}

static void load_user_dso(struct symbolizer *s, struct dso *d)
{
	char file[PATH_MAX * 2], dbg[PATH_MAX * 3], link[256], dir[PATH_MAX];
	__u8 id[BUILD_ID_MAX], size;
	char hex[2 * BUILD_ID_MAX + 1];

	snprintf(file, sizeof(file), "%s%s", s->root, d->path);
	/*
	 * A build id recorded for the file: its debug file first (the
	 * distribution's, else one debuginfod served, kept by build id), then
	 * the file if it still matches.
	 */
	if (d->build_id[0]) {
		snprintf(dbg, sizeof(dbg), "%s/usr/lib/debug/.build-id/%.2s/%s.debug", s->root, d->build_id,
			 d->build_id + 2);
		if ((!access(dbg, R_OK) || (!s->root[0] && !debuginfo_path(d->build_id, dbg, sizeof(dbg)))) &&
		    !elf_syms__load_file(&d->tab, dbg, true, true) && d->tab.nr_syms) {
			hex[0] = 0;
			if (!buildid_from_file(file, id, &size))
				buildid_hex(id, size, hex);
			/* The PLT, and DWARF's fallback, from the mapped file or record's copy of it. */
			/* Not the file: record's copy if it is the one (add_plt_of checks the file's id). */
			if (strcmp(hex, d->build_id) && !symbolizer__cache_entry(s, d->build_id, dir, sizeof(dir))) {
				snprintf(file, sizeof(file), "%s", dir);
				s->from_cache++;
			}
			add_plt_of(&d->tab, d->build_id, file);
			elf_syms__finish(&d->tab);
			d->full = true;
			d->elf = strdup(dbg);
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
			if ((!symbolizer__cache_entry(s, d->build_id, dbg, sizeof(dbg)) &&
			     !elf_syms__load_file(&d->tab, dbg, true, false)) ||
			    (!perf_cache_path(s, d->build_id, dbg, sizeof(dbg)) && cached_is(s, dbg, d->build_id) &&
			     !elf_syms__load_file(&d->tab, dbg, true, false))) {
				s->from_cache++;
				d->full = elf_has_symtab(dbg);
				d->elf = strdup(dbg);
			}
			return;
		}
	}
	if (elf_syms__load_file(&d->tab, file, true, false))
		return;
	d->elf = strdup(file);
	d->full = elf_has_symtab(file);
	if (d->full)
		return;
	/*
	 * Stripped: its debug file by the file's own build id where none was
	 * recorded (perf records only the files samples fell in, not those of
	 * their chains), else by .gnu_debuglink, in /usr/lib/debug/DIR/NAME or
	 * DIR/.debug/NAME.
	 */
	dbg[0] = 0;
	if (!d->build_id[0] && !buildid_from_file(file, id, &size)) {
		buildid_hex(id, size, hex);
		snprintf(dbg, sizeof(dbg), "%s/usr/lib/debug/.build-id/%.2s/%s.debug", s->root, hex, hex + 2);
		if (access(dbg, R_OK) && (s->root[0] || debuginfo_path(hex, dbg, sizeof(dbg))))
			dbg[0] = 0;
	}
	if (!dbg[0] && !elf_debuglink(file, link, sizeof(link))) {
		snprintf(dir, sizeof(dir), "%s", d->path);
		if (strrchr(dir, '/'))
			*strrchr(dir, '/') = 0;
		snprintf(dbg, sizeof(dbg), "%s/usr/lib/debug%s/%s", s->root, dir, link);
		if (access(dbg, R_OK))
			snprintf(dbg, sizeof(dbg), "%s%s/.debug/%s", s->root, dir, link);
	}
	if (dbg[0] && !access(dbg, R_OK)) {
		struct elf_syms tmp = {};

		if (!elf_syms__load_file(&tmp, dbg, false, true) && tmp.nr_syms > d->tab.nr_syms) {
			d->full = true;
			add_plt_of(&tmp, d->build_id, file);
			elf_syms__finish(&tmp);
			/* The debug file has no segments: keep the mapped file's. */
			tmp.segs = d->tab.segs;
			tmp.nr_segs = d->tab.nr_segs;
			d->tab.segs = NULL;
			elf_syms__clear(&d->tab);
			d->tab = tmp;
		} else {
			elf_syms__clear(&tmp);
		}
	}
}

struct kload {
	struct dso *d;
	char *text;
	__u32 *offs; /* each added name's place in text, by load order (NULL: not kept) */
	size_t cap_offs;
};

static int add_ksym(void *ctx, __u64 addr, char type, const char *name, size_t n)
{
	/* kallsyms: T is global, t local, W/w weak. */
	int binding = type == 'T' ? STB_GLOBAL : type == 't' ? STB_LOCAL : STB_WEAK;
	struct kload *k = ctx;
	char buf[256];

	if (!addr || (type != 't' && type != 'T' && type != 'w' && type != 'W'))
		return 0;
	if (k->offs) {
		/*
		 * The name cut where the copy below cuts it, in the text itself,
		 * which stays until the table lets its names go: kallsyms_parse
		 * has found the line's end already.
		 */
		char *at = k->text + (name - k->text);

		if (array_reserve((void **)&k->offs, &k->cap_offs, k->d->tab.nr_syms, sizeof(*k->offs)))
			return 1;
		k->offs[k->d->tab.nr_syms] = name - k->text;
		at[SP_MIN(n, sizeof(buf) - 1)] = 0;
		return elf_syms__add_ref(&k->d->tab, addr, 0, at, binding) ? 1 : 0;
	}
	snprintf(buf, sizeof(buf), "%.*s", (int)SP_MIN(n, sizeof(buf) - 1), name);
	return elf_syms__add(&k->d->tab, addr, 0, buf, binding) ? 1 : 0;
}

static void load_kallsyms(struct symbolizer *s, struct dso *d)
{
	char path[PATH_MAX + 32], *text = NULL;
	__u8 id[BUILD_ID_MAX], size;
	char hex[2 * BUILD_ID_MAX + 1];
	struct kload k = { .d = d };
	__u64 text_addr = d->info.pgoff, running;
	size_t len;
	int fd = -1;

	if (!s->root[0] && d->build_id[0] && text_addr && (fd = kallsyms_open_cache(d->build_id, text_addr)) >= 0 &&
	    read_fd_all(fd, &text, &len)) {
		close(fd);
		fd = -1;
	}
	if (s->root[0]) {
		snprintf(path, sizeof(path), "%s/proc/kallsyms", s->root);
		if (read_file_all(path, &text, &len))
			return;
	} else if (fd < 0) {
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
	/*
	 * The copy stays as it is (an atomic_file, replaced, never rewritten):
	 * the names of the few symbols a report names are read from it again,
	 * rather than all 100k kept in the heap.
	 */
	if (fd >= 0 && len < UINT32_MAX) {
		k.text = text;
		k.offs = malloc(sizeof(*k.offs));
		k.cap_offs = k.offs ? 1 : 0;
	}
	kallsyms_parse(text, len, add_ksym, &k);
	elf_syms__finish(&d->tab);
	if (k.offs && elf_syms__names_from_file(&d->tab, fd, k.offs)) {
		/* Its names point into text: none is better than ones about to be freed. */
		elf_syms__clear(&d->tab);
		close(fd);
	} else if (!k.offs && fd >= 0) {
		close(fd);
	}
	free(k.offs);
	free(text);
}

/* What perf 6.1 takes for anonymous memory (map.c's is_anon_memory): its code is a JIT's. */
static bool perf_anon(const char *path)
{
	return !strcmp(path, "//anon") || !strncmp(path, "/dev/zero", 9) || !strncmp(path, "/anon_hugepage", 14);
}

/*
 * perf's rule for /tmp/perf-PID.map (anyone may create it): a regular file,
 * not a symlink, owned by us or root, opened without blocking; names from
 * another user's file would be theirs to choose.
 */
static FILE *open_perf_map(const struct symbolizer *s, const char *path)
{
	struct stat st;
	int fd = open_regular_at(AT_FDCWD, path, true);
	FILE *f;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || (!s->any_perf_map_owner && st.st_uid != geteuid() && st.st_uid != 0)) {
		pr_debug("%s: not used, owned by uid %u (--force uses it)", path, (unsigned)st.st_uid);
		close(fd);
		return NULL;
	}
	f = fdopen(fd, "r");
	if (!f)
		close(fd);
	return f;
}

/* The text of pid's perf map that record kept (a container's JIT, jit_maps.h), or NULL. */
static FILE *kept_perf_map(struct symbolizer *s, __s32 pid)
{
	const struct pd_meta *m = s->recorded;

	for (int i = 0; m && i < m->nr_jit_maps; i++)
		if (m->jit_maps[i].pid == pid && m->jit_maps[i].len)
			return fmemopen(m->jit_maps[i].text, m->jit_maps[i].len, "r");
	return NULL;
}

/*
 * The next line of f, without its newline, into buf: one longer than buf
 * keeps its first part (a name cut), and the rest of it is skipped, not
 * read as a line of its own (a long name's tail would be another entry:
 * fuzz_perf_map).  False at the end.
 */
static bool read_line(FILE *f, char *buf, size_t len)
{
	size_t n = 0;
	int c;

	while ((c = getc(f)) != EOF && c != '\n')
		if (n + 1 < len)
			buf[n++] = c;
	buf[n] = 0;
	return c != EOF || n;
}

/*
 * JIT code: "START SIZE NAME" lines of /tmp/perf-PID.map; a container's,
 * as record read it from the container's /tmp while the process ran, else
 * the host's file now.
 */
static struct dso *load_perf_map(struct symbolizer *s, __s32 pid)
{
	char path[PATH_MAX + 32], line[1024];
	struct dso *d;
	FILE *f;

	snprintf(path, sizeof(path), "%s/tmp/perf-%d.map", s->root, pid);
	f = kept_perf_map(s, pid);
	if (!f)
		f = open_perf_map(s, path);
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
	while (read_line(f, line, sizeof(line))) {
		unsigned long long start, size;
		int n = 0;

		if (sscanf(line, "%llx %llx %n", &start, &size, &n) != 2 || !n)
			continue;
		if (elf_syms__add(&d->tab, start, size ? size : 1, line + n, STB_GLOBAL))
			break;
	}
	fclose(f);
	elf_syms__finish(&d->tab);
	return d;
}

static bool bid_eq(const void *ctx, size_t idx)
{
	const void *const *c = ctx;

	return !strcmp(((const struct pd_meta *)c[0])->build_ids[idx].filename, c[1]);
}

/* The BUILD_ID feature's id for a file name: indexed once, not scanned for every mapping. */
static const char *recorded_build_id(struct symbolizer *s, const char *name)
{
	static char hex[2 * BUILD_ID_MAX + 1];
	const struct pd_meta *m = s->recorded;
	const void *ctx[2] = { m, name };
	long i;

	if (!m)
		return "";
	if (!s->bid_indexed) {
		s->bid_indexed = true;
		for (int k = 0; k < m->nr_build_ids; k++) {
			const void *c[2] = { m, m->build_ids[k].filename };
			__u64 h = hash_str(m->build_ids[k].filename);

			if (hindex_find(&s->bid_idx, h, bid_eq, c) < 0 && hindex_add(&s->bid_idx, h, k))
				break; /* out of memory: the names not indexed have no build id */
		}
	}
	i = hindex_find(&s->bid_idx, hash_str(name), bid_eq, ctx);
	if (i < 0)
		return "";
	buildid_hex(m->build_ids[i].id, m->build_ids[i].size, hex);
	return hex;
}

static void dso_free(struct dso *d)
{
	if (!d)
		return;
	elf_syms__clear(&d->tab);
	free(d->elf);
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
	const char *bid = build_id ? build_id : recorded_build_id(s, key);
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

struct symbolizer *symbolizer__new(const struct pd_meta *recorded, const struct symbolizer_opts *o)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	snprintf(s->root, sizeof(s->root), "%s", o && o->root ? o->root : "");
	s->any_perf_map_owner = o && o->any_perf_map_owner;
	s->recorded = recorded;
	elf_version(EV_CURRENT);
	s->kernel = dso_get(s, "[kernel.kallsyms]", true, NULL);
	if (!s->kernel) {
		symbolizer__free(s);
		return NULL;
	}
	return s;
}

static void proc_free(struct proc_maps *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nr_py; i++) {
		free(p->py[i]->lines);
		free(p->py[i]);
	}
	free(p->py);
	u64_map_free(&p->py_at);
	free(p->maps);
	free(p->forks.t);
	free(p->forks.from);
	free(p->execs.t);
	free(p->execs.from);
	free(p->renamed.t);
	free(p->renamed.from);
	dso_free(p->jit);
	free(p);
}

static void free_retired(struct symbolizer *s)
{
	for (size_t i = 0; i < s->nr_retired; i++) {
		elf_syms__clear(&s->retired[i].tab);
		free(s->retired[i].elf);
		dso_free(s->retired[i].jit);
		proc_free(s->retired[i].proc);
	}
	s->nr_retired = 0;
}

void symbolizer__free(struct symbolizer *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->nr_dsos; i++)
		dso_free(s->dsos[i]);
	for (size_t i = 0; i < s->nr_procs; i++)
		proc_free(s->procs[i]);
	free_retired(s);
	free(s->retired);
	free(s->dsos);
	free(s->procs);
	free(s->infos);
	hindex_free(&s->dso_idx);
	hindex_free(&s->bid_idx);
	u64_map_free(&s->proc_by_pid);
	u64_map_free(&s->digest_idx);
	u64_map_free(&s->verified);
	strpool_free(&s->py_strs);
	free(s);
}

static struct proc_maps *proc_get(struct symbolizer *s, __s32 pid, bool create)
{
	uint64_t *v = u64_map_get(&s->proc_by_pid, (__u32)pid, create);

	if (!v)
		return NULL;
	if (!*v) {
		struct proc_maps *p;

		if (array_reserve((void **)&s->procs, &s->cap_procs, s->nr_procs, sizeof(*s->procs)))
			return NULL;
		p = calloc(1, sizeof(*p));
		if (!p)
			return NULL;
		p->pid = pid;
		s->procs[s->nr_procs] = p;
		*v = ++s->nr_procs;
	}
	return s->procs[*v - 1];
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

/*
 * Maps one process may hold: a live process has at most vm.max_map_count
 * (65530 by default) at a time; a file may claim any number over time.
 */
#define MAX_MAPS_PER_PROC (1 << 22)

static int push_map(struct proc_maps *p, struct map m)
{
	if (p->nr >= MAX_MAPS_PER_PROC) {
		p->dropped++;
		return 0;
	}
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

static int add_bound(struct bounds *b, __u64 t, __s32 from);
static bool over_slots(const struct proc_maps *p, __u64 lo, __u64 hi, __u64 t, size_t *pos);

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
	/* Over named Python slots (a region moved away, or mapped anew): what their addresses mean changes. */
	if (over_slots(p, start, start + len, time, NULL) && add_bound(&p->renamed, time, p->pid))
		return -ENOMEM;
	if (!d->info.limit) {
		d->info = (struct sym_dso_info){ d->path, d->build_id, start, start + len, pgoff, kernel };
	}
	return 0;
}

static int add_bound(struct bounds *b, __u64 t, __s32 from)
{
	__u64 *n = realloc(b->t, (b->nr + 1) * sizeof(*n));
	__s32 *f;
	int i;

	if (!n)
		return -ENOMEM;
	b->t = n;
	f = realloc(b->from, (b->nr + 1) * sizeof(*f));
	if (!f)
		return -ENOMEM;
	b->from = f;
	/* Side-band arrives almost in time order: insert from the back. */
	for (i = b->nr; i > 0 && n[i - 1] > t; i--) {
		n[i] = n[i - 1];
		f[i] = f[i - 1];
	}
	n[i] = t;
	f[i] = from;
	b->nr++;
	return 0;
}

/* The index of the latest boundary at or before t, or -1. */
static int bound_index(const struct bounds *b, __u64 t)
{
	return (int)SP_PARTITION((size_t)b->nr, i, b->t[i] <= t) - 1;
}

/* The boundaries around t: the latest at or before it (0 if none) and the next (or ~0). */
static __u64 bound_at(const struct bounds *b, __u64 t, __u64 *next)
{
	int i = bound_index(b, t);

	if (next)
		*next = i + 1 < b->nr ? b->t[i + 1] : ~0ull;
	return i >= 0 ? b->t[i] : 0;
}

__u64 symbolizer__epoch(struct symbolizer *s, __s32 pid, __u64 t)
{
	struct proc_maps *p = proc_get(s, pid, false);

	return p ? SP_MAX(SP_MAX(bound_at(&p->forks, t, NULL), bound_at(&p->execs, t, NULL)),
			  bound_at(&p->renamed, t, NULL))
		 : 0;
}

int symbolizer__exec(struct symbolizer *s, __s32 pid, __u64 time)
{
	struct proc_maps *p = proc_get(s, pid, true);

	return p ? add_bound(&p->execs, time, pid) : -ENOMEM;
}

int symbolizer__fork(struct symbolizer *s, __s32 ppid, __s32 pid, __u64 time)
{
	struct proc_maps *child;

	if (ppid == pid)
		return 0; /* a thread: it shares its process's maps */
	child = proc_get(s, pid, true);
	if (!child || add_bound(&child->forks, time, ppid))
		return -ENOMEM;
	/*
	 * Nothing is copied: find_map looks in the parent's maps as they were
	 * at the fork.  Copies of every map a parent ever had, in each of 400
	 * forks, took 1.9 GB for an 11 MB file.
	 */
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
/* A chain of forks is followed this far up for a map (a fork bomb's depth is the file's to choose). */
#define MAX_FORK_DEPTH 64

/*
 * The map covering ip at time t: of the maps the process had then (since
 * the fork that started it), the latest mapped; else its parent's at the
 * fork, and so up; if none, the earliest one after t in the same address
 * space, since a sample may come before its mapping's record.
 */
static struct map *find_map_in(struct symbolizer *s, struct proc_maps *p, __u64 ip, __u64 t, int depth,
			       bool may_be_later)
{
	struct map *best = NULL, *later = NULL;
	int lo = 0, hi = p->nr - 1, last = -1, fork = bound_index(&p->forks, t);
	__u64 next = fork + 1 < p->forks.nr ? p->forks.t[fork + 1] : ~0ull;
	__u64 b = fork >= 0 ? p->forks.t[fork] : 0;

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
	/* Overlaps (re-mappings over time) are few: look back a little. */
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
	if (!best && fork >= 0 && depth < MAX_FORK_DEPTH && p->forks.from[fork] != p->pid) {
		struct proc_maps *parent = proc_get(s, p->forks.from[fork], false);

		if (parent)
			best = find_map_in(s, parent, ip, b, depth + 1, false);
	}
	return best || !may_be_later ? best : later;
}

static struct map *find_map(struct symbolizer *s, struct proc_maps *p, __u64 ip, __u64 t)
{
	return find_map_in(s, p, ip, t, 0, true);
}

static void ensure_loaded(struct symbolizer *s, struct dso *d)
{
	d->used = s->gen;
	if (d->loaded)
		return;
	d->loaded = true;
	if (d == s->kernel)
		s->kernel_gen = s->gen;
	if (d->kernel)
		load_kallsyms(s, d);
	else if (!strcmp(d->path, "[vdso]"))
		load_vdso(s, d);
	else if (d->path[0] == '/' && d->path[1] != '/')
		load_user_dso(s, d);
}

/* ---- Python frames ---- */

static struct map *find_map_in(struct symbolizer *s, struct proc_maps *p, __u64 ip, __u64 t, int depth,
			       bool may_be_later);

static __u64 space_of(const struct proc_maps *p, __u64 t);

/*
 * Whether [lo, hi) lies over a slot of p named in the address space of
 * time t; *pos: where a slot named at t at lo goes (by start, then time).
 * Slots over one another are few (a region named anew): a few neighbours
 * are looked at.
 */
static bool over_slots(const struct proc_maps *p, __u64 lo, __u64 hi, __u64 t, size_t *pos)
{
	size_t at = SP_PARTITION(p->nr_py, i, p->py[i]->start < lo || (p->py[i]->start == lo && p->py[i]->first <= t));
	__u64 space;
	bool over = false;

	if (pos)
		*pos = at;
	if (!p->nr_py)
		return false;
	space = space_of(p, t);
	for (size_t i = at; i-- > 0 && i + 64 > at && !over;)
		over = p->py[i]->end > lo && space_of(p, p->py[i]->first) == space;
	for (size_t i = at; i < p->nr_py && i < at + 64 && p->py[i]->start < hi && !over; i++)
		over = space_of(p, p->py[i]->first) == space;
	return over;
}

/*
 * Puts n in its place and bounds the epoch where it changes what its
 * addresses meant: it lies over a slot named before in the same address
 * space (the recorder named the addresses anew), or a map made after its
 * naming, already read, lies over it.  A slot after the others, as the
 * recorder hands them out, changes nothing and goes at the end.
 */
static int insert_slot(struct symbolizer *s, struct proc_maps *p, struct py_slot *n)
{
	size_t at;
	const struct map *m;

	if (over_slots(p, n->start, n->end, n->first, &at) && add_bound(&p->renamed, n->first, p->pid))
		return -ENOMEM;
	for (int i = 0; i < 2; i++) {
		m = find_map_in(s, p, i ? n->end - 1 : n->start, ~0ull, 0, false);
		if (m && m->order > n->first && add_bound(&p->renamed, m->time, p->pid))
			return -ENOMEM;
	}
	memmove(p->py + at + 1, p->py + at, (p->nr_py - at) * sizeof(*p->py));
	p->py[at] = n;
	p->nr_py++;
	return 0;
}

int symbolizer__add_python(struct symbolizer *s, const struct py_names_rec *r, __u64 time)
{
	struct proc_maps *p = proc_get(s, (__s32)r->pid, true);
	char name[PY_NAME_BUF], file[3 * PY_NAMES_STR_MAX + 1];
	const char *pn, *pf;
	struct py_slot *o = NULL, *n;
	uint64_t *at;

	if (!p)
		return -ENOMEM;
	py_names_symbol(r, name, sizeof(name));
	py_names_text(r->filename, r->filename_len, file, sizeof(file));
	pn = strpool_intern(&s->py_strs, name, NULL);
	pf = strpool_intern(&s->py_strs, file, NULL);
	at = u64_map_get(&p->py_at, r->slot, true);
	if (!pn || !pf || !at)
		return -ENOMEM;
	if (*at)
		o = (struct py_slot *)(uintptr_t)*at;
	/* The same record again (each --switch-output file carries its own copy): one slot, seen longer. */
	if (o && o->name == pn && o->end == r->slot + r->size && o->firstlineno == r->firstlineno &&
	    o->lines_len == r->lines_len && !memcmp(o->lines, r->lines, r->lines_len)) {
		o->first = SP_MIN(o->first, time);
		o->last = SP_MAX(o->last, time);
		s->py_repeats++;
		return 0;
	}
	if (array_reserve((void **)&p->py, &p->cap_py, p->nr_py, sizeof(*p->py)) || !(n = calloc(1, sizeof(*n))))
		return -ENOMEM;
	*n = (struct py_slot){ r->slot, r->slot + r->size, time, time, pn, pf, NULL, r->lines_len, r->firstlineno,
			       !!(r->flags & PY_NAMES_JAVA) };
	if (r->lines_len && !(n->lines = malloc(r->lines_len))) {
		free(n);
		return -ENOMEM;
	}
	if (r->lines_len)
		memcpy(n->lines, r->lines, r->lines_len);
	if (insert_slot(s, p, n)) {
		free(n->lines);
		free(n);
		return -ENOMEM;
	}
	*at = (uintptr_t)n;
	s->py_named++;
	return 0;
}

void symbolizer__python_counts(const struct symbolizer *s, __u64 *named, __u64 *repeats)
{
	*named = s->py_named;
	*repeats = s->py_repeats;
}

/* When the address space of p that holds time t began: its last fork or exec then (0: before the file). */
static __u64 space_of(const struct proc_maps *p, __u64 t)
{
	return SP_MAX(bound_at(&p->forks, t, NULL), bound_at(&p->execs, t, NULL));
}

/*
 * The slot of p holding ip in the address space of time t: named in that
 * space (an exec or the pid's reuse starts another), else, in a child, its
 * parent's as the parent's space was at the fork.
 */
static const struct py_slot *find_python(struct symbolizer *s, struct proc_maps *p, __u64 ip, __u64 t, int depth)
{
	__u64 space = space_of(p, t);
	long lo = 0, hi = (long)p->nr_py - 1, last = -1;
	const struct py_slot *best = NULL;
	int fork;

	while (lo <= hi) {
		long mid = lo + (hi - lo) / 2;

		if (p->py[mid]->start <= ip) {
			last = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	/*
	 * Slots at one address are few (a reused pid, an exec, a recorder that
	 * starts its slots anew in each --switch-output file): of those of
	 * this image, the latest named by t, else the first named after it.
	 */
	for (long i = last; i >= 0 && i > last - 64; i--) {
		const struct py_slot *o = p->py[i];

		if (ip >= o->end || (space_of(p, o->first) != space && space_of(p, o->last) != space))
			continue;
		if (o->first <= t && (!best || best->first > t || o->first > best->first))
			best = o;
		else if (o->first > t && (!best || (best->first > t && o->first < best->first)))
			best = o;
	}
	if (best)
		return best;
	fork = bound_index(&p->forks, t);
	if (fork >= 0 && depth < MAX_FORK_DEPTH && p->forks.from[fork] != p->pid) {
		struct proc_maps *parent = proc_get(s, p->forks.from[fork], false);

		if (parent && parent->nr_py)
			return find_python(s, parent, ip, p->forks.t[fork], depth + 1);
	}
	return NULL;
}

/* A Python frame: named by its code object, in the dso of the region's map if the file has one. */
static bool resolve_python(struct symbolizer *s, struct proc_maps *p, const struct map *m, __u64 ip, __u64 t,
			   struct sym *out)
{
	const struct py_slot *o = find_python(s, p, ip, t, 0);
	__u64 base = 0;

	/*
	 * A map made over the slot after its last naming (the process mapped
	 * code where its Python region was, and the recorder moved the region)
	 * holds the address now: its frames are native.  The region's own
	 * MMAP2 comes before the names in it.
	 */
	if (!o || (m && m->time <= t && m->order > o->last))
		return false;
	out->name = o->name;
	out->known = true;
	out->src_file = o->file;
	out->src_line = py_runs_line(o->lines, o->lines_len, o->firstlineno, py_frame_index(o->start, ip));
	out->offset = ip - o->start;
	if (m) {
		out->file_offset = ip - m->start + m->pgoff;
		out->dso = m->dso->short_name;
		out->path = m->dso->path;
		out->build_id = m->dso->build_id;
		out->dso_id = m->dso->id;
		base = m->pgoff - m->start; /* the slot in its file's addresses, as perf's symbols are */
		out->sym_start = o->start + base;
	} else {
		/*
		 * No file maps the region (a live session's recorder may write
		 * none): the slot's own identity as its extent, since two
		 * processes' slots at one address are two functions.
		 */
		out->dso = o->java ? "[java]" : "[python]";
		out->sym_start = (uintptr_t)o;
	}
	out->sym_end = out->sym_start + (o->end - o->start);
	return true;
}

void symbolizer__resolve(struct symbolizer *s, __s32 pid, __u64 ip, __u64 t, bool kernel, struct sym *out)
{
	struct proc_maps *p = proc_get(s, kernel ? -1 : pid, false);
	struct map *m = p ? find_map(s, p, ip, t) : NULL;
	struct elf_sym *sym;

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
		s->kernel_unmapped |= !m;
		out->dso = named->short_name;
		out->path = named->path;
		out->build_id = named->build_id;
		out->dso_id = named->id;
		sym = elf_syms__find(&s->kernel->tab, ip);
		if (sym) {
			out->name = elf_syms__name(&s->kernel->tab, sym);
			out->offset = ip - sym->start;
			out->sym_start = sym->start;
			out->sym_end = sym->end;
			out->known = true;
		}
		return;
	}
	if (p && p->nr_py && resolve_python(s, p, m, ip, t, out))
		return;
	if (m) {
		struct dso *d = m->dso;

		out->file_offset = ip - m->start + m->pgoff;
		out->offset = out->file_offset;
		out->dso = d->short_name;
		out->path = d->path;
		out->build_id = d->build_id;
		out->dso_id = d->id;
		ensure_loaded(s, d);
		d->sampled = true;
		sym = elf_syms__find(&d->tab, elf_syms__to_vaddr(&d->tab, out->file_offset));
		if (sym) {
			out->name = elf_sym__name(sym);
			out->offset = elf_syms__to_vaddr(&d->tab, out->file_offset) - sym->start;
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
	if (p && p->jit && (sym = elf_syms__find(&p->jit->tab, ip))) {
		out->name = elf_sym__name(sym);
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
	struct map *m = p ? find_map(s, p, ip, t) : NULL;

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

int symbolizer__wanting(struct symbolizer *s, const char ***out, size_t *n)
{
	const char **v = calloc(s->nr_dsos ? s->nr_dsos : 1, sizeof(*v));

	*n = 0;
	*out = v;
	if (!v)
		return -ENOMEM;
	/* Files with frames but no full symbol table, that a build id can ask for. */
	for (int i = 0; i < s->nr_dsos; i++) {
		const struct dso *d = s->dsos[i];

		if (d->sampled && !d->kernel && !d->jit && !d->full && d->build_id[0] && d->path[0] == '/')
			v[(*n)++] = d->build_id;
	}
	return 0;
}

const char *symbolizer__elf_file(const struct symbolizer *s, int dso_id)
{
	if (dso_id < 0 || dso_id >= s->nr_dsos || !s->dsos[dso_id]->loaded)
		return NULL;
	return s->dsos[dso_id]->elf;
}

__u64 symbolizer__vaddr(const struct symbolizer *s, int dso_id, __u64 file_offset)
{
	if (dso_id < 0 || dso_id >= s->nr_dsos)
		return file_offset;
	return elf_syms__to_vaddr(&s->dsos[dso_id]->tab, file_offset);
}

void symbolizer__keep_tables(struct symbolizer *s, size_t max, size_t max_syms)
{
	s->keep_max = max;
	s->keep_syms = max_syms;
}

static int by_use(const void *a, const void *b)
{
	const struct dso *x = *(struct dso *const *)a, *y = *(struct dso *const *)b;

	if (x->used != y->used)
		return x->used < y->used ? 1 : -1;
	return (x->id > y->id) - (x->id < y->id);
}

/*
 * A table (or a JIT's map, or a process) goes to the retired, to be freed at
 * the next trim; false if out of memory (it stays).
 */
static bool retire(struct symbolizer *s, struct elf_syms *tab, char **elf, struct dso *jit, struct proc_maps *proc)
{
	if (array_reserve((void **)&s->retired, &s->cap_retired, s->nr_retired, sizeof(*s->retired)))
		return false;
	s->retired[s->nr_retired++] = (struct retired){ .tab = tab ? *tab : (struct elf_syms){}, .elf = elf ? *elf : NULL,
							.jit = jit, .proc = proc };
	if (tab)
		memset(tab, 0, sizeof(*tab));
	if (elf)
		*elf = NULL;
	return true;
}

void symbolizer__exit(struct symbolizer *s, __s32 pid, __u64 time)
{
	struct proc_maps *p = proc_get(s, pid, false);

	if (p) {
		p->exited = true;
		p->exit_time = time;
	}
}

/* Anything of p's after t: its pid came back to life (a new process, or records late). */
static bool active_after(const struct proc_maps *p, __u64 t)
{
	if ((p->forks.nr && p->forks.t[p->forks.nr - 1] > t) || (p->execs.nr && p->execs.t[p->execs.nr - 1] > t))
		return true;
	for (int i = 0; i < p->nr; i++)
		if (p->maps[i].time > t)
			return true;
	return false;
}

/*
 * Exited processes are let go, but not one whose maps a live process forked
 * from it still reads (find_map_in follows forks up to the parent's maps).
 * What is let go is freed at the next trim: its names may be shown till
 * then.  Out of memory, every process stays.
 */
static void drop_exited(struct symbolizer *s)
{
	struct u64_map parents = {}, idx = {};
	size_t n = 0, gone = 0;

	for (size_t i = 0; i < s->nr_procs; i++) {
		struct proc_maps *p = s->procs[i];

		if (p->exited && active_after(p, p->exit_time))
			p->exited = false;
		for (int k = 0; !p->exited && k < p->forks.nr; k++)
			if (p->forks.from[k] != p->pid && !u64_map_get(&parents, (__u32)p->forks.from[k], true))
				goto cleanup;
	}
	/* The new index first: nothing changes until it is whole. */
	for (size_t i = 0; i < s->nr_procs; i++) {
		struct proc_maps *p = s->procs[i];
		uint64_t *v;

		if (p->exited && !u64_map_get(&parents, (__u32)p->pid, false)) {
			gone++;
			continue;
		}
		v = u64_map_get(&idx, (__u32)p->pid, true);
		if (!v)
			goto cleanup;
		*v = ++n;
	}
	if (!gone || array_reserve((void **)&s->retired, &s->cap_retired, s->nr_retired + gone - 1, sizeof(*s->retired)))
		goto cleanup;
	n = 0;
	for (size_t i = 0; i < s->nr_procs; i++) {
		struct proc_maps *p = s->procs[i];

		if (p->exited && !u64_map_get(&parents, (__u32)p->pid, false))
			retire(s, NULL, NULL, NULL, p);
		else
			s->procs[n++] = p;
	}
	s->nr_procs = n;
	u64_map_free(&s->proc_by_pid);
	s->proc_by_pid = idx;
	idx = (struct u64_map){};
cleanup:
	u64_map_free(&parents);
	u64_map_free(&idx);
}

/*
 * The tables used last are kept, up to the bound; the others are unloaded,
 * to be loaded again when an address falls in them.  JITs' perf maps are
 * read again at their next miss, since a JIT adds to them while it runs.
 */
/*
 * How many trims a kallsyms read serves once BPF programs are sampled: a
 * program loaded since would be named after its neighbour, so the table is
 * read again, but not at every window (a read costs about 55 ms of CPU here).
 */
#define KERNEL_REREAD_TRIMS 16

void symbolizer__trim(struct symbolizer *s)
{
	struct dso **v;
	size_t n = 0, syms = 0, kept = 0;

	free_retired(s);
	drop_exited(s);
	if (s->keep_max && s->kernel->loaded && s->kernel_unmapped && s->gen - s->kernel_gen >= KERNEL_REREAD_TRIMS &&
	    retire(s, &s->kernel->tab, &s->kernel->elf, NULL, NULL)) {
		s->kernel->loaded = false;
		s->kernel_unmapped = false;
	}
	for (size_t i = 0; s->keep_max && i < s->nr_procs; i++) {
		struct proc_maps *p = s->procs[i];

		if (p->jit_tried && (!p->jit || retire(s, NULL, NULL, p->jit, NULL))) {
			p->jit = NULL;
			p->jit_tried = false;
		}
	}
	v = s->keep_max ? calloc(s->nr_dsos ? s->nr_dsos : 1, sizeof(*v)) : NULL;
	/* A file found to have no symbols costs nothing to keep so: it is not looked for again. */
	for (int i = 0; v && i < s->nr_dsos; i++)
		if (s->dsos[i]->loaded && s->dsos[i]->tab.nr_syms)
			v[n++] = s->dsos[i];
	sort_n(v, n, sizeof(*v), by_use);
	for (size_t i = 0; i < n; i++) {
		struct dso *d = v[i];

		if (kept < s->keep_max && syms + d->tab.nr_syms <= s->keep_syms) {
			kept++;
			syms += d->tab.nr_syms;
			/* The names the window read go back to the page cache with the rest. */
			elf_syms__drop_pages(&d->tab);
		} else if (retire(s, &d->tab, &d->elf, NULL, NULL)) {
			d->loaded = d->full = false;
		}
	}
	free(v);
	s->gen++;
}
