// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>

#include "buildid.h"
#include "fileio.h"
#include "glibc_tsd.h"
#include "hash.h"
#include "jvmfacts.h"
#include "log.h"
#include "memread.h"
#include "proc_file.h"
#include "procmaps.h"
#include "pyprocs.h"
#include "sideband.h"
#include "util.h"

/* One process's runtime as the walk reads it. */
struct py_proc {
	__u32 pid;
	__u32 gen;	/* never the same twice: what the rewrite's caches are kept under */
	bool live;
	bool jvm;	/* a HotSpot JVM (jf, in hs_procs), not a CPython (f, in py_procs) */
	__u64 since;	/* when its map entry was written: no sample walked by it is older */
	struct py_facts f;
	struct jvm_facts jf;
	struct sp_hs_proc hs;
};

/* A libjvm seen in a mapping: its symbols, read once per file. */
struct jvm_file {
	__u64 dev, ino;
	int err;
	struct jvm_binary elf;
};

/* A file seen in a mapping: whether it holds a runtime, and what it says. */
struct py_file {
	__u64 dev, ino;
	int err;	/* py_binary_read's: 0, or why not */
	struct py_binary elf;
};

/* A libc seen: its key data's layout, if it can be told. */
struct py_libc {
	__u64 dev, ino;
	int err;
	struct glibc_tsd tsd;
};

/* A process to read again: its runtime was not set up yet, or a mapping of python's came. */
/*
 * What a try that found a runtime not set up yet learnt: its file and
 * where it lies, so that the next tries read the facts again without
 * walking every file mapping of the process first.  A program that links
 * libpython and never starts it (perf, for perf script's Python) was
 * tried 24 times in its first seconds, each try a PROCMAP_QUERY per file
 * mapping (141 for perf): a recorder started under perf record did 16
 * such tries of perf in -d 4; a JVM is tried while it starts, with
 * hundreds of file mappings.  Used only while the process has not
 * exec'd (its start_stack); a new mapping of a runtime's name forgets it.
 */
struct py_hint {
	__u64 ss, bias;
	__s32 file; /* index in files (jfiles for a JVM); -1: nothing learnt */
	bool jvm;
};

struct py_pending {
	__u32 pid, tries;
	__u64 due;
	struct py_hint hint;
};

struct py_procs {
	int procs_fd;
	int hs_fd;		/* the JVMs' map; -1: JVMs are not followed */
	struct jvm_file *jfiles;
	size_t nr_jfiles, cap_jfiles;
	__u32 max;
	struct py_proc *v;
	size_t n, cap;
	struct u64_map by_pid; /* pid -> index in v + 1 (0: none) */
	__u32 gen;
	struct py_file *files;
	size_t nr_files, cap_files;
	struct py_libc *libcs;
	size_t nr_libcs, cap_libcs;
	struct py_pending *pending;
	size_t nr_pending, cap_pending;
	__u32 *noted; /* py_procs__note_code's, until py_procs__scan_noted */
	size_t nr_noted, cap_noted;
	struct glibc_tsd host;	/* this machine's glibc, measured */
	bool host_ok, decode_ok; /* the measure worked; the decoder agrees with it on this machine's libc */
	__u8 host_id[BUILD_ID_MAX], host_id_size;
	bool force_list;	/* SPANPERF_PY_TSTATE=list: the thread list for every process (tests) */
	struct py_procs_stats st;
};

/*
 * A runtime is set up within tens of ms of its libpython's mapping; one
 * that is not after this many reads (about 3 s) never will be (a program
 * that links libpython and does not start it).
 */
#define MAX_TRIES 24
#define FIRST_RETRY_NS 2000000ull
#define MAX_RETRY_NS 500000000ull

static __u64 mono_ns(void)
{
	return now_ns(CLOCK_MONOTONIC);
}

/* A mapping's device as one number, to key files by. */
static __u64 dev_of(const struct procmap *m)
{
	return (__u64)m->maj << 32 | m->min;
}

/*
 * This machine's libc, as mapped here: its build id tells a container's
 * copy of the same, and the decoder is trusted with other libcs only if it
 * reads this one as the experiment measured.
 */
static void host_libc(struct py_procs *p)
{
	char line[PATH_MAX + 128];
	struct procmap m;
	FILE *f = fopen("/proc/self/maps", "re");

	while (f && fgets(line, sizeof(line), f)) {
		const char *base;

		if (procmaps_parse_line(line, &m) || !(m.prot & PROT_EXEC) || m.path[0] != '/')
			continue;
		base = strrchr(m.path, '/') + 1;
		if (!strncmp(base, "libc.so", 7) || !strncmp(base, "libc-2.", 7)) {
			struct glibc_tsd d;
			int fd = open_regular(m.path);

			if (buildid_from_file(m.path, p->host_id, &p->host_id_size))
				p->host_id_size = 0;
			p->decode_ok = p->host_ok && fd >= 0 && !glibc_tsd_decode(fd, &d) && d.first == p->host.first &&
				       (!d.second || d.second == p->host.second);
			if (fd >= 0)
				close(fd);
			break;
		}
	}
	if (f)
		fclose(f);
}

int py_procs__new(struct py_procs **out, int procs_fd, int hs_fd, __u32 max)
{
	struct py_procs *p = calloc(1, sizeof(*p));
	const char *force = getenv("SPANPERF_PY_TSTATE");

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->procs_fd = procs_fd;
	p->hs_fd = hs_fd;
	p->max = max;
	p->force_list = force && !strcmp(force, "list");
	p->host_ok = !glibc_tsd_calibrate(&p->host);
	if (!p->host_ok)
		pr_debug("python: glibc's key data not found at the thread pointer here: thread states from the thread lists");
	host_libc(p);
	*out = p;
	return 0;
}

void py_procs__free(struct py_procs *p)
{
	if (!p)
		return;
	free(p->v);
	free(p->files);
	free(p->jfiles);
	free(p->libcs);
	free(p->pending);
	free(p->noted);
	u64_map_free(&p->by_pid);
	free(p);
}

static struct py_proc *proc_of(const struct py_procs *p, __u32 pid)
{
	uint64_t *i = u64_map_get((struct u64_map *)&p->by_pid, pid, false);

	return i && *i && p->v[*i - 1].live ? &p->v[*i - 1] : NULL;
}

/* pid's slot, live or not, made if need be; NULL for want of memory. */
static struct py_proc *slot_of(struct py_procs *p, __u32 pid)
{
	uint64_t *i = u64_map_get(&p->by_pid, pid, true);

	if (!i)
		return NULL;
	if (!*i) {
		if (array_reserve((void **)&p->v, &p->cap, p->n, sizeof(*p->v)))
			return NULL;
		p->v[p->n] = (struct py_proc){ .pid = pid };
		*i = ++p->n;
	}
	return &p->v[*i - 1];
}

/* pid's entries in the maps BPF reads, whatever this side knows of it (ENOENT mostly). */
static void drop_entries(struct py_procs *p, __u32 pid)
{
	bpf_map_delete_elem(p->procs_fd, &pid);
	if (p->hs_fd >= 0)
		bpf_map_delete_elem(p->hs_fd, &pid);
}

static void forget(struct py_procs *p, __u32 pid)
{
	struct py_proc *pp = proc_of(p, pid);

	if (!pp)
		return;
	pp->live = false;
	bpf_map_delete_elem(pp->jvm ? p->hs_fd : p->procs_fd, &pid);
}

/* Whether a mapped file's name is one a CPython runtime comes in: python3.11, libpython3.12.so.1.0, ... */
static bool python_name(const char *path)
{
	const char *base = strrchr(path, '/');

	return base && strcasestr(base + 1, "python");
}

/* Whether a mapped file is HotSpot's libjvm.so. */
static bool jvm_name(const char *path)
{
	const char *base = strrchr(path, '/');

	return base && !strcmp(base + 1, "libjvm.so");
}

static bool libc_name(const char *path, bool *pthread)
{
	const char *base = strrchr(path, '/');

	if (!base)
		return false;
	base++;
	*pthread = !strncmp(base, "libpthread", 10);
	return *pthread || !strncmp(base, "libc.so", 7) || !strncmp(base, "libc-2.", 7);
}

/* pid to be read at due (or sooner, if it is already waiting), after `tries` reads. */
/* hint NULL: nothing learnt, and whatever was learnt before is forgotten (a new mapping to look at). */
static void schedule(struct py_procs *p, __u32 pid, __u64 due, __u32 tries, const struct py_hint *hint)
{
	struct py_hint none = { .file = -1 };

	for (size_t i = 0; i < p->nr_pending; i++)
		if (p->pending[i].pid == pid) {
			if (due < p->pending[i].due)
				p->pending[i].due = due;
			p->pending[i].hint = hint ? *hint : none;
			return;
		}
	if (array_reserve((void **)&p->pending, &p->cap_pending, p->nr_pending, sizeof(*p->pending)))
		return;
	p->pending[p->nr_pending++] = (struct py_pending){ .pid = pid, .due = due, .tries = tries,
							   .hint = hint ? *hint : none };
}

/* The runtime file of a mapping: read once per file (device, inode). */
static struct py_file *file_of(struct py_procs *p, __u32 pid, const struct procmap *m)
{
	struct py_file *f;
	int fd;

	for (size_t i = 0; i < p->nr_files; i++)
		if (p->files[i].ino == m->ino && p->files[i].dev == dev_of(m))
			return &p->files[i];
	fd = proc_open_mapped(pid, m->start, m->end, m->path);
	if (fd < 0)
		return NULL; /* not remembered: another mapping of it may be readable */
	if (array_reserve((void **)&p->files, &p->cap_files, p->nr_files, sizeof(*p->files))) {
		close(fd);
		return NULL;
	}
	f = &p->files[p->nr_files++];
	*f = (struct py_file){ .dev = dev_of(m), .ino = m->ino };
	f->err = py_binary_read(fd, &f->elf);
	close(fd);
	return f;
}

/*
 * A process's libc's key data layout: this machine's own measure for the
 * same build (a container's copy too), else what its pthread_getspecific
 * says, where the decoder reads this machine's libc as the measure does.
 */
static int libc_tsd(struct py_procs *p, __u32 pid, const struct procmap *m, struct glibc_tsd *out)
{
	__u8 id[BUILD_ID_MAX], size = 0;
	struct py_libc *l = NULL;
	int fd;

	for (size_t i = 0; i < p->nr_libcs; i++)
		if (p->libcs[i].ino == m->ino && p->libcs[i].dev == dev_of(m))
			l = &p->libcs[i];
	if (!l) {
		fd = proc_open_mapped(pid, m->start, m->end, m->path);
		if (fd < 0)
			return fd;
		if (array_reserve((void **)&p->libcs, &p->cap_libcs, p->nr_libcs, sizeof(*p->libcs))) {
			close(fd);
			return -ENOMEM;
		}
		l = &p->libcs[p->nr_libcs++];
		*l = (struct py_libc){ .dev = dev_of(m), .ino = m->ino, .err = -ENOENT };
		if (p->host_ok && p->host_id_size && !buildid_from_fd(fd, id, &size) && size == p->host_id_size &&
		    !memcmp(id, p->host_id, size)) {
			l->tsd = p->host;
			l->err = 0;
		} else if (p->host_ok && p->decode_ok) {
			l->err = glibc_tsd_decode(fd, &l->tsd);
		}
		close(fd);
	}
	*out = l->tsd;
	return l->err;
}

/* The libjvm of a mapping: read once per file (device, inode). */
static struct jvm_file *jfile_of(struct py_procs *p, __u32 pid, const struct procmap *m)
{
	struct jvm_file *f;
	int fd;

	for (size_t i = 0; i < p->nr_jfiles; i++)
		if (p->jfiles[i].ino == m->ino && p->jfiles[i].dev == dev_of(m))
			return &p->jfiles[i];
	fd = proc_open_mapped(pid, m->start, m->end, m->path);
	if (fd < 0)
		return NULL;
	if (array_reserve((void **)&p->jfiles, &p->cap_jfiles, p->nr_jfiles, sizeof(*p->jfiles))) {
		close(fd);
		return NULL;
	}
	f = &p->jfiles[p->nr_jfiles++];
	*f = (struct jvm_file){ .dev = dev_of(m), .ino = m->ino };
	f->err = jvm_binary_read(fd, &f->elf);
	close(fd);
	return f;
}

/* What the walk in BPF needs of a JVM (bpf/hotspot.bpf.h), from its facts. */
static int hs_proc_of(const struct jvm_facts *f, __u64 ss, struct sp_hs_proc *out)
{
	const struct jvm_offsets *o = &f->o;
	bool off = o->cb_code_offset != JVM_NONE && o->cb_data_offset != JVM_NONE;
	__u32 used[] = { o->cb_name, o->cb_size, o->cb_frame_size, o->cb_frame_complete, o->nm_compile_id,
			 off ? o->cb_code_offset : o->cb_code_begin, off ? o->cb_data_offset : o->cb_code_end };
	__u32 len = 0, vep;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < ARRAY_SIZE(used); i++) {
		if (used[i] == JVM_NONE)
			return -EBADMSG;
		if (used[i] + 8 > len)
			len = used[i] + 8;
	}
	if (len > SP_HS_HDR_MAX || o->cmethod_size > 64 || o->cmethod_code_size + 2 > o->cmethod_size ||
	    o->method_constmethod > 4096)
		return -EBADMSG;
	out->start_stack = ss;
	out->cc_lo = f->cc_low;
	out->cc_hi = f->cc_high;
	out->interp_lo = f->interp_lo;
	out->interp_hi = f->interp_hi;
	out->ret_lo = f->ret_entry_lo;
	out->ret_hi = f->ret_entry_hi;
	out->call_stub_ret = f->call_stub_ret;
	out->lib_lo = f->lib_lo;
	out->lib_hi = f->lib_hi;
	for (__u32 i = 0; i < f->nr_heaps && i < SP_HS_HEAPS; i++) {
		/* The reservation, not the committed part: a heap commits more as it grows. */
		out->heap[i] = (struct sp_hs_heap){ .lo = f->heap[i].low, .hi = f->heap[i].high_boundary,
						    .segmap = f->heap[i].segmap, .log2 = f->heap[i].log2_seg };
	}
	out->nr_heaps = f->nr_heaps < SP_HS_HEAPS ? f->nr_heaps : SP_HS_HEAPS;
	out->hb_size = o->heapblock_size;
	out->hdr_len = len;
	out->cb_name = o->cb_name;
	out->cb_size = o->cb_size;
	out->cb_frame_size = o->cb_frame_size;
	out->cb_frame_complete = o->cb_frame_complete;
	out->code_off = off;
	out->cb_code_begin = off ? o->cb_code_offset : o->cb_code_begin;
	out->cb_code_end = off ? o->cb_data_offset : o->cb_code_end;
	out->frame_complete_i16 = o->frame_complete_i16;
	out->nm_compile_id = o->nm_compile_id;
	out->m_constmethod = o->method_constmethod;
	out->cm_size = o->cmethod_size;
	out->cm_code_size = o->cmethod_code_size;
	/* The verified entry, where a top frame's prologue is decoded from: optional (none, no decoding). */
	vep = o->nm_verified_entry_off != JVM_NONE ? o->nm_verified_entry_off : o->nm_verified_entry_ptr;
	if (vep != JVM_NONE && vep && vep + 8 <= SP_HS_HDR_MAX) {
		out->nm_vep = vep;
		out->vep_off = o->nm_verified_entry_off != JVM_NONE;
		if (vep + 8 > out->hdr_len)
			out->hdr_len = vep + 8;
	}
	return 0;
}

/* The facts, read through a page reader (memread.h) where one could be made, else a read each. */
static int facts_read_jvm(const struct jvm_binary *elf, __u64 bias, __u32 pid, struct jvm_facts *f, char *why,
			  size_t n)
{
	struct mem_pages *m = mem_pages__new(pid);
	int err = m ? jvm_facts_read(elf, bias, mem_pages__read, m, f, why, n)
		    : jvm_facts_read(elf, bias, py_read_pid, (void *)(long)pid, f, why, n);

	mem_pages__free(m);
	return err;
}

static int facts_read_py(const struct py_binary *elf, __u64 bias, __u32 pid, struct py_facts *f, char *why, size_t n)
{
	struct mem_pages *m = mem_pages__new(pid);
	int err = m ? py_facts_read(elf, bias, mem_pages__read, m, f, why, n)
		    : py_facts_read(elf, bias, py_read_pid, (void *)(long)pid, f, why, n);

	mem_pages__free(m);
	return err;
}

/* pid's JVM read and put in hs_procs: 0, -EAGAIN to try again later, else not a JVM we follow. */
static int read_jvm(struct py_procs *p, __u32 pid, __u64 ss, struct jvm_file *jf, const struct procmap *m)
{
	char why[160] = "";
	struct jvm_facts f;
	struct sp_hs_proc hs;
	struct py_proc *pp;
	__u64 bias = m->start - m->pgoff - jf->elf.load_base, now;
	int err;

	err = facts_read_jvm(&jf->elf, bias, pid, &f, why, sizeof(why));
	if (err == -EAGAIN)
		return err;
	if (err && (proc_start_stack(pid, &now) || now != ss))
		return -ESRCH;
	if (!err && hs_proc_of(&f, ss, &hs))
		err = -EBADMSG, snprintf(why, sizeof(why), "a layout the walk cannot read");
	if (err) {
		p->st.refused++;
		snprintf(p->st.last_refusal, sizeof(p->st.last_refusal), "%u: %s", pid, why);
		pr_debug("java: pid %u not followed: %s", pid, why);
		return err;
	}
	pp = slot_of(p, pid);
	if (!pp)
		return -ENOMEM;
	pp->since = mono_ns();
	if (bpf_map_update_elem(p->hs_fd, &pid, &hs, BPF_ANY)) {
		p->st.full++;
		return -ENOSPC;
	}
	pp->jvm = true;
	pp->jf = f;
	pp->hs = hs;
	pp->live = true;
	pp->gen = ++p->gen;
	p->st.found++;
	p->st.jvms++;
	pr_debug("java: pid %u runs HotSpot %u.%u.%u (%s) from %s", pid, f.major, f.minor, f.security, f.release,
		 m->path);
	return 0;
}

/* Whether the runtime a hint names is still not set up (its facts' read says -EAGAIN again). */
static bool still_not_ready(struct py_procs *p, __u32 pid, const struct py_hint *h)
{
	char why[160];

	if (h->jvm) {
		struct jvm_facts f;

		return (size_t)h->file < p->nr_jfiles &&
		       facts_read_jvm(&p->jfiles[h->file].elf, h->bias, pid, &f, why, sizeof(why)) == -EAGAIN;
	} else {
		struct py_facts f;

		return (size_t)h->file < p->nr_files &&
		       facts_read_py(&p->files[h->file].elf, h->bias, pid, &f, why, sizeof(why)) == -EAGAIN;
	}
}

/*
 * pid's runtime read and put in the map: 0, -EAGAIN to try again later
 * (what was learnt in out), else not a Python process we follow.  in: what
 * the last try learnt, or NULL.  Whatever else a hinted read says, the
 * process is read whole as at a first try.
 */
static int read_proc(struct py_procs *p, __u32 pid, const struct py_hint *in, struct py_hint *out)
{
	char why[160] = "";
	struct procmap m, libc = {}, runtime = {};
	struct py_file *rf = NULL;
	struct jvm_file *jf = NULL;
	struct procmap jm = {};
	struct sp_py_proc bpf;
	struct glibc_tsd tsd;
	struct py_facts f;
	struct py_proc *pp;
	struct procmaps maps;
	__u64 ss, bias;
	bool have_libc = false, pthread = false, is_pthread;
	__u32 off, off2;
	int err, two;

	if (proc_start_stack(pid, &ss) || !ss)
		return -ESRCH;
	if (in && in->file >= 0 && in->ss == ss && still_not_ready(p, pid, in)) {
		*out = *in;
		return -EAGAIN;
	}
	/* Files' mappings only (a runtime is a file), by PROCMAP_QUERY where the kernel has it. */
	if (procmaps_open(&maps, pid, PROCMAPS_FILES))
		return -ESRCH;
	while (procmaps_read(&maps, &m) > 0) {
		if (m.path[0] != '/' || !m.ino)
			continue;
		/* libpthread (glibc before 2.34) has pthread_getspecific where libc does not. */
		if (libc_name(m.path, &is_pthread) && (!have_libc || (is_pthread && !pthread))) {
			libc = m;
			have_libc = true;
			pthread = is_pthread;
		}
		if (!jf && !jm.start && p->hs_fd >= 0 && jvm_name(m.path)) {
			struct jvm_file *cand = jfile_of(p, pid, &m);

			/* Its lowest mapping, the first PT_LOAD's: later segments may lie at other deltas. */
			if (cand && !cand->err)
				jf = cand;
			jm = m;
		}
		if (!rf && python_name(m.path)) {
			struct py_file *cand = file_of(p, pid, &m);

			if (cand && !cand->err) {
				rf = cand;
				runtime = m;
			}
		}
	}
	procmaps_close(&maps);
	if (jf) {
		err = read_jvm(p, pid, ss, jf, &jm);
		if (err == -EAGAIN)
			*out = (struct py_hint){ .ss = ss, .bias = jm.start - jm.pgoff - jf->elf.load_base,
						 .file = jf - p->jfiles, .jvm = true };
		return err;
	}
	if (!rf)
		return -ENOENT;
	/* The address of file offset 0, less where the file's first segment would put it. */
	bias = runtime.start - runtime.pgoff - rf->elf.load_base;
	if (rf->elf.e_type == 2 /* ET_EXEC */)
		bias = 0;
	err = facts_read_py(&rf->elf, bias, pid, &f, why, sizeof(why));
	if (err == -EAGAIN) {
		*out = (struct py_hint){ .ss = ss, .bias = bias, .file = rf - p->files };
		return err;
	}
	/* A process that exited (or exec'd) while it was read refused nothing. */
	if (err && (proc_start_stack(pid, &bias) || bias != ss))
		return -ESRCH;
	if (err) {
		p->st.refused++;
		snprintf(p->st.last_refusal, sizeof(p->st.last_refusal), "%u: %s", pid, why);
		pr_debug("python: pid %u not followed: %s", pid, why);
		return err;
	}
	bpf = f.bpf;
	bpf.start_stack = ss;
	bpf.tstate = SP_PY_TS_LIST;
	if (have_libc && !p->force_list) {
		if (!libc_tsd(p, pid, &libc, &tsd) && !glibc_tsd_offsets(&tsd, f.tss_key, &off, &off2, &two)) {
			bpf.tstate = two ? SP_PY_TS_TSD2 : SP_PY_TS_TSD;
			bpf.tsd_off = off;
			bpf.tsd_off2 = off2;
		}
	}
	pp = slot_of(p, pid);
	if (!pp)
		return -ENOMEM;
	pp->since = mono_ns();
	if (bpf_map_update_elem(p->procs_fd, &pid, &bpf, BPF_ANY)) {
		p->st.full++;
		return -ENOSPC;
	}
	pp->f = f;
	pp->f.bpf = bpf;
	pp->live = true;
	pp->gen = ++p->gen;
	p->st.found++;
	p->st.by_list += bpf.tstate == SP_PY_TS_LIST;
	{
		char v[32];

		py_version_str(f.l.version, v, sizeof(v));
		pr_debug("python: pid %u runs CPython %s from %s, thread states by %s", pid, v, runtime.path,
			 bpf.tstate == SP_PY_TS_LIST ? "the thread list" : "glibc's key data");
	}
	return 0;
}

/* Read now; if the runtime is not set up yet, again later, less often each time. */
static void try_proc(struct py_procs *p, __u32 pid, __u32 tries, const struct py_hint *in)
{
	struct py_hint out = { .file = -1 };
	int err = read_proc(p, pid, in, &out);
	__u64 wait;

	if (err != -EAGAIN)
		return;
	if (tries >= MAX_TRIES) {
		p->st.gave_up++;
		return;
	}
	wait = FIRST_RETRY_NS << (tries < 8 ? tries : 8);
	if (wait > MAX_RETRY_NS)
		wait = MAX_RETRY_NS;
	schedule(p, pid, mono_ns() + wait, tries + 1, &out);
}

/*
 * Whether the process's code mappings name a file like python's: a cheap
 * look before reading a process.  Code mappings only, by PROCMAP_QUERY where
 * the kernel has it (procmaps.h): the text of every process's every mapping
 * was 3% of a recorder's start (record -a -g -d 0.2, 85 processes).
 */
static bool maps_name_python(const struct py_procs *p, __u32 pid)
{
	struct procmaps pm;
	struct procmap m;
	bool yes = false;

	if (procmaps_open(&pm, pid, PROCMAPS_CODE | PROCMAPS_FILES))
		return false;
	while (!yes && procmaps_read(&pm, &m) > 0)
		yes = (m.prot & PROT_EXEC) && m.path[0] == '/' && (python_name(m.path) || (p->hs_fd >= 0 && jvm_name(m.path)));
	procmaps_close(&pm);
	return yes;
}

struct scan_pass {
	struct py_procs *p;
	bool only_new; /* only the processes not followed yet */
	__u32 self;    /* the recorder, which runs no Python or Java */
	py_skip_fn skip;
	void *skip_ctx;
};

static int scan_one(void *ctx, __u32 pid)
{
	struct scan_pass *s = ctx;

	if (pid != s->self && !(s->only_new && proc_of(s->p, pid)) && !(s->skip && s->skip(s->skip_ctx, pid)) &&
	    maps_name_python(s->p, pid))
		try_proc(s->p, pid, 0, NULL);
	return 0;
}

/* Every process in pids (NULL: all), or those of them not followed yet (only_new), but those skip names. */
static void scan(struct py_procs *p, const struct int_list *pids, bool only_new, py_skip_fn skip, void *skip_ctx)
{
	if (p)
		sideband_each_pid(pids, scan_one,
				  &(struct scan_pass){ .p = p, .only_new = only_new, .self = getpid(), .skip = skip,
						       .skip_ctx = skip_ctx });
}

void py_procs__scan(struct py_procs *p, const struct int_list *pids)
{
	scan(p, pids, false, NULL, NULL);
}

/*
 * maps_name_python's test, on mappings the table scan walks anyway: that
 * walk and this scan's own each queried every process's code mappings
 * (PROCMAP_QUERY), 86 processes twice at every start.
 */
void py_procs__note_code(void *ctx, __u32 pid, const char *path)
{
	struct py_procs *p = ctx;

	if (pid == (__u32)getpid() || path[0] != '/' || !(python_name(path) || (p->hs_fd >= 0 && jvm_name(path))))
		return;
	/* A process's mappings come together: noted once. */
	if (p->nr_noted && p->noted[p->nr_noted - 1] == pid)
		return;
	if (array_reserve((void **)&p->noted, &p->cap_noted, p->nr_noted, sizeof(*p->noted)))
		return;
	p->noted[p->nr_noted++] = pid;
}

void py_procs__scan_noted(struct py_procs *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nr_noted; i++)
		try_proc(p, p->noted[i], 0, NULL);
	free(p->noted);
	p->noted = NULL;
	p->nr_noted = p->cap_noted = 0;
}

void py_procs__catch_up(struct py_procs *p, const struct int_list *pids, py_skip_fn skip, void *skip_ctx)
{
	scan(p, pids, true, skip, skip_ctx);
}

void py_procs__mmap(struct py_procs *p, __u32 pid, const char *path)
{
	if (!p || !(python_name(path) || (p->hs_fd >= 0 && jvm_name(path))) || proc_of(p, pid))
		return;
	/* ld.so maps the rest of the libraries after it: read once this pass is over. */
	schedule(p, pid, mono_ns() + FIRST_RETRY_NS, 0, NULL);
}

void py_procs__exec(struct py_procs *p, __u32 pid)
{
	if (p)
		forget(p, pid);
}

void py_procs__fork(struct py_procs *p, __u32 ppid, __u32 pid)
{
	struct py_proc *parent, *child;

	if (!p || !(parent = proc_of(p, ppid)))
		return;
	/* The same image at the same addresses, the same key: the parent's entry serves until an exec. */
	child = slot_of(p, pid);
	parent = proc_of(p, ppid); /* slot_of may have moved the array */
	if (!child || !parent || bpf_map_update_elem(parent->jvm ? p->hs_fd : p->procs_fd, &pid,
						     parent->jvm ? (const void *)&parent->hs :
								   (const void *)&parent->f.bpf,
						     BPF_ANY)) {
		/* Not followed: the copy BPF made at the fork (sample.bpf.c, py_fork) goes too. */
		drop_entries(p, pid);
		return;
	}
	child->since = mono_ns();
	child->f = parent->f;
	child->jf = parent->jf;
	child->hs = parent->hs;
	child->jvm = parent->jvm;
	child->live = true;
	child->gen = ++p->gen;
	p->st.forks++;
}

void py_procs__exit(struct py_procs *p, __u32 pid)
{
	if (!p)
		return;
	if (proc_of(p, pid))
		forget(p, pid);
	else
		drop_entries(p, pid); /* a child of a followed process whose fork was not followed here */
}

void py_procs__flush(struct py_procs *p)
{
	struct py_pending *due;
	size_t k = 0, nd = 0;
	__u64 now;

	if (!p || !p->nr_pending)
		return;
	now = mono_ns();
	due = malloc(p->nr_pending * sizeof(*due));
	if (!due)
		return;
	/* The due ones out of the list first: a try may put its process back. */
	for (size_t i = 0; i < p->nr_pending; i++) {
		if (p->pending[i].due > now)
			p->pending[k++] = p->pending[i];
		else if (!proc_of(p, p->pending[i].pid))
			due[nd++] = p->pending[i];
	}
	p->nr_pending = k;
	for (size_t i = 0; i < nd; i++) {
		p->st.retries += due[i].tries > 0;
		try_proc(p, due[i].pid, due[i].tries, &due[i].hint);
	}
	free(due);
}

__u64 py_procs__next_due(const struct py_procs *p)
{
	__u64 due = 0;

	for (size_t i = 0; p && i < p->nr_pending; i++)
		if (!due || p->pending[i].due < due)
			due = p->pending[i].due;
	return due;
}

const struct py_facts *py_procs__get(const struct py_procs *p, __u32 pid, __u32 *gen, __u64 *since_ns)
{
	struct py_proc *pp = p ? proc_of(p, pid) : NULL;

	if (!pp || pp->jvm)
		return NULL;
	if (gen)
		*gen = pp->gen;
	if (since_ns)
		*since_ns = pp->since;
	return &pp->f;
}

const struct jvm_facts *py_procs__jvm(const struct py_procs *p, __u32 pid, __u32 *gen, __u64 *since_ns)
{
	struct py_proc *pp = p ? proc_of(p, pid) : NULL;

	if (!pp || !pp->jvm)
		return NULL;
	if (gen)
		*gen = pp->gen;
	if (since_ns)
		*since_ns = pp->since;
	return &pp->jf;
}

void py_procs__stats(const struct py_procs *p, struct py_procs_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (p)
		*st = p->st;
}
