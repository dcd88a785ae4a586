/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User stacks unwound in BPF from .eh_frame rows (--call-graph ehframe).
 *
 * User space turns each file's CFI into sorted rows (user/sys/ehframe.c) in
 * one array, `eh_rows`, once per file however many processes map it, and
 * gives each process a sorted slice of its executable mappings in `eh_maps`
 * (user/record/ehtables.c).  Each frame's pc is found in the slice (the
 * mapping gives the file's rows and the pc's file offset), then among the
 * rows of its page, which give the CFA rule; the return address is read at
 * CFA - 8.  The mappings are not looked up with bpf_find_vma: in the
 * sampling interrupt it works once per run (its mmap-lock release is an
 * irq_work that is then busy), and a chain needs one lookup per file.
 *
 * Where no row covers the pc (JIT and other anonymous code, a process whose
 * mappings are not read yet, a gap in the CFI) the step is by frame pointer,
 * as perf's.  Guards: the CFA must move up the stack and each return address
 * must lie in an executable mapping, else the chain ends there; a wrong frame
 * is worse than a short chain.  The walk is one bpf_loop (5.17+) of at most
 * SP_EH_MAX_FRAMES steps, so the verifier checks one step, whatever the depth.
 */
#ifndef SP_EHFRAME_BPF_H
#define SP_EHFRAME_BPF_H

#include "spanperf_abi.h"
#include "python.bpf.h"

#define EH_PF_KTHREAD 0x00200000
#define EH_USER_CS 0x33 /* __USER_CS: a 64-bit task in user mode */
#define EH_IPS 256 /* kernel marker + 127 + user marker + 127 */
/*
 * Mappings remembered per CPU, each under its slice's generation: a chain
 * goes back and forth between few files, and two or three processes share
 * a CPU's samples, each keeping its own.
 */
#define EH_VMAS 8

/* Tests: every walk finds its mappings from the kernel's vmas, as a new process's first do. */
const volatile bool eh_vma_only = false;

/*
 * The unwind tables, a map each: alike in form because libbpf wants each
 * map's BTF written out, different in what they hold and how they are
 * keyed (arrays by index, hashes by pid and by file).
 */

/* The rows of every file; sized from user space. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct sp_eh_row);
} eh_rows SEC(".maps");

/* Every file's page index (struct sp_eh_file); sized from user space. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct sp_eh_page);
} eh_pages SEC(".maps");

/* Every process's executable mappings, a sorted slice each; sized from user space. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct sp_eh_map);
} eh_maps SEC(".maps");

/* Process id -> its slice of eh_maps; sized from user space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct sp_eh_proc);
} eh_procs SEC(".maps");

/* (device, inode) -> its rows: user space's index, so one file's rows serve every process. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct sp_eh_file_key);
	__type(value, struct sp_eh_file);
} eh_files SEC(".maps");

/*
 * Bumped by user space after each change to eh_procs or py_procs (shared by
 * the sampling and off-CPU programs, mapped by the recorder): a CPU's copy
 * of its last process's entries (struct eh_walk's c_*) serves while it
 * holds, so a sample looks up no per-process map, where two hash lookups
 * cost more than the walk of a short chain.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u32);
} eh_gen SEC(".maps");

/* Why chains ended (enum sp_eh_stat). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SP_EH_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} eh_stats SEC(".maps");

/* A perf sample as perf.data holds it: IDENTIFIER|IP|TID|TIME|CPU|PERIOD|CALLCHAIN. */
struct sp_eh_sample {
	__u32 type;
	__u16 misc, size;
	__u64 id, ip;
	__u32 pid, tid;
	__u64 time;
	__u32 cpu, res;
	__u64 period;
	__u64 nr;
	__u64 ips[EH_IPS];
};

/* Per CPU: the sample being built (too large for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_eh_sample);
} eh_scratch SEC(".maps");

static __always_inline void eh_stat(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&eh_stats, &idx);

	if (v)
		*v += 1;
}

#define EH_CACHE 1024 /* per CPU: pcs whose rule is known; hot code returns to few places */
/*
 * A window of the stack, read at once: one bpf_probe_read_user costs about
 * 100 ns in a VM whatever its size up to a few KiB, and the frames of a
 * chain lie next to each other, so one read serves the return addresses
 * and saved rbp of many frames.  It never crosses a page, so it is readable
 * exactly when the single words it serves are.
 */
#define EH_WIN 4096

/* A pc's rule: where its frame's CFA and saved rbp are (struct sp_eh_row's), or why frame pointers. */
struct eh_rule {
	__u8 kind;	/* enum sp_eh_kind; SP_EH_GAP: frame pointers */
	__s8 rbp;
	__u16 cfa_off;
	__u32 fp_why;	/* enum sp_eh_stat: why frame pointers (0: no row covers the pc) */
};

/* A pc's rule, as the searches found it in the process slice gen (slices never change). */
struct eh_cached {
	__u64 pc;
	__u32 gen;
	__u32 pad;
	struct eh_rule r;
};

/*
 * A thread's last chain, kept to take its outer frames from (the kept
 * chain).  Between two samples of a thread mostly the frames near the leaf
 * change; the outer ones return to the same places at the same stack
 * addresses.  The walk is a function of its state (the frame's ip, sp, bp
 * and how it was reached), the rules of the process slice's generation and
 * the stack words it reads: so when the walk reaches a state the kept chain
 * had, and every word the kept walk read from there on still holds what it
 * held, the rest of the chain is the kept one's, frame for frame.  That is
 * the proof a tail needs; whatever the frame's kind, it is compared as a
 * state and its words.  Walks that read anything else (the kernel's vmas, a
 * signal frame, the uretprobe list, a trampoline's code, a fault) are not
 * kept, and a kept chain serves only its process, image and slice.
 */
#define EH_KF_BP_OK 1
#define EH_KF_EXACT 2
#define EH_KF_VIA_FP 4
#define EH_KEEP_FAST 8 /* frames near the leaf written back in place; more: the whole chain */

struct eh_kframe {
	__u64 ip, sp, bp;
	__u8 flags;	/* EH_KF_* */
	__s8 bpslot;	/* where this frame's step read the caller's rbp: CFA + 8 * bpslot (0: not read) */
	__u8 pad[6];
};

struct eh_kept {
	__u64 start_stack;	/* the image (exec moves it) */
	__u32 pid, gen;		/* the process and its slice of mappings, whose rules the walk took */
	__u32 tid;		/* whose chain (0: the slot is free) */
	__u32 n;		/* frames */
	__u32 stop;		/* why the walk ended */
	__u32 py;		/* walked as a Python thread (trampolines are recognized only then) */
	__u32 last;		/* f[n] is the state after the last frame's step, whose words were read */
	__u32 used;		/* when it last served, to choose which one to give up */
	struct eh_kframe f[SP_EH_MAX_FRAMES + 1];
};

/*
 * The kept chains, per CPU: a thread's samples mostly land on the CPU it ran
 * on last, and a CPU's slots are written by its own programs only, one at a
 * time, so a chain is never read while another CPU writes it.  One slot is
 * spare, for the chain being walked, and becomes a kept one when it is done.
 */
#define EH_KSLOTS 5

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EH_KSLOTS);
	__type(key, __u32);
	__type(value, struct eh_kept);
} eh_kslots SEC(".maps");

/* Off-CPU stacks take no kept chain (yet): the sampling program's only. */
const volatile bool eh_keep = false;

#define EH_STOP_TAIL 0xff /* internal: the state is the kept chain's, its tail to be checked */

/*
 * The walk's state, per CPU in a map rather than on the stack: the verifier
 * tracks no value kept in a map, so every step of the loop looks the same
 * to it and one step is verified, where stack values (the frame count,
 * the stop reason) would make each of the 127 steps a state of its own.
 */
struct eh_walk {
	__u64 ip, sp, bp;
	__u32 n, base;	 /* user frames written; where they start in ips[] */
	__u32 bp_ok;	 /* bp holds the frame's rbp */
	__u32 exact;	 /* ip is not a return address (the first frame, or after a signal frame) */
	__u32 via_fp;	 /* ip was read by frame pointer, from code whose rows were not at hand */
	__u32 stop;	 /* enum sp_eh_stat, 0 while going on */
	__u32 py;	 /* the thread's Python frames are in py_walks, to put in place of its eval-loop frames */
	__u32 exact0;	 /* the first frame's exact, for sp_py_place */
	__u32 tramps;	 /* -X perf trampolines crossed */
	__u32 next_vma;	 /* the cache slot the next lookup fills */
	__u32 maps_first, maps_nr; /* the process's slice of eh_maps; nr 0: unknown */
	__u32 gen, win_len;	   /* the slice's generation: what the rule cache is keyed by; the window's length */
	__u64 win_base;		   /* the user address of win[0] */
	/* The last process's entries, as looked up under eh_gen's c_ugen: its slice, and if it runs Python. */
	__u64 c_ss;		   /* its mm->start_stack: another after exec or pid reuse */
	__u32 c_pid, c_ugen, c_first, c_nr, c_gen, c_flags;
	/*
	 * A function under a uretprobe (a span's end) returns into the
	 * kernel's trampoline: its return address on the stack is the
	 * trampoline's, and the real one waits in the task's list of
	 * return instances, innermost first.  The walk takes them in order, as
	 * the kernel's own callchain does for perf (x86's
	 * fixup_uretprobe_trampoline_entries), or a span's stacks would end
	 * (or go wrong) at its own function.
	 */
	__u64 tramp;		   /* the trampoline's address in this mm; 0: none */
	__u64 ri;		   /* the next struct return_instance * to take */
	struct sp_eh_map v[EH_VMAS]; /* mappings looked up, kept from one sample to the next */
	__u32 vgen[EH_VMAS];	     /* the generation each was looked up under (0: empty) */
	struct sp_eh_map vtmp;	     /* one looked up whose file's table is not built yet: not kept */
	__u32 pure;	/* the walk read nothing but its rules and the words its states keep */
	__u32 last;	/* cur.f[n] holds the state after the last step */
	__u32 kn;	/* frames in the kept chain (0: none to take from) */
	__u32 kc;	/* its frame the walk's state is compared with next */
	__u32 kold;	/* its slot of eh_kslots */
	__u32 kcur;	/* the spare slot, where this walk's chain is written */
	__u32 kused;	/* a clock for the slots' `used` */
	__u32 tid;
	__u32 tail_d, tail_c; /* where the state was the kept chain's: the walk's frame, the kept one's */
	__u32 whole;	/* the spare slot holds the whole chain (a tail taken in place leaves it there) */
	struct eh_cached cache[EH_CACHE];
	__u8 win[EH_WIN + 16];	   /* room for a word at any offset the mask lets through */
	__u64 nat[SP_EH_MAX_FRAMES + 1]; /* with py: the native frames, which sp_py_place merges with the Python ones */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct eh_walk);
} eh_walks SEC(".maps");

/* A binary search's bounds, as bpf_loop steps it: one step verified, whatever the table's size. */
struct eh_search {
	__u64 key;
	__u32 lo, hi;
};

/*
 * One step of a binary search of `map` for the first entry whose `field`
 * is above q->key; the search is over when lo == hi.  A macro, to write
 * the step once for both tables: a bpf_loop callback must name its map as
 * a constant, and the keys differ in width (a mapping's start, a row's pc).
 */
#define EH_SEARCH_STEP(name, map, type, field)                      \
	static long name(__u32 i, struct eh_search *q)              \
	{                                                           \
		type *e;                                            \
		__u32 mid;                                          \
                                                                    \
		if (q->lo >= q->hi)                                 \
			return 1;                                   \
		mid = q->lo + (q->hi - q->lo) / 2;                  \
		e = bpf_map_lookup_elem(&map, &mid);                \
		if (!e) {                                           \
			q->lo = q->hi = 0;                          \
			return 1;                                   \
		}                                                   \
		if (e->field <= q->key)                             \
			q->lo = mid + 1;                            \
		else                                                \
			q->hi = mid;                                \
		return 0;                                           \
	}

EH_SEARCH_STEP(eh_map_search_step, eh_maps, struct sp_eh_map, start)
EH_SEARCH_STEP(eh_row_search_step, eh_rows, struct sp_eh_row, pc)

/* The mapping that holds pc among those kept under this walk's generation, or NULL. */
static __always_inline struct sp_eh_map *eh_map_cached(struct eh_walk *w, __u64 pc)
{
	for (int i = 0; i < EH_VMAS; i++)
		if (w->vgen[i] == w->gen && pc >= w->v[i].start && pc < w->v[i].end)
			return &w->v[i];
	return NULL;
}

/* The executable mapping that holds pc, from the process's slice (kept for its next samples); NULL if none. */
static __always_inline struct sp_eh_map *eh_map_of(struct eh_walk *w, __u64 pc)
{
	struct eh_search q = { .key = pc, .lo = w->maps_first, .hi = w->maps_first + w->maps_nr };
	struct sp_eh_map *m;
	__u32 slot, idx;

	bpf_loop(SP_EH_SEARCH_STEPS, eh_map_search_step, &q, 0);
	if (q.lo <= w->maps_first || q.lo < q.hi)
		return NULL;
	idx = q.lo - 1;
	m = bpf_map_lookup_elem(&eh_maps, &idx);
	if (!m || pc >= m->end)
		return NULL;
	slot = w->next_vma++ & (EH_VMAS - 1);
	w->v[slot] = *m;
	w->vgen[slot] = w->gen;
	return &w->v[slot];
}

/* What bpf_find_vma's callback read of the vma that holds a pc. */
enum eh_vma_found {
	EH_VMA_NONE = 0,
	EH_VMA_FILE,	/* key: its file */
	EH_VMA_VDSO,	/* the vDSO: its rows are user space's copy (key 0, 0) */
	EH_VMA_ANON,	/* executable, no file: JIT code */
	EH_VMA_NOEXEC,	/* not executable: no return address points there */
};

struct eh_vma_find {
	__u64 start, end, pgoff;
	struct sp_eh_file_key key;
	__u32 found;
};

#define EH_VM_EXEC 0x4
#define EH_EBUSY 16

static long eh_vma_cb(struct task_struct *task, struct vm_area_struct *vma, struct eh_vma_find *f)
{
	struct file *file = BPF_CORE_READ(vma, vm_file);

	f->start = BPF_CORE_READ(vma, vm_start);
	f->end = BPF_CORE_READ(vma, vm_end);
	f->pgoff = BPF_CORE_READ(vma, vm_pgoff) << 12;
	if (!(BPF_CORE_READ(vma, vm_flags) & EH_VM_EXEC)) {
		f->found = EH_VMA_NOEXEC;
	} else if (file) {
		/* The inode /proc/PID/maps shows, which user space keyed the file's rows by. */
		f->key.dev = BPF_CORE_READ(file, f_inode, i_sb, s_dev);
		f->key.ino = BPF_CORE_READ(file, f_inode, i_ino);
		f->found = EH_VMA_FILE;
	} else if ((__u64)BPF_CORE_READ(task, mm, context.vdso) == f->start) {
		f->pgoff = 0;
		f->found = EH_VMA_VDSO;
	} else {
		f->found = EH_VMA_ANON;
	}
	return 0;
}

/*
 * The mapping that holds pc when the process's own slice is not there yet
 * (a process that started or exec'ed since user space last looked, which on
 * a starved host is tens of ms): the kernel's vma, whose file's rows are
 * found by inode, as every process's are shared.  NULL with *busy when the
 * mm could not be looked at (its lock held: frame pointers then), NULL alone
 * when no executable mapping holds pc.
 */
static __always_inline struct sp_eh_map *eh_map_of_vma(struct eh_walk *w, __u64 pc, bool *busy)
{
	struct eh_vma_find f = {};
	struct sp_eh_file *file;
	struct sp_eh_map *m;
	__u32 slot;
	long e;

	*busy = false;
	e = bpf_find_vma(bpf_get_current_task_btf(), pc, eh_vma_cb, &f, 0);
	if (e == -EH_EBUSY) {
		*busy = true;
		return NULL;
	}
	if (e || f.found == EH_VMA_NONE || f.found == EH_VMA_NOEXEC)
		return NULL;
	eh_stat(SP_EH_VMA_LOOKUP);
	file = f.found == EH_VMA_ANON ? NULL : bpf_map_lookup_elem(&eh_files, &f.key);
	/* A file whose table is not built yet may have it by the next sample: that answer is not kept. */
	if (f.found != EH_VMA_ANON && !file) {
		m = &w->vtmp;
	} else {
		slot = w->next_vma++ & (EH_VMAS - 1);
		m = &w->v[slot];
		w->vgen[slot] = w->gen;
	}
	m->start = f.start;
	m->end = f.end;
	m->pgoff = f.pgoff;
	m->table = SP_EH_T_ANON;
	if (f.found == EH_VMA_ANON)
		return m;
	if (!file) {
		m->table = SP_EH_T_MISSING;
	} else if (file->state == SP_EH_FILE_OK) {
		m->table = SP_EH_T_ROWS;
		m->first = file->first;
		m->nr = file->nr;
		m->pages = file->pages;
		m->page0 = file->page0;
		m->npages = file->npages;
	} else {
		m->table = file->state == SP_EH_FILE_TOO_LARGE ? SP_EH_T_TOO_LARGE : SP_EH_T_NOCFI;
	}
	return m;
}

/* The last row at or below off among the mapping's file's rows, or NULL. */
static __always_inline struct sp_eh_row *eh_row_of(const struct sp_eh_map *v, __u64 off)
{
	struct eh_search q = { .key = off };
	__u32 page = off >> SP_EH_PAGE_SHIFT, idx;
	struct sp_eh_page *pg;

	if (off > 0xffffffffull || page < v->page0)
		return NULL;
	if (page - v->page0 >= v->npages) {
		q.lo = q.hi = v->first + v->nr; /* past the last page: the last row */
	} else {
		idx = v->pages + page - v->page0;
		pg = bpf_map_lookup_elem(&eh_pages, &idx);
		if (!pg)
			return NULL;
		q.lo = v->first + pg->lo;
		q.hi = v->first + pg->hi;
	}
	bpf_loop(SP_EH_SEARCH_STEPS, eh_row_search_step, &q, 0);
	if (q.lo <= v->first || q.lo < q.hi)
		return NULL; /* before the first row, a fault, or a table too large to search */
	idx = q.lo - 1;
	return bpf_map_lookup_elem(&eh_rows, &idx);
}

/*
 * The user word at addr, from the stack window, which is read again when
 * addr is outside it: from the frame's rsp when that is on addr's page
 * (what a frame saves lies between its rsp and its CFA), else from addr, up
 * to the page's end.
 */
static __always_inline int eh_read(__u64 *dst, __u64 addr, struct eh_walk *w)
{
	__u64 base, len;

	if (addr - w->win_base >= w->win_len || addr - w->win_base + 8 > w->win_len) {
		base = w->sp <= addr && (w->sp ^ addr) < EH_WIN ? w->sp : addr;
		len = EH_WIN - (base & (EH_WIN - 1));
		if ((addr & (EH_WIN - 1)) > EH_WIN - 8) {
			/* A word across two pages: read it alone. */
			if (bpf_probe_read_user(dst, 8, (void *)addr))
				goto fault;
			return 0;
		}
		w->win_len = 0;
		if (len > EH_WIN || len < 8)
			goto fault;
		if (bpf_probe_read_user(w->win, len, (void *)base))
			goto fault;
		w->win_base = base;
		w->win_len = len;
	}
	*dst = *(__u64 *)&w->win[(addr - w->win_base) & (EH_WIN - 1)];
	return 0;
fault:
	w->stop = SP_EH_STOP_READ;
	w->pure = 0;
	return -1;
}

/* A ModRM byte of `call *...` (ff /2): reg field 2, and the mode given. */
static __always_inline bool eh_call_modrm(__u8 m, __u8 mod)
{
	return (m & 0x38) == 0x10 && (m & 0xc0) == mod;
}

/*
 * Whether the 8 bytes before ra end in a call, as every return address's
 * do: call rel32 (e8), or call through a register or memory (ff /2, with
 * or without a SIB byte and a displacement; a REX prefix lies before
 * these).  For an address read by frame pointer that cannot be checked
 * against the mappings: rbp in code without frame pointers holds any data,
 * and what it points at is seldom just after a call (a small number, a
 * heap pointer, or unmapped: the read fails).
 */
static __always_inline bool eh_after_call(__u64 ra)
{
	__u8 b[8], m;

	if (ra < 4096 || bpf_probe_read_user(b, sizeof(b), (void *)(ra - 8)))
		return false;
	/* 5 bytes: call rel32 */
	if (b[3] == 0xe8)
		return true;
	/* 2 bytes: *%reg, *(%reg) */
	m = b[7];
	if (b[6] == 0xff && (eh_call_modrm(m, 0xc0) || (eh_call_modrm(m, 0) && (m & 7) != 4 && (m & 7) != 5)))
		return true;
	/* 3 bytes: *d8(%reg), *(sib) */
	m = b[6];
	if (b[5] == 0xff && ((eh_call_modrm(m, 0x40) && (m & 7) != 4) || (eh_call_modrm(m, 0) && (m & 7) == 4)))
		return true;
	/* 4 bytes: *d8(sib) */
	m = b[5];
	if (b[4] == 0xff && eh_call_modrm(m, 0x40) && (m & 7) == 4)
		return true;
	/* 6 bytes: *d32(%reg), *d32(%rip) */
	m = b[3];
	if (b[2] == 0xff && ((eh_call_modrm(m, 0x80) && (m & 7) != 4) || (eh_call_modrm(m, 0) && (m & 7) == 5)))
		return true;
	/* 7 bytes: *d32(sib) */
	m = b[2];
	return b[1] == 0xff && eh_call_modrm(m, 0x80) && (m & 7) == 4;
}

/*
 * The rule of the frame at pc, from the CPU's cache, else from the
 * mappings and the rows (and then cached).  1 when the walk ends here
 * (w->stop says why).
 */
static __always_inline long eh_rule_of(struct eh_walk *w, __u64 pc, struct eh_rule *r)
{
	/* A return address is after its call: the call's own row is the one before it. */
	__u64 look = w->exact ? pc : pc - 1;
	__u32 slot = (look ^ (look >> 9)) & (EH_CACHE - 1);
	struct eh_cached *ce = &w->cache[slot];
	struct sp_eh_map *v = NULL;
	struct sp_eh_row *row;
	bool busy = false, newer = false;

	if (w->maps_nr && ce->pc == look && ce->gen == w->gen) {
		*r = ce->r;
		return 0;
	}
	v = eh_map_cached(w, look);
	if (!v && w->maps_nr)
		v = eh_map_of(w, look);
	/*
	 * No slice yet, or not in it: a mapping newer than the slice (a library
	 * dlopen'ed, a Python extension imported, since user space last read
	 * the maps), which the kernel's vmas have.  Its rule is not cached
	 * under the slice.
	 */
	if (!v) {
		newer = w->maps_nr != 0;
		w->pure = 0; /* the kernel's vmas change under the slice: not a walk to keep */
		v = eh_map_of_vma(w, look, &busy);
	}
	if (!v && !busy) {
		w->stop = SP_EH_STOP_NOT_EXEC;
		return 1;
	}
	/*
	 * Read by frame pointer where rbp may have been any data, and
	 * not to be checked against the mappings now (the mm locked, or
	 * bpf_find_vma's irq_work still pending): a frame only if it
	 * follows a call.
	 */
	if (!v && w->via_fp && !eh_after_call(pc)) {
		w->stop = SP_EH_STOP_UNCHECKED;
		return 1;
	}
	if (!v) {
		r->fp_why = SP_EH_FP_NO_PROC;
	} else if (v->table == SP_EH_T_ROWS) {
		row = eh_row_of(v, look - v->start + v->pgoff);
		if (row) {
			r->kind = row->kind;
			r->rbp = row->rbp;
			r->cfa_off = row->cfa_off;
		} else {
			r->fp_why = SP_EH_FP_NO_ROW;
		}
	} else {
		r->fp_why = v->table == SP_EH_T_ANON	    ? SP_EH_FP_ANON
			    : v->table == SP_EH_T_TOO_LARGE ? SP_EH_FP_TOO_LARGE
							    : SP_EH_FP_NO_TABLE;
	}
	/* Anonymous code in a Python process: a -X perf trampoline has a rule of its own. */
	if (r->fp_why == SP_EH_FP_ANON && w->py && !w->exact && sp_py_trampoline(pc)) {
		r->kind = SP_EH_TRAMP;
		r->fp_why = 0;
		r->cfa_off = 16;
		r->rbp = 0;
	}
	/* Rows found from the kernel's vma are not the slice's: not cached under its generation. */
	if (w->maps_nr && !newer) {
		ce->pc = look;
		ce->gen = w->gen;
		ce->r = *r;
	}
	return 0;
}

static __always_inline __u8 eh_kflags(const struct eh_walk *w)
{
	return (w->bp_ok ? EH_KF_BP_OK : 0) | (w->exact ? EH_KF_EXACT : 0) | (w->via_fp ? EH_KF_VIA_FP : 0);
}

/* The walk's state as the kept chain keeps it, at frame k of the chain being walked. */
static __always_inline void eh_keep_state(struct eh_walk *w, struct eh_kept *cur, __u32 k)
{
	struct eh_kframe *f = &cur->f[k & SP_EH_MAX_FRAMES];

	f->ip = w->ip;
	f->sp = w->sp;
	f->bp = w->bp;
	f->flags = eh_kflags(w);
	f->bpslot = 0;
	w->last = 1;
}

/*
 * Whether the walk's state is one the kept chain had: then its tail is to
 * be checked (sp_eh_tail) rather than walked.  The kept states lie at
 * rising sp, as the walk's do: a cursor follows them.
 */
static __always_inline bool eh_kept_match(struct eh_walk *w, struct eh_kept *old)
{
	struct eh_kframe *f;
	__u32 c = w->kc;

	for (int i = 0; i < 4; i++) {
		if (c >= w->kn)
			return false;
		if (old->f[c & SP_EH_MAX_FRAMES].sp >= w->sp)
			break;
		c++;
	}
	w->kc = c;
	if (c >= w->kn)
		return false;
	f = &old->f[c & SP_EH_MAX_FRAMES];
	if (f->sp != w->sp || f->ip != w->ip || f->bp != w->bp || f->flags != eh_kflags(w))
		return false;
	/* A chain cut at the depth limit goes on further from a shallower start: not its tail. */
	if (old->stop == SP_EH_STOP_DEPTH && w->n < c)
		return false;
	w->tail_d = w->n;
	w->tail_c = c;
	w->stop = EH_STOP_TAIL;
	return true;
}

/* One frame: write pc, then find the caller's registers.  1 ends the loop. */
static long eh_step(__u32 i, void *unused)
{
	struct eh_rule r = { .kind = SP_EH_GAP };
	__u32 zero = 0;
	struct sp_eh_sample *s = bpf_map_lookup_elem(&eh_scratch, &zero);
	struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero);
	struct eh_kept *old, *cur;
	__u64 pc, cfa, ra, bp;

	if (!s || !w)
		return 1;
	cur = bpf_map_lookup_elem(&eh_kslots, &w->kcur);
	if (!cur)
		return 1;
	pc = w->ip;
	if (w->kn) {
		old = bpf_map_lookup_elem(&eh_kslots, &w->kold);
		if (old && eh_kept_match(w, old))
			return 1;
	}
	if (eh_rule_of(w, pc, &r))
		return 1;
	/* A trampoline is known by its code, which is not the walk's to keep. */
	if (r.kind == SP_EH_TRAMP || (r.fp_why == SP_EH_FP_ANON && w->py))
		w->pure = 0;
	/* A trampoline has no entry; a Python thread's frames wait for sp_py_place. */
	if (r.kind == SP_EH_TRAMP) {
		w->tramps++;
	} else {
		if (w->py)
			w->nat[w->n & SP_EH_MAX_FRAMES] = pc;
		else
			s->ips[(w->base + w->n) & (EH_IPS - 1)] = pc;
		w->n++;
		w->last = 0;
	}
	switch (r.kind) {
	case SP_EH_RSP:
	case SP_EH_TRAMP:
		cfa = w->sp + r.cfa_off;
		break;
	case SP_EH_RBP:
		if (!w->bp_ok) {
			w->stop = SP_EH_STOP_RBP;
			return 1;
		}
		cfa = w->bp + r.cfa_off;
		break;
	case SP_EH_PLT:
		cfa = w->sp + 8 + ((pc & 15) >= r.cfa_off ? 8 : 0);
		r.rbp = 0;
		break;
	case SP_EH_END:
		w->stop = SP_EH_STOP_END;
		return 1;
	case SP_EH_SIGNAL:
		/* The words read are not a frame's own: not a walk to keep. */
		w->pure = 0;
		/* rsp is at the ucontext; its uc_mcontext (struct sigcontext) starts 40 bytes in. */
		if (eh_read(&bp, w->sp + 40 + 80, w) || eh_read(&cfa, w->sp + 40 + 120, w) ||
		    eh_read(&ra, w->sp + 40 + 128, w))
			return 1;
		w->bp = bp;
		w->bp_ok = 1;
		w->sp = cfa;
		w->ip = ra;
		w->exact = 1;
		w->via_fp = 0;
		goto next;
	case SP_EH_CANNOT:
		w->stop = SP_EH_STOP_CANNOT;
		return 1;
	default: /* SP_EH_GAP, or no row: frame pointers */
		if (!r.fp_why)
			r.fp_why = SP_EH_FP_NO_ROW;
		eh_stat(r.fp_why);
		if (!w->bp_ok || w->bp < w->sp || !w->bp) {
			w->stop = w->bp ? SP_EH_STOP_NO_FP : SP_EH_STOP_FP_END;
			return 1;
		}
		cfa = w->bp + 16;
		r.rbp = -2;
		break;
	}
	if (cfa <= w->sp) {
		w->stop = SP_EH_STOP_NOT_UP;
		return 1;
	}
	if (r.rbp == -2) {
		/* rbp saved right below the return address (push %rbp first). */
		if (eh_read(&ra, cfa - 8, w) || eh_read(&bp, cfa - 16, w))
			return 1;
		w->bp = bp;
		w->bp_ok = 1;
	} else {
		if (eh_read(&ra, cfa - 8, w))
			return 1;
		if (r.rbp == SP_EH_RBP_LOST) {
			w->bp_ok = 0;
		} else if (r.rbp) {
			if (eh_read(&bp, cfa + (__s64)r.rbp * 8, w))
				return 1;
			w->bp = bp;
			w->bp_ok = 1;
		}
	}
	if (w->tramp && ra == w->tramp) {
		struct return_instance *ri = (struct return_instance *)w->ri;

		w->pure = 0; /* the uretprobe's list, not the stack */
		if (!ri) {
			w->stop = SP_EH_STOP_NOT_EXEC;
			return 1;
		}
		ra = BPF_CORE_READ(ri, orig_ret_vaddr);
		w->ri = (__u64)BPF_CORE_READ(ri, next);
	}
	w->sp = cfa;
	w->ip = ra;
	w->exact = 0;
	w->via_fp = r.kind != SP_EH_RSP && r.kind != SP_EH_RBP && r.kind != SP_EH_PLT && r.kind != SP_EH_TRAMP;
	/* Where this frame's step read the caller's rbp, for a later walk to check; then the caller's state. */
	cur->f[(w->n - 1) & SP_EH_MAX_FRAMES].bpslot = r.rbp == SP_EH_RBP_LOST ? 0 : r.rbp;
	eh_keep_state(w, cur, w->n);
	if (!ra) {
		w->stop = SP_EH_STOP_FP_END;
		return 1;
	}
	/* Without the process's mappings, at least a user address: rbp may be any data in code without frame pointers. */
	if (!w->maps_nr && (ra < 4096 || ra >= (1ull << 47))) {
		w->stop = SP_EH_STOP_NOT_EXEC;
		return 1;
	}
next:
	if (w->n >= SP_EH_MAX_FRAMES) {
		w->stop = SP_EH_STOP_DEPTH;
		return 1;
	}
	return 0;
}

/*
 * One entry of a Python thread's chain: the next native frame, or, for an
 * eval-loop frame, the Python frames it ran in its place, innermost first
 * (python.bpf.h).  1 when the chain is whole or full.
 */
static long py_merge_step(__u32 i, void *unused)
{
	__u32 zero = 0;
	struct sp_eh_sample *s = bpf_map_lookup_elem(&eh_scratch, &zero);
	struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero);
	struct py_walk *py = bpf_map_lookup_elem(&py_walks, &zero);
	__u64 pc, e;

	if (!s || !w || !py)
		return 1;
	if (py->in_group) {
		e = py_group_next(py);
	} else if (py->mi >= w->n || py->mi > SP_EH_MAX_FRAMES) {
		if (!py_after_short(w->stop) || py->next >= py->n)
			return 1;
		e = py_after_next(py);
	} else {
		pc = w->nat[py->mi & SP_EH_MAX_FRAMES];
		/* The first frame is where the thread was (unless a uretprobe moved it); the others return there. */
		e = py_is_eval(py, py->mi || !w->exact0 ? pc - 1 : pc) ? py_group_start(py) : 0;
		py->mi++;
		if (!e)
			e = pc;
	}
	if (e) {
		s->ips[(w->base + py->mo) & (EH_IPS - 1)] = e;
		py->mo++;
	}
	return py->mo >= SP_EH_MAX_FRAMES;
}

/*
 * After the native walk of a Python thread: its native frames (in nat)
 * and its Python frames merged into the chain, 127 entries at most, and
 * the walk's end counted.  Global: verified once, alone.
 */
__noinline int sp_py_place(void)
{
	__u32 zero = 0;
	struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero);
	struct py_walk *py = bpf_map_lookup_elem(&py_walks, &zero);

	if (!w || !py)
		return 0;
	py->mi = py->mo = 0;
	py->in_group = 0;
	py->after = 0;
	bpf_loop(2 * SP_EH_MAX_FRAMES + 2, py_merge_step, NULL, 0);
	/* Native frames that no longer fit: the chain is full, as at a depth stop. */
	if (py->mi < w->n && w->stop != SP_EH_STOP_DEPTH)
		w->stop = SP_EH_STOP_DEPTH;
	w->n = py->mo;
	py->tramps = w->tramps;
	py_end(py, w->stop);
	return 0;
}

/*
 * The kept chain's frame j, the walk's frame d: its words checked against
 * the stack now, then the frame written as the walk would have.  1: the
 * tail is done (w->stop says how), -1: a word differs or cannot be read,
 * and the walk goes on from its own state instead.
 */
static __always_inline int eh_tail_frame(struct eh_walk *w, struct sp_eh_sample *s, struct eh_kept *old,
					 struct eh_kept *cur, __u32 j, __u32 d, bool copy)
{
	struct eh_kframe *f, *g;
	__u64 ra, bp;

	if (j >= old->n) {
		w->n = d;
		w->stop = old->stop;
		w->last = old->last;
		if (w->last && copy)
			cur->f[d & SP_EH_MAX_FRAMES] = old->f[j & SP_EH_MAX_FRAMES];
		return 1;
	}
	if (d >= SP_EH_MAX_FRAMES) {
		/* Full before the kept chain's end: the chain is right, its next state unknown, so not kept. */
		w->n = d;
		w->stop = SP_EH_STOP_DEPTH;
		w->pure = 0;
		return 1;
	}
	/* Bounded where the verifier sees it: the compiler may merge the masks with the checks above. */
	barrier_var(d);
	barrier_var(j);
	f = &old->f[j & SP_EH_MAX_FRAMES];
	if (j + 1 < old->n || old->last) {
		g = &old->f[(j + 1) & SP_EH_MAX_FRAMES];
		/* The words this frame's step read: the return address below the CFA, and the caller's rbp. */
		if (eh_read(&ra, g->sp - 8, w) || ra != g->ip || (w->tramp && ra == w->tramp))
			return -1;
		if (f->bpslot && (eh_read(&bp, g->sp + (__s64)f->bpslot * 8, w) || bp != g->bp))
			return -1;
	}
	if (w->py)
		w->nat[d & SP_EH_MAX_FRAMES] = f->ip;
	else
		s->ips[(w->base + d) & (EH_IPS - 1)] = f->ip;
	if (copy)
		cur->f[d & SP_EH_MAX_FRAMES] = *f;
	return 0;
}

/* One frame of the tail, as bpf_loop steps it (one step verified, whatever the depth). */
static long eh_tail_step(__u32 i, void *copy)
{
	__u32 zero = 0;
	struct sp_eh_sample *s = bpf_map_lookup_elem(&eh_scratch, &zero);
	struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero);
	struct eh_kept *old, *cur;
	int e;

	if (!s || !w)
		return 1;
	old = bpf_map_lookup_elem(&eh_kslots, &w->kold);
	cur = bpf_map_lookup_elem(&eh_kslots, &w->kcur);
	if (!old || !cur)
		return 1;
	e = eh_tail_frame(w, s, old, cur, w->tail_c + i, w->tail_d + i, w->whole);
	if (e < 0)
		w->stop = EH_STOP_TAIL;
	return e != 0;
}

/*
 * The walk reached a state of the thread's kept chain: the rest of the
 * chain from it, if its words still hold, else the walk on from there.
 * Global: verified once, alone.
 */
__noinline int sp_eh_tail(void)
{
	__u32 zero = 0, c, d;
	struct sp_eh_sample *s = bpf_map_lookup_elem(&eh_scratch, &zero);
	struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero);
	struct eh_kept *old, *cur;

	if (!s || !w)
		return 0;
	old = bpf_map_lookup_elem(&eh_kslots, &w->kold);
	cur = bpf_map_lookup_elem(&eh_kslots, &w->kcur);
	if (!old || !cur)
		return 0;
	c = w->tail_c;
	d = w->tail_d;
	/*
	 * The tail at the depth it was (the usual case): the kept chain stays
	 * where it is and takes the new leaf frames (sp_eh_keep), so the tail is
	 * not copied; elsewhere the whole chain is made anew in the spare slot.
	 */
	w->whole = !(c == d && d <= EH_KEEP_FAST);
	w->stop = 0;
	bpf_loop(SP_EH_MAX_FRAMES + 1, eh_tail_step, NULL, 0);
	if (w->stop && w->stop != EH_STOP_TAIL) {
		eh_stat(SP_EH_KEPT_TAKEN);
		__u64 *v = bpf_map_lookup_elem(&eh_stats, &(__u32){ SP_EH_KEPT_FRAMES });

		if (v)
			*v += w->n - w->tail_d;
		old->used = ++w->kused;
		return 0;
	}
	eh_stat(SP_EH_KEPT_MISMATCH);
	/* Changed: no use for it any more. */
	old->tid = 0;
	w->n = w->tail_d;
	w->stop = 0;
	w->kn = 0;
	/* cur.f[n]: the state the walk goes on from, which the tail's first frame equalled. */
	cur->f[w->n & SP_EH_MAX_FRAMES] = old->f[c & SP_EH_MAX_FRAMES];
	w->last = 1;
	w->whole = 1;
	bpf_loop(SP_EH_MAX_FRAMES, eh_step, NULL, 0);
	return 0;
}

/* Stops whose cause is the walk's state and the words it kept, nothing else. */
static __always_inline bool eh_stop_kept(__u32 stop)
{
	return stop == SP_EH_STOP_END || stop == SP_EH_STOP_FP_END || stop == SP_EH_STOP_DEPTH ||
	       stop == SP_EH_STOP_CANNOT || stop == SP_EH_STOP_NOT_UP || stop == SP_EH_STOP_RBP ||
	       stop == SP_EH_STOP_NO_FP;
}

/*
 * The chain just walked kept for the thread's next samples: the few leaf
 * frames written into its kept chain where only they changed above an
 * unchanged tail; else the spare slot becomes the thread's, and the slot
 * it had (or the one that served least lately) the spare.
 */
__noinline int sp_eh_keep(void)
{
	__u32 zero = 0, spare = EH_KSLOTS, oldest = ~0u;
	struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero);
	struct eh_kept *old = NULL, *cur, *k;

	if (!w || !w->pure || !eh_stop_kept(w->stop) || !w->n || w->n > SP_EH_MAX_FRAMES)
		return 0;
	cur = bpf_map_lookup_elem(&eh_kslots, &w->kcur);
	if (!cur)
		return 0;
	if (w->kn)
		old = bpf_map_lookup_elem(&eh_kslots, &w->kold);
	if (old && w->tail_d == w->tail_c && w->tail_d <= EH_KEEP_FAST && old->n == w->n && old->stop == w->stop &&
	    old->last == w->last) {
		for (int i = 0; i < EH_KEEP_FAST; i++)
			if (i < w->tail_d)
				old->f[i] = cur->f[i];
		return 0;
	}
	/* Consecutive states a walk made, or none: a chain with a gap could pass for another. */
	if (!w->whole)
		return 0;
	cur->n = w->n;
	cur->stop = w->stop;
	cur->last = w->last;
	cur->used = ++w->kused;
	if (old) {
		spare = w->kold;
	} else {
#pragma unroll
		for (int i = 0; i < EH_KSLOTS; i++) {
			__u32 key = i;

			k = bpf_map_lookup_elem(&eh_kslots, &key);
			if (!k || key == w->kcur)
				continue;
			if (!k->tid) {
				spare = i;
				break;
			}
			if (k->used < oldest) {
				oldest = k->used;
				spare = i;
			}
		}
	}
	k = bpf_map_lookup_elem(&eh_kslots, &spare);
	if (!k)
		return 0;
	k->tid = 0;
	cur->tid = w->tid;
	w->kcur = spare;
	return 0;
}

#define EH_C_VALID 1 /* c_* hold a lookup's result */
#define EH_C_SLICE 2 /* eh_procs has this image's slice */
#define EH_C_STALE 4 /* eh_procs has another image's (before an exec, or a pid's last owner) */
#define EH_C_PY 8    /* py_procs has this image's CPython: its walk looks the entry up itself */

/*
 * The process's entries into w->c_*, looked up only when this CPU's last
 * sample was another process's or image's, or user space changed the maps
 * since (eh_gen, read before the lookups: a change during them is seen by
 * the next sample).
 */
static __always_inline void eh_proc_facts(struct eh_walk *w, __u32 pid, __u64 ss)
{
	__u32 zero = 0, *g = bpf_map_lookup_elem(&eh_gen, &zero), ugen;
	struct sp_eh_proc *p;

	if (!g)
		return;
	ugen = *(volatile __u32 *)g;
	if ((w->c_flags & EH_C_VALID) && w->c_pid == pid && w->c_ss == ss && w->c_ugen == ugen)
		return;
	w->c_pid = pid;
	w->c_ss = ss;
	w->c_ugen = ugen;
	w->c_flags = EH_C_VALID;
	p = bpf_map_lookup_elem(&eh_procs, &pid);
	if (p && p->start_stack == ss) {
		w->c_first = p->first;
		w->c_nr = p->nr;
		w->c_gen = p->gen;
		if (p->nr)
			w->c_flags |= EH_C_SLICE;
	} else if (p) {
		w->c_flags |= EH_C_STALE;
	}
	/* A stale entry is counted by sp_py_begin, as before the cache: it is asked then. */
	if (py_walk && bpf_map_lookup_elem(&py_procs, &pid))
		w->c_flags |= EH_C_PY;
}

/*
 * The user chain of the current task into s->ips from index base (the
 * PERF_CONTEXT_USER marker first); returns the entries written, 0 for a
 * kernel thread.  ur: the interrupted registers (ip, sp, bp, cs) if they are
 * the user's, else NULL (the task's saved user registers are taken).
 */
static __always_inline __u32 eh_unwind_user(struct sp_eh_sample *s, __u32 base, const __u64 *ur)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 zero = 0, n, pid = task->tgid;
	struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero);
	struct eh_kept *cur, *k;
	struct pt_regs *regs;
	__u64 cs;

	if (!task->mm || (task->flags & EH_PF_KTHREAD)) {
		eh_stat(SP_EH_KTHREAD);
		return 0;
	}
	if (!w)
		return 0;
	if (w->kcur >= EH_KSLOTS)
		w->kcur = 0;
	cur = bpf_map_lookup_elem(&eh_kslots, &w->kcur);
	if (!cur)
		return 0;
	if (ur) {
		w->ip = ur[0];
		w->sp = ur[1];
		w->bp = ur[2];
		cs = ur[3];
	} else {
		regs = (struct pt_regs *)bpf_task_pt_regs(task);
		if (!regs)
			return 0;
		w->ip = BPF_CORE_READ(regs, ip);
		w->sp = BPF_CORE_READ(regs, sp);
		w->bp = BPF_CORE_READ(regs, bp);
		cs = BPF_CORE_READ(regs, cs);
	}
	/* A 32-bit task (__USER32_CS): 4-byte frames, which neither the tables nor this walk know. */
	if ((cs & 0xffff) != EH_USER_CS) {
		eh_stat(SP_EH_COMPAT);
		return 0;
	}
	w->pure = eh_keep;
	w->tramp = BPF_CORE_READ(task, mm, uprobes_state.xol_area, vaddr);
	w->ri = (__u64)BPF_CORE_READ(task, utask, return_instances);
	w->bp_ok = 1;
	w->exact = 1;
	w->via_fp = 0;
	/*
	 * Sampled in the trampoline itself: the function has returned and its
	 * uretprobe not yet run.  The thread is at the real return address in
	 * all but name (rsp as after the ret), as the kernel's fixup says too.
	 */
	if (w->tramp && w->ip == w->tramp && w->ri) {
		struct return_instance *ri = (struct return_instance *)w->ri;

		w->ip = BPF_CORE_READ(ri, orig_ret_vaddr);
		w->ri = (__u64)BPF_CORE_READ(ri, next);
		w->exact = 0;
		w->pure = 0;
	}
	w->n = 0;
	w->stop = 0;
	w->win_len = 0;
	w->base = base + 1;
	w->maps_first = w->maps_nr = 0;
	eh_proc_facts(w, pid, task->mm->start_stack);
	/* Mappings made for another image (before an exec, or a pid's last owner) would give wrong frames. */
	if (eh_vma_only) {
		/* as if no slice were there yet */
	} else if (w->c_flags & EH_C_SLICE) {
		w->maps_first = w->c_first;
		w->maps_nr = w->c_nr;
		w->gen = w->c_gen;
	} else if (w->c_flags & EH_C_STALE) {
		eh_stat(SP_EH_STOP_STALE);
	}
	/*
	 * No slice yet: the mappings the kernel's vmas gave serve this image's
	 * next samples on this CPU too, whose mm may be locked then (a new
	 * process maps and faults a lot).  Its own generation, which no
	 * slice's (a counter from 1) reaches: the process and its stack, which
	 * an exec moves.
	 */
	if (!w->maps_nr)
		w->gen = ((__u32)(task->mm->start_stack >> 4) ^ (pid << 12)) | 0x80000000u;
	s->ips[base & (EH_IPS - 1)] = (__u64)-512; /* PERF_CONTEXT_USER */
	w->py = (w->c_flags & EH_C_PY) ? sp_py_begin() : 0;
	w->exact0 = w->exact;
	w->tramps = 0;
	/* The spare slot is no chain while it is written. */
	cur->tid = 0;
	eh_keep_state(w, cur, 0);
	w->kn = w->kc = 0;
	w->whole = 1;
	w->tid = (__u32)bpf_get_current_pid_tgid();
	if (!w->maps_nr)
		w->pure = 0;
	if (w->pure) {
		cur->pid = pid;
		cur->gen = w->gen;
		cur->start_stack = task->mm->start_stack;
		cur->py = w->py;
		/* Another process's, another image's or another slice's chain had other rules or another stack. */
#pragma unroll
		for (int i = 0; i < EH_KSLOTS; i++) {
			__u32 key = i;

			k = bpf_map_lookup_elem(&eh_kslots, &key);
			if (k && key != w->kcur && k->tid == w->tid && k->pid == pid && k->gen == w->gen &&
			    k->start_stack == cur->start_stack && k->py == w->py && k->n && k->n <= SP_EH_MAX_FRAMES) {
				w->kold = key;
				w->kn = k->n;
				break;
			}
		}
	}
	bpf_loop(SP_EH_MAX_FRAMES, eh_step, NULL, 0);
	if (w->stop == EH_STOP_TAIL)
		sp_eh_tail();
	if (w->pure)
		sp_eh_keep();
	if (w->py)
		sp_py_place();
	eh_stat(SP_EH_CHAINS);
	eh_stat(w->stop && w->stop < SP_EH_STAT_MAX ? w->stop : SP_EH_STOP_DEPTH);
	n = w->n;
	if (n > SP_EH_MAX_FRAMES)
		n = SP_EH_MAX_FRAMES;
	__u64 *f = bpf_map_lookup_elem(&eh_stats, &(__u32){ SP_EH_FRAMES });
	if (f)
		*f += n;
	return n ? n + 1 : 0;
}

#endif
