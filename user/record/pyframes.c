// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>

#include "buildid.h"
#include "hash.h"
#include "jvmfacts.h"
#include "jvmnames.h"
#include "log.h"
#include "perf_sample.h"
#include "py_code.h"
#include "py_elf.h"
#include "py_names.h"
#include "pyfacts.h"
#include "pyframes.h"
#include "pyprocs.h"
#include "sbuf.h"
#include "sideband.h"
#include "spanperf_abi.h"
#include "util.h"

/*
 * A process's region: 1 GiB of its address space where it maps nothing,
 * tried from 0x600000000000 up (between where PIE executables and their
 * heap go and where mmap hands out from the top).
 */
#define REGION_LEN (1ull << 30)
#define REGION_BASE 0x600000000000ull
#define REGION_TRIES 64
/* Bytes one code object's reading may take (a line table of up to 1 MiB, its strings, the object). */
#define CODE_BUDGET (1u << 21)
/* Line runs kept per code object: what a record has room for, with its strings. */
#define LINES_MAX 40000
/* Failed reads of one process per drain: a process that lies cannot make the recorder read for ever. */
#define FAILS_PER_DRAIN 256
/*
 * 3.8-3.10: the qualified-name scan runs again while code objects it did not
 * name (functions made since) wait, no sooner than ten times what the last
 * one took after it (at most a tenth of the recorder's time), twice in a
 * process's first seconds, when its program defines most of its functions
 * just after the first scan (at its first imports) and a profile's first
 * samples would keep co_name for that long.
 */
#define QUALSCAN_GAP_NS 20000000ull
#define QUALSCAN_YOUNG_NS 5000000000ull
#define QUALSCAN_MAX 200000
#define SCAN_MISSES 3

/*
 * The qualified-name scan makes tens of thousands of small reads of objects
 * that lie together in the interpreter's arenas: through a cache of whole
 * pages it makes a few hundred, each a system call (10 us and more on a
 * loaded host).  Direct-mapped; a scan starts with it empty, so that what
 * it reads is no older than the scan.
 */
#define PAGE_SHIFT_ 12
#define PAGE_SIZE_ (1u << PAGE_SHIFT_)
#define CACHE_PAGES 512

struct page_cache {
	__u32 pid;
	__u64 tag[CACHE_PAGES]; /* page number + 1; 0: empty */
	__u8 (*page)[PAGE_SIZE_];
	__u64 reads;
};

static int cached_read(void *ctx, __u64 addr, void *buf, size_t len)
{
	struct page_cache *c = ctx;
	__u8 *out = buf;

	if (addr < PAGE_SIZE_ || addr >= (1ull << 47) || len > (1ull << 47) - addr)
		return -EFAULT;
	/* Large reads (a line table) go straight through. */
	if (len > 4 * PAGE_SIZE_)
		return py_read_pid((void *)(long)c->pid, addr, buf, len);
	while (len) {
		__u64 pg = addr >> PAGE_SHIFT_, off = addr & (PAGE_SIZE_ - 1);
		__u32 slot = pg % CACHE_PAGES;
		size_t n = PAGE_SIZE_ - off < len ? PAGE_SIZE_ - off : len;

		if (c->tag[slot] != pg + 1) {
			c->tag[slot] = 0;
			c->reads++;
			if (py_read_pid((void *)(long)c->pid, pg << PAGE_SHIFT_, c->page[slot], PAGE_SIZE_))
				return -EFAULT;
			c->tag[slot] = pg + 1;
		}
		memcpy(out, c->page[slot] + off, n);
		out += n;
		addr += n;
		len -= n;
	}
	return 0;
}

/* The fields that tell one code object from another at the same address. */
struct pf_cookie {
	__u64 type, size, name, filename, qualname, code;
	__s32 firstlineno;
	__u32 pad;
};

struct pf_code {
	__u64 code;	   /* its address in the process */
	__u64 off;	   /* its slot's offset in the region */
	__u32 ncodeunits;
	__u32 checked;	   /* the drain it was last checked in (0: never named: a failed read) */
	bool guessed;	   /* 3.8-3.10: named co_name, the scan did not know it (yet) */
	__u8 misses;	   /* scans since that did not know it either: after SCAN_MISSES, it stays co_name */
	bool rename;	   /* a scan knows it now: named again at its next sight while the process lives */
	struct pf_cookie cookie;
};

/* A compiled Java frame's methods and bcis, innermost first (n of them from first in py_frames' scopes). */
struct pf_site {
	__u32 first, n;
};

/* Sites kept per JVM: past this, each further one is read again at each sight. */
#define SITES_MAX 65536
/* A process's region moves after which its code objects are no longer named again at once. */
#define RENAME_MOVES 4

struct pf_proc {
	__u32 pid, gen;
	bool live;	  /* its slot in py_frames is in use */
	bool jvm;	  /* a JVM: its code objects are methods (jf), keyed by Method* */
	struct jvm_facts jf;
	bool announced;	  /* its region's MMAP2 is in this file */
	bool no_region;	  /* no room found for it: its frames are dropped */
	__u64 base;	  /* the region in the process */
	__u64 pgoff;	  /* the region in the ELF (when announced) */
	__u64 next;	  /* the next slot's offset */
	__u64 since;	  /* nothing of it is stamped before this */
	__u32 fails, fails_drain;
	/*
	 * Addresses whose read failed in drain fails_drain: not read again
	 * before the next.  Memory read again a few ms later says the same, and
	 * the few wrong entries a starved recorder's backlog repeats (two
	 * addresses 81 and 77 times in one drain) spent the 256 fails alone, so
	 * that a sleeper's code objects, named once when its chain is new, went
	 * unnamed for good (issue 45: 0.00 of 3.9 s in nap_here).
	 */
	struct u64_map bad;
	__u32 moves;	  /* its region's moves: names are read again eagerly for the first few */
	struct py_code_layout cl;
	bool has_scan;
	__u32 guessed;	  /* code objects named co_name, waiting for a scan that knows them */
	struct py_scan_layout sl;
	__u64 runtime, rt_interp_head;
	struct py_qualnames *qn;
	__u64 qn_ns, qn_took; /* when the qualified-name index was last built, and the recorder's CPU time it took */
	struct pf_code *codes;
	size_t nr_codes, cap_codes;
	struct u64_map by_code; /* code address -> index in codes + 1 */
	/*
	 * A JVM's compiled frames as their scopes say (java_sites): (compile
	 * id, pc) -> index in sites + 1.  The code of one compile id never
	 * changes, so an entry holds for as long as the JVM lives, even after
	 * its nmethod is freed.
	 */
	struct pf_site *sites;
	size_t nr_sites, cap_sites;
	struct u64_map by_site;
	struct jvm_scope *scopes; /* every site's scopes, one array */
	size_t nr_scopes, cap_scopes;
	/*
	 * Each kept scope's method slot (index in codes + 1; 0: not named
	 * yet), fixed when first named: once its class is unloaded, the
	 * Method*'s memory may hold another class's method, and a sample of
	 * this compile id drained then is still this method's.
	 */
	__u32 *pins;
	size_t cap_pins;
};

struct py_frames {
	struct py_frames_opts o;
	/* This file's, one per runtime (enum py_elf_runtime); NULL without a file or when it could not be made. */
	struct py_elf *elf[PY_ELF_RUNTIMES];
	bool elf_failed[PY_ELF_RUNTIMES];
	struct pf_proc *procs;
	size_t nr_procs, cap_procs;
	struct u64_map by_pid;	/* pid -> index in procs + 1 */
	__u32 drain;		/* drains so far, from 1 */
	struct sbuf rec;	/* a record being built */
	struct page_cache cache; /* the scans' reads */
	struct py_code code;	/* the code object being read */
	/* -v */
	__u64 named, renamed, dropped, not_code, unreadable, full, gone, records, qualscans, moved, mem_reads,
		mem_bytes, java_named, java_stubs;
	struct jvm_method jm;	/* the method being named */
	__u64 java_inlined, java_scopes_bad, java_no_scopes, java_no_room;
	__u64 *in;		/* a chain being rewritten, copied (it may grow in place) */
	size_t cap_in;
};

static void proc_clear(struct pf_proc *pp)
{
	py_qualnames__free(pp->qn);
	free(pp->codes);
	u64_map_free(&pp->by_code);
	u64_map_free(&pp->bad);
	free(pp->sites);
	free(pp->scopes);
	free(pp->pins);
	u64_map_free(&pp->by_site);
	memset(pp, 0, sizeof(*pp));
}

int py_frames__new(struct py_frames **out, const struct py_frames_opts *o)
{
	struct py_frames *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->o = *o;
	p->drain = 1;
	*out = p;
	return 0;
}

void py_frames__free(struct py_frames *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nr_procs; i++)
		proc_clear(&p->procs[i]);
	free(p->procs);
	u64_map_free(&p->by_pid);
	for (int rt = 0; rt < PY_ELF_RUNTIMES; rt++)
		py_elf__free(p->elf[rt]);
	sbuf_free(&p->rec);
	py_code_clear(&p->code);
	free(p->cache.page);
	jvm_method_clear(&p->jm);
	free(p->in);
	free(p);
}

__u32 py_frames__gen(const struct py_frames *p, __u32 pid)
{
	__u32 gen = 0;

	if (p && !py_procs__get(p->o.procs, pid, &gen, NULL) && !py_procs__jvm(p->o.procs, pid, &gen, NULL))
		return 0;
	return gen;
}

bool py_frames_any(const __u64 *ips, __u32 n)
{
	for (__u32 i = 0; i < n; i++)
		if ((ips[i] & SP_PY_TAG_MASK) == SP_PY_TAG || (ips[i] & SP_PY_TAG_MASK) == SP_HS_TAG)
			return true;
	return false;
}

static __u64 pick_base(__u32 pid);
static int announce(struct py_frames *p, struct pf_proc *pp, __u32 tid, __u64 t, py_write_fn fn, void *ctx);
static struct pf_code *name_code(struct py_frames *p, struct pf_proc *pp, __u64 code, __u32 tid, __u64 t,
				 py_write_fn fn, void *ctx, int *err);

int py_frames__mmap(struct py_frames *p, __u32 pid, __u64 start, __u64 len, __u64 t, py_write_fn fn, void *ctx)
{
	uint64_t *i = p ? u64_map_get(&p->by_pid, pid, false) : NULL;
	struct pf_proc *pp = i && *i ? &p->procs[*i - 1] : NULL;
	struct pf_code *old;
	size_t nr_old;
	int e = 0;

	if (!pp || !pp->live || !pp->base || start >= pp->base + REGION_LEN || start + len <= pp->base)
		return 0;
	old = pp->codes;
	nr_old = pp->nr_codes;
	pp->codes = NULL;
	pp->nr_codes = pp->cap_codes = 0;
	pp->base = pick_base(pid);
	pp->no_region = !pp->base;
	pp->announced = false;
	pp->pgoff = pp->next = 0;
	pp->guessed = 0;
	u64_map_free(&pp->by_code);
	p->moved++;
	/*
	 * Its code objects named in the new region now, while the process
	 * lives: a chain written later (an off-CPU block of a thread asleep
	 * the whole run is written at the end) names them from their slots,
	 * and after the exit there is nothing left to read them from (a
	 * starved recorder lost a sleeper's whole 3 s so, issue 42).  A JVM's
	 * methods are named again at their next sight, as before.  Only for a
	 * process's first RENAME_MOVES moves: a process that maps over its
	 * region again and again would otherwise make root read all its code
	 * objects again at each of its mmaps; past those, names come at their
	 * next sight, as before.
	 */
	if (!pp->jvm && !pp->no_region && nr_old && pp->moves++ < RENAME_MOVES &&
	    py_procs__get(p->o.procs, pid, NULL, NULL)) {
		e = announce(p, pp, pid, t, fn, ctx);
		for (size_t k = 0; k < nr_old && !e && !pp->no_region; k++)
			if (!u64_map_get(&pp->by_code, old[k].code, false))
				name_code(p, pp, old[k].code, pid, t, fn, ctx, &e);
	}
	free(old);
	return e;
}

static bool scan_due(const struct pf_proc *pp, __u64 now);
static __u64 pick_base(__u32 pid);
static void scan(struct py_frames *p, struct pf_proc *pp, __u64 now);

void py_frames__drain(struct py_frames *p)
{
	__u64 now;

	if (!p)
		return;
	p->drain++;
	/* 3.8-3.10: processes with code objects named co_name for want of a scan that knew them. */
	now = now_ns(CLOCK_MONOTONIC);
	for (size_t i = 0; i < p->nr_procs; i++) {
		struct pf_proc *pp = &p->procs[i];

		if (pp->live && pp->has_scan && pp->guessed && scan_due(pp, now) &&
		    py_procs__get(p->o.procs, pp->pid, NULL, NULL))
			scan(p, pp, now);
	}
}

static const char *runtime_word(enum py_elf_runtime rt)
{
	return rt == PY_ELF_JAVA ? "Java" : "Python";
}

/*
 * The ELF of this file for pp's runtime (perf shows its name as the frames'
 * dso: a JVM's are java-BUILDID.elf), made at its first need; NULL when
 * there is none (no file, or it failed, said once).
 */
static struct py_elf *elf_of(struct py_frames *p, const struct pf_proc *pp)
{
	enum py_elf_runtime rt = pp->jvm ? PY_ELF_JAVA : PY_ELF_PYTHON;
	char err[512] = "";
	int e;

	if (p->elf[rt] || p->elf_failed[rt] || !p->o.output)
		return p->elf[rt];
	e = py_elf__new(&p->elf[rt], p->o.output, rt, err, sizeof(err));
	if (e) {
		p->elf_failed[rt] = true;
		p->elf[rt] = NULL;
		if (e != -EOPNOTSUPP)
			pr_warn("%s: perf will not name %s frames (spanperf report will)", err[0] ? err : strerror(-e),
				runtime_word(rt));
		return NULL;
	}
	/* perf checks the file against its build id, and py_elf_prune keeps the ELFs a perf.data names. */
	dso_set__add_foreign(p->o.dsos, py_elf__path(p->elf[rt]), py_elf__build_id(p->elf[rt]), PY_ELF_BUILD_ID_SIZE);
	return p->elf[rt];
}

/* pp's runtime's ELF once its region is in it (pgoff), else NULL. */
static struct py_elf *region_elf(struct py_frames *p, const struct pf_proc *pp)
{
	return pp->pgoff ? p->elf[pp->jvm ? PY_ELF_JAVA : PY_ELF_PYTHON] : NULL;
}

/* A free stretch of REGION_LEN in pid's address space, else 0. */
static __u64 pick_base(__u32 pid)
{
	char path[64], *line = NULL;
	struct procmap m;
	size_t cap = 0, n = 0, maxn = 0;
	__u64 (*spans)[2] = NULL, base = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	while (f && procmaps_next(f, &line, &cap, &m, NULL)) {
		if (n == maxn) {
			void *q = realloc(spans, (maxn = maxn ? 2 * maxn : 64) * sizeof(*spans));

			if (!q)
				break;
			spans = q;
		}
		spans[n][0] = m.start;
		spans[n++][1] = m.end;
	}
	free(line);
	if (f)
		fclose(f);
	for (int t = 0; t < REGION_TRIES && !base; t++) {
		__u64 lo = REGION_BASE + t * REGION_LEN, hi = lo + REGION_LEN;
		bool clash = false;

		for (size_t i = 0; i < n && !clash; i++)
			clash = spans[i][0] < hi && spans[i][1] > lo;
		if (!clash)
			base = lo;
	}
	free(spans);
	return base;
}

/* The layouts of the naming side, from the runtime's facts. */
static int set_layouts(struct pf_proc *pp, const struct py_facts *f)
{
	const struct py_layout *l = &f->l;
	__u16 v = (l->version >> 16) & 0xffff;

	if (py_code_layout_init(&pp->cl, v))
		return -EPROTONOSUPPORT;
	pp->cl.code_type = l->code_type;
	pp->cl.co_name = l->co_name;
	pp->cl.co_qualname = l->co_qualname != SP_PY_NONE ? l->co_qualname : 0;
	pp->cl.co_filename = l->co_filename;
	pp->cl.co_firstlineno = l->co_firstlineno;
	pp->cl.co_linetable = l->co_lnotab != SP_PY_NONE ? l->co_lnotab : l->co_linetable;
	pp->cl.co_code = l->co_code != SP_PY_NONE ? l->co_code : 0;
	pp->cl.co_code_adaptive = l->code_units != SP_PY_NONE ? l->code_units : 0;
	pp->runtime = l->runtime;
	pp->rt_interp_head = l->rt_interp_head;
	pp->has_scan = !pp->cl.co_qualname && !py_scan_layout_init(&pp->sl, v);
	if (pp->has_scan) {
		pp->sl.function_type = l->function_type;
		pp->sl.staticmethod_type = l->staticmethod_type;
		pp->sl.classmethod_type = l->classmethod_type;
		pp->sl.property_type = l->property_type;
		pp->sl.dict_type = l->dict_type;
		pp->sl.co_consts = l->co_consts != SP_PY_NONE ? l->co_consts : 0;
		pp->sl.co_flags = l->co_flags != SP_PY_NONE ? l->co_flags : 0;
		if (l->is_modules != SP_PY_NONE)
			pp->sl.interp_modules = l->is_modules;
	}
	return 0;
}

/* A new or renewed state of pid (pp's, or a new one), live, for its image gen, stamped from since on. */
static struct pf_proc *proc_slot(struct py_frames *p, __u32 pid, struct pf_proc *pp, __u32 gen, __u64 since)
{
	uint64_t *i;

	if (!pp) {
		i = u64_map_get(&p->by_pid, pid, true);
		if (!i || array_reserve((void **)&p->procs, &p->cap_procs, p->nr_procs, sizeof(*p->procs)))
			return NULL;
		pp = &p->procs[p->nr_procs];
		memset(pp, 0, sizeof(*pp));
		*i = ++p->nr_procs;
	} else {
		proc_clear(pp);
	}
	pp->pid = pid;
	pp->gen = gen;
	pp->since = since;
	pp->live = true;
	return pp;
}

/* As proc_for, for a JVM: its facts copied (heaps to their reservation's end: they commit more as they grow). */
static struct pf_proc *jvm_proc_for(struct py_frames *p, __u32 pid, struct pf_proc *pp)
{
	const struct jvm_facts *jf;
	__u64 since = 0;
	__u32 gen = 0;

	jf = py_procs__jvm(p->o.procs, pid, &gen, &since);
	if (!jf)
		return pp && pp->live ? pp : NULL;
	if (pp && pp->live && pp->gen == gen)
		return pp;
	pp = proc_slot(p, pid, pp, gen, since);
	if (!pp)
		return NULL;
	pp->jvm = true;
	pp->jf = *jf;
	for (__u32 k = 0; k < pp->jf.nr_heaps; k++)
		pp->jf.heap[k].high = pp->jf.heap[k].high_boundary;
	pp->base = pick_base(pid);
	pp->no_region = !pp->base;
	return pp;
}

/*
 * pid's state for its current image: made (its region chosen) or made
 * anew when the runtime's entry changed; one of a process gone serves the
 * names it has.  NULL when pid is no Python process here.
 */
static struct pf_proc *proc_for(struct py_frames *p, __u32 pid)
{
	const struct py_facts *f;
	struct pf_proc *pp = NULL;
	uint64_t *i = u64_map_get(&p->by_pid, pid, false);
	__u64 since = 0;
	__u32 gen = 0;

	if (i && *i)
		pp = &p->procs[*i - 1];
	f = py_procs__get(p->o.procs, pid, &gen, &since);
	if (!f)
		return jvm_proc_for(p, pid, pp);
	if (pp && pp->live && pp->gen == gen && !pp->jvm)
		return pp;
	pp = proc_slot(p, pid, pp, gen, since);
	if (!pp)
		return NULL;
	if (set_layouts(pp, f)) {
		pp->no_region = true;
		return pp;
	}
	pp->base = pick_base(pid);
	pp->no_region = !pp->base;
	return pp;
}

static __u64 stamp(const struct py_frames *p, const struct pf_proc *pp, __u64 t)
{
	__u64 floor = p->o.sorted_ns ? *p->o.sorted_ns : 0;

	if (pp->since > floor)
		floor = pp->since;
	return floor < t ? floor : t;
}

/* The region's MMAP2 in this file, before any sample that uses it. */
static int announce(struct py_frames *p, struct pf_proc *pp, __u32 tid, __u64 t, py_write_fn fn, void *ctx)
{
	struct py_elf *elf = elf_of(p, pp);
	struct pd_sideband sb = { .type = PERF_RECORD_MMAP2, .misc = PERF_RECORD_MISC_USER };
	char buf[PATH_MAX + 256];
	long n;
	int e;

	if (!elf) {
		/* No file to name them from: report names them from the records alone. */
		pp->announced = true;
		return 0;
	}
	e = py_elf__add_region(elf, REGION_LEN, &pp->pgoff);
	if (e) {
		pp->no_region = true;
		return 0;
	}
	sb.mmap = (struct pd_mmap){ .pid = pp->pid, .tid = tid, .start = pp->base, .len = REGION_LEN,
				    .pgoff = pp->pgoff, .prot = PROT_READ | PROT_EXEC, .flags = MAP_PRIVATE,
				    .filename = py_elf__path(elf) };
	sb.sample_id = (struct pd_sample){ .pid = pp->pid, .tid = tid, .time = stamp(p, pp, t), .id = p->o.track_id };
	n = pd_sideband_write(buf, sizeof(buf), p->o.track_attr, &sb);
	if (n < 0)
		return n;
	pp->announced = true;
	return fn(ctx, buf, n);
}

/* What tells this code object from another later at its address: one read. */
static int read_cookie(const struct pf_proc *pp, __u64 code, struct pf_cookie *c)
{
	const struct py_code_layout *l = &pp->cl;
	__u32 fields[] = { l->co_name, l->co_filename, l->co_qualname, l->co_code, l->co_firstlineno, 16 };
	__u32 end = 24;
	__u8 buf[512];

	for (size_t i = 0; i < ARRAY_SIZE(fields); i++)
		if (fields[i] + 8 > end)
			end = fields[i] + 8;
	if (end > sizeof(buf) || py_read_pid((void *)(long)pp->pid, code, buf, end))
		return -EFAULT;
	memset(c, 0, sizeof(*c));
	memcpy(&c->type, buf + 8, 8);
	memcpy(&c->size, buf + 16, 8);
	memcpy(&c->name, buf + l->co_name, 8);
	memcpy(&c->filename, buf + l->co_filename, 8);
	if (l->co_qualname)
		memcpy(&c->qualname, buf + l->co_qualname, 8);
	if (l->co_code)
		memcpy(&c->code, buf + l->co_code, 8);
	memcpy(&c->firstlineno, buf + l->co_firstlineno, 4);
	return 0;
}

/* Whether the qualified-name index may be built again now (the limits above). */
static bool scan_due(const struct pf_proc *pp, __u64 now)
{
	__u64 gap = (now - pp->since < QUALSCAN_YOUNG_NS ? 2 : 10) * pp->qn_took;

	return !pp->qn_ns || now - pp->qn_ns >= (gap > QUALSCAN_GAP_NS ? gap : QUALSCAN_GAP_NS);
}

/*
 * The qualified-name index built again; the code objects named co_name
 * before that it now knows are named again at their next sight (their
 * earlier samples keep the name they had).
 */
static void scan(struct py_frames *p, struct pf_proc *pp, __u64 now)
{
	struct py_mem m = { .read = cached_read, .ctx = &p->cache, .budget = 64u << 20 };
	/*
	 * The scan's cost is the recorder's CPU, not the wall time it spans: on a
	 * loaded host the recorder waits for a CPU mid-scan, and a wall-clock gap
	 * would keep a young process's new functions named co_name for that long.
	 */
	__u64 cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);

	if (!p->cache.page && !(p->cache.page = malloc(CACHE_PAGES * sizeof(*p->cache.page))))
		return;
	memset(p->cache.tag, 0, sizeof(p->cache.tag));
	p->cache.pid = pp->pid;
	p->cache.reads = 0;
	py_qualnames__free(pp->qn);
	pp->qn = NULL;
	pp->qn_ns = now;
	if (py_read_pid((void *)(long)pp->pid, pp->runtime + pp->rt_interp_head, &pp->sl.interp, 8) || !pp->sl.interp)
		return;
	p->qualscans++;
	if (py_qualnames__build(&pp->qn, &m, &pp->cl, &pp->sl, QUALSCAN_MAX))
		return;
	pp->qn_took = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	p->mem_reads += p->cache.reads;
	p->mem_bytes += p->cache.reads * PAGE_SIZE_;
	pr_debug("python: pid %u: %zu qualified names found in %.1f ms, %llu pages read for %lu reads",
		 pp->pid, py_qualnames__count(pp->qn), pp->qn_took / 1e6, (unsigned long long)p->cache.reads,
		 m.reads);
	for (size_t i = 0; i < pp->nr_codes; i++) {
		struct pf_code *pc = &pp->codes[i];

		if (!pc->guessed)
			continue;
		if (!py_qualnames__find(pp->qn, pc->code)) {
			/* A function the scan cannot reach (a class made in a function): no more scans for it. */
			if (++pc->misses < SCAN_MISSES)
				continue;
		} else {
			pc->rename = true;
		}
		pc->guessed = false;
		pp->guessed--;
	}
}

/* 3.8-3.10: the code object's __qualname__ from the interpreter's modules, when the index has it. */
static const char *qualname_of(struct py_frames *p, struct pf_proc *pp, __u64 code, const char *name)
{
	const char *q = pp->qn ? py_qualnames__find(pp->qn, code) : NULL;
	__u64 now;

	/* A module's code has no other name; CPython's perf map writes <module> too. */
	if (q || !pp->has_scan || !strcmp(name, "<module>"))
		return q;
	now = now_ns(CLOCK_MONOTONIC);
	if (!scan_due(pp, now))
		return NULL;
	scan(p, pp, now);
	return pp->qn ? py_qualnames__find(pp->qn, code) : NULL;
}

/* Whether pp's reads failed FAILS_PER_DRAIN times this drain: none more until the next. */
static bool fails_spent(struct py_frames *p, struct pf_proc *pp)
{
	if (pp->fails_drain != p->drain) {
		pp->fails_drain = p->drain;
		pp->fails = 0;
		if (pp->bad.n)
			u64_map_free(&pp->bad);
	}
	return pp->fails >= FAILS_PER_DRAIN;
}

/* A read of pp's that failed, against its tries this drain: what it read was not code, or unreadable. */
static void read_failed(struct py_frames *p, struct pf_proc *pp, bool not_code)
{
	pp->fails++;
	if (not_code)
		p->not_code++;
	else
		p->unreadable++;
}

/* Whether pp's region has size bytes more for a slot; counted as full when not. */
static bool region_room(struct py_frames *p, struct pf_proc *pp, __u64 size)
{
	if (pp->next + size <= REGION_LEN)
		return true;
	p->full++;
	return false;
}

/*
 * rec written through fn, stamped at t; false if it was not, *err its
 * -errno (0 for a record too large for a sample: that code is dropped, not the recording).
 */
static bool write_rec(struct py_frames *p, struct pf_proc *pp, __u64 t, const struct py_names_rec *rec,
		      py_write_fn fn, void *ctx, int *err)
{
	int e;

	p->rec.len = 0;
	e = py_names_rec_write(&p->rec, p->o.names_attr, p->o.names_id, stamp(p, pp, t), rec);
	if (!e)
		e = fn(ctx, p->rec.p, p->rec.len);
	if (e) {
		*err = e == -E2BIG ? 0 : e;
		return false;
	}
	p->records++;
	return true;
}

/*
 * proto (its code, ncodeunits, guessed, cookie) as pp's next slot of size
 * bytes, checked this drain; NULL with *err -ENOMEM.
 */
static struct pf_code *add_slot(struct py_frames *p, struct pf_proc *pp, const struct pf_code *proto, __u64 size,
				int *err)
{
	uint64_t *i = u64_map_get(&pp->by_code, proto->code, true);
	struct pf_code *pc;

	if (!i || array_reserve((void **)&pp->codes, &pp->cap_codes, pp->nr_codes, sizeof(*pp->codes))) {
		*err = -ENOMEM;
		return NULL;
	}
	pc = &pp->codes[pp->nr_codes];
	*pc = *proto;
	pc->off = pp->next;
	pc->checked = p->drain;
	*i = ++pp->nr_codes;
	pp->next += size;
	p->named++;
	return pc;
}

/* The code object at code named: its slot, symbol and record; NULL if it names nothing. */
static struct pf_code *name_code(struct py_frames *p, struct pf_proc *pp, __u64 code, __u32 tid, __u64 t,
				 py_write_fn fn, void *ctx, int *err)
{
	struct py_mem m = { .read = py_read_pid, .ctx = (void *)(long)pp->pid, .budget = CODE_BUDGET };
	struct py_code *c = &p->code;
	struct py_names_rec rec;
	struct py_elf *elf;
	struct pf_code *pc;
	struct pf_cookie ck;
	char name[PY_NAME_BUF];
	const char *qual;
	__u64 size;
	int e;

	*err = 0;
	if (fails_spent(p, pp) || u64_map_get(&pp->bad, code, false))
		return NULL;
	py_code_clear(c);
	e = read_cookie(pp, code, &ck);
	e = e ?: py_code_read(&m, &pp->cl, code, LINES_MAX, c);
	p->mem_reads += m.reads + 1;
	p->mem_bytes += m.bytes;
	if (e) {
		read_failed(p, pp, e == -EINVAL);
		/* Without memory to remember it, it is read again at its next sight, as before. */
		u64_map_get(&pp->bad, code, true);
		return NULL;
	}
	size = py_slot_size(c->ncodeunits);
	if (!region_room(p, pp, size))
		return NULL;
	qual = c->has_qualname ? c->qualname : qualname_of(p, pp, code, c->name);
	rec = (struct py_names_rec){
		.pid = pp->pid, .flags = c->flags | (qual ? 0 : PY_NAMES_QUALNAME_GUESSED), .slot = pp->base + pp->next,
		.code = code, .size = size, .ncodeunits = c->ncodeunits, .firstlineno = c->firstlineno,
		.qualname = qual ?: c->name, .filename = c->filename, .lines = c->lines, .lines_len = c->lines_len,
	};
	rec.qualname_len = strlen(rec.qualname);
	rec.filename_len = strlen(rec.filename);
	/* The record first: a sample is never in the file before what names it. */
	if (!write_rec(p, pp, t, &rec, fn, ctx, err))
		return NULL;
	/* perf's names, and its srclines (perf report --sort srcline, perf script -F srcline). */
	elf = region_elf(p, pp);
	if (elf &&
	    (py_elf__add_symbol(elf, pp->pgoff + pp->next, size,
				py_names_name(rec.qualname, rec.qualname_len, rec.filename, rec.filename_len, name,
					      sizeof(name))) ||
	     (c->lines && py_elf__add_lines(elf, pp->pgoff + pp->next, c->filename, c->firstlineno, c->lines,
					     c->lines_len))))
		pr_debug("python: no symbol or lines for %s in the ELF", name);
	pc = add_slot(p, pp,
		      &(struct pf_code){ .code = code, .ncodeunits = c->ncodeunits,
					 .guessed = (rec.flags & PY_NAMES_QUALNAME_GUESSED) &&
						    strcmp(c->name, "<module>"),
					 .cookie = ck },
		      size, err);
	if (pc)
		pp->guessed += pc->guessed;
	(void)tid;
	return pc;
}

/* The slot of code in pp: the one named before if it is still that object, else a new one. */
static struct pf_code *code_slot(struct py_frames *p, struct pf_proc *pp, __u64 code, __u32 tid, __u64 t,
				 py_write_fn fn, void *ctx, int *err)
{
	uint64_t *i = u64_map_get(&pp->by_code, code, false);
	struct pf_code *pc = i && *i ? &pp->codes[*i - 1] : NULL;
	struct pf_cookie now;
	bool live = py_procs__get(p->o.procs, pp->pid, NULL, NULL);

	*err = 0;
	/* Its qualified name found since: a slot of that name from here on (unless the process is gone). */
	if (pc && pc->rename && live) {
		uint64_t old = *i;
		struct pf_code *renamed;

		*i = 0;
		pc->rename = false;
		renamed = name_code(p, pp, code, tid, t, fn, ctx, err);
		if (renamed) {
			p->renamed++;
			return renamed;
		}
		/* Not readable now: the name it had serves. */
		i = u64_map_get(&pp->by_code, code, true);
		if (i)
			*i = old;
		return *err || !i ? NULL : &pp->codes[old - 1];
	}
	if (pc && pc->checked == p->drain)
		return pc;
	if (pc) {
		/* Once a drain: the object there may have been freed and another made in its place. */
		if (read_cookie(pp, code, &now)) {
			/* Gone (the process exited): the name it had is the one its frames had. */
			pc->checked = p->drain;
			return pc;
		}
		if (!memcmp(&now, &pc->cookie, sizeof(now))) {
			pc->checked = p->drain;
			return pc;
		}
		/* Another object: its own slot from here on; the old one keeps its name for earlier samples. */
		*i = 0;
		if (pc->guessed) {
			pc->guessed = false;
			pp->guessed--;
		}
		p->renamed++;
	}
	if (!live) {
		p->gone++;
		return NULL;
	}
	return name_code(p, pp, code, tid, t, fn, ctx, err);
}

/* The method at Method* m of a JVM named: its slot, symbol and record; NULL if it names nothing. */
static struct pf_code *name_method(struct py_frames *p, struct pf_proc *pp, __u64 m, __u64 t, py_write_fn fn,
				   void *ctx, int *err)
{
	struct jvm_method *jm = &p->jm;
	struct py_names_rec rec;
	struct py_elf *elf;
	struct pf_code *pc;
	__u64 size;
	int e;

	*err = 0;
	if (fails_spent(p, pp))
		return NULL;
	e = jvm_method_read(&pp->jf, py_read_pid, (void *)(long)pp->pid, m, jm);
	p->mem_reads += 14;
	if (e == -ENOMEM) {
		*err = e;
		return NULL;
	}
	if (e) {
		read_failed(p, pp, e == -EBADMSG);
		return NULL;
	}
	size = py_slot_size(jm->code_size);
	if (!region_room(p, pp, size))
		return NULL;
	/* A bytecode index is a code unit: its line from the method's table, as a Python instruction's. */
	rec = (struct py_names_rec){ .pid = pp->pid, .flags = PY_NAMES_JAVA | (jm->lines.len ? 0 : PY_NAMES_NO_LINES) |
						     (jm->lines_cut ? PY_NAMES_LINES_CUT : 0),
				     .slot = pp->base + pp->next, .code = m, .size = size,
				     .ncodeunits = jm->code_size, .firstlineno = jm->firstline, .qualname = jm->name,
				     .filename = jm->file, .lines = (const __u8 *)jm->lines.p, .lines_len = jm->lines.len };
	rec.qualname_len = strlen(rec.qualname);
	rec.filename_len = strlen(rec.filename);
	if (!write_rec(p, pp, t, &rec, fn, ctx, err))
		return NULL;
	elf = region_elf(p, pp);
	if (elf &&
	    (py_elf__add_symbol(elf, pp->pgoff + pp->next, size, jm->name) ||
	     (jm->lines.len && jm->file[0] &&
	      py_elf__add_lines(elf, pp->pgoff + pp->next, jm->file, jm->firstline, (const __u8 *)jm->lines.p,
				jm->lines.len))))
		pr_debug("java: no symbol or lines for %s in the ELF", jm->name);
	pc = add_slot(p, pp,
		      &(struct pf_code){ .code = m, .ncodeunits = jm->code_size,
					 .cookie = { .code = jm->cookie } },
		      size, err);
	if (pc)
		p->java_named++;
	return pc;
}

/* The slot of the method at m: the one named before while its ConstMethod is the same, else a new one. */
static struct pf_code *method_slot(struct py_frames *p, struct pf_proc *pp, __u64 m, __u64 t, py_write_fn fn,
				   void *ctx, int *err)
{
	uint64_t *i = u64_map_get(&pp->by_code, m, false);
	struct pf_code *pc = i && *i ? &pp->codes[*i - 1] : NULL;
	__u64 cm;

	*err = 0;
	if (pc && pc->checked == p->drain)
		return pc;
	if (pc) {
		/* Once a drain: metaspace reuse after a class's unloading puts another method there. */
		if (jvm_method_cookie(&pp->jf, py_read_pid, (void *)(long)pp->pid, m, &cm) || cm == pc->cookie.code) {
			pc->checked = p->drain;
			return pc;
		}
		*i = 0;
		p->renamed++;
	}
	if (!py_procs__jvm(p->o.procs, pp->pid, NULL, NULL)) {
		p->gone++;
		return NULL;
	}
	return name_method(p, pp, m, t, fn, ctx, err);
}

/*
 * The frames a compiled Java entry names, innermost first, read from its
 * nmethod once per (compile id, pc) and kept: how many, their first in
 * pp->scopes at *first (*kept: a kept site's, with pins); 0 when it names
 * none (a stub, a blob recompiled since: dropped).  Where its scopes cannot
 * be read as HotSpot writes them the frame stays its nmethod's own method,
 * its line unknown (counted).
 */
static __u32 java_site(struct py_frames *p, struct pf_proc *pp, __u64 v, size_t *first, bool *kept)
{
	struct jvm_scope sc[JVM_MAX_SCOPES];
	__u64 key = v & ((1ull << (SP_HS_ID_SHIFT + SP_HS_ID_BITS)) - 1), pc;
	uint64_t *i = u64_map_get(&pp->by_site, key, false);
	struct jvm_blob b;
	bool keep = true;
	__u32 id;
	int n;

	*kept = false;
	if (i && *i) {
		*first = pp->sites[*i - 1].first;
		*kept = true;
		return pp->sites[*i - 1].n;
	}
	pc = pp->jf.cc_low + (v & 0xffffffffull);
	id = (v >> SP_HS_ID_SHIFT) & ((1u << SP_HS_ID_BITS) - 1);
	if (jvm_blob_at(&pp->jf, py_read_pid, (void *)(long)pp->pid, pc, &b)) {
		pr_debug("java: pid %u: no blob at %#llx", pp->pid, (unsigned long long)pc);
		return 0;
	}
	if (!b.nmethod || ((__u32)b.compile_id & ((1u << SP_HS_ID_BITS) - 1)) != id || !b.method) {
		pr_debug("java: pid %u: %#llx in %s, compile id %d (%u wanted)", pp->pid, (unsigned long long)pc, b.name,
			 b.compile_id, id);
		p->java_stubs += !b.nmethod;
		return 0;
	}
	n = jvm_pc_scopes(&pp->jf, py_read_pid, (void *)(long)pp->pid, &b, pc, sc, JVM_MAX_SCOPES);
	p->mem_reads += 24;
	if (n < 1) {
		if (n == -EBADMSG)
			p->java_scopes_bad++;
		else
			p->java_no_scopes++;
		pr_debug("java: pid %u: no scopes at %#llx of compile %d: %s", pp->pid, (unsigned long long)pc,
			 b.compile_id, strerror(-n));
		/* A read that failed may not fail at the next sight: that answer is not kept. */
		keep = n != -EFAULT;
		sc[0] = (struct jvm_scope){ b.method, JVM_BCI_NONE };
		n = 1;
	}
	if (array_reserve((void **)&pp->scopes, &pp->cap_scopes, pp->nr_scopes + n - 1, sizeof(*pp->scopes)) ||
	    array_reserve((void **)&pp->pins, &pp->cap_pins, pp->nr_scopes + n - 1, sizeof(*pp->pins)))
		return 0;
	*first = pp->nr_scopes;
	memcpy(pp->scopes + pp->nr_scopes, sc, n * sizeof(*sc));
	memset(pp->pins + pp->nr_scopes, 0, n * sizeof(*pp->pins));
	/* Kept while there is room; past it, these scopes serve this sight only (overwritten at the next). */
	if (keep && pp->nr_sites < SITES_MAX && (i = u64_map_get(&pp->by_site, key, true)) &&
	    !array_reserve((void **)&pp->sites, &pp->cap_sites, pp->nr_sites, sizeof(*pp->sites))) {
		pp->sites[pp->nr_sites] = (struct pf_site){ (__u32)pp->nr_scopes, (__u32)n };
		*i = ++pp->nr_sites;
		pp->nr_scopes += n;
		*kept = true;
	}
	return n;
}

/*
 * The slot of a Java frame's method m (index in pp->codes + 1, 0: none),
 * a kept scope's from its pin (set at its first naming).  0, or an error
 * to end the rewrite with.
 */
static int frame_slot(struct py_frames *p, struct pf_proc *pp, __u64 m, __u32 *pin, __u64 t, py_write_fn fn,
		      void *ctx, __u32 *out)
{
	struct pf_code *pc;
	int e;

	if (pin && *pin) {
		*out = *pin;
		return 0;
	}
	pc = method_slot(p, pp, m, t, fn, ctx, &e);
	*out = pc ? (__u32)(pc - pp->codes) + 1 : 0;
	if (pin)
		*pin = *out;
	return e;
}

/* Entries a chain's user part may hold: perf's PERF_MAX_STACK_DEPTH, as the walk's. */
#define USER_MAX SP_EH_MAX_FRAMES

/*
 * A Java entry of pp into ips[*k...]: its frames' addresses, innermost
 * first (a compiled frame's inlined methods each a frame of its own).
 * *user: entries of the chain's user part so far.  0, or an error to end
 * the rewrite with (a dropped frame is no error).
 */
static int java_entry(struct py_frames *p, struct pf_proc *pp, __u64 v, __u64 t, __u64 *ips, __u32 *k, __u32 cap,
		      __u32 *user, py_write_fn fn, void *ctx)
{
	struct jvm_scope one, *sc = &one;
	/* Indexes, not pointers: naming a method may move pp->codes. */
	__u32 slot[JVM_MAX_SCOPES], *pin = NULL;
	size_t first = 0;
	bool kept;
	__u32 n;
	int e = 0;

	if (v & SP_HS_INTERP) {
		__u32 bci1 = (v >> SP_HS_BCI_SHIFT) & ((1u << SP_HS_BCI_BITS) - 1);

		one = (struct jvm_scope){ (v & ((1ull << SP_HS_METHOD_BITS) - 1)) << 3, bci1 ? (__s32)bci1 - 1 : JVM_BCI_NONE };
		n = 1;
	} else {
		n = java_site(p, pp, v, &first, &kept);
		sc = pp->scopes + first;
		pin = kept ? pp->pins + first : NULL;
	}
	if (!n) {
		p->dropped++;
		return 0;
	}
	/* No room for the inlined frames: the nmethod's own, at its call site, as before they were read. */
	if (n > 1 && (*k + n > cap || *user + n > USER_MAX)) {
		sc += n - 1;
		pin = pin ? pin + n - 1 : NULL;
		n = 1;
		p->java_no_room++;
	}
	for (__u32 i = 0; i < n; i++) {
		e = frame_slot(p, pp, sc[i].method, pin ? pin + i : NULL, t, fn, ctx, &slot[i]);
		if (e)
			return e;
		if (!slot[i] && n > 1) {
			/* An inlined method not named: the frame as before, its own method alone. */
			p->java_scopes_bad++;
			sc += n - 1;
			pin = pin ? pin + n - 1 : NULL;
			slot[0] = 0;
			if (i != n - 1 && (e = frame_slot(p, pp, sc[0].method, pin, t, fn, ctx, &slot[0])))
				return e;
			n = 1;
			break;
		}
	}
	if (!slot[0] || *k >= cap || *user >= USER_MAX) {
		p->dropped++;
		return 0;
	}
	for (__u32 i = 0; i < n; i++) {
		const struct pf_code *c = &pp->codes[slot[i] - 1];

		ips[(*k)++] = py_frame_addr(pp->base + c->off, c->ncodeunits, sc[i].bci);
	}
	*user += n;
	p->java_inlined += n - 1;
	return 0;
}

int py_frames__rewrite(struct py_frames *p, __u32 pid, __u32 tid, __u64 t, __u64 *ips, __u32 *n, __u32 cap,
		       py_write_fn fn, void *ctx)
{
	struct pf_proc *pp = NULL;
	__u32 k = 0, user = 0, nr = *n;
	const __u64 *in;
	int e = 0;

	/* A compiled Java frame may become several: the chain is read from a copy as it grows in place. */
	if (cap < nr)
		cap = nr;
	if (array_reserve((void **)&p->in, &p->cap_in, nr ? nr - 1 : 0, sizeof(*p->in)))
		return -ENOMEM;
	memcpy(p->in, ips, nr * sizeof(*ips));
	in = p->in;
	for (__u32 j = 0; j < nr; j++) {
		__u64 v = in[j], code;
		struct pf_code *pc;
		__u32 idx1;
		__s64 idx;

		if ((v & SP_PY_TAG_MASK) != SP_PY_TAG && (v & SP_PY_TAG_MASK) != SP_HS_TAG) {
			user = v >= PD_CONTEXT_MAX ? 0 : user + 1;
			if (k < cap)
				ips[k++] = v;
			continue;
		}
		if (!pp)
			pp = proc_for(p, pid);
		if (!pp || pp->no_region) {
			p->dropped++;
			continue;
		}
		if (!pp->announced) {
			e = announce(p, pp, tid, t, fn, ctx);
			if (e)
				return e;
			if (pp->no_region) {
				p->dropped++;
				continue;
			}
		}
		if ((v & SP_PY_TAG_MASK) == SP_HS_TAG) {
			if (!pp->jvm) {
				p->dropped++;
				continue;
			}
			e = java_entry(p, pp, v, t, ips, &k, cap, &user, fn, ctx);
			if (e)
				return e;
			continue;
		}
		if (pp->jvm) {
			p->dropped++;
			continue;
		}
		code = (v & ((1ull << SP_PY_CODE_BITS) - 1)) << 3;
		idx1 = (v >> SP_PY_IDX_SHIFT) & ((1u << SP_PY_IDX_BITS) - 1);
		pc = code_slot(p, pp, code, tid, t, fn, ctx, &e);
		if (e)
			return e;
		if (!pc || k >= cap) {
			p->dropped++;
			continue;
		}
		/* idx1: the instruction's index plus one (0: not started); out of range: the slot's no-line unit. */
		idx = idx1 == SP_PY_IDX_UNKNOWN ? -2 : (__s64)idx1 - 1;
		ips[k++] = py_frame_addr(pp->base + pc->off, pc->ncodeunits, idx);
		user++;
	}
	*n = k;
	return 0;
}

int py_frames__end_file(struct py_frames *p, bool next)
{
	char err[512] = "";
	int e = 0;

	if (!p)
		return 0;
	for (int rt = 0; rt < PY_ELF_RUNTIMES; rt++) {
		int ce = p->elf[rt] ? py_elf__commit(p->elf[rt], err, sizeof(err)) : 0;

		if (ce) {
			pr_warn("%s: perf will not name this file's %s frames", err[0] ? err : strerror(-ce),
				runtime_word(rt));
			e = e ?: ce;
		}
		py_elf__free(p->elf[rt]);
		p->elf[rt] = NULL;
		p->elf_failed[rt] = false;
	}
	if (!next)
		return e;
	/* Each file reads on its own: its regions, symbols and names anew. */
	for (size_t i = 0; i < p->nr_procs; i++) {
		struct pf_proc *pp = &p->procs[i];

		pp->announced = false;
		pp->pgoff = 0;
		pp->next = 0;
		pp->nr_codes = 0;
		u64_map_free(&pp->by_code);
	}
	return e;
}

void py_frames__prune(struct py_frames *p)
{
	if (p && p->o.output)
		py_elf_prune(p->o.output);
}

void py_frames__report(const struct py_frames *p)
{
	if (!p)
		return;
	if (p->moved)
		fprintf(stderr, "python names: %llu regions moved (a process mapped something where they were)\n",
			(unsigned long long)p->moved);
	fprintf(stderr, "python names: %llu code objects named (%llu again after their address was reused), %llu records; %llu frames dropped: %llu not code objects, %llu unreadable, %llu of processes gone, %llu regions full; %llu qualified-name scans; %llu reads, %.1f KB\n",
		(unsigned long long)p->named, (unsigned long long)p->renamed, (unsigned long long)p->records,
		(unsigned long long)p->dropped, (unsigned long long)p->not_code, (unsigned long long)p->unreadable,
		(unsigned long long)p->gone, (unsigned long long)p->full, (unsigned long long)p->qualscans,
		(unsigned long long)p->mem_reads, p->mem_bytes / 1e3);
	if (p->java_named || p->java_stubs)
		fprintf(stderr, "java names: %llu methods named; %llu frames of stubs dropped; %llu inlined frames shown; compiled frames left uninlined: %llu scopes out of range, %llu without scopes, %llu for room\n",
			(unsigned long long)p->java_named, (unsigned long long)p->java_stubs,
			(unsigned long long)p->java_inlined, (unsigned long long)p->java_scopes_bad,
			(unsigned long long)p->java_no_scopes, (unsigned long long)p->java_no_room);
}
