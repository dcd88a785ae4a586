/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User stacks unwound in BPF from .eh_frame rows (--call-graph ehframe).
 *
 * User space turns each file's CFI into sorted rows (user/sys/ehframe.c) in
 * the chunks of `eh_rows`, once per file however many processes map it, and
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

/*
 * What a walk depended on, for a program that reuses a chain while it
 * provably would come out the same (offcpu.bpf.c): each stack word read
 * (address and value), and whether anything else went into it (a mapping
 * from the kernel's vmas, a frame-pointer step, a fault, a uretprobe's
 * return instance).  No-ops unless the includer defines them.
 */
#ifndef EH_NOTE_READ
#define EH_NOTE_READ(addr, val) ((void)0)
#endif
#ifndef EH_NOTE_UNSURE
#define EH_NOTE_UNSURE() ((void)0)
#endif
/*
 * The sampling program's tail cache (ehkeep.bpf.h): a hook at each step's
 * start that ends the loop where a kept chain may take over, one before the
 * walk, and the walk itself with the tail taken.  The plain walk otherwise.
 */
#ifndef EH_KEEP_STEP
#define EH_KEEP_STEP() 0
#define EH_KEEP_BEGIN(w, pid, ss) ((void)0)
#define EH_KEEP_WALK(w) bpf_loop(SP_EH_MAX_FRAMES, eh_step, NULL, 0)
#define EH_KEEP_END() ((void)0)
#endif

/*
 * The walk's big pieces (sp_eh_unwind, sp_eh_rule, sp_hs_step and the
 * prologue and epilogue decoders) are global functions, each verified once
 * alone.  Debian's 6.1 counts a bpf_loop callback as a call and holds the
 * frames of a chain of calls to 512 bytes together, rounded to 32 each: a
 * program with a large frame of its own (offcpu_btf: 232 bytes, where
 * on_sample_eh keeps 40) defines EH_WALK_INLINE and has them inline, as
 * before (6.1: "combined stack size of 4 calls is 544" otherwise).
 */
#ifdef EH_WALK_INLINE
#define EH_WALK_FN static __always_inline
#else
#define EH_WALK_FN __noinline
#endif

/* Tests: every walk finds its mappings from the kernel's vmas, as a new process's first do. */
const volatile bool eh_vma_only = false;

/*
 * The unwind tables, a map each: alike in form because libbpf wants each
 * map's BTF written out, different in what they hold and how they are
 * keyed (arrays by index, hashes by pid and by file).
 */

/*
 * The rows of every file, in chunks of SP_EH_CHUNK_ROWS that user space
 * makes as the rows fill them (mmapable arrays, all alike, so that a
 * lookup in one is inlined as in a plain array).  One array of 5M rows was
 * zeroed whole by the kernel at every start (8-10 ms of the recorder's
 * ~90), where a host's tables take 1-12 MB; a chunk made later costs only
 * whoever fills it.  A file's rows never straddle two chunks.
 */
struct eh_chunk {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* the template; with ehframe on, user space's first chunk (ehsource.c) */
	/* Sizes, not types: reached only through the outer map, clang writes the row's BTF as a forward. */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct sp_eh_row));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, SP_EH_CHUNKS);
	__type(key, __u32);
	__array(values, struct eh_chunk);
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
	__u64 room[SP_EH_MAX_FRAMES]; /* never sent: a kept tail's copy into ips is bounded by its size alone (ehkeep.bpf.h) */
};

/* Per CPU: the sample being built (too large for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_eh_sample);
} eh_scratch SEC(".maps");

/*
 * For measuring only (tools/sample_turns.sh): with eh_cost_turns' entry a
 * mask of EH_COST_*, every other sample on each CPU goes without those
 * parts (its record then wrong, or not sent), and each arm's ns from the
 * program's start to its end, and its user walk's, go to eh_cost_cpus by
 * the sample's mode: what each part costs, by turns in one run.
 */
#define EH_COST_KEEPS 1	  /* the -p/-t filter (sample_keeps) */
#define EH_COST_IDS 2	  /* the attach cookie, ktime and cpu calls */
#define EH_COST_KSTACK 4  /* the kernel chain of a kernel-mode sample */
#define EH_COST_RING 8	  /* the ring output */
#define EH_COST_USER 16	  /* the whole user walk */
#define EH_COST_RULES 32  /* the rule cache bypassed: the mapping and row searches at every frame */
#define EH_COST_NONE 64	  /* nothing left out: both arms alike, the method's own noise */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} eh_cost_turns SEC(".maps");

/* ab: [arm * 8 + user-mode * 4 + i], i: 0 ns, 1 samples, 2 walk ns, 3 frames. */
struct eh_cost {
	__u32 turn, skip;
	__u64 t0, tw;
	__u64 ab[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct eh_cost);
} eh_cost_cpus SEC(".maps");

/*
 * Whether the recorder may be measured by turns (SPANPERF_BENCH_TURNS, set by
 * tools/sample_turns.sh).  Off, the verifier drops every eh_cost part as
 * dead code before its fixups: they were 21 of on_sample_eh's ~185 inlined
 * map lookups, each a patch that recopies the program's per-insn data.
 */
const volatile bool eh_cost_on = false;

/* This CPU's entry when measuring by turns, else NULL. */
static __always_inline struct eh_cost *eh_cost_cpu(void)
{
	__u32 zero = 0, *m;

	if (!eh_cost_on)
		return NULL;
	m = bpf_map_lookup_elem(&eh_cost_turns, &zero);

	return m && *m ? bpf_map_lookup_elem(&eh_cost_cpus, &zero) : NULL;
}

/*
 * A sample's turn begins.  The state is kept in the map, not in the
 * program's frame: 6.1 holds the frames of the program and the walk's calls
 * to 512 bytes together.
 */
static __always_inline void eh_cost_begin(void)
{
	__u32 zero = 0, *m;
	struct eh_cost *c = eh_cost_cpu();

	if (!c)
		return;
	m = bpf_map_lookup_elem(&eh_cost_turns, &zero);
	if (!m)
		return;
	c->turn ^= 1;
	c->skip = c->turn ? *m : 0;
	c->t0 = bpf_ktime_get_ns();
}

/* The user walk's time: begin, then end. */
static __always_inline void eh_cost_walk(bool begin)
{
	struct eh_cost *c = eh_cost_cpu();

	if (c)
		c->tw = begin ? bpf_ktime_get_ns() : bpf_ktime_get_ns() - c->tw;
}

/* The sample's turn ends: its time and its walk's, by its arm and mode. */
static __always_inline void eh_cost_end(bool user, __u32 nu)
{
	struct eh_cost *c = eh_cost_cpu();
	__u32 i;

	if (!c)
		return;
	i = (c->turn << 3 | (__u32)user << 2) & 12;
	c->ab[i] += bpf_ktime_get_ns() - c->t0;
	c->ab[i + 1]++;
	c->ab[i + 2] += c->tw;
	c->ab[i + 3] += nu;
	c->tw = 0;
}

/* The walk's part of this sample's mask: 0 unless measuring. */
static __always_inline __u32 eh_cost_skip(void)
{
	struct eh_cost *c = eh_cost_cpu();

	return c ? c->skip : 0;
}

static __always_inline void eh_stat(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&eh_stats, &idx);

	if (v)
		*v += 1;
}

/*
 * A rare event counted (no mm, a 32-bit task, a stale slice, a lost
 * record): one global function, one inlined lookup in the program,
 * where each eh_stat is a patch that makes the kernel recopy the program's
 * per-insn data at load; its call (~20 ns) is off the per-frame path.
 */
__noinline int sp_eh_rare(__u32 idx)
{
	eh_stat(idx);
	return 0;
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

/* A binary search's bounds, as bpf_loop steps it: one step verified, whatever the table's size. */
struct eh_search {
	__u64 key;
	__u32 lo, hi;
};

/*
 * The walk's state, per CPU in a map rather than on the stack: the verifier
 * tracks no value kept in a map, so every step of the loop looks the same
 * to it and one step is verified, where stack values (the frame count,
 * the stop reason) would make each of the 127 steps a state of its own.
 */
struct eh_walk {
	__u64 ip, sp, bp;
	/*
	 * rbx, for a frame whose CFA is at rbx (SP_EH_RBX): the sampled value,
	 * or where a frame below saved it (bx_at, 0: none did); bx_ok 0 once a
	 * step could not tell.  rdi, the sampled value, for vfork's first frame.
	 */
	__u64 bx, bx_at, di;
	__u32 bx_ok, di_ok;
	__u32 n, base;	 /* user frames written; where they start in ips[] */
	__u32 bp_ok;	 /* bp holds the frame's rbp */
	__u32 exact;	 /* ip is not a return address (the first frame, or after a signal frame) */
	__u32 via_fp;	 /* ip was read by frame pointer, from code whose rows were not at hand */
	__u32 fp_wait;	 /* a step by frame pointer for want of a table not built yet: frames may be missing */
	__u32 stop;	 /* enum sp_eh_stat, 0 while going on */
	__u32 py;	 /* the thread's Python frames are in py_walks, to put in place of its eval-loop frames */
	__u32 exact0;	 /* the first frame's exact, for sp_py_place */
	__u32 tramps;	 /* -X perf trampolines crossed */
	__u32 next_vma;	 /* the cache slot the next lookup fills */
	__u32 vhit;	 /* the entry eh_map_cached (or eh_fresh_find) found */
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
	__u64 tramp_ra;		   /* sp_eh_tramp's: kept off the walk's stack */
	__u64 word;		   /* sp_eh_window's word read alone (across two pages) */
	__u8 tramp_code[32];	   /* the trampoline's bytes, as sp_eh_tramp read them */
	/* eh_tramp_decode's position and counts: volatile, or the compiler keeps them in registers. */
	volatile __u32 tr_i, tr_depth, tr_n, tr_found, tr_k;
	volatile __s32 tr_r;	   /* its answer, as it returns it */
	__u32 tr_check;		   /* EH_TR_*: the next step first sees if its pc is in the trampoline */
	__u32 keep;		   /* the sampling program's tail cache logs this walk (ehkeep.bpf.h) */
	/*
	 * The tail cache's log of this walk (ehkeep.bpf.h), here rather than in
	 * its per-CPU entry: each word read and unsure step notes it, which then
	 * needs no lookup of that entry (each an inlined lookup, a patch at load).
	 */
	__u32 keep_fi, keep_nw, keep_sure, keep_over, keep_spare;
	__u32 cost_skip;	   /* eh_cost_skip's, for the walk */
	struct sp_eh_map v[EH_VMAS]; /* mappings looked up, kept from one sample to the next */
	__u32 vgen[EH_VMAS];	     /* the generation each was looked up under (0: empty) */
	struct sp_eh_map vtmp;	     /* one looked up whose file's table is not built yet: not kept */
	__u64 ur_cs, ur_r13, ur_rbx, ur_rdi; /* the interrupted user registers beside ip, sp, bp, when the caller has them */
	struct eh_rule rule;	     /* sp_eh_rule's answer */
	struct eh_search q;	     /* the binary search under way (EH_SEARCH_STEP) */
	struct eh_cached cache[EH_CACHE];
	__u8 win[EH_WIN + 16];	   /* room for a word at any offset the mask lets through */
	__u64 nat[SP_EH_MAX_FRAMES + 1]; /* with py: the native frames, which sp_py_place merges with the Python ones */
	__u64 nat_room[SP_EH_MAX_FRAMES]; /* never read: a kept tail's copy into nat is bounded by its size alone */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct eh_walk);
} eh_walks SEC(".maps");

#include "hotspot.bpf.h"

/* tr_check: set where a frame's pc may be the trampoline's (the first, and after a signal frame). */
#define EH_TR_CHECK 1
#define EH_TR_IN_CALL 2	/* in the kernel's handler of the trampoline's syscall */
#define EH_TR_FIRST 4	/* the first frame: its exact goes to exact0 too */

/*
 * One step of a binary search of `map` for the first entry whose `field`
 * is above the walk's q.key; the search is over when lo == hi.  A macro, to
 * write the step once for both tables: a bpf_loop callback must name its
 * map as a constant, and the keys differ in width (a mapping's start, a
 * row's pc).  The bounds are in the map, not on the caller's stack: there
 * the verifier tracked them, and each step's narrower bounds were a state
 * of their own (6.18: the rows' step processed 4,070 times for its 32
 * instructions, a step per state until the search's end).
 */
#define EH_SEARCH_STEP(name, map, type, field)                      \
	static long name(__u32 i, void *ctx)                        \
	{                                                           \
		__u32 zero = 0, mid;                                \
		struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero); \
		type *e;                                            \
                                                                    \
		if (!w || w->q.lo >= w->q.hi)                       \
			return 1;                                   \
		mid = w->q.lo + (w->q.hi - w->q.lo) / 2;            \
		e = bpf_map_lookup_elem(map, &mid);                 \
		if (!e) {                                           \
			w->q.lo = w->q.hi = 0;                      \
			return 1;                                   \
		}                                                   \
		if (e->field <= w->q.key)                           \
			w->q.lo = mid + 1;                          \
		else                                                \
			w->q.hi = mid;                              \
		return 0;                                           \
	}

EH_SEARCH_STEP(eh_map_search_step, &eh_maps, struct sp_eh_map, start)
/* ctx: the file's chunk (a map), looked up once per search, not at each step. */
EH_SEARCH_STEP(eh_row_search_step, *(void **)ctx, struct sp_eh_row, pc)

/* The mapping that holds pc among those kept under this walk's generation, or NULL. */
static __always_inline struct sp_eh_map *eh_map_cached(struct eh_walk *w, __u64 pc)
{
	for (int i = 0; i < EH_VMAS; i++)
		if (w->vgen[i] == w->gen && pc >= w->v[i].start && pc < w->v[i].end) {
			/*
			 * The index read back through the map: the verifier then
			 * knows one pointer into v, where &w->v[i] was eight, each
			 * going on through the rows' search as a state of its own.
			 */
			w->vhit = i;
			return &w->v[*(volatile __u32 *)&w->vhit & (EH_VMAS - 1)];
		}
	return NULL;
}

/* The executable mapping that holds pc, from the process's slice (kept for its next samples); NULL if none. */
static __always_inline struct sp_eh_map *eh_map_of(struct eh_walk *w, __u64 pc)
{
	struct sp_eh_map *m;
	__u32 slot, idx;

	w->q.key = pc;
	w->q.lo = w->maps_first;
	w->q.hi = w->maps_first + w->maps_nr;
	bpf_loop(SP_EH_SEARCH_STEPS, eh_map_search_step, NULL, 0);
	if (w->q.lo <= w->maps_first || w->q.lo < w->q.hi)
		return NULL;
	idx = w->q.lo - 1;
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
 * A process exec'd while recording: its executable mappings as they were
 * made, noted outside the sampling interrupt (on_exec_eh, on_mmap_eh in
 * sample.bpf.c), where bpf_find_vma works every time.  In the interrupt it
 * works once per run, and a new process's first samples, before user space
 * has read its mappings (2 ms and more after the exec on a busy host), need
 * one lookup per file of the chain: without these, a gcc build's as and gcc
 * lost about a fifth of their chains (tools/shortlived.py).  Only the
 * process's first EH_FRESH_NS are served so, and only the main thread's
 * mmaps are noted (one writer per entry): by then user space's slice holds
 * them, and a library mapped later by another thread over one unmapped
 * since cannot be taken for it.  A forked child starts with a copy of its
 * parent's entry (eh_fork in sample.bpf.c): the same mappings, then its own.
 */
#define EH_FRESH_MAPS 16
#define EH_FRESH_NS 200000000ull

struct eh_fresh {
	__u64 start_stack; /* the image's (0 while it is being set up): another after an exec */
	__u64 exec_ns;
	__u32 n, pad; /* m[0, n) are written; one whose found is EH_VMA_NONE was mapped over */
	struct eh_vma_find m[EH_FRESH_MAPS];
};

/* Process id -> its fresh mappings; sized from user space. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct eh_fresh);
} eh_fresh SEC(".maps");

/* Into *f the noted mapping of this walk's process that holds pc; false if none is known so. */
static __always_inline bool eh_fresh_find(struct eh_walk *w, __u64 pc, struct eh_vma_find *f)
{
	__u32 pid = w->c_pid, n, i;
	struct eh_fresh *e = bpf_map_lookup_elem(&eh_fresh, &pid);

	if (!e || e->start_stack != w->c_ss || bpf_ktime_get_ns() - e->exec_ns > EH_FRESH_NS)
		return false;
	n = *(volatile __u32 *)&e->n;
	w->vhit = EH_FRESH_MAPS;
	for (i = 0; i < EH_FRESH_MAPS; i++) {
		if (i >= n)
			break;
		if (pc >= e->m[i].start && pc < e->m[i].end && e->m[i].found != EH_VMA_NONE) {
			w->vhit = i;
			break;
		}
	}
	/* Copied once, at an index read back through the map: in the loop, the verifier checked a copy per entry. */
	i = *(volatile __u32 *)&w->vhit;
	if (i >= EH_FRESH_MAPS)
		return false;
	*f = e->m[i & (EH_FRESH_MAPS - 1)];
	return true;
}

/*
 * The mapping that holds pc when the process's own slice is not there yet
 * (a process that started or exec'ed since user space last looked, which on
 * a starved host is tens of ms): as noted at its exec and mmaps (eh_fresh),
 * else the kernel's vma; either way its file's rows are
 * found by inode, as every process's are shared.  The mapping is put in
 * w->v[slot] (returned) or, when its file's table is not built yet, in
 * w->vtmp (EH_VMAS returned); -EH_EBUSY when the mm could not be looked at
 * (its lock held: frame pointers then), -1 when no executable mapping
 * holds pc.
 *
 * Global: verified once, alone, where inline in sp_eh_rule it was
 * verified again for each way the rule's search reached it (a slice's
 * miss, no slice), with the 16 noted mappings' loop and bpf_find_vma's
 * callback each time.  It runs only for a process whose slice user space
 * has not made yet, or a mapping newer than its slice.
 */
EH_WALK_FN int sp_eh_map_vma(__u64 pc)
{
	__u32 zero = 0;
	struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero);
	struct eh_vma_find f = {};
	struct sp_eh_file *file;
	struct sp_eh_map *m;
	__u32 slot = EH_VMAS;
	bool fresh;
	long e;

	if (!w)
		return -1;
	fresh = eh_fresh_find(w, pc, &f);
	e = fresh ? 0 : bpf_find_vma(bpf_get_current_task_btf(), pc, eh_vma_cb, &f, 0);
	if (e == -EH_EBUSY)
		return -EH_EBUSY;
	if (e || f.found == EH_VMA_NONE || f.found == EH_VMA_NOEXEC)
		return -1;
	eh_stat(fresh ? SP_EH_FRESH : SP_EH_VMA_LOOKUP);
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
		return slot;
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
	return slot;
}

/* sp_eh_map_vma's mapping, or NULL; *busy when the mm could not be looked at. */
static __always_inline struct sp_eh_map *eh_map_of_vma(struct eh_walk *w, __u64 pc, bool *busy)
{
	int r = sp_eh_map_vma(pc);

	*busy = r == -EH_EBUSY;
	if (r < 0 || r > EH_VMAS)
		return NULL;
	return r == EH_VMAS ? &w->vtmp : &w->v[r & (EH_VMAS - 1)];
}

/* The last row at or below off among the mapping's file's rows, or NULL. */
static __always_inline struct sp_eh_row *eh_row_of(struct eh_walk *w, const struct sp_eh_map *v, __u64 off)
{
	__u32 page = off >> SP_EH_PAGE_SHIFT, idx, chunk = v->first >> SP_EH_CHUNK_SHIFT;
	__u32 first = v->first & (SP_EH_CHUNK_ROWS - 1); /* within the chunk */
	struct sp_eh_page *pg;
	void *rows;

	if (off > 0xffffffffull || page < v->page0)
		return NULL;
	rows = bpf_map_lookup_elem(&eh_rows, &chunk);
	if (!rows)
		return NULL;
	w->q.key = off;
	if (page - v->page0 >= v->npages) {
		w->q.lo = w->q.hi = first + v->nr; /* past the last page: the last row */
	} else {
		idx = v->pages + page - v->page0;
		pg = bpf_map_lookup_elem(&eh_pages, &idx);
		if (!pg)
			return NULL;
		w->q.lo = first + pg->lo;
		w->q.hi = first + pg->hi;
	}
	bpf_loop(SP_EH_SEARCH_STEPS, eh_row_search_step, &rows, 0);
	if (w->q.lo <= first || w->q.lo < w->q.hi)
		return NULL; /* before the first row, a fault, or a table too large to search */
	idx = w->q.lo - 1;
	return bpf_map_lookup_elem(rows, &idx);
}

/*
 * eh_read's slow path, for a word outside the stack window: the window
 * read again from the frame's rsp when that is on addr's page (what a frame
 * saves lies between its rsp and its CFA), else from addr, up to the page's
 * end; or a word across two pages read alone, into w->word.  0 when the
 * window holds addr's word, 1 when w->word does, -1 at a fault (w->stop
 * says so).  Global: verified once, where inline at each of eh_step's
 * eight reads its three ends went on through the rest of the step as
 * states of their own (on_sample_eh on 6.18: the step's instructions
 * processed 11,138 so, 6,916 now).  It runs at a window's miss only,
 * beside a read of user memory that costs about 100 ns.
 */
EH_WALK_FN int sp_eh_window(__u64 addr)
{
	__u32 zero = 0;
	struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero);
	__u64 base, len;

	if (!w)
		return -1;
	if ((addr & (EH_WIN - 1)) > EH_WIN - 8) {
		/* A word across two pages: read it alone. */
		if (bpf_probe_read_user(&w->word, 8, (void *)addr))
			goto fault;
		return 1;
	}
	base = w->sp <= addr && (w->sp ^ addr) < EH_WIN ? w->sp : addr;
	len = EH_WIN - (base & (EH_WIN - 1));
	w->win_len = 0;
	if (len > EH_WIN || len < 8)
		goto fault;
	if (bpf_probe_read_user(w->win, len, (void *)base))
		goto fault;
	w->win_base = base;
	w->win_len = len;
	return 0;
fault:
	EH_NOTE_UNSURE();
	w->stop = SP_EH_STOP_READ;
	return -1;
}

/* The window's word at off, in one load (sp_load_u64: not a byte at a time). */
static __always_inline __u64 eh_win_word(const struct eh_walk *w, __u64 off)
{
	return sp_load_u64(&w->win[off & (EH_WIN - 1)]);
}

/* The user word at addr, from the stack window, which sp_eh_window reads again when addr is outside it. */
static __always_inline int eh_read(__u64 *dst, __u64 addr, struct eh_walk *w)
{
	int r = 0;

	if (addr - w->win_base >= w->win_len || addr - w->win_base + 8 > w->win_len)
		r = sp_eh_window(addr);
	if (r < 0)
		return -1;
	*dst = r ? w->word : eh_win_word(w, addr - w->win_base);
	EH_NOTE_READ(addr, *dst);
	return 0;
}

/*
 * A pc in the uretprobe trampoline (x86: `int3` before 6.11; on 6.11+ three
 * pushes, a mov of the syscall's number, `syscall`, then two pops and `ret`,
 * 50 51 41 53 48 c7 c0 nr 0f 05 41 5b 59 c3 on 6.18) stands for the real
 * return address of the function that returned into it, as the kernel's
 * fixup says of its first byte; the walk goes on from there (w->exact 0),
 * or its chain ends in the trampoline and loses the function returned to.
 * Before the trap into the kernel, and in the kernel's handler before it
 * has taken the return instance (EH_TR_IN_CALL: the syscall's orig_ax not
 * yet cleared), the address is the task's next return instance's and rsp is
 * below the caller's by the pushes; after it, the kernel has left the
 * address on the stack under the registers the pops restore.  The bytes are
 * read from the trampoline itself: their layout is the kernel's to change,
 * and what is not known here is left to the walk as before.
 *
 * eh_tramp_decode: the trampoline's part, for the pc at tramp+k, from its
 * bytes in w->tramp_code: -1 (none of these), 1 << 8 | bytes pushed (the
 * return instance's address), or 2 << 8 | where the address is above rsp.
 * Its position and counts are kept in the map, where the verifier does not
 * follow their values: in registers, each sequence of instructions decoded
 * made states of its own (Debian's 6.1: offcpu_btf's 137,029 instructions
 * processed became 903,880; 139,124 so).  The walk's own state is kept in
 * the map for the same reason.  eh_tramp_in_one: one instruction before the
 * syscall, 1 when the answer is in w->tr_r or the syscall is reached
 * (w->tr_found 2).
 */
static __always_inline long eh_tramp_in_one(struct eh_walk *w)
{
	__u32 i = w->tr_i, k = w->tr_k;
	__u8 op, op1;

	if (i >= k) {
		w->tr_r = i == k ? 1 << 8 | (w->tr_depth & 0xff) : -1;
		return 1;
	}
	op = w->tramp_code[i & 31];
	op1 = w->tramp_code[(i + 1) & 31];
	if (op == 0xcc) { /* int3: its handler's pc is past it */
		w->tr_r = i + 1 == k ? 1 << 8 | (w->tr_depth & 0xff) : -1;
		return 1;
	}
	if (op == 0x0f && op1 == 0x05) { /* syscall */
		if (i + 2 == k && (w->tr_check & EH_TR_IN_CALL)) {
			w->tr_r = 1 << 8 | (w->tr_depth & 0xff);
			return 1;
		}
		w->tr_i = i + 2;
		w->tr_found = 2;
		return 1;
	}
	if (op >= 0x50 && op <= 0x57) { /* push */
		w->tr_depth += 8;
		w->tr_i = i + 1;
	} else if (op == 0x41 && op1 >= 0x50 && op1 <= 0x57) {
		w->tr_depth += 8;
		w->tr_i = i + 2;
	} else if (op == 0x48 && op1 == 0xc7 && (w->tramp_code[(i + 2) & 31] & 0xf8) == 0xc0) {
		w->tr_i = i + 7; /* mov $imm32, %r */
	} else if (op >= 0xb8 && op <= 0xbf) {
		w->tr_i = i + 5;
	} else {
		return 1;
	}
	return 0;
}

/* After the trap: the pops still to run from k, then the return address. */
static __always_inline long eh_tramp_out_one(struct eh_walk *w)
{
	__u32 i = w->tr_i;
	__u8 op, op1;

	if (i == w->tr_k)
		w->tr_found = 1;
	op = w->tramp_code[i & 31];
	op1 = w->tramp_code[(i + 1) & 31];
	if (op == 0xc3) { /* ret */
		w->tr_r = w->tr_found == 1 ? 2 << 8 | (w->tr_n & 0xff) : -1;
		return 1;
	}
	if (op >= 0x58 && op <= 0x5f) { /* pop */
		w->tr_i = i + 1;
	} else if (op == 0x41 && op1 >= 0x58 && op1 <= 0x5f) {
		w->tr_i = i + 2;
	} else {
		return 1;
	}
	if (w->tr_found == 1)
		w->tr_n += 8;
	return 0;
}

#ifndef EH_WALK_INLINE
/*
 * Each instruction decoded a bpf_loop step: verified once, where the
 * loops' 8 and 4 steps were each walked by the verifier with every branch
 * of the decode (6.18: 1,697 instructions processed for sp_eh_tramp).
 */
static long eh_tramp_in_step(__u32 j, void *unused)
{
	__u32 zero = 0;
	struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero);

	return w ? eh_tramp_in_one(w) : 1;
}

static long eh_tramp_out_step(__u32 j, void *unused)
{
	__u32 zero = 0;
	struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero);

	return w ? eh_tramp_out_one(w) : 1;
}
#endif

static __always_inline int eh_tramp_decode(struct eh_walk *w, __u64 k)
{
	w->tr_i = 0;
	w->tr_depth = 0;
	w->tr_n = 0;
	w->tr_found = 0;
	w->tr_r = -1;
	w->tr_k = k;
#ifdef EH_WALK_INLINE
	/* The off-CPU program: no frame more for 6.1's 512 bytes of a chain of calls. */
	for (int j = 0; j < 8; j++) {
		barrier_var(w); /* its fields' addresses not kept in registers: no stack taken */
		if (eh_tramp_in_one(w))
			break;
	}
#else
	bpf_loop(8, eh_tramp_in_step, NULL, 0);
#endif
	if (w->tr_found != 2)
		return w->tr_r;
	w->tr_found = 0;
#ifdef EH_WALK_INLINE
	for (int j = 0; j < 4; j++) {
		barrier_var(w);
		if (eh_tramp_out_one(w))
			break;
	}
#else
	bpf_loop(4, eh_tramp_out_step, NULL, 0);
#endif
	return w->tr_r;
}

/*
 * The walk's pc, where it is in the trampoline, made the one it stands for
 * (w->tr_check says how): 1 if it was.  A global function, verified once
 * on its own.  It keeps next to nothing on the stack: the program, a walk's
 * step (6.1 counts a bpf_loop callback as a call) and this frame share 512
 * bytes, of which offcpu_btf and eh_step take 448 and on_sample_eh and
 * eh_step 480 (each frame rounded up to 32).
 */
__noinline int sp_eh_tramp(void)
{
	__u32 zero = 0;
	struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero);
	struct return_instance *ri;
	__u64 k;
	int r;

	if (!w || !w->tramp || !w->exact)
		return 0;
	k = w->ip - w->tramp;
	if (k >= 24)
		return 0;
	if (!k) {
		r = 1 << 8;
	} else {
		if (bpf_probe_read_user(w->tramp_code, sizeof(w->tramp_code), (void *)w->tramp))
			return 0;
		r = eh_tramp_decode(w, k);
		if (r < 0)
			return 0;
	}
	if (r >> 8 == 1) {
		ri = (struct return_instance *)w->ri;
		if (!ri || bpf_core_read(&w->ip, sizeof(w->ip), &ri->orig_ret_vaddr) ||
		    bpf_core_read(&w->ri, sizeof(w->ri), &ri->next))
			return 0;
	} else {
		if (eh_read(&w->tramp_ra, w->sp + (r & 0xff), w))
			return 0;
		w->ip = w->tramp_ra;
		w->sp += 8;
	}
	EH_NOTE_UNSURE();
	w->sp += r & 0xff;
	w->exact = 0;
	if (w->tr_check & EH_TR_FIRST)
		w->exact0 = 0;
	return 1;
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

static __always_inline __u32 eh_cache_slot(__u64 look)
{
	return (look ^ (look >> 9)) & (EH_CACHE - 1);
}

/*
 * Whether the cached entry is look's rule under this walk's slice.  Only
 * rules found through a slice are cached, under its generation, which a
 * slice made again (an unmap, an exec, a table rebuilt) never reuses.
 */
static __always_inline bool eh_cache_hit(const struct eh_walk *w, const struct eh_cached *ce, __u64 look)
{
	return w->maps_nr && ce->pc == look && ce->gen == w->gen && !(w->cost_skip & EH_COST_RULES);
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
	struct eh_cached *ce = &w->cache[eh_cache_slot(look)];
	struct sp_eh_map *v = NULL;
	struct sp_eh_row *row;
	bool busy = false, newer = false;

	if (eh_cache_hit(w, ce, look)) {
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
		EH_NOTE_UNSURE();
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
		row = eh_row_of(w, v, look - v->start + v->pgoff);
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

/*
 * eh_rule_of as a global function, its answer in w->rule: verified once,
 * alone, rather than inline in eh_step where each of its ends (a cached
 * rule, a row, each reason for frame pointers, each constant it stores)
 * went on through the rest of the step as a state of its own.  1 when the
 * walk ends here.
 */
EH_WALK_FN int sp_eh_rule(__u64 pc)
{
	__u32 zero = 0;
	struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero);

	if (!w)
		return 1;
	w->rule.kind = SP_EH_GAP;
	w->rule.rbp = 0;
	w->rule.cfa_off = 0;
	w->rule.fp_why = 0;
	return eh_rule_of(w, pc, &w->rule);
}

/* One frame: write pc, then find the caller's registers.  1 ends the loop. */
static long eh_step(__u32 i, void *unused)
{
	struct eh_rule r;
	struct eh_cached *ce;
	__u32 zero = 0;
	struct sp_eh_sample *s = bpf_map_lookup_elem(&eh_scratch, &zero);
	struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero);
	struct hs_walk *hs = bpf_map_lookup_elem(&hs_walks, &zero);
	__u64 pc, cfa, ra, bp;
	__u32 kind;

	if (!s || !w)
		return 1;
	if (EH_KEEP_STEP())
		return 1;
	/*
	 * Here, where the step's state is the least, rather than where the
	 * walk learns of the frame: a call in the program's or the step's
	 * thick of things kept the verifier from pruning their states
	 * (on_sample_eh on 6.18: 85,329 instructions processed, 441,383 with
	 * a call there that returned at once).  tramp is 0 in a process
	 * without uretprobes.
	 */
	if (w->tr_check && w->tramp) {
		sp_eh_tramp();
		w->tr_check = 0;
	}
	pc = w->ip;
	/* A JVM's code cache: Java frames, stepped by the JVM's own layout (hotspot.bpf.h). */
	if (hs && hs_in_cache(hs, pc)) {
		EH_NOTE_UNSURE();
		w->bx_ok = 0;
		w->di_ok = 0;
		return sp_hs_step() ? 1 : 0;
	}
	/*
	 * The rule from the CPU's cache here, sp_eh_rule (the searches) called
	 * on a miss only: nearly every frame of a steady load hits, and the
	 * call cost 10-15 ns a frame (by turns in one run, workload spin).
	 */
	ce = &w->cache[eh_cache_slot(w->exact ? pc : pc - 1)];
	if (eh_cache_hit(w, ce, w->exact ? pc : pc - 1)) {
		r = ce->r;
	} else {
		if (sp_eh_rule(pc))
			return 1;
		r = w->rule;
	}
	kind = SP_EH_KIND(r.kind);
	/* A trampoline has no entry; a Python thread's frames wait for sp_py_place. */
	if (kind == SP_EH_TRAMP) {
		/* Its rule came from the bytes of anonymous code, which no stack word proves. */
		EH_NOTE_UNSURE();
		w->tramps++;
	} else {
		if (w->py)
			w->nat[w->n & SP_EH_MAX_FRAMES] = pc;
		else
			s->ips[(w->base + w->n) & (EH_IPS - 1)] = pc;
		w->n++;
	}
	ra = 0;
	switch (kind) {
	case SP_EH_RSP:
	case SP_EH_TRAMP:
		cfa = w->sp + r.cfa_off;
		break;
	case SP_EH_RBX:
		/* ld.so's lazy-binding trampoline: rbx as the frames below it left it. */
		if (!w->bx_ok) {
			w->stop = SP_EH_STOP_CANNOT;
			return 1;
		}
		if (w->bx_at) {
			if (eh_read(&cfa, w->bx_at, w))
				return 1;
		} else {
			EH_NOTE_UNSURE();
			cfa = w->bx;
		}
		cfa += r.cfa_off;
		break;
	case SP_EH_RA_RDI:
		/* vfork: its return address popped into rdi, which only the sampled registers hold (di_ok). */
		if (!w->di_ok) {
			w->stop = SP_EH_STOP_CANNOT;
			return 1;
		}
		EH_NOTE_UNSURE();
		cfa = w->sp + r.cfa_off;
		ra = w->di;
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
		w->bx_ok = 0;
		w->di_ok = 0;
		/* A signal taken in the uretprobe trampoline: its frame's pc is there. */
		w->tr_check = EH_TR_CHECK;
		goto next;
	case SP_EH_CANNOT:
		w->stop = SP_EH_STOP_CANNOT;
		return 1;
	default: /* SP_EH_GAP, or no row: frame pointers */
		if (!r.fp_why)
			r.fp_why = SP_EH_FP_NO_ROW;
		EH_NOTE_UNSURE();
		eh_stat(r.fp_why);
		if (r.fp_why == SP_EH_FP_NO_TABLE || r.fp_why == SP_EH_FP_NO_PROC)
			w->fp_wait = 1;
		if (!w->bp_ok || w->bp < w->sp || !w->bp) {
			w->stop = w->bp ? SP_EH_STOP_NO_FP : SP_EH_STOP_FP_END;
			return 1;
		}
		cfa = w->bp + 16;
		r.rbp = -2;
		w->bx_ok = 0;
		break;
	}
	/*
	 * The kind and the rbp rule read back through the map: each case left
	 * them constants, which the branches below made the verifier follow
	 * through the rest of the step as a state per case.
	 */
	w->rule.rbp = r.rbp;
	r.rbp = *(volatile __s8 *)&w->rule.rbp;
	kind = SP_EH_KIND(*(volatile __u8 *)&w->rule.kind);
	/* vfork's CFA is its rsp: the return address was popped, not read from the stack. */
	if (kind == SP_EH_RA_RDI) {
		if (cfa < w->sp) {
			w->stop = SP_EH_STOP_NOT_UP;
			return 1;
		}
	} else if (cfa <= w->sp) {
		w->stop = SP_EH_STOP_NOT_UP;
		return 1;
	}
	/* Where this frame saved its caller's rbx, for an SP_EH_RBX frame above. */
	if (SP_EH_RBX_SLOT(r.kind) == SP_EH_RBX_LOST)
		w->bx_ok = 0;
	else if (SP_EH_RBX_SLOT(r.kind))
		w->bx_at = cfa - 8 * SP_EH_RBX_SLOT(r.kind);
	if (r.rbp == -2) {
		/* rbp saved right below the return address (push %rbp first). */
		if (eh_read(&ra, cfa - 8, w) || eh_read(&bp, cfa - 16, w))
			return 1;
		w->bp = bp;
		w->bp_ok = 1;
	} else {
		if (kind != SP_EH_RA_RDI && eh_read(&ra, cfa - 8, w))
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

		EH_NOTE_UNSURE();
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
	w->di_ok = 0; /* rdi is the sampled one in the first frame only */
	w->via_fp = kind != SP_EH_RSP && kind != SP_EH_RBP && kind != SP_EH_PLT && kind != SP_EH_TRAMP &&
		    kind != SP_EH_RBX && kind != SP_EH_RA_RDI;
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
	__u32 zero = 0, next, end, cnt, mo;
	struct sp_eh_sample *s = bpf_map_lookup_elem(&eh_scratch, &zero);
	struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero);
	struct py_walk *py = bpf_map_lookup_elem(&py_walks, &zero);
	__u64 pc, e, len;

	if (!s || !w || !py)
		return 1;
	if (py->mi >= w->n || py->mi > SP_EH_MAX_FRAMES) {
		if (!py_after_short(w->stop, w->fp_wait) || py->next >= py->n)
			return 1;
		e = py_after_next(py);
	} else {
		pc = w->nat[py->mi & SP_EH_MAX_FRAMES];
		py->mi++;
		e = pc;
		/* The first frame is where the thread was (unless a uretprobe moved it); the others return there. */
		if (py_is_eval(py, py->mi > 1 || !w->exact0 ? pc - 1 : pc)) {
			next = py->next;
			end = py_group(py);
			mo = py->mo;
			/*
			 * A group at once, one copy rather than a step an entry
			 * (pybusy.py's 20 frames: 516 ns a chain placed by steps);
			 * ips has SP_EH_MAX_FRAMES entries of room past EH_IPS.
			 */
			if (end > py->next && next < PY_ENT && mo < SP_EH_MAX_FRAMES) {
				cnt = end - next;
				if (cnt > SP_EH_MAX_FRAMES - mo)
					cnt = SP_EH_MAX_FRAMES - mo;
				/* Opaque, then masked: the verifier bounds the length by the mask alone. */
				len = (__u64)cnt * 8;
				barrier_var(len);
				len &= SP_EH_MAX_FRAMES * 8;
				if (bpf_probe_read_kernel(&s->ips[(w->base + mo) & (EH_IPS - 1)], len, &py->ent[next]))
					return 1;
				py->next = next + cnt;
				py->placed += cnt;
				py->mo = mo + cnt;
				return py->mo >= SP_EH_MAX_FRAMES;
			}
		}
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

#define EH_C_VALID 1 /* c_* hold a lookup's result */
#define EH_C_SLICE 2 /* eh_procs has this image's slice */
#define EH_C_STALE 4 /* eh_procs has another image's (before an exec, or a pid's last owner) */
#define EH_C_PY 8    /* py_procs has an entry: sp_py_begin looks it up itself and checks its image */
#define EH_C_HS 16   /* hs_procs has an entry (a JVM): sp_hs_begin likewise */

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
	if (py_walk && bpf_map_lookup_elem(&py_procs, &pid))
		w->c_flags |= EH_C_PY;
	if (hs_walk && bpf_map_lookup_elem(&hs_procs, &pid))
		w->c_flags |= EH_C_HS;
}

/*
 * The user chain of the current task into eh_scratch's ips from index base
 * (the PERF_CONTEXT_USER marker first); returns the entries written, 0 for
 * a kernel thread.  have_regs: the interrupted registers are the user's and
 * the caller put them in the walk (ip, sp, bp, ur_cs, ur_r13, ur_rbx, ur_rdi); else
 * the task's saved user registers are taken.
 *
 * Global: verified once, alone, with base and have_regs unknown.  Inlined,
 * the walk was verified again for each state its caller reached it in (a
 * sample in user or kernel mode, with or without a kernel chain): on 6.18,
 * on_sample_eh's 87,198 instructions processed and 175 ms of BPF_PROG_LOAD,
 * most of a recorder's start-up.  It takes no map value from its caller
 * (a global function's arguments are scalars or the context).
 */
EH_WALK_FN int sp_eh_unwind(__u32 base, __u32 have_regs)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 zero = 0, n, pid = task->tgid;
	struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero);
	struct sp_eh_sample *s = bpf_map_lookup_elem(&eh_scratch, &zero);
	/*
	 * Each load of a pointer through a trusted one costs the verifier
	 * lookups of the type's __safe_* lists by name, a scan of the kernel's
	 * BTF each (6.18: btf_find_by_name_kind, 6% of a recorder's start):
	 * task->mm is loaded once, task->utask not at all (below).
	 */
	struct mm_struct *mm = task->mm;
	struct xol_area *xa;
	struct pt_regs *regs;
	__u64 cs, r13, rbx, rdi, orig_ax = -1, ss;

	if (!mm || (task->flags & EH_PF_KTHREAD)) {
		sp_eh_rare(SP_EH_KTHREAD);
		return 0;
	}
	if (!w || !s)
		return 0;
	/*
	 * The uretprobe trampoline lives in the xol area, which a process has
	 * only once one of its threads hit a uprobe; its return instances
	 * matter only then.  utask by a probe read, not loaded: its load came
	 * after the two paths below, which the verifier visited each with
	 * the scans above (perf on the recorder, 6.18: btf_nested_type_is_trusted's
	 * samples halved without it); the read is paid in such processes alone.
	 */
	xa = mm->uprobes_state.xol_area;
	w->tramp = 0;
	w->ri = 0;
	if (xa) {
		struct uprobe_task *ut;

		w->tramp = xa->vaddr;
		/* Read into the map, not the stack, which 6.1 holds to 512 bytes along the calls. */
		if (!bpf_core_read(&w->ri, sizeof(w->ri), &task->utask) && (ut = (void *)w->ri))
			bpf_core_read(&w->ri, sizeof(w->ri), &ut->return_instances);
	}
	if (!have_regs) {
		regs = (struct pt_regs *)bpf_task_pt_regs(task);
		if (!regs)
			return 0;
		/* Loads through BTF pointers, not bpf_probe_read_kernel calls: a helper call each cost more than the load. */
		w->ip = regs->ip;
		w->sp = regs->sp;
		w->bp = regs->bp;
		w->ur_cs = regs->cs;
		w->ur_r13 = regs->r13;
		w->ur_rbx = regs->bx;
		w->ur_rdi = regs->di;
		orig_ax = regs->orig_ax;
	}
	/* Read from the map either way: one load of two kinds of pointer is refused. */
	cs = w->ur_cs;
	r13 = w->ur_r13;
	rbx = w->ur_rbx;
	rdi = w->ur_rdi;
	/* A 32-bit task (__USER32_CS): 4-byte frames, which neither the tables nor this walk know. */
	if ((cs & 0xffff) != EH_USER_CS) {
		sp_eh_rare(SP_EH_COMPAT);
		return 0;
	}
	ss = mm->start_stack;
	w->bp_ok = 1;
	w->bx = rbx;
	w->bx_at = 0;
	w->bx_ok = 1;
	w->di = rdi;
	w->di_ok = 1;
	w->exact = 1;
	w->via_fp = 0;
	w->fp_wait = 0;
	w->n = 0;
	w->stop = 0;
	w->win_len = 0;
	w->base = base + 1;
	/*
	 * Sampled in the trampoline: the function has returned and its
	 * uretprobe not yet run, or has run and the trampoline's `ret` not yet
	 * (a syscall's orig_ax, never negative: in the kernel's handler, the
	 * only syscall there).  Without a branch: one state for the verifier.
	 */
	w->tr_check = EH_TR_CHECK | EH_TR_FIRST | (__u32)((~orig_ax >> 63) << 1);
	w->maps_first = w->maps_nr = 0;
	w->cost_skip = eh_cost_skip();
	eh_proc_facts(w, pid, ss);
	/* Mappings made for another image (before an exec, or a pid's last owner) would give wrong frames. */
	if (eh_vma_only) {
		/* as if no slice were there yet */
	} else if (w->c_flags & EH_C_SLICE) {
		w->maps_first = w->c_first;
		w->maps_nr = w->c_nr;
		w->gen = w->c_gen;
	} else if (w->c_flags & EH_C_STALE) {
		sp_eh_rare(SP_EH_STOP_STALE);
	}
	/*
	 * No slice yet: the mappings the kernel's vmas gave serve this image's
	 * next samples on this CPU too, whose mm may be locked then (a new
	 * process maps and faults a lot).  Its own generation, which no
	 * slice's (a counter from 1) reaches: the process and its stack, which
	 * an exec moves.
	 */
	if (!w->maps_nr)
		w->gen = ((__u32)(ss >> 4) ^ (pid << 12)) | 0x80000000u;
	s->ips[base & (EH_IPS - 1)] = (__u64)-512; /* PERF_CONTEXT_USER */
	/*
	 * A JVM's walk set up only in a JVM: elsewhere its flag is cleared here,
	 * not by a call (the call was 20-40 ns of a 5-frame chain's ~1,000 ns,
	 * by turns in one run, workload spin).
	 */
	if (w->c_flags & EH_C_HS) {
		sp_hs_begin(r13, rbx, ss, 1);
	} else {
		struct hs_walk *h = bpf_map_lookup_elem(&hs_walks, &zero);

		if (h)
			h->on = 0;
	}
	/*
	 * Before the Python frames, which the tail cache times too (ehkeep.bpf.h);
	 * after the JVM's start, which takes r13 and rbx: kept across it, they
	 * grew this frame past 6.1's 512 bytes for the deepest chain of calls.
	 */
	EH_KEEP_BEGIN(w, pid, ss);
	w->py = (w->c_flags & EH_C_PY) ? sp_py_begin(ss) : 0;
	w->exact0 = w->exact;
	w->tramps = 0;
	EH_KEEP_WALK(w);
	if (w->py)
		sp_py_place();
	EH_KEEP_END();
	hs_end();
	n = w->n;
	if (n > SP_EH_MAX_FRAMES)
		n = SP_EH_MAX_FRAMES;
	eh_stat(SP_EH_CHAINS);
	eh_stat(w->stop && w->stop < SP_EH_STAT_MAX ? w->stop : SP_EH_STOP_DEPTH);
	__u64 *f = bpf_map_lookup_elem(&eh_stats, &(__u32){ SP_EH_FRAMES });
	if (f)
		*f += n;
	return n ? n + 1 : 0;
}


/* sp_eh_unwind's result, bounded again here: a global function's return value is any scalar to its caller. */
static __always_inline __u32 eh_unwind_user(__u32 base, __u32 have_regs)
{
	__u32 n = sp_eh_unwind(base, have_regs);

	return n <= SP_EH_MAX_FRAMES + 1 ? n : 0;
}

#endif
