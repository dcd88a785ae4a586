/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A thread's last user chain, kept so that the next sample's walk can stop
 * where the chains meet (--call-graph ehframe, the sampling program only).
 *
 * Most of a chain does not change between two samples: only the frames
 * near the leaf do.  The proof is offcpu.bpf.c's (offkeep): a walk is a
 * function of its state at a frame (pc, sp, rbp and the flags the steps
 * read), the process's slice of mappings (whose generation never names
 * other mappings), the rows, and the stack words it reads, each read's
 * address a function of what came before.  So from a frame whose whole
 * state equals a kept frame's (at any depth), the walk would give the kept
 * chain's frames from there on if every word the kept walk read from that
 * frame on reads back the same: the kept tail is taken only then.  A step
 * that depended on anything else (a mapping from the kernel's vmas, a
 * frame-pointer step, a fault, a uretprobe's return instance) makes every
 * tail that holds it one not to take; Java threads are walked as before.  Never a wrong frame: a thread whose stack was reused by
 * another chain, a longjmp, a signal frame, an exec or pid reuse change
 * the state or a word, and the walk goes on (tests/integration/test_kept.py).
 *
 * The chains are kept per CPU, a few threads' each, rather than per thread:
 * a walk logs straight into a spare entry that becomes the thread's on a
 * miss (no copy, no allocation in the interrupt), and which thread left a
 * chain does not matter to the proof.
 *
 * Include this instead of ehframe.bpf.h: it sets the walk's hooks, then
 * includes it.
 */
#ifndef SP_EHKEEP_BPF_H
#define SP_EHKEEP_BPF_H

#define EH_KEEP_SLOTS SP_EH_KEEP_SLOTS /* a power of 2 */
#define EH_KEEP_FRAMES 128    /* steps of a walk: SP_EH_MAX_FRAMES and the one that stops */
#define EH_KEEP_WORDS 256     /* stack words a kept walk read: two a frame, and a signal frame's three */
#define EH_KEEP_NONE 0xffffffffu
#define EH_KEEP_MISSES 4      /* walks in a row without a kept tail: the thread's next few go without */
#define EH_KEEP_SKIP_MISSES 7
#define EH_KEEP_SHORT 8	      /* a chain of fewer frames counts as a miss, ... */
#define EH_KEEP_SKIP_SHORT 31 /* ... and after EH_KEEP_MISSES of them, this many go without */
/*
 * Words a call of sp_eh_keep_prove compares: the verifier walks each, and
 * marks each one's index precise back through the ones before (64: 2,856
 * instructions processed, 21,300 lines of precision backtracking in its
 * level-2 log on 6.18).  EH_KEEP_WORDS / EH_KEEP_PROVE calls and one per
 * window read again, at most, prove a chain: eh_keep_take's rounds.
 */
#define EH_KEEP_PROVE 32
#define EH_KEEP_ROUNDS 12

/* A step's state as it began: everything the step reads but the stack words and the tables. */
struct eh_kframe {
	__u64 ip, sp, bp, bx_at; /* bp 0 unless bp_ok, bx_at 0 unless bx_ok: unread then */
	__u32 flags;		 /* EH_KF_* */
	__u32 w0;		 /* its first word in addr/val */
};

struct eh_kept {
	__u64 ss, tramp; /* the image's mm->start_stack and uretprobe trampoline */
	__u32 pid, gen;	 /* and its slice's generation */
	__u32 nf, np;	 /* steps begun; frames written (the last step may have written none) */
	__u32 nw, stop;	 /* words read; the walk's end */
	__u32 sure;	 /* the first step from which on the walk read nothing unproven */
	__u32 py;	 /* a Python thread's walk: its frames went to the walk's nat, not the sample */
	struct eh_kframe f[EH_KEEP_FRAMES];
	__u64 ip[EH_KEEP_FRAMES]; /* f's ips together: a tail is one copy */
	__u64 addr[EH_KEEP_WORDS], val[EH_KEEP_WORDS];
};

/* Per CPU: EH_KEEP_SLOTS threads' chains and the spare one a walk logs into (too large for one value). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EH_KEEP_SLOTS + 1); /* sized again from user space: 1 without --call-graph ehframe */
	__type(key, __u32);
	__type(value, struct eh_kept);
} eh_keeps SEC(".maps");

struct eh_keep_slot {
	__u32 tid, phys, used;	/* phys: its entry in eh_keeps */
	__u16 misses;		/* its walks since its last kept tail */
	__u16 skip;		/* its next walks that go without the cache */
};

/* Per CPU: the walk in progress and whose chains the entries hold. */
struct eh_keep_cpu {
	__u32 init;	/* the slots and the walk's keep_spare set (eh_keep_begin) */
	__u32 kept;	/* the entry of the thread's last chain, EH_KEEP_NONE */
	__u32 own;	/* the thread's slot, or the one it takes */
	__u32 lo, hi;	/* kept frames below lo lie below the walk's sp: not searched again */
	__u32 at;	/* the kept frame whose state is the walk's */
	__u32 wi, wn;	/* the words its tail read: its proof's */
	__u32 tid, clock, turn, taken;
	__u32 ab;	/* eh_keep_turns: this chain's EH_KAB_NS_*, or EH_KEEP_NONE (not one the cache may serve) */
	__u64 t0;	/* eh_keep_turns: when the walk began */
	struct eh_keep_slot s[EH_KEEP_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct eh_keep_cpu);
} eh_keep_cpus SEC(".maps");

/*
 * For measuring only: with its entry set to 1 (bpftool map update name
 * eh_keep_turns key 0 0 0 0 value 1 0 0 0, while recording), every other
 * chain on each CPU is walked without the cache, and each kind's time goes
 * to eh_keep_ab (EH_KAB_*): both timed by turns in one run.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} eh_keep_turns SEC(".maps");

static __always_inline bool eh_keep_timed(void)
{
	__u32 zero = 0, *t = bpf_map_lookup_elem(&eh_keep_turns, &zero);

	return t && *t;
}

enum { EH_KAB_NS_OFF, EH_KAB_RUNS_OFF, EH_KAB_NS_ON, EH_KAB_RUNS_ON, EH_KAB_FAILED, EH_KAB_MAX };

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EH_KAB_MAX);
	__type(key, __u32);
	__type(value, __u64);
} eh_keep_ab SEC(".maps");

#define EH_KF_BP_OK 1
#define EH_KF_EXACT 2
#define EH_KF_VIA_FP 4
#define EH_KF_BX_OK 8
#define EH_KF_DI_OK 16
#define EH_KF_TR_SHIFT 5

__noinline int sp_eh_keep_step(void);

/*
 * Each behind w->keep, the walk's own flag (every use has w at hand): a
 * walk the cache does not serve pays a load and a branch, not a lookup or
 * a call.
 */
#define EH_NOTE_READ(addr, val)                          \
	do {                                             \
		if (w->keep)                             \
			eh_keep_note_read(w, addr, val); \
	} while (0)
/* The step under way (and so every tail holding it) depended on something no word proves. */
#define EH_NOTE_UNSURE()                         \
	do {                                     \
		if (w->keep)                     \
			w->keep_sure = w->keep_fi; \
	} while (0)
#define EH_KEEP_STEP() (w->keep && sp_eh_keep_step())
#define EH_KEEP_BEGIN(w, pid, ss) eh_keep_begin(w, pid, ss)
#define EH_KEEP_WALK(w) eh_keep_walk(w)
#define EH_KEEP_END() eh_keep_end()

struct eh_walk;
static __always_inline void eh_keep_note_read(struct eh_walk *w, __u64 addr, __u64 val);
static __always_inline void eh_keep_begin(struct eh_walk *w, __u32 pid, __u64 ss);
static __always_inline void eh_keep_walk(struct eh_walk *w);
static __always_inline void eh_keep_end(void);

#include "ehframe.bpf.h"

/*
 * The log in the walk's own fields (w->keep_*), not the per-CPU entry's:
 * these run at each word read and unsure step, and each lookup of the entry
 * was a patch at load (14 in eh_step alone).
 */
static __always_inline void eh_keep_note_read(struct eh_walk *w, __u64 addr, __u64 val)
{
	__u32 i = w->keep_nw;
	struct eh_kept *e = bpf_map_lookup_elem(&eh_keeps, &w->keep_spare);

	if (!e || i >= EH_KEEP_WORDS) {
		w->keep_over = 1;
		return;
	}
	/* Opaque, as sp_eh_keep_step's fi: the mask kept for 6.1's verifier. */
	barrier_var(i);
	i &= EH_KEEP_WORDS - 1;
	e->addr[i] = addr;
	e->val[i] = val;
	w->keep_nw = i + 1;
}

/*
 * Without a branch: the five flags are 0 or 1 wherever the walk sets them
 * (never decoded, only compared), and as `flag ? bit : 0` each was a branch
 * the verifier followed both ways in sp_eh_keep_step: on_sample_eh's insns
 * processed 18,102 -> 17,983 with bp's and bx_at's masks below.
 */
static __always_inline __u32 eh_keep_flags(const struct eh_walk *w)
{
	return (w->bp_ok & 1) * EH_KF_BP_OK | (w->exact & 1) * EH_KF_EXACT | (w->via_fp & 1) * EH_KF_VIA_FP |
	       (w->bx_ok & 1) * EH_KF_BX_OK | (w->di_ok & 1) * EH_KF_DI_OK | (w->tr_check << EH_KF_TR_SHIFT);
}

/* Before the walk: whether it logs, and the thread's last chain if it is this image's under this slice. */
static __always_inline void eh_keep_begin(struct eh_walk *w, __u32 pid, __u64 ss)
{
	__u32 zero = 0, tid = (__u32)bpf_get_current_pid_tgid(), own = 0, old = 0xffffffffu, phys;
	struct eh_keep_cpu *c = bpf_map_lookup_elem(&eh_keep_cpus, &zero);
	struct eh_kept *k;
	bool found = false;

	w->keep = 0;
	if (!c)
		return;
	c->ab = EH_KEEP_NONE;
	c->kept = EH_KEEP_NONE;
	/*
	 * The slice's mappings only, as offkeep: a walk from the kernel's vmas
	 * is not a function of its words.  A JVM's steps through its code
	 * cache are not either (hs_walks' state): its chains go without.
	 */
	if (!(w->c_flags & EH_C_SLICE) || (w->c_flags & EH_C_HS) || !w->maps_nr || eh_vma_only)
		return;
	if (eh_keep_timed()) {
		c->turn ^= 1;
		c->ab = c->turn ? EH_KAB_NS_ON : EH_KAB_NS_OFF;
		/* In the map, not a register: kept across the walk, a flag made its call a state of its own. */
		c->t0 = bpf_ktime_get_ns();
		if (!c->turn)
			return;
	}
	if (!c->init) {
		for (__u32 i = 0; i < EH_KEEP_SLOTS; i++) {
			c->s[i].tid = 0;
			c->s[i].phys = i;
		}
		w->keep_spare = EH_KEEP_SLOTS;
		c->init = 1;
	}
	/* The thread's slot, else the least recently used. */
	for (__u32 i = 0; i < EH_KEEP_SLOTS; i++) {
		if (c->s[i].tid == tid && tid) {
			own = i;
			found = true;
			break;
		}
		if (c->s[i].used < old) {
			old = c->s[i].used;
			own = i;
		}
	}
	c->own = own;
	/* Read back through the map: one slot for the verifier, not one state per slot the search ended at. */
	own = *(volatile __u32 *)&c->own & (EH_KEEP_SLOTS - 1);
	c->tid = tid;
	c->s[own].used = ++c->clock;
	if (!found) {
		c->s[own].misses = 0;
		c->s[own].skip = 0;
	}
	/*
	 * A thread whose chains are short, or seldom last (a pool's worker
	 * between tasks, rbp a variable in its callers), skips the cache for
	 * its next walks: logging each step and a proof that fails cost a
	 * deep chain's walk a fifth more, and a tail of 4 frames saves less
	 * than its proof and the logging cost (workload spin, 5 frames, by
	 * turns: 579-651 ns a chain trying one walk in 8, 507-548 without).
	 */
	if (c->s[own].skip) {
		c->s[own].skip--;
		return;
	}
	if (found) {
		phys = c->s[own].phys;
		k = bpf_map_lookup_elem(&eh_keeps, &phys);
		/* Another image (exec, pid reuse), another slice or trampoline: nothing of it is this walk's. */
		if (k && k->nf && k->pid == pid && k->ss == ss && k->gen == w->gen && k->tramp == w->tramp)
			c->kept = phys;
	}
	w->keep_fi = 0;
	w->keep_nw = 0;
	w->keep_sure = 0;
	w->keep_over = 0;
	c->lo = 0;
	c->taken = 0;
	w->keep = 1;
}

/*
 * The proof: every word the kept walk read from frame c->at on, read again
 * from the stack window the walk holds, EH_KEEP_PROVE words a call.  0 when
 * each read back the same, 1 when one did not, 2 when word c->wi is outside
 * the window (for sp_eh_keep_window), 3 when the call's words are proven and
 * more remain.  A plain loop in a global function, verified once,
 * each of whose branches but one ends it: a bpf_loop callback that looked
 * its maps up for each word cost about as much as the walk it saved
 * (unitwork 30 deep, by turns: 2,030 ns against 2,469), and the window's
 * read inside the loop made states the verifier did not prune (81,000
 * instructions processed).
 */
__noinline int sp_eh_keep_prove(void)
{
	__u32 zero = 0, idx, wi, wn;
	struct eh_keep_cpu *c = bpf_map_lookup_elem(&eh_keep_cpus, &zero);
	struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero);
	struct eh_kept *k;
	__u64 off, base, len;

	if (!c || !w)
		return 1;
	k = bpf_map_lookup_elem(&eh_keeps, &c->kept);
	if (!k)
		return 1;
	wi = c->wi;
	wn = c->wn;
	base = w->win_base;
	len = w->win_len;
	for (__u32 t = 0; t < EH_KEEP_PROVE; t++) {
		idx = wi + t;
		if (idx >= wn)
			return 0;
		off = k->addr[idx & (EH_KEEP_WORDS - 1)] - base;
		if (off >= len || off + 8 > len) {
			c->wi = idx;
			return 2;
		}
		if (eh_win_word(w, off) != k->val[idx & (EH_KEEP_WORDS - 1)])
			return 1;
	}
	c->wi = wi + EH_KEEP_PROVE;
	return 3;
}

/*
 * The window read again for word c->wi, as eh_read would: from the frame's
 * sp when on the word's page, else from the word, to the page's end.  0 when
 * read; a word across two pages (which the walk reads alone) is not.
 */
__noinline int sp_eh_keep_window(void)
{
	__u32 zero = 0;
	struct eh_keep_cpu *c = bpf_map_lookup_elem(&eh_keep_cpus, &zero);
	struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero);
	struct eh_kept *k;
	__u64 a, base, len;

	if (!c || !w)
		return 1;
	k = bpf_map_lookup_elem(&eh_keeps, &c->kept);
	if (!k)
		return 1;
	a = k->addr[c->wi & (EH_KEEP_WORDS - 1)];
	w->win_len = 0;
	if ((a & (EH_WIN - 1)) > EH_WIN - 8)
		return 1;
	base = w->sp <= a && (w->sp ^ a) < EH_WIN ? w->sp : a;
	len = EH_WIN - (base & (EH_WIN - 1));
	if (len > EH_WIN || len < 8 || bpf_probe_read_user(w->win, len, (void *)base))
		return 1;
	w->win_base = base;
	w->win_len = len;
	return 0;
}

/*
 * The kept tail from frame c->at, if every word its walk read from there
 * on reads back the same: its frames into the chain, as the walk would have
 * written them from this depth (the same 127-frame cut), and 1 (the loop
 * ends).  Else 0: the walk goes on.
 */
static __always_inline int eh_keep_take(struct eh_keep_cpu *c, struct eh_walk *w, struct eh_kept *k)
{
	__u32 zero = 0, j = c->at, n, cnt, stop, off;
	struct sp_eh_sample *s = bpf_map_lookup_elem(&eh_scratch, &zero);
	int proof = 2;
	__u64 *v;

	if (!s || j > k->np || k->np > SP_EH_MAX_FRAMES)
		goto fail;
	n = w->n;
	if (n > SP_EH_MAX_FRAMES)
		goto fail;
	cnt = k->np - j;
	stop = k->stop;
	if (n + cnt > SP_EH_MAX_FRAMES) {
		cnt = SP_EH_MAX_FRAMES - n;
		stop = SP_EH_STOP_DEPTH;
	} else if (n + cnt == SP_EH_MAX_FRAMES && k->np < k->nf) {
		/* The kept walk went on past here: this one stops for depth. */
		stop = SP_EH_STOP_DEPTH;
	} else if (stop == SP_EH_STOP_DEPTH && n + cnt < SP_EH_MAX_FRAMES) {
		/* It stopped for depth only: the frames past its cut are unknown. */
		goto fail;
	}
	/*
	 * A window's words at a time (a chain's tail spans a page or two),
	 * EH_KEEP_PROVE at most, in rounds written out: 6.1 refuses a loop whose
	 * back edge is a call's return ("back-edge from insn"), and clang would
	 * not unroll this one.
	 */
#define EH_KEEP_ROUND()                                       \
	if (proof >= 2) {                                     \
		proof = sp_eh_keep_prove();                   \
		if (proof == 2 && sp_eh_keep_window())        \
			proof = 1;                            \
	}
	EH_KEEP_ROUND();
	EH_KEEP_ROUND();
	EH_KEEP_ROUND();
	EH_KEEP_ROUND();
	EH_KEEP_ROUND();
	EH_KEEP_ROUND();
	EH_KEEP_ROUND();
	EH_KEEP_ROUND();
	EH_KEEP_ROUND();
	EH_KEEP_ROUND();
	EH_KEEP_ROUND();
	EH_KEEP_ROUND();
	_Static_assert(EH_KEEP_ROUNDS == 12, "the rounds above");
	_Static_assert(EH_KEEP_ROUNDS * EH_KEEP_PROVE >= EH_KEEP_WORDS + 4 * EH_KEEP_PROVE, "4 windows' misses");
#undef EH_KEEP_ROUND
	if (proof)
		goto fail;
	cnt &= SP_EH_MAX_FRAMES;
	/*
	 * ips and nat have SP_EH_MAX_FRAMES entries of room past their ends:
	 * the copy is bounded by its size alone.  A Python thread's native
	 * frames go to nat, as its walk writes them, for sp_py_place.
	 */
	if (w->py) {
		/* Opaque: clang drops a mask it knows n to pass, and 6.1's verifier lost n's bound ("unbounded"). */
		off = n;
		barrier_var(off);
		off &= SP_EH_MAX_FRAMES;
		if (cnt && bpf_probe_read_kernel(&w->nat[off], cnt * 8, &k->ip[j & (EH_KEEP_FRAMES - 1)]))
			goto fail;
	} else {
		off = (w->base + n) & (EH_IPS - 1);
		if (cnt && bpf_probe_read_kernel(&s->ips[off], cnt * 8, &k->ip[j & (EH_KEEP_FRAMES - 1)]))
			goto fail;
	}
	w->n = n + cnt;
	w->stop = stop;
	c->taken = 1;
	eh_stat(SP_EH_KEPT);
	v = bpf_map_lookup_elem(&eh_stats, &(__u32){ SP_EH_KEPT_FRAMES });
	if (v)
		*v += cnt;
	return 1;
fail:
	v = bpf_map_lookup_elem(&eh_keep_ab, &(__u32){ EH_KAB_FAILED });
	if (v)
		*v += 1;
	/* The walk goes on alone: a second proof seldom holds where the first did not. */
	c->kept = EH_KEEP_NONE;
	return 0;
}

/*
 * At each step's start, in the loop: the step's state logged, and where a
 * kept frame has the same state and its tail is proven, the tail taken: 1,
 * which ends the loop.  Global, verified once, for 6.1's 512 bytes of
 * stack for a chain of calls (each frame rounded up to 32): eh_step's frame
 * stays 96 with this call, where inline it was 128 and the walk's deepest
 * chain, through sp_hs_step, 512 exactly; and this one calls only leaves.
 */
__noinline int sp_eh_keep_step(void)
{
	__u32 zero = 0, fi, lo, hi, mid, flags;
	struct eh_keep_cpu *c = bpf_map_lookup_elem(&eh_keep_cpus, &zero);
	struct eh_walk *w = bpf_map_lookup_elem(&eh_walks, &zero);
	struct eh_kframe *f;
	struct eh_kept *k;
	__u64 bp, bx_at;

	if (!c || !w || !w->keep)
		return 0;
	flags = eh_keep_flags(w);
	/* Masks, not branches (eh_keep_flags' reason). */
	bp = w->bp & -(__u64)(w->bp_ok & 1);
	bx_at = w->bx_at & -(__u64)(w->bx_ok & 1);
	k = bpf_map_lookup_elem(&eh_keeps, &w->keep_spare);
	fi = w->keep_fi;
	if (!k || fi >= EH_KEEP_FRAMES) {
		w->keep_over = 1;
		return 0;
	}
	/*
	 * Opaque: clang drops the mask as proven by the test above, and 6.1's
	 * verifier lost fi's bound across its spill (R0 unbounded memory access).
	 */
	barrier_var(fi);
	fi &= EH_KEEP_FRAMES - 1;
	f = &k->f[fi];
	f->ip = w->ip;
	k->ip[fi] = w->ip;
	f->sp = w->sp;
	f->bp = bp;
	f->bx_at = bx_at;
	f->flags = flags;
	f->w0 = w->keep_nw;
	w->keep_fi = fi + 1;
	if (c->kept == EH_KEEP_NONE)
		return 0;
	k = bpf_map_lookup_elem(&eh_keeps, &c->kept);
	if (!k)
		return 0;
	/*
	 * The first kept frame at or above sp: sp rises along a chain (but
	 * across a signal frame).  The bounds are in the map, where the
	 * verifier does not follow them: on the stack each step's narrower
	 * bounds made states of their own (eh_row_search_step's reason).
	 */
	c->hi = k->nf;
	for (int it = 0; it < 8; it++) {
		barrier_var(c);
		lo = *(volatile __u32 *)&c->lo;
		hi = *(volatile __u32 *)&c->hi;
		if (lo >= hi)
			break;
		mid = lo + (hi - lo) / 2;
		if (k->f[mid & (EH_KEEP_FRAMES - 1)].sp < w->sp)
			c->lo = mid + 1;
		else
			c->hi = mid;
	}
	lo = *(volatile __u32 *)&c->lo;
	if (lo >= k->nf || lo < k->sure)
		return 0;
	f = &k->f[lo & (EH_KEEP_FRAMES - 1)];
	if (f->sp != w->sp || f->ip != w->ip || f->bp != bp || f->bx_at != bx_at || f->flags != flags)
		return 0;
	c->at = lo;
	c->wi = f->w0;
	c->wn = k->nw;
	return eh_keep_take(c, w, k);
}

/* The walk, with the kept tail taken where one is proven, and its chain kept for the next (a miss only). */
static __always_inline void eh_keep_walk(struct eh_walk *w)
{
	__u32 zero = 0, phys;
	struct eh_keep_cpu *c = bpf_map_lookup_elem(&eh_keep_cpus, &zero);
	struct eh_keep_slot *sl;
	struct eh_kept *e;

	if (c && c->kept != EH_KEEP_NONE) {
		e = bpf_map_lookup_elem(&eh_keeps, &c->kept);
		/* A Python thread's chain and another's: their frames went to different arrays. */
		if (!e || e->py != w->py)
			c->kept = EH_KEEP_NONE;
	}
	bpf_loop(SP_EH_MAX_FRAMES, eh_step, NULL, 0);
	if (!c || !w->keep)
		return;
	/* A chain with a kept tail leaves the kept chain in place: its tail is the part that lasts. */
	sl = &c->s[c->own & (EH_KEEP_SLOTS - 1)];
	/* A short chain counts as a miss, kept tail or not: it saved next to nothing. */
	sl->misses = c->taken && w->n >= EH_KEEP_SHORT ? 0 : sl->misses + 1;
	if (sl->misses >= EH_KEEP_MISSES)
		sl->skip = w->n < EH_KEEP_SHORT ? EH_KEEP_SKIP_SHORT : EH_KEEP_SKIP_MISSES;
	if (c->taken || w->keep_over || !w->keep_fi)
		return;
	e = bpf_map_lookup_elem(&eh_keeps, &w->keep_spare);
	if (!e || c->own >= EH_KEEP_SLOTS)
		return;
	e->ss = w->c_ss;
	e->tramp = w->tramp;
	e->pid = w->c_pid;
	e->gen = w->gen;
	e->nf = w->keep_fi;
	e->np = w->n > SP_EH_MAX_FRAMES ? SP_EH_MAX_FRAMES : w->n;
	e->nw = w->keep_nw;
	e->stop = w->stop;
	e->sure = w->keep_sure;
	e->py = w->py;
	/* The spare becomes the thread's, and the thread's last (or the evicted one's) the spare. */
	phys = sl->phys;
	sl->phys = w->keep_spare;
	sl->tid = c->tid;
	w->keep_spare = phys;
}

/* After the whole chain (a Python thread's frames placed too): eh_keep_turns' time of it. */
static __always_inline void eh_keep_end(void)
{
	__u32 zero = 0;
	struct eh_keep_cpu *c = bpf_map_lookup_elem(&eh_keep_cpus, &zero);
	__u64 *v;

	if (c && c->t0 && c->ab != EH_KEEP_NONE) {
		__u32 key = c->ab;

		v = bpf_map_lookup_elem(&eh_keep_ab, &key);
		if (v)
			*v += bpf_ktime_get_ns() - c->t0;
		key++;
		v = bpf_map_lookup_elem(&eh_keep_ab, &key);
		if (v)
			*v += 1;
	}
	if (c)
		c->t0 = 0;
}

#endif
