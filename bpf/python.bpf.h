/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CPython frames in the user chains that ehframe.bpf.h unwinds.
 *
 * A thread running Python has, for each C call of the eval loop
 * (_PyEval_EvalFrameDefault) on its native stack, a group of Python frames
 * that call ran.  Before the native walk, the thread's Python frames are
 * read here, innermost first, and marked where each group ends; the native
 * walk then puts a group in place of each eval-loop frame it meets, so that
 * C frames (extensions, callbacks into Python) keep their true order.  Each
 * Python frame is one chain entry, the code object and the instruction
 * (spanperf_abi.h's SP_PY_TAG): no strings, no line tables here; the
 * recorder names code objects once each.
 *
 * The thread state comes from CPython's pthread key as glibc keeps it at
 * the thread pointer (one read: it names threads that do not hold the GIL,
 * which 3.12's _Py_tss_tstate does not), else from the interpreter's thread
 * list.  From 3.11 a thread's frames lie next to each other in its data
 * stack, so one read of a window of it brings many.
 *
 * Everything read here is the process's own memory, which it may have
 * written to lie: pointers are checked to be aligned user addresses, a
 * frame met twice ends the chain before it, owners and instruction
 * pointers out of range end it or lose the line; every stop is counted.
 * A chain is never longer than the native one could be (127 entries).
 */
#ifndef SP_PYTHON_BPF_H
#define SP_PYTHON_BPF_H

#include "spanperf_abi.h"

/* Set when the recorder follows Python processes; off, the code below is dead at load. */
const volatile bool py_walk = false;
/* -v: time the reading of Python frames. */
const volatile bool py_timing = false;

/* Process id -> its CPython's layout; sized from user space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct sp_py_proc);
} py_procs SEC(".maps");

/* Why walks ended (enum sp_py_stat): one entry, a count per stat (struct sp_py_counts). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_py_counts);
} py_stats SEC(".maps");

#define PY_ENT 128	/* entries kept: SP_PY_MAX_FRAMES and one, a power of two for masks */
/*
 * A window of a data stack read at once: frames are 88 to 256 bytes apart
 * (112 to 142 on average), so 2 KiB brings 15 or so for about what four
 * single reads cost (a read is ~100 ns whatever its size up to ~100 bytes).
 */
#define PY_WIN 2048
#define PY_HDR_MAX 128	 /* bytes of one frame the walk reads, at most */
#define PY_LIST_MAX 64	 /* thread states passed over in the thread list */
/* Frames this far above the newest chunk's start are taken to be in it (chunks are 16 KiB unless a frame needs more). */
#define PY_CHUNK_SPAN (1u << 20)
#define PY_USER_END (1ull << 47)

/*
 * One walk's state, per CPU in a map (too large for the stack; and values
 * kept in a map keep each bpf_loop step one state for the verifier).
 */
struct py_walk {
	struct sp_py_proc p;
	__u64 f;	  /* the next frame to read; the thread list's cursor before */
	__u64 ts;	  /* the thread state */
	__u64 tortoise;	  /* Brent's cycle check: a frame seen, renewed at powers of two */
	__u32 power, lam;
	__u64 chunk_lo;	  /* the newest data-stack chunk's first frame byte (0: none known) */
	__u64 wlo, whi;	  /* the window: user memory [wlo, whi) is at win[0] */
	__u64 match;	  /* the thread list: the value of ts_match that names this thread */
	__u32 n, next;	  /* entries read; the next one to place */
	__u32 gstart;	  /* reading: the first entry of the group (C call) being read */
	__u32 stop;	  /* why reading ended (enum sp_py_stat), 0: the thread's first frame reached */
	__u32 alone;	  /* an eval-loop frame found no entries left */
	__u32 placed;	  /* entries placed in the chain */
	__u32 reads, window; /* user reads, frames found in a window */
	__u32 tramps;
	__u32 mi, mo;	  /* placing: the next native frame to take, the chain entries written */
	__u32 dk;	  /* py_dedup_step's entry */
	__u32 after;	  /* entries placed after a native chain that ended short */
	__u64 ent[PY_ENT];  /* SP_PY_TAG entries, innermost first; 0: a C call that had no frame */
	__u64 fa[PY_ENT];   /* each entry's frame, to cut a cycle */
	__u8 last[PY_ENT];  /* the entry ends its C call's group */
	__u8 gend[PY_ENT];  /* at a group's first entry: the entry after its last (placed at once, one copy) */
	/* twice the window: a length masked with 2 * PY_WIN - 1, which the verifier takes, still fits */
	__u8 win[2 * PY_WIN + 2 * PY_HDR_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_walk);
} py_walks SEC(".maps");

static __always_inline void py_stat_add(__u32 idx, __u64 v)
{
	__u32 zero = 0;
	struct sp_py_counts *c = bpf_map_lookup_elem(&py_stats, &zero);
	__u64 i = idx;

	/* Opaque, so that the compiler keeps the 64-bit bound the verifier reads. */
	barrier_var(i);
	if (c && v && i < SP_PY_STAT_MAX)
		c->n[i] += v;
}

/* A read into the window buffer; len at most PY_WIN, masked so that the verifier knows it. */
static __always_inline int py_read(struct py_walk *py, void *dst, __u64 len, __u64 src)
{
	py->reads++;
	/* Opaque first: the compiler would drop a mask it knows to be no-op, and the verifier needs it. */
	barrier_var(len);
	return bpf_probe_read_user(dst, len & (2 * PY_WIN - 1), (void *)src);
}

/* A user pointer to 8-byte aligned data the interpreter could have made. */
static __always_inline bool py_ptr_ok(__u64 v)
{
	return v >= 4096 && v < PY_USER_END && !(v & 7);
}

/*
 * The header of frame f, from the window when it is there, else read
 * (with the part of the data stack below it, where f is in the newest
 * chunk); NULL if unreadable.
 */
static __always_inline __u8 *py_frame(struct py_walk *py, __u64 f)
{
	__u32 sz = py->p.f_size;
	__u64 lo = f, len;

	if (sz > PY_HDR_MAX || !sz)
		return NULL;
	if (f >= py->wlo && f + sz <= py->whi) {
		py->window++;
		return &py->win[(f - py->wlo) & (PY_WIN - 1)];
	}
	if (py->chunk_lo && f >= py->chunk_lo && f - py->chunk_lo < PY_CHUNK_SPAN) {
		lo = f + sz > PY_WIN ? f + sz - PY_WIN : 0;
		if (lo < py->chunk_lo)
			lo = py->chunk_lo;
	}
	len = f + sz - lo;
	if (len > PY_WIN || len < sz)
		len = sz, lo = f;
	py->wlo = py->whi = 0;
	if (py_read(py, py->win, len, lo)) {
		/* The window reached a page not mapped (a chunk smaller than thought): the frame alone. */
		if (lo == f || py_read(py, py->win, sz, f))
			return NULL;
		lo = f;
		len = sz;
	}
	py->wlo = lo;
	py->whi = lo + len;
	return &py->win[(f - lo) & (PY_WIN - 1)];
}

/* The group being read ends with the entries read so far. */
static __always_inline void py_group_end(struct py_walk *py)
{
	py->gend[py->gstart & (PY_ENT - 1)] = py->n;
	py->gstart = py->n;
}

static __always_inline void py_add(struct py_walk *py, __u64 ent, __u64 f, __u8 last)
{
	__u32 i = py->n & (PY_ENT - 1);

	py->ent[i] = ent;
	py->fa[i] = f;
	py->last[i] = last;
	py->n++;
	if (last)
		py_group_end(py);
}

/* One frame read into an entry, or a group ended at a shim; 1 ends the reading (py->stop says why). */
static long py_read_step(__u32 i, void *unused)
{
	__u32 zero = 0, idx1;
	struct py_walk *py = bpf_map_lookup_elem(&py_walks, &zero);
	__u64 f, code, prev, ip, base;
	__u8 *h, owner, last = 0;
	__s32 lasti;

	if (!py)
		return 1;
	f = py->f;
	if (!f)
		return 1;
	if (py->n >= SP_PY_MAX_FRAMES) {
		py->stop = SP_PY_STOP_DEPTH;
		return 1;
	}
	if (!py_ptr_ok(f)) {
		py->stop = SP_PY_STOP_BAD;
		return 1;
	}
	/* Brent: a frame equal to the one kept is a cycle; the chain is cut at its first repeat after. */
	if (f == py->tortoise) {
		py->stop = SP_PY_STOP_CYCLE;
		return 1;
	}
	if (py->power == py->lam) {
		py->tortoise = f;
		py->power <<= 1;
		py->lam = 0;
	}
	py->lam++;
	h = py_frame(py, f);
	if (!h) {
		py->stop = SP_PY_STOP_READ;
		return 1;
	}
	code = *(__u64 *)(h + (py->p.f_code & (PY_HDR_MAX - 8)));
	prev = *(__u64 *)(h + (py->p.f_prev & (PY_HDR_MAX - 8)));
	if (py->p.style == SP_PY_FRAMEOBJ) {
		lasti = *(__s32 *)(h + (py->p.f_instr & (PY_HDR_MAX - 4)));
		if (lasti < 0)
			idx1 = 0;
		else if (py->p.instr == SP_PY_LASTI_BYTES)
			idx1 = (__u32)lasti / 2 + 1;
		else
			idx1 = (__u32)lasti + 1;
		last = 1; /* each frame its own C call */
	} else {
		owner = h[py->p.f_owner & (PY_HDR_MAX - 1)];
		if (owner > py->p.owner_max) {
			py->stop = SP_PY_STOP_BAD;
			return 1;
		}
		if (owner == py->p.owner_cstack) {
			/* A shim: the C call whose frames came before it ends here; none came: an empty group. */
			if (py->n && !py->last[(py->n - 1) & (PY_ENT - 1)]) {
				py->last[(py->n - 1) & (PY_ENT - 1)] = 1;
				py_group_end(py);
			} else
				py_add(py, 0, f, 1);
			py->f = prev;
			return 0;
		}
		ip = *(__u64 *)(h + (py->p.f_instr & (PY_HDR_MAX - 8)));
		base = code + py->p.code_units;
		/* 3.11/3.12 point at the last instruction started, first - 1 before any: index + 1 from 0. */
		if (ip + 2 >= base && ip + 2 - base < (2ull << SP_PY_IDX_BITS) - 2 && !((ip - base) & 1))
			idx1 = (ip + 2 - base) / 2;
		else
			idx1 = SP_PY_IDX_UNKNOWN;
		if (py->p.style == SP_PY_IFRAME_ENTRY)
			last = h[py->p.f_entry & (PY_HDR_MAX - 1)] != 0;
	}
	if (!py_ptr_ok(code)) {
		py->stop = SP_PY_STOP_BAD;
		return 1;
	}
	if (idx1 > SP_PY_IDX_UNKNOWN)
		idx1 = SP_PY_IDX_UNKNOWN;
	py_add(py, SP_PY_TAG | ((__u64)idx1 << SP_PY_IDX_SHIFT) | (code >> 3), f, last);
	py->f = prev;
	return 0;
}

/* One thread state of the list: the one of this thread ends the search (py->ts). */
static long py_list_step(__u32 i, void *unused)
{
	__u32 zero = 0;
	struct py_walk *py = bpf_map_lookup_elem(&py_walks, &zero);
	__u64 ts, lo, v, next, len;

	if (!py)
		return 1;
	ts = py->f;
	if (!py_ptr_ok(ts))
		return 1;
	/* next and the thread's id in one read: next comes first in every version. */
	lo = ts + py->p.ts_next;
	if (py->p.ts_match < py->p.ts_next)
		return 1;
	len = (__u64)py->p.ts_match + 8 - py->p.ts_next;
	barrier_var(len);
	if (len > 2 * PY_HDR_MAX || py_read(py, py->win, len, lo))
		return 1;
	v = *(__u64 *)&py->win[(py->p.ts_match - py->p.ts_next) & (2 * PY_HDR_MAX - 8)];
	next = *(__u64 *)&py->win[0];
	if (v == py->match) {
		py->ts = ts;
		return 1;
	}
	py->f = next;
	return 0;
}

/* The interrupted thread's PyThreadState, 0 if none; -1 when it cannot be read. */
static __always_inline long py_tstate(struct py_walk *py, struct task_struct *task)
{
	__u64 fs = task->thread.fsbase, ts = 0, blk = 0, interp = 0;

	switch (py->p.tstate) {
	case SP_PY_TS_TSD:
		return py_read(py, &ts, 8, fs + py->p.tsd_off) ? -1 : (long)ts;
	case SP_PY_TS_TSD2:
		if (py_read(py, &blk, 8, fs + py->p.tsd_off))
			return -1;
		if (!blk)
			return 0;
		return py_read(py, &ts, 8, blk + py->p.tsd_off2) ? -1 : (long)ts;
	case SP_PY_TS_LIST:
		if (py_read(py, &interp, 8, py->p.runtime + py->p.rt_interp_head) || !py_ptr_ok(interp) ||
		    py_read(py, &py->f, 8, interp + py->p.is_threads_head))
			return -1;
		py->ts = 0;
		py->match = py->p.ts_match_tid ? (__u64)task->pid : fs;
		bpf_loop(PY_LIST_MAX, py_list_step, NULL, 0);
		py_stat_add(py->ts ? SP_PY_BY_LIST : SP_PY_LIST_MISS, 1);
		return py->ts;
	}
	return 0;
}

/* py_dedup_step's search of the entries before py->dk: 1 when done, py->n cut to dk if one has its frame. */
static long py_dedup_match(__u32 j, void *unused)
{
	__u32 zero = 0, k;
	struct py_walk *py = bpf_map_lookup_elem(&py_walks, &zero);

	if (!py)
		return 1;
	k = py->dk;
	if (j >= k)
		return 1;
	if (py->fa[j & (PY_ENT - 1)] == py->fa[k & (PY_ENT - 1)]) {
		py->n = k;
		return 1;
	}
	return 0;
}

/*
 * A stored chain with a cycle: cut at the first entry whose frame came
 * before.  The search of the entries before it a bpf_loop of its own: as
 * a loop here, the verifier walked its PY_ENT steps one by one (6.18:
 * 1,179 instructions processed for this step's 42).  Only a chain read
 * while its frames changed has a cycle.
 */
static long py_dedup_step(__u32 i, void *unused)
{
	__u32 zero = 0;
	struct py_walk *py = bpf_map_lookup_elem(&py_walks, &zero);

	if (!py || i >= py->n)
		return 1;
	py->dk = i & (PY_ENT - 1);
	bpf_loop(PY_ENT, py_dedup_match, NULL, 0);
	return py->n <= i;
}

/*
 * Before the native walk: the current thread's Python frames, if its
 * process runs CPython, read into py_walks.  1 when there are frames to
 * place (or at least a thread state, whose trampolines the walk crosses).
 * A function of its own (global: verified once, alone), so that its
 * branches do not multiply the states of the walk around it.  ss is the
 * process's mm->start_stack as sp_eh_unwind read it: loaded here through
 * the trusted task, mm cost 6.18's verifier scans of the kernel's BTF by
 * name (btf_find_by_name_kind), about a ms of every recorder's start.
 */
__noinline int sp_py_begin(__u64 ss)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 zero = 0, pid = task->tgid;
	struct py_walk *py = bpf_map_lookup_elem(&py_walks, &zero);
	struct sp_py_proc *p;
	struct sp_py_counts *c;
	/* Counted at one exit, by one lookup: each inlined lookup is a patch at load. */
	__u64 t0, first = 0, chunk = 0, len, why = SP_PY_STALE, reads = 0, ns = 0;
	long ts;
	int ok = 0;

	if (!py_walk || !py || !ss)
		return 0;
	p = bpf_map_lookup_elem(&py_procs, &pid);
	if (!p)
		return 0;
	if (p->start_stack != ss)
		goto out;
	t0 = py_timing ? bpf_ktime_get_ns() : 0;
	py->p = *p;
	py->n = py->next = py->stop = py->alone = py->placed = py->gstart = 0;
	py->reads = py->window = py->tramps = 0;
	py->wlo = py->whi = py->chunk_lo = 0;
	ts = py_tstate(py, task);
	if (ts <= 0) {
		why = ts ? SP_PY_STOP_TSTATE : SP_PY_NO_TSTATE;
		reads = py->reads;
		goto out;
	}
	/* The first frame's pointer and the data stack's newest chunk, one read where they are near. */
	if (py->p.ts_chunk != SP_PY_NONE && py->p.ts_chunk > py->p.ts_frame &&
	    py->p.ts_chunk + 8 - py->p.ts_frame <= 2 * PY_HDR_MAX) {
		len = (__u64)py->p.ts_chunk + 8 - py->p.ts_frame;
		barrier_var(len);
		if (len > 2 * PY_HDR_MAX || py_read(py, py->win, len, ts + py->p.ts_frame))
			goto fault;
		first = *(__u64 *)&py->win[0];
		chunk = *(__u64 *)&py->win[(py->p.ts_chunk - py->p.ts_frame) & (2 * PY_HDR_MAX - 8)];
	} else if (py_read(py, &first, 8, ts + py->p.ts_frame)) {
		goto fault;
	}
	if (py->p.cf_frame != SP_PY_NONE && first && py_read(py, &first, 8, first + py->p.cf_frame))
		goto fault;
	/* _PyStackChunk { previous, size, top, data[] }: frames from data on. */
	if (py_ptr_ok(chunk))
		py->chunk_lo = chunk + 24;
	py->f = first;
	py->tortoise = 0;
	py->power = py->lam = 1;
	bpf_loop(SP_PY_MAX_FRAMES + 1, py_read_step, NULL, 0);
	if (py->stop == SP_PY_STOP_CYCLE)
		bpf_loop(PY_ENT, py_dedup_step, NULL, 0);
	/* A group the reading cut short ends where it stopped. */
	if (py->n && py->n <= PY_ENT) {
		py->last[(py->n - 1) & (PY_ENT - 1)] = 1;
		if (py->gstart < py->n)
			py_group_end(py);
	}
	py->ts = ts;
	py->mi = py->mo = 0;
	if (py_timing)
		ns = bpf_ktime_get_ns() - t0;
	why = SP_PY_STAT_MAX; /* none */
	ok = 1;
	goto out;
fault:
	why = SP_PY_STOP_TSTATE;
	reads = py->reads;
out:
	c = bpf_map_lookup_elem(&py_stats, &zero);
	if (!c)
		return ok;
	/* One bound, opaque, as in py_end: 6.1's verifier follows it. */
	barrier_var(why);
	if (why < SP_PY_STAT_MAX)
		c->n[why]++;
	c->n[SP_PY_READS] += reads;
	c->n[SP_PY_NS] += ns;
	return ok;
}

/* Whether pc is in the eval loop's code. */
static __always_inline bool py_is_eval(const struct py_walk *py, __u64 pc)
{
	for (int i = 0; i < SP_PY_EVAL_RANGES; i++)
		if (pc - py->p.eval[i][0] < py->p.eval[i][1] - py->p.eval[i][0])
			return true;
	return false;
}

/*
 * At an eval-loop frame: the end of the next group to put in its place,
 * its entries [py->next, end), each a Python frame; py->next when the frame
 * stays as it is (no entries left: py->alone; or a C call that had no
 * Python frame, whose empty entry is passed over).  A reading cut at a
 * cycle's repeat ends its last group there.
 */
static __always_inline __u32 py_group(struct py_walk *py)
{
	__u32 i = py->next, end;

	if (i >= py->n || i >= PY_ENT) {
		py->alone = 1;
		return i;
	}
	if (!py->ent[i & (PY_ENT - 1)]) {
		py->next = i + 1;
		return i + 1;
	}
	end = py->gend[i & (PY_ENT - 1)];
	if (end > py->n)
		end = py->n;
	return end > i ? end : i + 1;
}

/*
 * Whether the return address pc is into a -X perf trampoline (3.12+): an
 * anonymous mapping whose bytes before it are the template's, pc at its
 * call's end (template + 6).  Its frame is rsp + 16 and rbp is untouched;
 * the walk crosses it without a chain entry, as the Python frames of the
 * eval loop it called say what it ran.  Global: verified once, alone.
 */
__noinline int sp_py_trampoline(__u64 pc)
{
	__u32 zero = 0, n;
	struct py_walk *py = bpf_map_lookup_elem(&py_walks, &zero);
	__u64 b[SP_PY_TRAMP_MAX / 8] = {}, t[SP_PY_TRAMP_MAX / 8], mask;

	if (!py)
		return 0;
	n = py->p.tramp_len;
	if (!n || n > SP_PY_TRAMP_MAX || pc < 4096 + 6 || pc > PY_USER_END ||
	    bpf_probe_read_user(b, sizeof(b), (void *)(pc - 6)))
		return 0;
	__builtin_memcpy(t, py->p.tramp, sizeof(t));
	/* The template's n bytes: the first word whole (n > 8 in 3.12 and 3.13), the rest masked. */
	mask = n >= 16 ? ~0ull : n > 8 ? (1ull << ((n - 8) * 8)) - 1 : 0;
	if (n < 8 || b[0] != t[0] || ((b[1] ^ t[1]) & mask))
		return 0;
	return 1;
}

/*
 * Whether the Python entries left when the native chain ended go after it:
 * when that walk was cut short (a library it has no table for yet, a
 * frame pointer it lacked), they are all outer to where it stopped, in
 * their order, and only the native frames between them are missing.  Not
 * after a whole native chain (entries left then are no frames of this
 * stack's) nor a full one.  A chain that took a frame-pointer step for want
 * of a table not built yet (fp_wait: a library loaded since, _json's on its
 * import) is no whole one, however it ended: code without frame pointers
 * there made it end at rbp 0 or skip the eval-loop frames of the outer
 * groups (763 of 2,107 chains of a 3.13 thread under json's C encoder, with
 * the recorder starved of CPU, lost their outer groups so, issue 42).
 */
static __always_inline bool py_after_short(__u32 eh_stop, __u32 fp_wait)
{
	if (eh_stop == SP_EH_STOP_DEPTH)
		return false;
	return fp_wait || (eh_stop != SP_EH_STOP_END && eh_stop != SP_EH_STOP_FP_END);
}

/* The next entry left, placed after the native chain; 0 for a C call's empty group (nothing to place). */
static __always_inline __u64 py_after_next(struct py_walk *py)
{
	__u32 i = py->next;
	__u64 e;

	if (i >= py->n || i >= PY_ENT)
		return 0;
	e = py->ent[i & (PY_ENT - 1)];
	py->next++;
	if (e) {
		py->placed++;
		py->after = 1;
	}
	return e;
}

/* After the native walk: why this chain's Python part ended, counted. */
static __always_inline void py_end(struct py_walk *py, __u32 eh_stop)
{
	__u32 left = py->next < py->n, zero = 0;
	__u64 why = SP_PY_STAT_MAX; /* none */
	/* One lookup for all of them: nine inlined lookups were nine patches at load. */
	struct sp_py_counts *c = bpf_map_lookup_elem(&py_stats, &zero);

	if (!c)
		return;
	c->n[SP_PY_CHAINS]++;
	c->n[SP_PY_FRAMES] += py->placed;
	c->n[SP_PY_READS] += py->reads;
	c->n[SP_PY_WINDOW] += py->window;
	c->n[SP_PY_TRAMPOLINES] += py->tramps;
	if (py->alone)
		c->n[SP_PY_EVAL_ALONE]++;
	if (py->after)
		c->n[SP_PY_AFTER]++;
	if (py->stop)
		why = py->stop;
	else if (left || py->after)
		why = eh_stop == SP_EH_STOP_DEPTH ? SP_PY_STOP_DEPTH : SP_PY_LEFT;
	else if (!py->alone)
		why = SP_PY_COMPLETE;
	/* One bound, opaque: `why && why < max` became one range test that 6.1's verifier cannot follow. */
	barrier_var(why);
	if (why < SP_PY_STAT_MAX)
		c->n[why]++;
}

#endif
