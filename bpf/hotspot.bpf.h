/* SPDX-License-Identifier: GPL-2.0 */
/*
 * HotSpot JVM frames in the user chains that ehframe.bpf.h unwinds.
 *
 * JIT code has no unwind tables and HotSpot keeps no frame pointers, but
 * the JVM describes itself (gHotSpotVMStructs, read in user space into the
 * `hs_procs` map): where its code cache lies, how a pc finds its CodeBlob
 * through a heap's segment map, and where a blob keeps its frame size.
 * When the native walk meets a pc in a JVM's code cache, one step here
 * takes the frame instead of frame pointers:
 * - the interpreter: rbp frames, Method* at fp[-3], bcp at fp[-8], the
 *   caller at fp[1], its sp at fp[-1] (cpu/x86/frame_x86.hpp);
 * - compiled code and stubs with a frame: the frame is frame_size words
 *   from sp, the return address and saved rbp its last two;
 * - the call stub, below the top: an rbp frame whose caller is libjvm,
 *   where the native walk goes on to the thread's root.
 * Each Java frame is one tagged word (spanperf_abi.h's SP_HS_TAG) that the
 * recorder names while the process lives.  Where a step cannot be made
 * safely (a top frame half built, a stub without a frame, a return
 * address that is no Java code's) the chain ends there, counted in
 * `hs_stats`: a wrong frame is worse than a short chain.
 *
 * Everything read is the process's to lie about: every read is bounded,
 * sp must move up, pointers must lie where the tables say.
 */
#ifndef SP_HOTSPOT_BPF_H
#define SP_HOTSPOT_BPF_H

#include "spanperf_abi.h"

/* Set when the recorder follows JVMs; off, the code below is dead at load. */
const volatile bool hs_walk = false;

/* Process id -> its JVM's layout; sized from user space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct sp_hs_proc);
} hs_procs SEC(".maps");

/* Why Java steps ended chains (enum sp_hs_stat): one entry, a count per stat (struct sp_hs_counts). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_hs_counts);
} hs_stats SEC(".maps");

#define HS_MAX_HOPS 16		/* segment-map hops: 4 is the most a blob a thread runs in needed */
#define HS_MAX_FRAME (1u << 20) /* bytes an interpreted frame or a caller's sp may be away */
#define HS_USER_END (1ull << 47)

#define HS_READ_MAX 512	/* the header buffer: a length masked with HS_READ_MAX - 1 fits */
#define HS_MEMO 4	/* Methods a walk remembers (hs_walk's memo_*): a power of 2 */

/* One walk's state: the process's layout and a blob header, per CPU. */
struct hs_walk {
	struct sp_hs_proc p;
	__u32 on;	/* the current process is a JVM this walk follows */
	__u32 reads;
	/*
	 * Frames of each kind this walk wrote (enum sp_hs_stat's COMPILED,
	 * INTERPRETED, CALL_STUB, INTERP_SLOT, PROLOGUE), added to hs_stats
	 * once at its end (hs_end): a lookup a frame was a patch at load each.
	 */
	__u32 compiled, interpreted, call_stub, interp_slot, prologue;
	__u32 epi_at;	/* sp_hs_epilogue's offset, kept here to be opaque to the verifier */
	__u32 epi_pop;	/* its `pop rbp` seen */
	__s32 epi_res;	/* its answer */
	__u32 pro_at, pro_below, pro_flags; /* sp_hs_prologue's state, likewise */
	__u32 pro_off;	/* its pc's offset from the verified entry */
	__s32 pro_res;	/* its steps' answer (hs_prologue_step) */
	__u64 pro_vep, pro_pc;	/* its input: the verified entry and the top pc */
	__u64 hop_map, hop_seg; /* hs_blob's segment map and segment, for its steps (hs_hop_step) */
	__s32 hop_tag;	/* the last tag read, -1 when it could not be */
	__u32 hop_heap;	/* hs_blob's heap, SP_HS_HEAPS for none */
	__u32 hop_pad;
	__u64 r13, rbx; /* the sampled registers (the interpreter's bcp and Method*), for the first frame */
	/*
	 * Methods whose ConstMethod this walk has read (hs_interp), HS_MEMO of
	 * them in turn: the same Method again (recursion, a loop of calls) is
	 * not read again.  Per walk only: what one walk read is what it would
	 * read again a frame later, while a Method and its ConstMethod may be
	 * freed and their memory reused between samples (class unloading).
	 */
	__u64 memo_m[HS_MEMO], memo_cm[HS_MEMO];
	__u16 memo_cs[HS_MEMO];	/* the ConstMethod's code size */
	__u32 memo_next;
	__u32 stk_n;	/* sp_hs_stack's input: words at stk_addr */
	__u64 stk_addr;
	__u64 slots[10]; /* an interpreted frame's fp-64 .. fp+16 */
	__u8 cm[64];	 /* a ConstMethod's header */
	__u8 hdr[HS_READ_MAX + 8]; /* a word at any offset the mask lets through */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hs_walk);
} hs_walks SEC(".maps");

/*
 * A Java walk's stop, counted.  One global function, not an inlined lookup
 * at each of ~18 stop sites: each inlined lookup is a patch that makes the
 * kernel recopy the sampling program's per-insn data at load, and a walk
 * stops once, so the call's ~20 ns is paid once per chain at most.
 */
__noinline int sp_hs_stop(__u32 why)
{
	__u32 zero = 0;
	struct sp_hs_counts *c = bpf_map_lookup_elem(&hs_stats, &zero);
	__u64 i = why;

	/* Opaque, so that the compiler keeps the 64-bit bound the verifier reads. */
	barrier_var(i);
	if (c && i < SP_HS_STAT_MAX)
		c->n[i]++;
	return 0;
}

static __always_inline int hs_read(struct hs_walk *h, void *dst, __u32 len, __u64 src)
{
	h->reads++;
	return bpf_probe_read_user(dst, len, (void *)src);
}

/* A read of a length known only at run time into the header buffer, masked so that the verifier knows it. */
static __always_inline int hs_read_hdr(struct hs_walk *h, __u32 len, __u64 src)
{
	h->reads++;
	barrier_var(len);
	return bpf_probe_read_user(h->hdr, len & (HS_READ_MAX - 1), (void *)src);
}

/*
 * Before the native walk: whether the current process is a JVM this walk
 * follows (its layout copied to hs_walks).  Global: verified once, alone.
 */
/*
 * jvm: the process has an entry in hs_procs, as this CPU's copy of its facts says (eh_proc_facts);
 * ss: its mm->start_stack, as sp_eh_unwind read it (see sp_py_begin).
 */
__noinline int sp_hs_begin(__u64 r13, __u64 rbx, __u64 ss, __u32 jvm)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 zero = 0, pid = task->tgid;
	struct hs_walk *h = bpf_map_lookup_elem(&hs_walks, &zero);
	struct sp_hs_proc *p;

	if (!h)
		return 0;
	h->on = 0;
	if (!hs_walk || !jvm || !ss)
		return 0;
	p = bpf_map_lookup_elem(&hs_procs, &pid);
	if (!p)
		return 0;
	if (p->start_stack != ss) {
		sp_hs_stop(SP_HS_STALE);
		return 0;
	}
	h->p = *p;
	h->on = 1;
	h->reads = 0;
	h->compiled = h->interpreted = h->call_stub = h->interp_slot = h->prologue = 0;
	h->r13 = r13;
	h->rbx = rbx;
#ifndef EH_WALK_INLINE
	for (int i = 0; i < HS_MEMO; i++)
		h->memo_m[i] = 0;
	h->memo_next = 0;
#endif
	return 1;
}

/* Whether pc lies in the JVM's code cache (a cheap test before each frame's own rules). */
static __always_inline bool hs_in_cache(const struct hs_walk *h, __u64 pc)
{
	return h->on && pc - h->p.cc_lo < h->p.cc_hi - h->p.cc_lo;
}

/* Whether a return address is one a Java frame may return to: code-cache code (the next step checks its blob). */
static __always_inline bool hs_ra_ok(const struct hs_walk *h, __u64 ra)
{
	return ra - h->p.cc_lo < h->p.cc_hi - h->p.cc_lo;
}

#ifndef EH_WALK_INLINE
/* ehframe.bpf.h's stack window, which Java frames' words are read from too. */
EH_WALK_FN int sp_eh_window(__u64 addr);
static __always_inline __u64 eh_win_word(const struct eh_walk *w, __u64 off);

/* n words of the window at off into h->slots (n: a constant inline, at most 10 in the global). */
static __always_inline void hs_win_copy(const struct eh_walk *w, struct hs_walk *h, __u64 off, __u32 n)
{
	for (__u32 i = 0; i < 10; i++)
		if (i < n)
			h->slots[i] = eh_win_word(w, off + 8 * i);
}

/*
 * hs_stack's miss: the window read again for h->stk_addr's words (a word
 * across the page's end read alone, as before).  Global, its state in the
 * map: inline, the live values across the window's call grew sp_hs_step's
 * frame past the 128 bytes that 6.1's 512 for the chain of calls leave it.
 */
EH_WALK_FN int sp_hs_stack(void)
{
	__u32 zero = 0, n;
	struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero);
	struct hs_walk *h = bpf_map_lookup_elem(&hs_walks, &zero);
	__u64 addr, off;

	if (!w || !h)
		return -1;
	addr = h->stk_addr;
	n = h->stk_n;
	if (n > 10)
		return -1;
	h->reads++;
	if (sp_eh_window(addr) < 0)
		return -1;
	off = addr - w->win_base;
	if (off >= w->win_len || off + 8 * n > w->win_len)
		return hs_read(h, h->slots, (8 * n) & 127, addr);
	hs_win_copy(w, h, off, n);
	return 0;
}

/*
 * n stack words from addr into h->slots, from the walk's stack window as
 * eh_read takes them (sp_hs_stack at a miss): a Java frame's words lie a
 * few hundred bytes from its callee's, so one read of the page serves a run
 * of frames, where each frame's own read cost about 100 ns (an interpreted
 * frame's 80 bytes, a compiled one's 16).
 */
static __always_inline int hs_stack(struct eh_walk *w, struct hs_walk *h, __u64 addr, __u32 n)
{
	__u64 off = addr - w->win_base;

	if (off < w->win_len && off + 8 * n <= w->win_len) {
		hs_win_copy(w, h, off, n);
		return 0;
	}
	h->stk_addr = addr;
	h->stk_n = n;
	return sp_hs_stack();
}
#else
/*
 * Inline (offcpu_btf, whose every piece is): one read each as before, and
 * no memo (hs_interp).  With the window and the memo inline, offcpu_btf
 * was 251,689 instructions processed on 6.18 (242,614 before) and 6.1's
 * verifier refused it (make vmtest's --off-cpu case); so, 242,634 and
 * loaded.
 */
static __always_inline int hs_stack(struct eh_walk *w, struct hs_walk *h, __u64 addr, __u32 n)
{
	return hs_read(h, h->slots, 8 * n, addr);
}
#endif

/* The value of an int field of the header read (0 past what was read). */
static __always_inline __s32 hs_s32(const struct hs_walk *h, __u32 off, __u32 len)
{
	if (off + 4 > len || off > SP_HS_HDR_MAX)
		return 0;
	return (__s32)sp_load_u32(&h->hdr[off & (HS_READ_MAX - 1)]);
}

static __always_inline __u64 hs_u64(const struct hs_walk *h, __u32 off, __u32 len)
{
	if (off + 8 > len || off > SP_HS_HDR_MAX)
		return 0;
	return sp_load_u64(&h->hdr[off & (HS_READ_MAX - 1)]);
}

/*
 * The frame at a pc in the interpreter: its entry and its caller's
 * registers.  1 ends the walk (w->stop set).
 */
static __always_inline int hs_interp(struct eh_walk *w, struct hs_walk *h, bool top, __u64 *ent)
{
	__u64 fp = w->bp, method, cm = 0, bcp, base, sender_sp;
	__u32 code_size = 0, cms = h->p.cm_size, bci1 = 0;
#ifndef EH_WALK_INLINE
	__u32 i;
#endif

	if (!w->bp_ok || fp < w->sp || fp - w->sp > HS_MAX_FRAME || (fp & 7)) {
		sp_hs_stop(SP_HS_STOP_INTERP);
		return 1;
	}
	if (hs_stack(w, h, fp - 64, 10)) {
		sp_hs_stop(SP_HS_STOP_READ);
		return 1;
	}
	method = h->slots[5];
	sender_sp = h->slots[7];
	if (method < 4096 || method >= HS_USER_END || (method & 7) || cms > sizeof(h->cm) || cms < 8 ||
	    h->p.cm_code_size + 2 > cms) {
		sp_hs_stop(SP_HS_STOP_INTERP);
		return 1;
	}
#ifdef EH_WALK_INLINE
	/* offcpu_btf (everything inline): one read each, as before (see hs_stack's). */
	if (hs_read(h, &cm, 8, method + h->p.m_constmethod) || cm < 4096 || cm >= HS_USER_END ||
	    hs_read(h, h->cm, sizeof(h->cm), cm)) {
		sp_hs_stop(SP_HS_STOP_INTERP);
		return 1;
	}
	code_size = *(__u16 *)&h->cm[h->p.cm_code_size & (sizeof(h->cm) - 2)];
#else
	for (i = 0; i < HS_MEMO; i++) {
		if (h->memo_m[i] == method) {
			cm = h->memo_cm[i];
			code_size = h->memo_cs[i];
		}
	}
	if (!cm) {
		/* Read into the next entry, which names no Method until the reads are done: on the stack, cm grew sp_hs_step's frame past 128 bytes. */
		i = h->memo_next & (HS_MEMO - 1);
		h->memo_m[i] = 0;
		if (hs_read(h, &h->memo_cm[i], 8, method + h->p.m_constmethod))
			cm = 0;
		else
			cm = h->memo_cm[i];
		if (cm < 4096 || cm >= HS_USER_END || hs_read(h, h->cm, sizeof(h->cm), cm)) {
			sp_hs_stop(SP_HS_STOP_INTERP);
			return 1;
		}
		code_size = *(__u16 *)&h->cm[h->p.cm_code_size & (sizeof(h->cm) - 2)];
		h->memo_cs[i] = code_size;
		h->memo_m[i] = method;
		h->memo_next++;
	}
#endif
	base = cm + cms;
	/*
	 * At the top the live bcp is r13 (the frame's slot is saved at calls
	 * only), but in the return entries, where a callee's frame is gone and
	 * r13 still its bcp, the frame at rbp is its caller's, whole, its slot
	 * the bcp of the call.
	 */
	bcp = top ? h->r13 : h->slots[0];
	if (top && bcp - base >= code_size && w->ip - h->p.ret_lo < h->p.ret_hi - h->p.ret_lo) {
		bcp = h->slots[0];
		h->interp_slot++;
	}
	if (bcp - base < code_size) {
		bci1 = bcp - base + 1;
	} else if (top || (code_size && bcp)) {
		/* A native method's frame holds no bcp (0, or its empty code's start). */
		sp_hs_stop(top ? SP_HS_STOP_INTERP_TOP : SP_HS_STOP_INTERP);
		return 1;
	}
	if (sender_sp < fp + 8 || sender_sp - fp > HS_MAX_FRAME || !hs_ra_ok(h, h->slots[9])) {
		sp_hs_stop(SP_HS_STOP_INTERP);
		return 1;
	}
	*ent = SP_HS_TAG | SP_HS_INTERP | ((__u64)bci1 << SP_HS_BCI_SHIFT) | (method >> 3);
	w->ip = h->slots[9];
	w->sp = sender_sp;
	w->bp = h->slots[8];
	w->bp_ok = 1;
	h->interpreted++;
	return 0;
}

/*
 * One hop back through the segment map: each tag is the distance back to
 * the block's first segment, or closer (heap.cpp's find_start).  1 ends the
 * hops, h->hop_tag the last tag (0: at the block's first segment).
 */
static __always_inline long hs_hop_one(struct hs_walk *h)
{
	__u64 seg = *(volatile __u64 *)&h->hop_seg;
	__u8 tag = 0;

	if (hs_read(h, &tag, 1, h->hop_map + seg)) {
		h->hop_tag = -1;
		return 1;
	}
	h->hop_tag = tag;
	if (!tag || tag == 0xff || tag > seg)
		return 1;
	h->hop_seg = seg - tag;
	return 0;
}

#ifndef EH_WALK_INLINE
/*
 * A bpf_loop step of it: one verified.  Unrolled, the 17 hops were verified
 * again for each state sp_hs_step reached them in: 4,352 of on_sample_eh's
 * 39,402 instructions processed on 6.18, in every -g recording, JVM or not.
 */
static long hs_hop_step(__u32 k, void *unused)
{
	__u32 zero = 0;
	struct hs_walk *h = bpf_map_lookup_elem(&hs_walks, &zero);

	return h ? hs_hop_one(h) : 1;
}
#endif

/* The blob holding look, its header in h->hdr: its address, 0 when none (counted). */
static __always_inline __u64 hs_blob(struct hs_walk *h, __u64 look, __u32 *len)
{
	struct sp_hs_heap *hp = NULL;
	__u64 seg, blob;
	__s32 tag;
	__u32 n;

	h->hop_heap = SP_HS_HEAPS;
	for (int i = 0; i < SP_HS_HEAPS; i++)
		if (i < h->p.nr_heaps && look - h->p.heap[i].lo < h->p.heap[i].hi - h->p.heap[i].lo)
			h->hop_heap = i;
	/*
	 * The heap's index read back through the map: the verifier then knows
	 * one pointer into heap[], where &h->p.heap[i] was one per i, each going
	 * on through the segment map's hops and the header's read as a state
	 * of its own.
	 */
	n = *(volatile __u32 *)&h->hop_heap;
	if (n < SP_HS_HEAPS)
		hp = &h->p.heap[n & (SP_HS_HEAPS - 1)];
	if (!hp || hp->log2 < 5 || hp->log2 > 12) {
		sp_hs_stop(SP_HS_STOP_NO_BLOB);
		return 0;
	}
	h->hop_map = hp->segmap;
	h->hop_seg = (look - hp->lo) >> hp->log2;
	h->hop_tag = -1;
#ifdef EH_WALK_INLINE
	for (int i = 0; i <= HS_MAX_HOPS; i++)
		if (hs_hop_one(h))
			break;
#else
	bpf_loop(HS_MAX_HOPS + 1, hs_hop_step, NULL, 0);
#endif
	tag = *(volatile __s32 *)&h->hop_tag;
	seg = *(volatile __u64 *)&h->hop_seg;
	if (tag < 0) {
		sp_hs_stop(SP_HS_STOP_READ);
		return 0;
	}
	if (tag) {
		sp_hs_stop(SP_HS_STOP_NO_BLOB);
		return 0;
	}
	blob = hp->lo + (seg << hp->log2) + h->p.hb_size;
	n = h->p.hdr_len;
	if (n > SP_HS_HDR_MAX)
		n = SP_HS_HDR_MAX;
	if (blob + n > hp->hi)
		n = blob < hp->hi ? hp->hi - blob : 0;
	barrier_var(n);
	if (n < 16 || n > SP_HS_HDR_MAX || hs_read_hdr(h, n, blob)) {
		sp_hs_stop(SP_HS_STOP_READ);
		return 0;
	}
	*len = n;
	return blob;
}

/* One instruction of the epilogue: 1 ends the steps, h->epi_res the answer (as sp_hs_epilogue's). */
static __always_inline long hs_epilogue_one(struct hs_walk *h)
{
	__u8 b0, b1, b2, *c = h->cm;
	__u32 i, pop;

	/*
	 * The offset read back from the map: a value the verifier does not
	 * know, so each step is one state, not one per offset the decodes
	 * before it could reach (those made on_sample_eh 950k of the 1M
	 * instructions it may verify, 1.2 s a load, the recorder's first
	 * second unsampled).
	 */
	i = *(volatile __u32 *)&h->epi_at;
	pop = *(volatile __u32 *)&h->epi_pop;
	b0 = c[i & 31], b1 = c[(i + 1) & 31], b2 = c[(i + 2) & 31];

	h->epi_res = 0;
	if (i > 24)
		return 1;
	if (b0 == 0xc3) {
		h->epi_res = pop ? 2 : 1;
		return 1;
	}
	if (b0 == 0x5d && !pop) { /* pop rbp */
		*(volatile __u32 *)&h->epi_pop = 1;
		i += 1;
	} else if (b0 == 0x48 && (b1 == 0x83 || b1 == 0x81) && b2 == 0xc4) { /* add rsp, imm */
		return 1;
	} else if (b0 == 0x49 && b1 == 0x3b && (b2 == 0x67 || b2 == 0xa7)) { /* cmp rsp, [r15+d] */
		i += b2 == 0x67 ? 4 : 7;
	} else if (b0 == 0x0f && b1 == 0x87) { /* ja rel32 */
		i += 6;
	} else if (b0 == 0x77) { /* ja rel8 */
		i += 2;
	} else if (b0 == 0xc5 && b1 == 0xf8 && b2 == 0x77) { /* vzeroupper */
		i += 3;
	} else if (b0 == 0x4d && b1 == 0x8b && (b2 == 0x57 || b2 == 0x97)) { /* mov r10, [r15+d] */
		i += b2 == 0x57 ? 4 : 7;
	} else if (b0 == 0x41 && b1 == 0x85 && b2 == 0x02) { /* test eax, [r10] */
		i += 3;
	} else {
		return 1;
	}
	*(volatile __u32 *)&h->epi_at = i;
	return 0;
}

#ifndef EH_WALK_INLINE
/* A bpf_loop step of it: one verified, where 8 unrolled were 3,202 instructions processed on 6.18. */
static long hs_epilogue_step(__u32 k, void *unused)
{
	__u32 zero = 0;
	struct hs_walk *h = bpf_map_lookup_elem(&hs_walks, &zero);

	return h ? hs_epilogue_one(h) : 1;
}
#endif

/*
 * The top frame's place in a compiled method's epilogue, from the code at
 * pc: 0 when the frame is whole (no epilogue, or its `add rsp` still
 * ahead), 1 when only `ret` is left (the return address at sp), 2 when
 * `pop rbp` and `ret` are (rbp at sp, the return address above); -1 when
 * the code cannot be read.  Global, verified once alone (EH_WALK_FN).
 */
EH_WALK_FN int sp_hs_epilogue(__u64 pc)
{
	__u32 zero = 0;
	struct hs_walk *h = bpf_map_lookup_elem(&hs_walks, &zero);

	if (!h)
		return -1;
	/* h->cm: free at this point, a scratch buffer */
	if (hs_read(h, h->cm, 32, pc))
		return -1;
	h->epi_at = 0;
	h->epi_pop = 0;
	h->epi_res = 0;
#ifdef EH_WALK_INLINE
	for (int k = 0; k < 8; k++)
		if (hs_epilogue_one(h))
			break;
#else
	bpf_loop(8, hs_epilogue_step, NULL, 0);
#endif
	return h->epi_res;
}

static __always_inline long hs_pro_fail(struct hs_walk *h)
{
	h->pro_res = -1;
	return 1;
}

/*
 * One instruction of the prologue, as a bpf_loop step (hs_prologue_step):
 * verified once, whatever the number of steps (12, unrolled, were 10,561
 * instructions processed on 6.18, each step's decodes a path of their
 * own).  Its position and counts are in the map, h->pro_res its answer: 0
 * while going on, 1 at the pc, -1 on a step HotSpot's prologue does not
 * make.  1 ends the steps.
 */
static __always_inline long hs_prologue_one(struct hs_walk *h)
{
	__u32 i, below, flags, off, n = 0, imm;
	__u8 b0, b1, b2, b3, *c = h->cm;

	/* Read back through the map, opaque to the verifier where the steps are unrolled (EH_WALK_INLINE). */
	off = *(volatile __u32 *)&h->pro_off;
	i = *(volatile __u32 *)&h->pro_at;
	below = *(volatile __u32 *)&h->pro_below;
	flags = *(volatile __u32 *)&h->pro_flags;
	if (i == off) {
		h->pro_res = 1;
		return 1;
	}
	if (i > off || i > 56)
		return hs_pro_fail(h);
	/* Unknown to the compiler too: it would drop the masks below, and 6.1's verifier loses the bound. */
	barrier_var(i);
	b0 = c[i & 63], b1 = c[(i + 1) & 63], b2 = c[(i + 2) & 63], b3 = c[(i + 3) & 63];
	if (b0 == 0x89 && b1 == 0x84 && b2 == 0x24) { /* mov [rsp+d32], eax: a bang */
		n = 7;
	} else if (b0 == 0x55 && !below) { /* push rbp */
		n = 1;
		below = 8;
		flags |= 2; /* saved */
	} else if (b0 == 0x48 && b1 == 0x8b && b2 == 0xec && (flags & 2)) { /* mov rbp, rsp */
		n = 3;
		flags |= 1;
	} else if (b0 == 0x48 && b1 == 0x83 && b2 == 0xec) { /* sub rsp, imm8 */
		n = 4;
		below += b3;
	} else if (b0 == 0x48 && b1 == 0x81 && b2 == 0xec) { /* sub rsp, imm32 */
		n = 7;
		imm = c[(i + 3) & 63] | c[(i + 4) & 63] << 8 | c[(i + 5) & 63] << 16 |
		      (__u32)c[(i + 6) & 63] << 24;
		if (imm > 8 * 65536)
			return hs_pro_fail(h);
		below += imm;
	} else if (b0 == 0x48 && b1 == 0x89 && (b2 == 0x6c || b2 == 0xac) && b3 == 0x24) { /* mov [rsp+d], rbp */
		n = b2 == 0x6c ? 5 : 8;
		imm = b2 == 0x6c ? c[(i + 4) & 63] :
				   c[(i + 4) & 63] | c[(i + 5) & 63] << 8 | c[(i + 6) & 63] << 16 |
					   (__u32)c[(i + 7) & 63] << 24;
		/* Only the caller's rbp's own slot, just below the return address. */
		if (flags & 1 || imm + 8 != below)
			return hs_pro_fail(h);
		flags |= 2;
	} else if (b0 == 0x48 && (b1 == 0x83 || b1 == 0x81) && b2 == 0xc5 && (flags & 1)) { /* add rbp, imm */
		n = b1 == 0x83 ? 4 : 7;
	} else if (b0 == 0x90) {
		n = 1;
	} else if (b0 == 0x66 && (b1 == 0x90 || b1 == 0x66 || b1 == 0x0f)) { /* a nop's prefix */
		n = 1;
	} else if (b0 == 0x0f && b1 == 0x1f) { /* nop [modrm]: its length by the modrm */
		n = b2 == 0x00 ? 3 : b2 == 0x40 ? 4 : b2 == 0x44 ? 5 : b2 == 0x80 ? 7 : b2 == 0x84 ? 8 : 0;
	} else if (b0 == 0x41 && b1 == 0x81 && (b2 == 0x7f || b2 == 0xbf) && (flags & 2)) { /* cmp [r15+d], imm32 */
		n = b2 == 0x7f ? 8 : 11;
	} else if (b0 == 0x0f && (b1 == 0x85 || b1 == 0x84) && (flags & 2)) { /* jne/je rel32: the barrier's */
		n = 6;
	} else if (b0 == 0x74 && b1 == 0x05 && b2 == 0xe8 && (flags & 2)) { /* je over the barrier's call */
		n = 2;
	} else if (b0 == 0xe8 && i >= 2 && c[(i - 2) & 63] == 0x74 && c[(i - 1) & 63] == 0x05) {
		n = 5; /* the barrier's call: at its return the frame is as before it */
	}
	if (!n)
		return hs_pro_fail(h);
	*(volatile __u32 *)&h->pro_at = i + n;
	*(volatile __u32 *)&h->pro_below = below;
	*(volatile __u32 *)&h->pro_flags = flags;
	return 0;
}

#ifndef EH_WALK_INLINE
static long hs_prologue_step(__u32 k, void *unused)
{
	__u32 zero = 0;
	struct hs_walk *h = bpf_map_lookup_elem(&hs_walks, &zero);

	return h ? hs_prologue_one(h) : 1;
}
#endif

/*
 * Where a top frame stands in an nmethod's prologue, from its verified
 * entry (h->pro_vep) to the pc (h->pro_pc): the bytes below the return
 * address, times 2, plus 1 when rbp is no longer the caller's (then at
 * the return address - 8); -1 when a step is not one HotSpot's x86-64
 * prologue makes (MacroAssembler::verified_entry for C2,
 * C1_MacroAssembler::build_frame for C1, as their nmethods' bytes show on
 * JDK 17 and 25):
 *   mov [rsp-N], eax          the stack bang(s), nothing moved
 *   push rbp                  the return address at sp+8
 *   mov rbp, rsp              (-XX:+PreserveFramePointer) rbp is ours
 *   sub rsp, N                the return address N further
 *   mov [rsp+N], rbp          (C2 without a bang: sub first) rbp saved below it
 *   add rbp, N                (likewise, with the flag) rbp is ours
 *   nops, cmp [r15+d], imm32; jne/je; call   the nmethod entry barrier
 *                             (JDK 21+), after the frame is built.
 * Global, verified once alone (inline, sp_hs_step's 22,585 instructions
 * processed on 6.18 were half its): its frame and its step's are two more
 * on 6.1's 512 bytes of stack (on_sample_eh, sp_eh_unwind, eh_step,
 * sp_hs_step, this, hs_prologue_step: 64+96+96+128+96+32 rounded), which
 * the program's own small frame leaves room for.
 */
EH_WALK_FN int sp_hs_prologue(void)
{
	__u32 zero = 0, below, flags;
	struct hs_walk *h = bpf_map_lookup_elem(&hs_walks, &zero);

	if (!h)
		return -1;
	h->pro_off = h->pro_pc - h->pro_vep;
	/* c: h->cm, free at this point, a scratch buffer */
	if (h->pro_pc < h->pro_vep || h->pro_off > 56 || hs_read(h, h->cm, 64, h->pro_vep))
		return -1;
	h->pro_at = 0;
	h->pro_below = 0;
	h->pro_flags = 0;
	h->pro_res = 0;
#ifdef EH_WALK_INLINE
	/* Unrolled: a callback's frame more would pass 6.1's 512 bytes there (544, its frame on eh_step's). */
	for (int k = 0; k < 12; k++)
		if (hs_prologue_one(h))
			break;
#else
	bpf_loop(12, hs_prologue_step, NULL, 0);
#endif
	below = h->pro_below;
	flags = h->pro_flags;
	if (h->pro_res != 1 || below > 8 * 65536)
		return -1;
	/* rbp ours but never saved is no prologue HotSpot makes. */
	if ((flags & 1) && !(flags & 2))
		return -1;
	return (int)(below * 2 + (flags & 1));
}

/*
 * The top frame's prologue at pc, in a blob whose header is in h->hdr:
 * sp_hs_prologue's answer, or -1 when the blob is no nmethod (its name
 * read from libjvm) or its verified entry is not in the prologue.
 */
static __always_inline int hs_prologue_at(struct hs_walk *h, __u64 blob, __u64 name, __u32 len, __u64 code_begin,
					  __s32 fc, __u64 pc)
{
	bool java;
	__u64 vep;

	if (!h->p.nm_vep || hs_read(h, h->slots, 16, name))
		return -1;
	/* "nmethod" or "native nmethod": CodeBlob's name for the two; a stub's fields differ. */
	java = h->slots[0] == 0x646f6874656d6eull;
	if (!java &&
	    !(h->slots[0] == 0x6e2065766974616eull && (h->slots[1] & 0xffffffffffffffull) == 0x646f6874656dull))
		return -1;
	if (h->p.vep_off)
		vep = code_begin + (__u16)hs_s32(h, h->p.nm_vep, len);
	else
		vep = hs_u64(h, h->p.nm_vep, len);
	if (vep < code_begin || vep >= code_begin + (__u64)fc)
		return -1;
	/*
	 * Before the verified entry, a compiled method's inline-cache check
	 * (C1's and C2's unverified entry, then nops), which moves nothing:
	 * the return address at sp.  A native nmethod's may be an intrinsic's
	 * own (Continuation.enterSpecial pops its return address there).
	 */
	if (pc < vep)
		return java ? 0 : -1;
	h->pro_vep = vep;
	h->pro_pc = pc;
	return sp_hs_prologue();
}

/*
 * One Java frame at w->ip (in the code cache): its entry in *ent (0: none)
 * and the caller's registers in w.  1 ends the walk.
 */
static __always_inline int hs_frame(struct eh_walk *w, struct hs_walk *h, __u64 *ent)
{
	__u64 pc = w->ip, look, blob, code_begin, code_end, sender_sp, ra, bp;
	bool top = w->exact, first = w->exact && !w->n;
	__s32 size, fs, fc, id;
	__u32 len = 0;
	int epi = 0, pro;

	*ent = 0;
	if (pc - h->p.interp_lo < h->p.interp_hi - h->p.interp_lo)
		return hs_interp(w, h, first, ent);
	/* Below the top, the call stub: an rbp frame (enter) whose caller is libjvm's JavaCalls. */
	if (!top && pc == h->p.call_stub_ret) {
		if (!w->bp_ok || w->bp < w->sp || w->bp - w->sp > HS_MAX_FRAME || hs_stack(w, h, w->bp, 2)) {
			sp_hs_stop(SP_HS_STOP_READ);
			return 1;
		}
		w->ip = h->slots[1];
		w->sp = w->bp + 16;
		w->bp = h->slots[0];
		w->bp_ok = 1;
		h->call_stub++;
		return 0;
	}
	look = top ? pc : pc - 1;
	blob = hs_blob(h, look, &len);
	if (!blob)
		return 1;
	size = hs_s32(h, h->p.cb_size, len);
	fs = hs_s32(h, h->p.cb_frame_size, len);
	fc = hs_s32(h, h->p.cb_frame_complete, len);
	if (h->p.frame_complete_i16)
		fc = (__s16)fc;
	id = hs_s32(h, h->p.nm_compile_id, len);
	bp = hs_u64(h, h->p.cb_name, len);
	if (h->p.code_off) {
		code_begin = blob + (__u32)hs_s32(h, h->p.cb_code_begin, len);
		code_end = blob + (__u32)hs_s32(h, h->p.cb_code_end, len);
	} else {
		code_begin = hs_u64(h, h->p.cb_code_begin, len);
		code_end = hs_u64(h, h->p.cb_code_end, len);
	}
	if (bp - h->p.lib_lo >= h->p.lib_hi - h->p.lib_lo || size <= 0 || look - blob >= (__u64)size || fs < 0 ||
	    fs > 65536 || code_begin < blob || code_end > blob + (__u64)size) {
		sp_hs_stop(SP_HS_STOP_BAD_BLOB);
		return 1;
	}
	if (!fs) {
		/* A stub with no frame of its own: which one it is is not known here. */
		sp_hs_stop(SP_HS_STOP_STUB);
		return 1;
	}
	/* A return address is a call site's, in the instructions. */
	if (!top && (look < code_begin || look >= code_end)) {
		sp_hs_stop(SP_HS_STOP_RA);
		return 1;
	}
	sender_sp = w->sp + 8 * (__u64)fs;
	if (top && fc > 0 && pc < code_begin + (__u64)fc) {
		pro = hs_prologue_at(h, blob, bp, len, code_begin, fc, pc);
		if (pro < 0 || (__u64)(pro >> 1) + 8 > 8 * (__u64)fs) {
			sp_hs_stop(SP_HS_STOP_PROLOGUE);
			return 1;
		}
		sender_sp = w->sp + (pro >> 1) + 8;
		epi = (pro & 1) ? 0 : 1; /* rbp: the caller's still in its register, as when only `ret` is left */
		h->prologue++;
	} else if (top) {
		epi = sp_hs_epilogue(pc);
		if (epi < 0) {
			sp_hs_stop(SP_HS_STOP_READ);
			return 1;
		}
		if (epi == 1)
			sender_sp = w->sp + 8;
		else if (epi == 2)
			sender_sp = w->sp + 16;
	}
	if (hs_stack(w, h, sender_sp - 16, 2)) {
		sp_hs_stop(SP_HS_STOP_READ);
		return 1;
	}
	ra = h->slots[1];
	if (!hs_ra_ok(h, ra)) {
		sp_hs_stop(SP_HS_STOP_RA);
		return 1;
	}
	*ent = SP_HS_TAG | ((__u64)((__u32)id & ((1u << SP_HS_ID_BITS) - 1)) << SP_HS_ID_SHIFT) |
	       ((look - h->p.cc_lo) & 0xffffffffull);
	/* rbp: saved below the return address, unless only `ret` is left (then it is the caller's still). */
	if (!top || epi != 1) {
		w->bp = h->slots[0];
		w->bp_ok = 1;
	}
	w->ip = ra;
	w->sp = sender_sp;
	h->compiled++;
	return 0;
}

/*
 * One step of the walk at a pc in the JVM's code cache: the frame's entry
 * written where eh_step writes a pc, and the caller's registers set.
 * 1 ends the walk (w->stop set).  Global: verified once, alone.  Inline
 * in eh_step it was most of the verifier's work on on_sample_eh (6.18:
 * 44,151 of its 74,853 instructions processed), each of its ends going on
 * through the rest of the step.  Its frame sits on eh_step's, sp_eh_unwind's
 * and the program's, which 6.1 holds to 512 bytes together: the program
 * keeps its own small for that (sp_sample_account).
 */
EH_WALK_FN int sp_hs_step(void)
{
	__u32 zero = 0;
	struct sp_eh_sample *s = bpf_map_lookup_elem(&eh_scratch, &zero);
	struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero);
	struct hs_walk *h = bpf_map_lookup_elem(&hs_walks, &zero);
	__u64 sp, ent = 0;

	if (!s || !w || !h)
		return 1;
	sp = w->sp;
	if (hs_frame(w, h, &ent)) {
		w->stop = SP_EH_STOP_JAVA;
		return 1;
	}
	if (w->sp <= sp) {
		w->stop = SP_EH_STOP_NOT_UP;
		return 1;
	}
	if (ent) {
		if (w->py)
			w->nat[w->n & SP_EH_MAX_FRAMES] = ent;
		else
			s->ips[(w->base + w->n) & (EH_IPS - 1)] = ent;
		w->n++;
	}
	w->exact = 0;
	w->via_fp = 0;
	if (w->n >= SP_EH_MAX_FRAMES) {
		w->stop = SP_EH_STOP_DEPTH;
		return 1;
	}
	return 0;
}

/* After the walk: the JVM's counts, added by one lookup. */
static __always_inline void hs_end(void)
{
	__u32 zero = 0;
	struct hs_walk *h = bpf_map_lookup_elem(&hs_walks, &zero);
	struct sp_hs_counts *c;

	if (!h || !h->on)
		return;
	c = bpf_map_lookup_elem(&hs_stats, &zero);
	if (!c)
		return;
	c->n[SP_HS_COMPILED] += h->compiled;
	c->n[SP_HS_INTERPRETED] += h->interpreted;
	c->n[SP_HS_CALL_STUB] += h->call_stub;
	c->n[SP_HS_INTERP_SLOT] += h->interp_slot;
	c->n[SP_HS_PROLOGUE] += h->prologue;
	if (h->reads) {
		c->n[SP_HS_CHAINS]++;
		c->n[SP_HS_READS] += h->reads;
	}
}

#endif
