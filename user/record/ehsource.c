// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "ehsource.h"
#include "ehtables.h"
#include "libbpf_setup.h"
#include "log.h"
#include "names.h"
#include "orctables.h"
#include "perf_data.h"
#include "perf_events.h"
#include "perf_sample.h"
#include "pyprocs.h"
#include "source.h"
#include "sample.skel.h"
#include "spanperf_abi.h"
#include "util.h"

/*
 * Page indexes, files, mappings and processes: sized for a host like this
 * one with room to spare (it used up to 5M rows, 44K page entries, 6K
 * mappings in one pass), which BPF_F_MMAPABLE arrays take whole at
 * creation.  The rows (8 bytes each) come in chunks made as they fill
 * (SP_EH_CHUNK_ROWS, ehtables.c); the sample ring is sized by eh_ring_bytes.
 */
#define EH_MAX_PAGES (256u << 10)
#define EH_MAX_FILES 16384
#define EH_MAX_MAPS (64u << 10) /* two halves, see ehtables.c */
#define EH_MAX_PROCS 32768
/*
 * Processes exec'd in the last 200 ms whose mappings BPF notes (eh_fresh in
 * ehframe.bpf.h, about 800 bytes each): an LRU, so a host starting more
 * than this at once leaves its oldest to bpf_find_vma, as before.
 */
#define EH_MAX_FRESH 2048
/* Python processes followed at once (about 300 bytes each). */
#define EH_MAX_PY_PROCS 8192
#define EH_RING_MIN (256u << 10) /* per CPU */
#define EH_RING_MAX (64u << 20) /* all CPUs' */
#define EH_RING_UNKNOWN (16u << 20) /* all CPUs', -c: no rate to size by */

struct eh_source {
	struct sample_bpf *skel;
	const struct int_list *pids; /* -p: only these processes' tables are kept current */
	struct eh_tables *tables;
	struct py_procs *py; /* NULL: Python frames are not read (SPANPERF_NO_PYTHON) */
	__u32 *gen;	     /* eh_gen's value, mapped: bumped after every change to eh_procs or py_procs */
	struct ring_buffer *rb;
	int *rb_fds; /* each CPU's sample ring (eh_rbs's), kept open for rb's epoll */
	int nr_rb;
	eh_sample_fn fn;
	void *ctx;
	long n;
	int err;
	bool exec_wake;	 /* the exec tracepoint is attached: an idle loop may sleep */
	bool changed;	 /* an exec or new code since the last poll_ms */
	__u64 busy_until; /* poll every busy_ms until then */
	int busy_ms;	  /* EH_SOURCE_POLL_MS, or a share of the sampling period (ehsource.h) */
	__u64 passes, busy_passes, wakes; /* for record -v */
	__u64 stored[SP_EH_STAT_MAX]; /* the counts at the last file's header (--switch-output) */
	__u64 py_stored[SP_PY_STAT_MAX];
};

/* The first sample ring, made by eh_source_size before the load, until eh_source__new takes it; -1: none. */
static int eh_ring0 = -1;
/* eh_rows' first chunk and inner template, likewise; -1: none. */
static int eh_chunk0 = -1;

static int eh_ring_cpus(void)
{
	int cpus = libbpf_num_possible_cpus();

	return cpus > 0 ? cpus : 1;
}

/*
 * Each CPU's sample ring: a second of its samples at 512 bytes (a 40-frame
 * chain; most are shorter), as a power of two, and all CPUs' together no
 * more than EH_RING_MAX.  The program wakes the loop when a ring is half
 * full, so it holds half a second more than a drain needs.  A fixed 16 MiB
 * was a quarter of the 65.8 MiB the eh_* maps took (over the 64 MiB issue 22
 * allows), and at 999 Hz a CPU's second of samples is about 0.5 MB.
 */
static __u32 eh_ring_bytes(__u64 freq)
{
	__u32 cpus = eh_ring_cpus(), page = sysconf(_SC_PAGESIZE), bytes = EH_RING_MIN, most = page;
	__u64 want = freq * 512;

	while ((__u64)most * 2 * cpus <= (freq ? EH_RING_MAX : EH_RING_UNKNOWN))
		most <<= 1;
	if (!freq)
		return most;
	while (bytes < want && bytes < most)
		bytes <<= 1;
	return bytes < most ? bytes : most;
}

/* Python frames are read with ehframe, unless this says not to (for measuring what they cost). */
static bool python_on(bool on)
{
	return on && !getenv("SPANPERF_NO_PYTHON");
}

/* Java frames are read with Python's, unless this says not to (for measuring what they cost). */
static bool java_on(bool py)
{
	return py && !getenv("SPANPERF_NO_JAVA");
}

void eh_source_size(struct sample_bpf *skel, bool on, bool timing, __u64 freq)
{
	__u32 ring = eh_ring_bytes(freq);
	bool py = python_on(on);
	struct orc_tables orc;
	/*
	 * A parent's slice and layouts copied to its forked child in BPF: tp_btf,
	 * else its raw_tp twin.  Not tried by loading a calibration program: that
	 * parsed the kernel's BTF a second time (5.5 MB here, 7% of a recorder's
	 * CPU at -d 0.2).  on_sample_eh needs what tp_btf needs, the kernel's BTF
	 * (bpf_get_current_task_btf) on a kernel newer than tp_btf (bpf_loop,
	 * bpf_find_vma: 5.17, eh_source_check), so where it loads so does this.
	 */
	bool fork_btf = on && access("/sys/kernel/btf/vmlinux", R_OK) == 0;

	bpf_program__set_autoload(skel->progs.on_sample_eh, on);
	bpf_program__set_autoload(skel->progs.on_exec_eh, on);
	bpf_program__set_autoload(skel->progs.on_mmap_eh, on);
	bpf_program__set_autoload(skel->progs.eh_fork_btf, fork_btf);
	bpf_program__set_autoload(skel->progs.eh_fork_raw, on && !fork_btf);
	/* The chunks' template is the first chunk, as the rings' (libbpf 1.1 cannot resize an inner map). */
	if (on && eh_chunk0 < 0)
		eh_chunk0 = eh_tables_chunk_new();
	if (on && eh_chunk0 >= 0)
		bpf_map__set_inner_map_fd(skel->maps.eh_rows, eh_chunk0);
	bpf_map__set_max_entries(skel->maps.eh_pages, on ? EH_MAX_PAGES : 1);
	bpf_map__set_max_entries(skel->maps.eh_files, on ? EH_MAX_FILES : 1);
	bpf_map__set_max_entries(skel->maps.eh_maps, on ? EH_MAX_MAPS : 1);
	bpf_map__set_max_entries(skel->maps.eh_procs, on ? EH_MAX_PROCS : 1);
	bpf_map__set_max_entries(skel->maps.eh_rbs, on ? eh_ring_cpus() : 1);
	/*
	 * The rings' size is the outer map's inner template's, which libbpf 1.1
	 * cannot resize (its inner map has no object: bpf_map__set_max_entries
	 * faults); a ring made now is the template, and CPU 0's ring later.
	 */
	if (on && eh_ring0 < 0)
		eh_ring0 = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "eh_rb", 0, 0, ring, NULL);
	if (on && eh_ring0 >= 0)
		bpf_map__set_inner_map_fd(skel->maps.eh_rbs, eh_ring0);
	bpf_map__set_max_entries(skel->maps.eh_fresh, on ? EH_MAX_FRESH : 1);
	/* The tail cache's chains (bpf/ehkeep.bpf.h): about 10 KB each, per CPU, for the walk alone. */
	bpf_map__set_max_entries(skel->maps.eh_keeps, on ? SP_EH_KEEP_SLOTS + 1 : 1);
	bpf_map__set_max_entries(skel->maps.py_procs, py ? EH_MAX_PY_PROCS : 1);
	bpf_map__set_max_entries(skel->maps.hs_procs, java_on(py) ? EH_MAX_PY_PROCS : 1);
	skel->rodata->py_walk = py;
	skel->rodata->hs_walk = java_on(py);
	skel->rodata->py_timing = py && timing;
	/*
	 * Hashes BPF only looks up (and a fork's copy adds to, in the fork
	 * tracepoint): entries allocated as added, not all at creation, where
	 * their 8.7 MB were zeroed and threaded onto free lists at every start
	 * (htab_map_alloc, 2.8% of record -a -g -d 0.2's CPU).
	 */
	bpf_map__set_map_flags(skel->maps.eh_procs, bpf_map__map_flags(skel->maps.eh_procs) | BPF_F_NO_PREALLOC);
	bpf_map__set_map_flags(skel->maps.eh_files, bpf_map__map_flags(skel->maps.eh_files) | BPF_F_NO_PREALLOC);
	bpf_map__set_map_flags(skel->maps.py_procs, bpf_map__map_flags(skel->maps.py_procs) | BPF_F_NO_PREALLOC);
	bpf_map__set_map_flags(skel->maps.hs_procs, bpf_map__map_flags(skel->maps.hs_procs) | BPF_F_NO_PREALLOC);
	/* Written from user space without a syscall per row (5.5+, as bpf_loop needs 5.17 anyway). */
	bpf_map__set_map_flags(skel->maps.eh_pages, BPF_F_MMAPABLE);
	bpf_map__set_map_flags(skel->maps.eh_maps, BPF_F_MMAPABLE);
	skel->rodata->eh_ring_size = on ? ring : 0;
	/* Kernel chains by their ORC rules (kstack.bpf.h): the tables' place, asked of the kernel before the load. */
	if (on && !orc_tables_find(&orc)) {
		skel->bss->ks_orc_ip = orc.ip;
		skel->bss->ks_orc_ip_end = orc.ip_end;
		skel->bss->ks_orc = orc.rules;
		skel->bss->ks_stext = orc.stext;
		skel->bss->ks_etext = orc.etext;
		skel->bss->ks_tramp[0] = orc.tramp[0];
		skel->bss->ks_tramp[1] = orc.tramp[1];
	}
	skel->rodata->ks_check = on && getenv("SPANPERF_KSTACK_CHECK");
	skel->rodata->eh_timing = timing;
	/* make bench only: the same sample path with the kernel's frame-pointer walk, for a fair ratio. */
	skel->rodata->eh_fp_only = on && getenv("SPANPERF_BENCH_EH_FP");
	/* tools/sample_turns.sh only: the eh_cost parts, else dropped at load (bpf/ehframe.bpf.h). */
	skel->rodata->eh_cost_on = on && getenv("SPANPERF_BENCH_TURNS");
	/* Tests: the path of a process whose mappings user space has not read yet, for every sample. */
	skel->rodata->eh_vma_only = on && getenv("SPANPERF_EH_VMA_ONLY");
}

int eh_source_check(char *why, size_t n)
{
	static const struct {
		enum bpf_func_id id;
		const char *name, *since;
	} need[] = {
		{ BPF_FUNC_loop, "bpf_loop", "5.17" },
		{ BPF_FUNC_get_attach_cookie, "bpf_get_attach_cookie", "5.15" },
		{ BPF_FUNC_task_pt_regs, "bpf_task_pt_regs", "5.15" },
		{ BPF_FUNC_find_vma, "bpf_find_vma", "5.17" },
	};

	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, need[i].id, NULL) != 1) {
			snprintf(why, n, "needs %s (Linux %s+), which this kernel does not offer", need[i].name,
				 need[i].since);
			return -EOPNOTSUPP;
		}
	return 0;
}

static int on_ring(void *ctx, void *data, size_t size)
{
	struct eh_source *s = ctx;
	const struct perf_event_header *h = data;

	if (size < sizeof(*h) || h->size > size || h->size < 64)
		return 0;
	s->n++;
	return s->fn(s->ctx, h);
}

/* The exec tracepoint's wake: what it says is that an exec happened. */
static int on_wake(void *ctx, void *data, size_t size)
{
	struct eh_source *s = ctx;

	(void)data;
	(void)size;
	s->changed = true;
	s->wakes++;
	return 0;
}

/* A sample ring for each CPU, in eh_rbs at its number, all read through s->rb; 0 or -errno. */
static int eh_rings_new(struct eh_source *s)
{
	struct bpf_map *outer = s->skel->maps.eh_rbs;
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int n = bpf_map__max_entries(outer), e = 0;

	/* eh_source_size could not make it (memory): the outer map's template is then the BTF's 4 KiB ring. */
	if (eh_ring0 < 0)
		return -ENOMEM;
	if (bpf_obj_get_info_by_fd(eh_ring0, &info, &len))
		return -errno;
	s->rb_fds = calloc(n, sizeof(*s->rb_fds));
	if (!s->rb_fds)
		return -ENOMEM;
	s->rb_fds[s->nr_rb++] = eh_ring0;
	eh_ring0 = -1;
	for (__u32 cpu = 0; cpu < (__u32)n; cpu++) {
		int fd = cpu ? bpf_map_create(BPF_MAP_TYPE_RINGBUF, "eh_rb", 0, 0, info.max_entries, NULL) : s->rb_fds[0];

		if (fd < 0)
			return -errno;
		if (cpu)
			s->rb_fds[s->nr_rb++] = fd;
		if (bpf_map_update_elem(bpf_map__fd(outer), &cpu, &fd, BPF_ANY))
			return -errno;
		if (!s->rb)
			s->rb = ring_buffer__new(fd, on_ring, s, NULL);
		else if (ring_buffer__add(s->rb, fd, on_ring, s))
			e = -errno;
		if (!s->rb)
			e = -errno;
		if (e)
			return e;
	}
	return 0;
}

int eh_source__new(struct eh_source **out, struct sample_bpf *skel, const struct int_list *pids, __u64 freq,
		   eh_sample_fn fn, void *ctx)
{
	struct eh_tables_fds fds = {
		.rows_fd = bpf_map__fd(skel->maps.eh_rows), .chunk0_fd = eh_chunk0,
		.maps_fd = bpf_map__fd(skel->maps.eh_maps), .max_maps = EH_MAX_MAPS,
		.pages_fd = bpf_map__fd(skel->maps.eh_pages), .max_pages = EH_MAX_PAGES,
		.files_fd = bpf_map__fd(skel->maps.eh_files), .procs_fd = bpf_map__fd(skel->maps.eh_procs),
	};
	struct eh_tables_stats st;
	struct eh_source *s;
	int e;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->skel = skel;
	s->pids = pids;
	s->fn = fn;
	s->ctx = ctx;
	s->busy_ms = EH_SOURCE_POLL_MS;
	if (freq && 1000 / (EH_SOURCE_POLL_SHARE * freq) > EH_SOURCE_POLL_MS)
		s->busy_ms = 1000 / (EH_SOURCE_POLL_SHARE * freq);
	/* The tables own the first chunk from here, failed or not. */
	eh_chunk0 = -1;
	e = eh_tables__new(&s->tables, &fds);
	if (e) {
		pr_err("cannot map the unwind tables (%u rows): %s", SP_EH_CHUNK_ROWS, strerror(-e));
		goto cleanup;
	}
	e = eh_rings_new(s);
	if (e) {
		pr_err("cannot make the ehframe sample rings: %s", strerror(-e));
		goto cleanup;
	}
	if (ring_buffer__add(s->rb, bpf_map__fd(skel->maps.eh_wake), on_wake, s)) {
		e = -errno;
		pr_err("cannot map the ehframe wake ring: %s", strerror(-e));
		goto cleanup;
	}
	s->gen = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(skel->maps.eh_gen),
		      0);
	if (s->gen == MAP_FAILED) {
		e = -errno;
		s->gen = NULL;
		pr_err("cannot map the ehframe generation: %s", strerror(-e));
		goto cleanup;
	}
	/* Before the scans: a parent they put in the maps hands its entries on to every later child. */
	if (bpf_program__autoload(skel->progs.eh_fork_btf))
		skel->links.eh_fork_btf = bpf_program__attach(skel->progs.eh_fork_btf);
	else
		skel->links.eh_fork_raw = bpf_program__attach(skel->progs.eh_fork_raw);
	if (!skel->links.eh_fork_btf && !skel->links.eh_fork_raw)
		pr_debug("ehframe: no fork tracepoint (%s): a forked child's tables wait for the sideband",
			 strerror(errno));
	if (skel->rodata->py_walk) {
		e = py_procs__new(&s->py, bpf_map__fd(skel->maps.py_procs),
				  skel->rodata->hs_walk ? bpf_map__fd(skel->maps.hs_procs) : -1, EH_MAX_PY_PROCS);
		if (e)
			goto cleanup;
	}
	/* One walk of each process's code mappings for both: the Python and Java processes noted in it. */
	eh_tables__scan(s->tables, pids, s->py ? py_procs__note_code : NULL, s->py);
	py_procs__scan_noted(s->py);
	eh_tables__stats(s->tables, &st);
	pr_debug("ehframe: %llu files, %llu rows (%.1f MB) for %llu processes in %.0f ms", (unsigned long long)st.files,
		 (unsigned long long)st.rows, st.rows * 8 / 1e6, (unsigned long long)st.procs, st.build_ns / 1e6);
	*out = s;
	return 0;
cleanup:
	eh_source__free(s);
	return e;
}

int eh_source_attach(struct pe_set *set, struct sample_bpf *skel)
{
	for (int i = 0; i < set->nr; i++) {
		/* BPF cannot read its event's id otherwise (bpf_get_attach_cookie, 5.15+). */
		LIBBPF_OPTS(bpf_perf_event_opts, po, .bpf_cookie = set->ev[i].id);

		set->ev[i].link = bpf_program__attach_perf_event_opts(skel->progs.on_sample_eh, set->ev[i].fd, &po);
		if (!set->ev[i].link)
			return -errno;
	}
	return 0;
}

/*
 * After eh_procs or py_procs changed: each CPU's copy of its last process's
 * entries (bpf/ehframe.bpf.h, eh_proc_facts) is looked up again.  Bumped
 * in this thread right after the call that wrote the map, so no sample
 * goes on taking an entry the map no longer has (an exited pid's slice,
 * whose eh_maps rows another process may be given).
 */
static void maps_changed(struct eh_source *s)
{
	__atomic_add_fetch(s->gen, 1, __ATOMIC_RELEASE);
}

void eh_source__started(struct eh_source *s)
{
	if (!s)
		return;
	/* Without it (no tracefs, say), the loop keeps its 2 ms pass: slower to sleep, never late. */
	s->skel->links.on_exec_eh = bpf_program__attach(s->skel->progs.on_exec_eh);
	s->exec_wake = s->skel->links.on_exec_eh != NULL;
	/* Without it a new process's libraries are found by bpf_find_vma in the interrupt, once per sample. */
	s->skel->links.on_mmap_eh = bpf_program__attach(s->skel->progs.on_mmap_eh);
	if (!s->skel->links.on_mmap_eh)
		pr_debug("ehframe: no mmap tracepoint (%s): new processes' libraries wait for their mappings",
			 strerror(errno));
	if (!s->exec_wake)
		pr_debug("ehframe: no exec tracepoint (%s): draining every %d ms", strerror(errno), s->busy_ms);
	s->busy_until = now_ns(CLOCK_MONOTONIC) + EH_SOURCE_BUSY_NS;
	eh_tables__catch_up(s->tables, s->pids);
	eh_tables__flush(s->tables);
	py_procs__catch_up(s->py, s->pids, eh_tables__kthread, s->tables);
	maps_changed(s);
}

int eh_source__poll_ms(struct eh_source *s, int idle_ms)
{
	__u64 now, due;

	if (!s)
		return idle_ms;
	s->passes++;
	if (!s->exec_wake) {
		s->busy_passes++;
		return s->busy_ms;
	}
	now = now_ns(CLOCK_MONOTONIC);
	if (s->changed || eh_tables__pending(s->tables)) {
		s->busy_until = now + EH_SOURCE_BUSY_NS;
		s->changed = false;
	}
	if (now < s->busy_until) {
		s->busy_passes++;
		return s->busy_ms;
	}
	/*
	 * A Python process whose runtime is not set up yet is read again at
	 * its due time (2 ms after its libpython's mapping, then less often,
	 * up to 500 ms apart): the loop sleeps until the first, where any
	 * process waiting kept it at 2 ms, and a host that starts Python
	 * programs all the time always has one waiting (most passes here).
	 */
	due = py_procs__next_due(s->py);
	if (due && due <= now + s->busy_ms * 1000000ull) {
		s->busy_passes++;
		return s->busy_ms;
	}
	if (due && due < now + (__u64)idle_ms * 1000000ull)
		idle_ms = (int)((due - now + 999999) / 1000000);
	/*
	 * Armed before the wait: an exec from here on wakes it.  One between the
	 * last drain and now is seen at the next pass, idle_ms later at most.
	 */
	s->skel->bss->eh_wake_armed = 1;
	return idle_ms;
}

/*
 * With -p, the side-band is still the whole host's: the others' tables would
 * be built for nothing.  With -- CMD only CMD's tree's reaches here
 * (source_samples.c), all of it wanted.
 */
static bool wanted(const struct eh_source *s, __u32 pid)
{
	return !s->pids || s->skel->rodata->filter_mode == SP_FILTER_TREE || int_list_has(s->pids, pid);
}

void eh_source__sideband(struct eh_source *s, const struct pd_sideband *r)
{
	if (!s)
		return;
	switch (r->type) {
	case PERF_RECORD_MMAP2:
		if (!(r->misc & PERF_RECORD_MISC_MMAP_DATA) && !pd_misc_kernel(r->misc) && (r->mmap.prot & PROT_EXEC) &&
		    wanted(s, r->mmap.pid)) {
			eh_tables__mark(s->tables, r->mmap.pid);
			if (!r->mmap.build_id_size)
				eh_tables__mmap(s->tables, r->mmap.pid, r->mmap.start, r->mmap.len, r->mmap.maj,
						r->mmap.min, r->mmap.ino, r->mmap.filename);
			py_procs__mmap(s->py, r->mmap.pid, r->mmap.filename);
			s->changed = true;
			maps_changed(s);
		}
		break;
	case PERF_RECORD_COMM:
		/* An exec: the old slice no longer matches (BPF sees start_stack change) until the new one. */
		if ((r->misc & PERF_RECORD_MISC_COMM_EXEC) && wanted(s, r->comm.pid)) {
			eh_tables__mark_exec(s->tables, r->comm.pid);
			py_procs__exec(s->py, r->comm.pid);
			s->changed = true;
			maps_changed(s);
		}
		break;
	case PERF_RECORD_FORK:
		if (r->task.pid != r->task.ppid && wanted(s, r->task.pid)) {
			eh_tables__fork(s->tables, r->task.ppid, r->task.pid,
					s->skel->links.eh_fork_btf || s->skel->links.eh_fork_raw);
			py_procs__fork(s->py, r->task.ppid, r->task.pid);
			maps_changed(s);
		}
		break;
	case PERF_RECORD_EXIT:
		if (r->task.pid == r->task.tid && wanted(s, r->task.pid)) {
			eh_tables__exit(s->tables, r->task.pid);
			py_procs__exit(s->py, r->task.pid);
			maps_changed(s);
		}
		break;
	}
}

long eh_source__drain(struct eh_source *s)
{
	bool writes;
	int e;

	if (!s)
		return 0;
	writes = eh_tables__pending(s->tables) || py_procs__next_due(s->py);
	/* Processes that mapped code since the last pass: before their next samples. */
	eh_tables__flush(s->tables);
	py_procs__flush(s->py);
	if (writes)
		maps_changed(s);
	s->n = 0;
	e = ring_buffer__consume(s->rb);
	return e < 0 ? e : s->n;
}

int eh_source__fd(const struct eh_source *s)
{
	return ring_buffer__epoll_fd(s->rb);
}

/* Python: the processes followed, and why their chains' Python parts ended (record -v). */
/* The Java steps' counts (hotspot.bpf.h), where there were any. */
static void hs_report(struct eh_source *s)
{
#define SP_HS_LABEL(id, key, label) [id] = label,
	static const char *const names[SP_HS_STAT_MAX] = { SP_HS_STAT_NAMES(SP_HS_LABEL) };
	int fd = bpf_map__fd(s->skel->maps.hs_stats);

	if (!s->skel->rodata->hs_walk || !bpf_percpu_sum_slot(fd, SP_HS_CHAINS, SP_HS_STAT_MAX))
		return;
	for (int i = 0; i < SP_HS_STAT_MAX; i++) {
		__u64 v = bpf_percpu_sum_slot(fd, i, SP_HS_STAT_MAX);

		if (names[i] && v)
			fprintf(stderr, "  %-58s %llu\n", names[i], (unsigned long long)v);
	}
}

static void py_report(struct eh_source *s)
{
#define SP_PY_LABEL(id, key, label) [id] = label,
	static const char *const names[SP_PY_STAT_MAX] = { SP_PY_STAT_NAMES(SP_PY_LABEL) };
	struct py_procs_stats st;
	int fd;
	__u64 chains;

	if (!s->py)
		return;
	fd = bpf_map__fd(s->skel->maps.py_stats);
	py_procs__stats(s->py, &st);
	/* The line as it was before JVMs, the JVMs after its parenthesis: scripts read it as it stood. */
	fprintf(stderr, "python: %llu processes followed (%llu by their thread lists), %llu JVMs among them, %llu forks; %llu not followed%s%s\n",
		(unsigned long long)st.found, (unsigned long long)st.by_list, (unsigned long long)st.jvms,
		(unsigned long long)st.forks,
		(unsigned long long)(st.refused + st.gave_up + st.full), st.refused ? ", last: " : "",
		st.refused ? st.last_refusal : "");
	for (int i = 0; i < SP_PY_STAT_MAX; i++) {
		__u64 v = bpf_percpu_sum_slot(fd, i, SP_PY_STAT_MAX);

		if (names[i] && (v || i <= SP_PY_COMPLETE))
			fprintf(stderr, "  %-58s %llu\n", names[i], (unsigned long long)v);
	}
	chains = bpf_percpu_sum_slot(fd, SP_PY_CHAINS, SP_PY_STAT_MAX);
	if (chains && bpf_percpu_sum_slot(fd, SP_PY_NS, SP_PY_STAT_MAX))
		fprintf(stderr, "  Python frames took %.0f ns a chain in BPF, %.1f reads, %.1f frames\n",
			(double)bpf_percpu_sum_slot(fd, SP_PY_NS, SP_PY_STAT_MAX) / chains,
			(double)bpf_percpu_sum_slot(fd, SP_PY_READS, SP_PY_STAT_MAX) / chains,
			(double)bpf_percpu_sum_slot(fd, SP_PY_FRAMES, SP_PY_STAT_MAX) / chains);
}

void eh_source__report(struct eh_source *s, int verbose)
{
#define SP_EH_LABEL(id, key, label) [id] = label,
	static const char *const names[SP_EH_STAT_MAX] = { SP_EH_STAT_NAMES(SP_EH_LABEL) };
	struct eh_tables_stats st;
	int fd;

	if (!s)
		return;
	fd = bpf_map__fd(s->skel->maps.eh_stats);
	eh_tables__stats(s->tables, &st);
	REC_SAY({ bpf_percpu_sum(fd, SP_EH_LOST), REC_WARN, "samples LOST: the ehframe sample ring was full" },
		{ bpf_percpu_sum(bpf_map__fd(s->skel->maps.ks_stats), SP_KS_CHECK_BAD), REC_WARN,
		  "kernel chains unwound in BPF unlike the kernel's walk (SPANPERF_KSTACK_CHECK)" });
	if (st.too_large || st.maps_full || st.procs_full)
		pr_warn("unwind tables full: %llu files too large, %llu processes without room for their mappings; those unwind by frame pointer",
			(unsigned long long)st.too_large, (unsigned long long)(st.maps_full + st.procs_full));
	if (verbose <= 0)
		return;
	fprintf(stderr, "ehframe tables: %llu files, %llu rows (%.1f MB), %zu page entries; %llu process builds, %zu mappings; built in %.0f ms; %llu files without CFI, %llu unreadable, %llu failed\n",
		(unsigned long long)st.files, (unsigned long long)st.rows, st.rows * sizeof(struct sp_eh_row) / 1e6,
		st.pages, (unsigned long long)st.procs, st.maps, st.build_ns / 1e6, (unsigned long long)st.nocfi,
		(unsigned long long)st.unreadable, (unsigned long long)st.failed);
	fprintf(stderr, "  rows in %zu of %d chunks of %u, made as they filled\n", st.chunks, SP_EH_CHUNKS,
		SP_EH_CHUNK_ROWS);
	fprintf(stderr, "  %llu passes of the loop, %llu of them %d ms apart while processes started; %llu woken by an exec%s\n",
		(unsigned long long)s->passes, (unsigned long long)s->busy_passes, s->busy_ms,
		(unsigned long long)s->wakes, s->exec_wake ? "" : " (no exec tracepoint: every pass so)");
	REC_SAY({ st.shared, REC_DETAIL, "files shared the table of another file with their build id" },
		{ st.bid_other_rows, REC_DETAIL, "files had another file's build id but rows of their own" },
		{ st.from_debug, REC_DETAIL, "files took rows from their debug file's .debug_frame" },
		{ st.caught_up, REC_DETAIL,
		  "processes started or exec'd while the tables were built, read again once the events were on" });
	if (st.cache.off)
		fprintf(stderr, "  table cache off (SPANPERF_NO_EH_CACHE, or no cache directory of ours)\n");
	else
		fprintf(stderr, "  table cache: %llu tables read from it, %llu parsed and kept, %llu entries refused and rebuilt, %llu evicted, %llu not kept; %.0f ms hashing (%llu files' digests remembered, not hashed), %.0f ms reading\n",
			(unsigned long long)st.cache.hits, (unsigned long long)st.cache.stored,
			(unsigned long long)st.cache.refused, (unsigned long long)st.cache.evicted,
			(unsigned long long)st.cache.store_failed, st.cache.digest_ns / 1e6,
			(unsigned long long)st.cache.remembered, st.cache.load_ns / 1e6);
	if (st.half_switches)
		fprintf(stderr, "  mapping table reused %llu times (every live process's mappings made again)\n",
			(unsigned long long)st.half_switches);
	for (int i = 0; i < SP_EH_STAT_MAX; i++) {
		__u64 v = bpf_percpu_sum(fd, i);

		if (names[i] && (v || i <= SP_EH_STOP_END))
			fprintf(stderr, "  %-58s %llu\n", names[i], (unsigned long long)v);
	}
	fd = bpf_map__fd(s->skel->maps.ks_stats);
	fprintf(stderr, "  kernel chains: %llu unwound by their ORC rules here, %llu walked by the kernel\n",
		(unsigned long long)bpf_percpu_sum(fd, SP_KS_HERE), (unsigned long long)bpf_percpu_sum(fd, SP_KS_WALKED));
	fd = bpf_map__fd(s->skel->maps.eh_stats);
	if (bpf_percpu_sum(fd, SP_EH_USER_RUNS))
		fprintf(stderr, "  user chains took %.0f ns each in BPF, %.1f frames each\n",
			(double)bpf_percpu_sum(fd, SP_EH_USER_NS) / bpf_percpu_sum(fd, SP_EH_USER_RUNS),
			(double)bpf_percpu_sum(fd, SP_EH_FRAMES) / (bpf_percpu_sum(fd, SP_EH_CHAINS) ?: 1));
	py_report(s);
	hs_report(s);
}

int eh_source__meta(struct eh_source *s, struct pd_meta *m)
{
#define SP_EH_KEY(id, key, label) [id] = key,
	static const char *const keys[SP_EH_STAT_MAX] = { SP_EH_STAT_NAMES(SP_EH_KEY) };
	static const char *const py_keys[SP_PY_STAT_MAX] = { SP_PY_STAT_NAMES(SP_EH_KEY) };
	int fd;

	if (!s)
		return 0;
	fd = bpf_map__fd(s->skel->maps.eh_stats);
	m->unwind = calloc(SP_EH_STAT_MAX + SP_PY_STAT_MAX, sizeof(*m->unwind));
	if (!m->unwind)
		return -ENOMEM;
	/* What this file's samples met: since the last file's header, when the output rotates. */
	for (int i = 0; i < SP_EH_STAT_MAX; i++) {
		__u64 v = bpf_percpu_sum(fd, i), d = v - s->stored[i];

		if (!keys[i] || (!d && i > SP_EH_STOP_END))
			continue;
		m->unwind[m->nr_unwind].key = strdup(keys[i]);
		if (!m->unwind[m->nr_unwind].key)
			return -ENOMEM;
		m->unwind[m->nr_unwind++].value = d;
		s->stored[i] = v;
	}
	/* The Python walk's, where there were Python chains in this file. */
	fd = bpf_map__fd(s->skel->maps.py_stats);
	if (!s->py || bpf_percpu_sum_slot(fd, SP_PY_CHAINS, SP_PY_STAT_MAX) == s->py_stored[SP_PY_CHAINS])
		return 0;
	for (int i = 0; i < SP_PY_STAT_MAX; i++) {
		__u64 v = bpf_percpu_sum_slot(fd, i, SP_PY_STAT_MAX), d = v - s->py_stored[i];

		if (!py_keys[i] || (!d && i > SP_PY_COMPLETE))
			continue;
		m->unwind[m->nr_unwind].key = strdup(py_keys[i]);
		if (!m->unwind[m->nr_unwind].key)
			return -ENOMEM;
		m->unwind[m->nr_unwind++].value = d;
		s->py_stored[i] = v;
	}
	return 0;
}

struct py_procs *eh_source__py(const struct eh_source *s)
{
	return s ? s->py : NULL;
}

void eh_source__free(struct eh_source *s)
{
	if (!s)
		return;
	ring_buffer__free(s->rb);
	for (int i = 0; i < s->nr_rb; i++)
		close(s->rb_fds[i]);
	free(s->rb_fds);
	if (s->gen)
		munmap(s->gen, sysconf(_SC_PAGESIZE));
	eh_tables__free(s->tables);
	py_procs__free(s->py);
	free(s);
}
