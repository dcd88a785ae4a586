/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A blocking thread's kernel stack, reused when it is proven the one the
 * kernel's unwinder would give (offcpu.bpf.c, record --off-cpu; issue 40).
 *
 * bpf_get_stackid at a switch-out is an ORC unwind (no frame pointers on
 * these kernels), most of a block's cost.  The ORC unwinder is a function
 * of the first frame's (ip, sp) and of the stack words it reads, each rule
 * a function of the ip alone (the core kernel's table, which nothing
 * changes): for a call frame, CFA = sp + sp_offset (or bp + sp_offset),
 * the next frame is (*(CFA - 8), CFA), and bp is restored from CFA +
 * bp_offset or bp + bp_offset, or kept.  The walk here is that function for
 * the rules it accepts (sp- or bp-based call frames, bp restored within the
 * walk, the user's registers at the stack's top to end it): at a keep, the
 * frames it derives must be the kernel's own (bpf_get_stack), frame by
 * frame, ending where they end; at a reuse, the same walk with the kept
 * rules over the stack as it is now must derive the kept frames again.  So
 * a reused chain is the one the kernel would give now, and a chain through
 * any other rule (a bp from below the first frame, an interrupt's registers
 * in the middle, a module's or a trampoline's ip) is never kept.
 *
 * The stack's words are compared, not its addresses: the syscall entry
 * moves everything below it by a random offset at each call
 * (CONFIG_RANDOMIZE_KSTACK_OFFSET: one thread's switch-outs seen here 16 to
 * 800 bytes apart), and __schedule's frame is bp-based.
 *
 * The first frame is bpf_trace_run4's, the program's caller, as the kernel
 * leaves the program's frame (no ORC for JIT code: by its frame pointer, so
 * bp is the word pushed below the return address into bpf_trace_run4).
 * That return address is below bpf_trace_run4's args, the program's ctx: a
 * C function's frame has one size, so its slot is ctx less a constant,
 * found at each keep by its value and proven by the whole chain derived
 * from it.  (Not the tracepoint's caller's frame: __schedule's is bp-based,
 * and its bp is saved below, by whoever saved it first.)
 *
 * A reuse costs one read of the stack from that slot to the user's
 * registers and a compare per frame, against the kernel's ORC unwind.
 */
#ifndef SP_OFFKSTACK_BPF_H
#define SP_OFFKSTACK_BPF_H

#include "orc.bpf.h"

/* Frames a kept chain may have (the switch's chains are 6-15 deep). */
#define OFFK_FRAMES 32
/* Bytes from the first frame's slot to the user's registers: one read covers them. */
#define OFFK_SPAN 4096
/* Words below ctx searched for the first frame's return address (bpf_trace_run4's frame is smaller). */
#define OFFK_SCAN 32

/* The core kernel's ORC tables and text, from kallsyms (user space); 0: none, nothing kept. */
const volatile __u64 orc_ip_tab = 0, orc_tab = 0, ktext_lo = 0, ktext_hi = 0;
const volatile __u32 orc_n = 0;
/* Set where the ORC tables, task storage and tp_btf are there. */
const volatile bool keep_kchains = false;

/*
 * A rule as the walk needs it: the kind in the low byte, then sp_reg and
 * bp_reg (4 bits each), sp_offset and bp_offset (16 bits each); 0: none.
 */
#define OFFK_CALL 1 /* a call frame: the return address at CFA - 8 */
#define OFFK_REGS 2 /* pt_regs at CFA: the end when they are the user's */
#define OFFK_OTHER 3

/* A chain and the rule of each frame. */
struct offk_chain {
	__u64 ips[OFFK_FRAMES];
	__u64 rules[OFFK_FRAMES];
	__u32 n, pad;
};

/*
 * Chains kept per thread, up to this many: one per place it blocks, those
 * with the block's user chain tried (a hint only: a chain is reused only as
 * proven), a new one in the next slot by turns.
 */
#define OFFK_SLOTS 4
/* No id: neither a chain's (>= 0) nor a failed lookup's (-errno). */
#define OFFK_NONE (-0x7fffffff - 1)

struct offk_slot {
	__s32 ustack;	/* the user chain's id it was kept with: which slot to try */
	__s32 kstack;	/* the chain's id in offstacks, which nothing replaces or deletes */
	__s32 failed;	/* an id whose chain these rules could not derive: not tried again */
	__u32 bofs;	/* the first frame's return-address slot, below the tracepoint's ctx */
	struct offk_chain c;
};

struct off_kkept {
	__u32 next, pad; /* the slot a new place takes, by turns */
	struct offk_slot s[OFFK_SLOTS];
};

/* Per thread, the kernel chains of its last blocks (freed with the thread). */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct off_kkept);
} offkkeep SEC(".maps");

/* ip -> rule: one binary search of the table per return address met. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u64);
} offk_rules SEC(".maps");

/* Per CPU: the chain to derive, the walk's state, the stack it reads ([base, base + len)). */
struct offk_scratch {
	struct offk_chain c;
	__u64 sp, bp, base, len;
	__u32 ok, bp_known;
	__u32 cur, searching; /* offk_search's, for c.ips[cur] */
	__s64 lo, hi, found;
	__u8 buf[OFFK_SPAN];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offk_scratch);
} offk_scratch SEC(".maps");

/* Counted for record -v (enum sp_offk_stat). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SP_OFFK_MAX);
	__type(key, __u32);
	__type(value, __u64);
} offk_stats SEC(".maps");

static __always_inline void offk_stat(__u32 i)
{
	__u64 *v = bpf_map_lookup_elem(&offk_stats, &i);

	if (v)
		*v += 1;
}

/* The rule of one table entry as the walk keeps it; after a signal frame (or 6.1's end) no call frame. */
static __always_inline __u64 offk_decode(union orc_raw *u)
{
	struct orc_rule r;
	__u64 kind;

	if (!orc_decode(u, &r))
		return OFFK_OTHER;
	kind = r.type == ORC_TYPE_CALL && !r.signal && !r.end ? OFFK_CALL : r.type == ORC_TYPE_REGS ? OFFK_REGS : OFFK_OTHER;
	return kind | (__u64)r.sp_reg << 8 | (__u64)r.bp_reg << 12 | (__u64)(__u16)r.sp_off << 16 |
	       (__u64)(__u16)r.bp_off << 32;
}

/*
 * The rules of the kernel's chain, each as the kernel's orc_find(ip - 1)
 * finds it for a frame after a call: the last table entry at or below, the
 * rightmost of equals; 0 outside the core kernel's text.  A binary search
 * step a call (bpf_loop: a loop inside the walk's is more than the verifier
 * will follow), from one ip to the next; a rule found once is in offk_rules.
 */
static long offk_search(__u32 unused, void *unused2)
{
	__u32 zero = 0, c;
	struct offk_scratch *sc = bpf_map_lookup_elem(&offk_scratch, &zero);
	union orc_raw e = { .raw = 0 }; /* a word: the verifier wants stack reads aligned */
	__u64 ip, rule, *r;
	__s64 mid;
	__s32 rel;

	if (!sc)
		return 1;
	c = sc->cur;
	if (c >= sc->c.n || c >= OFFK_FRAMES)
		return 1;
	ip = sc->c.ips[c];
	if (!sc->searching) {
		r = bpf_map_lookup_elem(&offk_rules, &ip);
		if (r || ip <= ktext_lo || ip > ktext_hi) {
			sc->c.rules[c] = r ? *r : 0;
			sc->cur = c + 1;
			return 0;
		}
		sc->lo = 0;
		sc->hi = (__s64)orc_n - 1;
		sc->found = -1;
		sc->searching = 1;
		return 0;
	}
	if (sc->lo <= sc->hi) {
		mid = sc->lo + ((sc->hi - sc->lo) >> 1);
		if (bpf_probe_read_kernel(&rel, 4, (void *)(orc_ip_tab + mid * 4)))
			return 1;
		if (orc_ip_tab + mid * 4 + (__s64)rel <= ip - 1) {
			sc->found = mid;
			sc->lo = mid + 1;
		} else {
			sc->hi = mid - 1;
		}
		return 0;
	}
	rule = 0;
	if (sc->found >= 0) {
		/* Unread, the rule is not known to be none: not noted, and the walk stops here. */
		if (bpf_probe_read_kernel(&e, 6, (void *)(orc_tab + sc->found * 6)))
			return 1;
		rule = offk_decode(&e);
	}
	bpf_map_update_elem(&offk_rules, &ip, &rule, BPF_ANY);
	sc->c.rules[c] = rule;
	sc->searching = 0;
	sc->cur = c + 1;
	return 0;
}

/* The stack word at addr, from the read of [base, base + len); false outside it. */
static __always_inline bool offk_word(struct offk_scratch *sc, __u64 addr, __u64 *val)
{
	__u64 o = addr - sc->base;

	if (addr < sc->base || o + 8 > sc->len || o > OFFK_SPAN - 8)
		return false;
	*val = *(__u64 *)&sc->buf[o];
	return true;
}

/*
 * One frame of the walk, as the kernel's unwind_next_frame takes it for the
 * rules accepted: frame i+1 derived by frame i's rule must be c.ips[i+1];
 * the last frame's rule must put pt_regs at the stack's top (base + len),
 * the user's, where the kernel's chain ends.
 */
static long offk_step(__u32 i, void *unused)
{
	__u32 zero = 0, j = (i + 1) & (OFFK_FRAMES - 1);
	struct offk_scratch *sc = bpf_map_lookup_elem(&offk_scratch, &zero);
	__u64 rule, kind, spr, bpr, cfa, val, bp = 0;
	__s16 spo, bpo;

	if (!sc || i + 1 >= OFFK_FRAMES)
		return 1;
	rule = sc->c.rules[i & (OFFK_FRAMES - 1)];
	kind = rule & 0xff;
	spr = rule >> 8 & 0xf;
	bpr = rule >> 12 & 0xf;
	spo = rule >> 16;
	bpo = rule >> 32;
	if (spr == ORC_REG_SP)
		cfa = sc->sp + spo;
	else if (spr == ORC_REG_BP && sc->bp_known)
		cfa = sc->bp + spo;
	else
		return 1;
	if (i + 1 >= sc->c.n) {
		sc->ok = kind == OFFK_REGS && cfa == sc->base + sc->len;
		return 1;
	}
	/* The kernel stops where the stack would go down again. */
	if (kind != OFFK_CALL || cfa <= sc->sp || !offk_word(sc, cfa - 8, &val) || val != sc->c.ips[j])
		return 1;
	if (bpr == ORC_REG_PREV_SP) {
		if (!offk_word(sc, cfa + bpo, &bp))
			return 1;
	} else if (bpr == ORC_REG_BP) {
		if (!sc->bp_known || !offk_word(sc, sc->bp + bpo, &bp))
			return 1;
	} else if (bpr != ORC_REG_UNDEFINED) {
		return 1;
	}
	if (bpr != ORC_REG_UNDEFINED) {
		sc->bp = bp;
		sc->bp_known = 1;
	}
	sc->sp = cfa;
	return 0;
}

/*
 * The walk of sc->c from the first frame's slot at slot, over the stack as
 * it is now, up to the user's registers at regs; true if it derives every
 * frame of sc->c.
 */
static __always_inline bool offk_walk(struct offk_scratch *sc, __u64 slot, __u64 regs)
{
	__u64 base = slot - 8, len = regs - base, ip0;

	if (regs <= slot || len >= OFFK_SPAN || sc->c.n < 2 || sc->c.n >= OFFK_FRAMES)
		return false;
	/*
	 * Bounded where the verifier sees it, in the register passed: 6.1's
	 * forgets a bound learnt after the value was spilled to the stack.
	 */
	asm volatile("%[len] &= %[mask]" : [len] "+r"(len) : [mask] "i"(OFFK_SPAN - 1));
	if (bpf_probe_read_kernel(sc->buf, len, (void *)base))
		return false;
	sc->base = base;
	sc->len = len;
	/* bp as the kernel has it past the program's frame: the word the JIT's prologue pushed. */
	if (!offk_word(sc, slot, &ip0) || ip0 != sc->c.ips[0] || !offk_word(sc, base, &sc->bp))
		return false;
	sc->sp = slot + 8;
	sc->bp_known = 1;
	sc->ok = 0;
	bpf_loop(OFFK_FRAMES, offk_step, NULL, 0);
	return sc->ok;
}

/* The kept chain's id if the walk derives it from the thread's stack now, else -1 (a subprogram: tried per slot). */
static __noinline __s32 offk_hit(struct offk_slot *k, struct pt_regs *regs, __u64 c, __u64 ra)
{
	__u32 zero = 0;
	struct offk_scratch *sc = bpf_map_lookup_elem(&offk_scratch, &zero);

	if (!sc || !k->c.n)
		return -1;
	__builtin_memcpy(&sc->c, &k->c, sizeof(sc->c));
	/* The chain ends at those registers because they are the user's (the kernel: no kernel text there). */
	if (!offk_walk(sc, c - k->bofs, ra) || (__s64)regs->ip < 0)
		return -1;
	return k->kstack;
}

/* Keeps the chain of id if the walk derives the kernel's own from the first frame's slot. */
static __always_inline void offk_keep(void *ctx, struct task_struct *task, struct off_kkept *kk, __u32 i,
				      __s32 ustack, __u64 c, __u64 ra, __s32 id)
{
	__u32 zero = 0, j;
	struct offk_scratch *sc = bpf_map_lookup_elem(&offk_scratch, &zero);
	struct offk_slot *k;
	long len;

	if (!sc)
		return;
	if (!kk) {
		kk = bpf_task_storage_get(&offkkeep, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!kk)
			return;
		/* Created zeroed: no slot may match a user chain or a failed id of 0. */
		for (j = 0; j < OFFK_SLOTS; j++) {
			kk->s[j].ustack = OFFK_NONE;
			kk->s[j].failed = OFFK_NONE;
		}
	}
	/* A chain these rules could not derive under this user chain: not tried again while it is noted. */
	for (j = 0; j < OFFK_SLOTS; j++)
		if (kk->s[j].ustack == ustack && kk->s[j].failed == id)
			return;
	/* i: a slot of this user chain holding none; else the next one, by turns. */
	if (i >= OFFK_SLOTS) {
		i = kk->next % OFFK_SLOTS;
		kk->next = i + 1;
	}
	k = &kk->s[i & (OFFK_SLOTS - 1)];
	k->ustack = ustack;
	k->failed = OFFK_NONE;
	k->c.n = 0;
	offk_stat(SP_OFFK_MISS);
	/* From bpf_trace_run4's frame: the id's chain (KSTACK_SKIP) is this one's from its second frame. */
	len = bpf_get_stack(ctx, sc->c.ips, sizeof(sc->c.ips), KSTACK_SKIP - 1);
	/* A full buffer may be a chain cut short: not kept. */
	if (len < 24 || len >= (long)sizeof(sc->c.ips))
		goto fail;
	sc->c.n = (__u64)len / 8;
	if (bpf_probe_read_kernel(sc->buf, OFFK_SCAN * 8, (void *)(c - OFFK_SCAN * 8)))
		goto fail;
	/* The nearest below ctx. */
	for (j = 0; j < OFFK_SCAN; j++)
		if (*(__u64 *)&sc->buf[(OFFK_SCAN - 1 - j) * 8] == sc->c.ips[0])
			break;
	if (j >= OFFK_SCAN)
		goto fail;
	sc->cur = 0;
	sc->searching = 0;
	/* 2^24 table entries at most (this kernel has 480k): 24 steps an ip, and its start and end. */
	bpf_loop(OFFK_FRAMES * 26, offk_search, NULL, 0);
	if (sc->cur != sc->c.n || !offk_walk(sc, c - (j + 1) * 8, ra))
		goto fail;
	k->bofs = (j + 1) * 8;
	k->kstack = id;
	k->failed = OFFK_NONE;
	__builtin_memcpy(&k->c, &sc->c, sizeof(k->c));
	offk_stat(SP_OFFK_KEPT);
	return;
fail:
	k->c.n = 0;
	k->failed = id;
}

/*
 * The blocking thread's kernel stack id: the one kept where it blocked with
 * this user chain (ustack) when proven the same, else the kernel's (and kept).
 */
static __always_inline __s32 offk_stackid(void *ctx, __s32 ustack)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct off_kkept *kk = bpf_task_storage_get(&offkkeep, task, 0, 0);
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	void *p[2] = { ctx, regs };
	__u32 spare = OFFK_SLOTS;
	__u64 a[2];
	__s32 id;

	/* ctx's and regs' addresses as numbers (the verifier refuses most arithmetic on those pointers). */
	if (!regs || bpf_probe_read_kernel(a, sizeof(a), p))
		return bpf_get_stackid(ctx, &offstacks, KSTACK_SKIP | BPF_F_FAST_STACK_CMP);
	for (__u32 i = 0; kk && i < OFFK_SLOTS; i++) {
		if (kk->s[i].ustack != ustack)
			continue;
		if (!kk->s[i].c.n) {
			spare = i;
			continue;
		}
		id = offk_hit(&kk->s[i], regs, a[0], a[1]);
		if (id >= 0) {
			offk_stat(SP_OFFK_HIT);
			return id;
		}
	}
	id = bpf_get_stackid(ctx, &offstacks, KSTACK_SKIP | BPF_F_FAST_STACK_CMP);
	if (id >= 0)
		offk_keep(ctx, task, kk, spare, ustack, a[0], a[1], id);
	return id;
}

#endif
