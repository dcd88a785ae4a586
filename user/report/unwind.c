// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <dwarf.h>
#include <gelf.h>
#include <elfutils/libdwfl.h>
#include <asm/perf_regs.h>
#include <linux/perf_event.h>

#include "buildid.h"
#include "debuginfo.h"
#include "elf_budget.h"
#include "elf_syms.h"
#include "fileio.h"
#include "hash.h"
#include "host.h"
#include "unwind.h"
#include "util.h"

/* x86-64's DWARF registers 0..16 (rip last) as perf_event numbers them. */
static const int dwarf_to_perf[] = {
	PERF_REG_X86_AX, PERF_REG_X86_DX, PERF_REG_X86_CX, PERF_REG_X86_BX, PERF_REG_X86_SI,
	PERF_REG_X86_DI, PERF_REG_X86_BP, PERF_REG_X86_SP, PERF_REG_X86_R8, PERF_REG_X86_R9,
	PERF_REG_X86_R10, PERF_REG_X86_R11, PERF_REG_X86_R12, PERF_REG_X86_R13, PERF_REG_X86_R14,
	PERF_REG_X86_R15, PERF_REG_X86_IP,
};
#define NR_DWARF_REGS (int)(sizeof(dwarf_to_perf) / sizeof(dwarf_to_perf[0]))

/*
 * Per dso and file address, whether there is CFI for it: hot loops return
 * to few addresses, and a miss in .eh_frame would load the debug file's
 * .debug_frame (decompressing it) once in every process.
 */
#define CFI_CACHE 1024

/* What a dso's file says, checked once per report. */
struct udso {
	int state; /* 0: not looked at; 1: usable; -1: not (gone, changed, not x86-64) */
	char *file; /* what is read: the recorded path, or record's copy by build id; NULL for [vdso] */
	struct { __u64 addr; int ok; } *cfi; /* CFI_CACHE slots, on first use */
	struct { __u64 off, vaddr, filesz; } seg[16];
	int nr_segs;
};

/* One address space: a Dwfl whose modules are its maps, reported on first use. */
struct uproc {
	__u32 pid;
	__u64 epoch;
	Dwfl *dwfl;
	bool attached, broken;
	__u64 used; /* when last unwound, for ending the least recently used Dwfl */
	struct unwinder *u;
	/* The sample being unwound. */
	const struct unwind_sample *s;
	Dwarf_Word regs[NR_DWARF_REGS];
	__u64 sp;
	unwind_map_fn map;
	void *ctx;
	__u64 *ips;
	int n, max;
	const char *stop; /* the dso where the chain was cut, NULL if it was not */
	const char *why;  /* and why */
	bool short_read;  /* the step from the latest frame wanted memory past the copy */
	__u64 reach;	  /* bytes above SP this unwind read */
};

/* Open Dwfls at most: each holds its modules' files (and descriptors) open. */
#define LIVE_DWFLS 32

/* How many bytes of stack complete unwinds needed, in 64-byte steps up to 64 KiB. */
#define NEED_STEPS 1024

struct unwinder {
	char root[PATH_MAX];
	bool own_vdso; /* the recording's kernel is this one: its [vdso] is ours */
	int vdso_fd;   /* a memfd with this process's vdso image, -1 if none yet */
	char *debug_path; /* for libdw: where build-id and debuglink files are */
	Dwfl_Callbacks cb;
	struct uproc **procs;
	size_t nr_procs, cap_procs;
	struct hindex proc_idx;
	size_t live; /* procs with a Dwfl open */
	struct uproc *open[LIVE_DWFLS]; /* those procs: the eviction scans these, not every process */
	__u64 tick;
	struct udso *dsos; /* by the symbolizer's dso id */
	size_t cap_dsos;
	struct unwind_cut *cuts;
	size_t nr_cuts, cap_cuts;
	struct unwind_stats st;
	__u64 need[NEED_STEPS];
	struct symbolizer *sym; /* of the sample being unwound: record's copies are checked by it */
};

struct unwinder *unwinder__new(const char *root)
{
	struct unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	snprintf(u->root, sizeof(u->root), "%s", root ? root : "");
	u->vdso_fd = -1;
	/* libdw's default list, under the root when there is one. */
	if (asprintf(&u->debug_path, ":.debug:%s/usr/lib/debug", u->root) < 0) {
		free(u);
		return NULL;
	}
	u->cb.find_elf = dwfl_build_id_find_elf;
	/*
	 * A module's separate debug file holds its CFI when the stripped file
	 * kept none (-fno-asynchronous-unwind-tables).  libdw's own debuginfod
	 * hook stays off: the report fetched in parallel, under its deadline,
	 * before unwinding.
	 */
	u->cb.find_debuginfo = u->root[0] ? dwfl_standard_find_debuginfo : debuginfo_dwfl_find;
	u->cb.debuginfo_path = &u->debug_path;
	return u;
}

void unwinder__free(struct unwinder *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->nr_procs; i++) {
		if (u->procs[i]->dwfl)
			dwfl_end(u->procs[i]->dwfl);
		free(u->procs[i]);
	}
	free(u->procs);
	hindex_free(&u->proc_idx);
	for (size_t i = 0; i < u->cap_dsos; i++) {
		free(u->dsos[i].file);
		free(u->dsos[i].cfi);
	}
	free(u->dsos);
	free(u->cuts);
	free(u->debug_path);
	if (u->vdso_fd >= 0)
		close(u->vdso_fd);
	free(u);
}

/*
 * [vdso] has no file: when the recording is of this kernel, this process's
 * own image is the recorded one, copied to a memfd for libdw to read.
 */
static int open_vdso(struct unwinder *u)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	char path[64];
	size_t size;

	if (!u->own_vdso || !base)
		return -ENOENT;
	if (u->vdso_fd < 0) {
		size = host_own_vdso_size(base);
		if (!size)
			return -ENOENT;
		u->vdso_fd = memfd_create("vdso", MFD_CLOEXEC);
		if (u->vdso_fd < 0)
			return -errno;
		if (write_all(u->vdso_fd, (const void *)base, size)) {
			close(u->vdso_fd);
			u->vdso_fd = -1;
			return -EIO;
		}
	}
	/* Its own file description: libdw closes what it is given. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", u->vdso_fd);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/*
 * The file whose CFI is the recorded one, as the symbolizer finds it: the
 * path if its build id still matches, else the copy record kept by build
 * id (a container's file, or one changed since); never a changed file.
 */
static char *resolve_file(struct unwinder *u, const struct sym_map *m)
{
	char file[PATH_MAX * 2], hex[2 * BUILD_ID_MAX + 1];
	__u8 id[BUILD_ID_MAX], size;

	if (m->path[0] != '/')
		return NULL; /* //anon, JIT maps: no file to read CFI from */
	snprintf(file, sizeof(file), "%s%s", u->root, m->path);
	if (!m->build_id[0])
		return strdup(file);
	hex[0] = 0;
	if (!buildid_from_file(file, id, &size))
		buildid_hex(id, size, hex);
	if (!strcmp(hex, m->build_id))
		return strdup(file);
	if (u->sym && !symbolizer__cache_entry(u->sym, m->build_id, file, sizeof(file)))
		return strdup(file);
	return NULL;
}

/* The file a map's CFI is read from; -errno if there is none to trust. */
static int open_map_file(struct unwinder *u, const struct udso *d, const struct sym_map *m)
{
	if (!strcmp(m->path, "[vdso]"))
		return open_vdso(u);
	return d->file ? open_regular(d->file) : -ENOENT;
}

static bool proc_eq(const void *ctx, size_t idx)
{
	const void *const *c = ctx;
	const struct uproc *p = ((const struct unwinder *)c[0])->procs[idx];
	const struct unwind_sample *s = c[1];

	return p->pid == s->pid && p->epoch == s->epoch;
}

/*
 * A Dwfl for p, the least recently used one ended first when LIVE_DWFLS are
 * open: each holds its modules' files open, and a fork-heavy host has
 * thousands of processes against a limit of 1024 descriptors.
 */
static void ensure_dwfl(struct unwinder *u, struct uproc *p)
{
	p->used = ++u->tick;
	if (p->dwfl || p->broken)
		return;
	if (u->live >= LIVE_DWFLS) {
		size_t old = 0;

		for (size_t i = 1; i < u->live; i++)
			if (u->open[i]->used < u->open[old]->used)
				old = i;
		dwfl_end(u->open[old]->dwfl);
		u->open[old]->dwfl = NULL;
		u->open[old]->attached = false;
		u->open[old] = u->open[--u->live];
	}
	p->dwfl = dwfl_begin(&u->cb);
	p->broken = !p->dwfl;
	if (p->dwfl)
		u->open[u->live++] = p;
}

static struct uproc *proc_get(struct unwinder *u, const struct unwind_sample *s)
{
	__u64 h = hash_mix(hash_mix(0, s->pid), s->epoch);
	const void *ctx[2] = { u, s };
	long i = hindex_find(&u->proc_idx, h, proc_eq, ctx);
	struct uproc *p;

	if (i >= 0) {
		ensure_dwfl(u, u->procs[i]);
		return u->procs[i];
	}
	if (array_reserve((void **)&u->procs, &u->cap_procs, u->nr_procs, sizeof(*u->procs)))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = s->pid;
	p->epoch = s->epoch;
	p->u = u;
	if (hindex_add(&u->proc_idx, h, u->nr_procs)) {
		free(p);
		return NULL;
	}
	u->procs[u->nr_procs++] = p;
	ensure_dwfl(u, p);
	return p;
}

/* The file's PT_LOADs, its machine and its build id against the recorded one. */
static void check_dso(struct unwinder *u, struct udso *d, const struct sym_map *m)
{
	struct elf_budget b = { .elf = NULL };
	GElf_Ehdr eh;
	size_t nph;
	Elf *elf;
	int fd;

	d->state = -1;
	d->file = resolve_file(u, m);
	fd = open_map_file(u, d, m);
	if (fd < 0)
		return;
	/* Its headers only; mapped only if no one else may truncate it. */
	elf = elf_budget_begin(&b, fd, true, 0, d->file ? d->file : m->path);
	if (elf && gelf_getehdr(elf, &eh) && eh.e_machine == EM_X86_64 &&
	    eh.e_ident[EI_CLASS] == ELFCLASS64 && !elf_getphdrnum(elf, &nph)) {
		for (size_t i = 0; i < nph && d->nr_segs < (int)(sizeof(d->seg) / sizeof(d->seg[0])); i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
				continue;
			d->seg[d->nr_segs].off = ph.p_offset;
			d->seg[d->nr_segs].vaddr = ph.p_vaddr;
			d->seg[d->nr_segs++].filesz = ph.p_filesz;
		}
		d->state = d->nr_segs ? 1 : -1;
	}
	elf_budget_end(&b);
	close(fd);
}

/*
 * The module under pc, reported on first use: its load bias from the map
 * (the segment that holds the map's file offset), so that layouts where
 * p_vaddr and p_offset differ come out right.
 */
static Dwfl_Module *module_at(struct uproc *p, __u64 pc, const struct sym_map *m)
{
	struct unwinder *u = p->u;
	Dwfl_Module *mod = dwfl_addrmodule(p->dwfl, pc);
	struct udso *d;
	__u64 bias = 0;
	bool found = false;
	int fd;

	if (mod)
		return mod;
	if (m->dso_id < 0)
		return NULL;
	if ((size_t)m->dso_id >= u->cap_dsos) {
		size_t old = u->cap_dsos;

		if (array_reserve((void **)&u->dsos, &u->cap_dsos, m->dso_id, sizeof(*u->dsos)))
			return NULL;
		memset(u->dsos + old, 0, (u->cap_dsos - old) * sizeof(*u->dsos));
	}
	d = &u->dsos[m->dso_id];
	if (!d->state)
		check_dso(u, d, m);
	if (d->state < 0)
		return NULL;
	for (int i = 0; i < d->nr_segs && !found; i++) {
		__u64 lo = d->seg[i].off & ~4095ULL;

		if (m->pgoff >= lo && m->pgoff < d->seg[i].off + d->seg[i].filesz) {
			bias = m->start - (d->seg[i].vaddr - (d->seg[i].off - m->pgoff));
			found = true;
		}
	}
	if (!found)
		return NULL;
	fd = open_map_file(u, d, m);
	if (fd < 0)
		return NULL;
	/* What libdw will read of it, bounded first (elf_budget.h): the descriptor it gets, not the name. */
	if (elf_budget_vet(fd, ELF_BUDGET_DWARF, d->file ? d->file : m->path)) {
		close(fd);
		return NULL;
	}
	/* libdw owns fd from here, and reads the file's CFI once for this process. */
	mod = dwfl_report_elf(p->dwfl, m->path, d->file ? d->file : m->path, fd, bias, true);
	if (!mod)
		return NULL;
	return dwfl_addrmodule(p->dwfl, pc) == mod ? mod : NULL;
}

/*
 * Whether the module has CFI for pc.  Without it libdw would fall back to a
 * frame-pointer guess; a chain here stops instead.
 */
static bool has_cfi(struct uproc *p, Dwfl_Module *mod, int dso_id, __u64 pc)
{
	struct udso *d = dso_id >= 0 && (size_t)dso_id < p->u->cap_dsos ? &p->u->dsos[dso_id] : NULL;
	Dwarf_Frame *fr = NULL;
	Dwarf_Addr bias = 0;
	Dwarf_CFI *cfi = dwfl_module_eh_cfi(mod, &bias);
	__u64 addr = pc - bias;
	unsigned slot = (addr ^ (addr >> 12)) % CFI_CACHE;
	bool ok = false;

	if (d && !d->cfi)
		d->cfi = calloc(CFI_CACHE, sizeof(*d->cfi));
	if (d && d->cfi && d->cfi[slot].addr == addr && d->cfi[slot].ok)
		return d->cfi[slot].ok > 0;
	if (cfi && !dwarf_cfi_addrframe(cfi, addr, &fr))
		ok = true;
	free(fr);
	fr = NULL;
	if (!ok) {
		cfi = dwfl_module_dwarf_cfi(mod, &bias);
		if (cfi && !dwarf_cfi_addrframe(cfi, pc - bias, &fr))
			ok = true;
		free(fr);
	}
	if (d && d->cfi) {
		d->cfi[slot].addr = addr;
		d->cfi[slot].ok = ok ? 1 : -1;
	}
	return ok;
}

static int on_frame(Dwfl_Frame *state, void *arg)
{
	struct uproc *p = arg;
	Dwarf_Addr pc;
	bool activation;
	struct sym_map m;
	Dwfl_Module *mod;
	__u64 lookup;

	if (!dwfl_frame_pc(state, &pc, NULL))
		return DWARF_CB_ABORT;
	p->short_read = false;
	/* A return address is after its call: the call is what is named, as perf does. */
	lookup = p->n && pc ? pc - 1 : pc;
	if (p->map(p->ctx, lookup, &m)) {
		/* Only the sampled IP may lie outside every file (JIT code); it is real. */
		if (!p->n)
			p->ips[p->n++] = pc;
		p->stop = "[unknown]";
		p->why = "no file mapped there";
		return DWARF_CB_ABORT;
	}
	mod = module_at(p, lookup, &m);
	if (!mod || !has_cfi(p, mod, m.dso_id, lookup)) {
		p->ips[p->n++] = lookup;
		p->stop = m.dso;
		p->why = mod ? "no CFI for the address" : "no file to read CFI from, or it changed";
		return DWARF_CB_ABORT;
	}
	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	p->ips[p->n++] = activation ? pc : pc - 1;
	if (p->n == p->max) {
		p->stop = m.dso;
		p->why = "as many frames as asked for";
		return DWARF_CB_ABORT;
	}
	return DWARF_CB_OK;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *dwfl_arg, void **thread_argp)
{
	(void)dwfl;
	(void)tid;
	*thread_argp = dwfl_arg;
	return true;
}

static pid_t next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp)
{
	struct uproc *p = dwfl_arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = p;
	return p->pid ? p->pid : 1;
}

/* Served from the stack copy alone: the live system is not the recorded one. */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *dwfl_arg)
{
	struct uproc *p = dwfl_arg;
	__u64 size = p->s->stack_size;

	(void)dwfl;
	if (addr < p->sp || size < sizeof(*result) || addr - p->sp > size - sizeof(*result)) {
		p->short_read = true;
		return false;
	}
	memcpy(result, (const char *)p->s->stack + (addr - p->sp), sizeof(*result));
	if (addr - p->sp + sizeof(*result) > p->reach)
		p->reach = addr - p->sp + sizeof(*result);
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	struct uproc *p = thread_arg;

	dwfl_thread_state_register_pc(thread, p->regs[NR_DWARF_REGS - 1]);
	return dwfl_thread_state_registers(thread, 0, NR_DWARF_REGS, p->regs);
}

static const Dwfl_Thread_Callbacks thread_cbs = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

/* The registers in DWARF order; false if the sample lacks one or is not x86-64's. */
static bool load_regs(struct uproc *p, const struct unwind_sample *s)
{
	if (s->abi != PERF_SAMPLE_REGS_ABI_64 || !s->regs)
		return false;
	for (int i = 0; i < NR_DWARF_REGS; i++) {
		int r = dwarf_to_perf[i];

		if (!(s->regs_mask & (1ULL << r)))
			return false;
		p->regs[i] = s->regs[__builtin_popcountll(s->regs_mask & ((1ULL << r) - 1))];
	}
	p->sp = p->regs[7];
	return true;
}

static void count_cut(struct unwinder *u, const char *dso, const char *why)
{
	size_t i;

	u->st.cut++;
	for (i = 0; i < u->nr_cuts && (strcmp(u->cuts[i].dso, dso) || u->cuts[i].reason != why); i++)
		;
	if (i == u->nr_cuts) {
		if (array_reserve((void **)&u->cuts, &u->cap_cuts, u->nr_cuts, sizeof(*u->cuts)))
			return;
		u->cuts[u->nr_cuts++] = (struct unwind_cut){ dso, why, 0 };
	}
	u->cuts[i].count++;
}

static __u64 unwind_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

int unwinder__unwind(struct unwinder *u, const struct unwind_sample *s, unwind_map_fn map, void *ctx,
		     __u64 *ips, int max)
{
	__u64 t0 = unwind_now_ns();
	struct uproc *p;
	struct sym_map m;
	int r;

	if (max <= 0 || !s->regs)
		return 0;
	u->st.samples++;
	p = proc_get(u, s);
	if (!p || p->broken) {
		count_cut(u, "[unknown]", "libdw could not start");
		return 0;
	}
	p->s = s;
	p->map = map;
	p->ctx = ctx;
	p->ips = ips;
	p->n = 0;
	p->max = max;
	p->stop = NULL;
	p->why = NULL;
	p->short_read = false;
	p->reach = 0;
	if (!load_regs(p, s)) {
		count_cut(u, "[unknown]", "registers of another ABI");
		return 0;
	}
	/* libdw learns the architecture from the first module: report it before attaching. */
	if (!p->attached) {
		if (map(ctx, p->regs[NR_DWARF_REGS - 1], &m) ||
		    !module_at(p, p->regs[NR_DWARF_REGS - 1], &m)) {
			ips[0] = p->regs[NR_DWARF_REGS - 1];
			count_cut(u, map(ctx, ips[0], &m) ? "[unknown]" : m.dso,
				  map(ctx, ips[0], &m) ? "no file mapped there" : "no file to read CFI from, or it changed");
			u->st.frames++;
			return 1;
		}
		if (!dwfl_attach_state(p->dwfl, NULL, p->pid ? p->pid : 1, &thread_cbs, p)) {
			p->broken = true;
			count_cut(u, "[unknown]", "libdw could not start");
			return 0;
		}
		p->attached = true;
	}
	r = dwfl_getthread_frames(p->dwfl, p->pid ? p->pid : 1, on_frame, p);
	/*
	 * libdw ends a chain quietly where a return address cannot be read:
	 * past the stack copy, that is a cut, not the outermost frame.
	 */
	if (!p->stop && (r || p->short_read)) {
		/* libdw could not go on from the last frame: name its dso. */
		p->stop = "[unknown]";
		p->why = p->short_read ? "the stack copy ends" : "libdw could not step";
		if (p->n && !map(ctx, ips[p->n - 1], &m))
			p->stop = m.dso;
	}
	if (p->stop) {
		count_cut(u, p->stop, p->why);
	} else {
		u->st.complete++;
		u->need[(p->reach + 63) / 64 < NEED_STEPS ? (p->reach + 63) / 64 : NEED_STEPS - 1]++;
	}
	u->st.frames += p->n;
	u->st.ns += unwind_now_ns() - t0;
	return p->n;
}

static int cmp_cut(const void *a, const void *b)
{
	const struct unwind_cut *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->dso, y->dso) ?: strcmp(x->reason, y->reason);
}

void unwinder__stats(struct unwinder *u, struct unwind_stats *out)
{
	__u64 seen = 0;

	sort_n(u->cuts, u->nr_cuts, sizeof(*u->cuts), cmp_cut);
	u->st.need_p50 = u->st.need_p99 = u->st.need_max = 0;
	for (int i = 0; i < NEED_STEPS; i++) {
		if (!u->need[i])
			continue;
		seen += u->need[i];
		u->st.need_max = i * 64;
		if (!u->st.need_p50 && seen * 2 >= u->st.complete)
			u->st.need_p50 = i * 64;
		if (!u->st.need_p99 && seen * 100 >= u->st.complete * 99)
			u->st.need_p99 = i * 64;
	}
	*out = u->st;
	out->cuts = u->cuts;
	out->nr_cuts = u->nr_cuts;
}

static bool is_dwarf_attr(const struct perf_event_attr *a)
{
	__u64 need = PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;

	return (a->sample_type & need) == need &&
	       (!(a->sample_type & PERF_SAMPLE_CALLCHAIN) || a->exclude_callchain_user);
}

int unwinder__for_file(const struct pd_reader *rd, const char *root, struct unwinder **out)
{
	struct utsname un;
	bool any = false;

	*out = NULL;
	for (int i = 0; i < rd->nr_attrs && !any; i++)
		any = is_dwarf_attr(&rd->attrs[i].attr);
	/* Registers of another architecture mean nothing to this one's unwinder. */
	if (!any || (rd->meta.arch && strcmp(rd->meta.arch, "x86_64")))
		return 0;
	*out = unwinder__new(root);
	if (!*out)
		return -ENOMEM;
	(*out)->own_vdso = (!root || !root[0]) && rd->meta.osrelease && !uname(&un) &&
			   !strcmp(un.release, rd->meta.osrelease);
	return 0;
}

struct map_ctx {
	struct symbolizer *sym;
	__s32 pid;
	__u64 t;
};

static int map_of(void *ctx, __u64 ip, struct sym_map *out)
{
	struct map_ctx *c = ctx;

	return symbolizer__map(c->sym, c->pid, ip, c->t, out);
}

int unwinder__sample(struct unwinder *u, struct symbolizer *sym, const struct pd_event *ev, __u64 *ips, int max)
{
	const struct pd_sample *s = &ev->sample;
	struct map_ctx c = { sym, s->pid, s->time };
	struct unwind_sample us;

	u->sym = sym;
	if (!ev->attr || !is_dwarf_attr(&ev->attr->attr) || !s->regs_user || !s->stack_user_size)
		return 0;
	us = (struct unwind_sample){
		.pid = s->pid,
		.epoch = symbolizer__epoch(sym, s->pid, s->time),
		.abi = s->regs_user_abi,
		.regs_mask = ev->attr->attr.sample_regs_user,
		.regs = s->regs_user,
		.stack = s->stack_user,
		/* The kernel copies what it can and says how much in dyn_size. */
		.stack_size = s->stack_user_dyn_size < s->stack_user_size ? s->stack_user_dyn_size
									  : s->stack_user_size,
	};
	return unwinder__unwind(u, &us, map_of, &c, ips, max);
}

void unwinder__print_stats(struct unwinder *u, FILE *out)
{
	struct unwind_stats st;

	if (!u)
		return;
	unwinder__stats(u, &st);
	fprintf(out, "dwarf unwind: %llu user stacks, %llu complete, %llu cut short; %llu frames, %.1f us a stack\n",
		(unsigned long long)st.samples, (unsigned long long)st.complete, (unsigned long long)st.cut,
		(unsigned long long)st.frames, st.samples ? st.ns / 1e3 / st.samples : 0.0);
	if (st.complete)
		fprintf(out, "  complete chains read up to %llu bytes of the stack copy (half of them), %llu (99%%), "
			"%llu (all)\n", (unsigned long long)st.need_p50, (unsigned long long)st.need_p99,
			(unsigned long long)st.need_max);
	for (size_t i = 0; i < st.nr_cuts; i++)
		fprintf(out, "  cut short in %s (%s): %llu\n", st.cuts[i].dso, st.cuts[i].reason,
			(unsigned long long)st.cuts[i].count);
}
