/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel chain of a sample taken in kernel mode, unwound here by the
 * kernel's own ORC rules where they are the simple ones, else by the kernel.
 *
 * bpf_get_stack walks the kernel stack by ORC (this kernel has no frame
 * pointers), which cost about 4 us for the 6 frames of a syscall
 * interrupted in task_sched_runtime (by turns in one run, `workload spin`):
 * 3.5% of its samples, 140 ns of every sample on average.  A kept chain,
 * reused while every word the walk read was the same, was tried first: a
 * syscall is sampled at few pcs but at many depths (spin's top pc at more
 * than ten stack pointers in 3 s), and 163 of 5,000 chains were reused.
 *
 * So the walk is done here, as unwind_next_frame does it, on the same
 * memory (the interrupted task's stack, which nothing changes while this
 * CPU is in its interrupt): each pc's rule from the kernel's ORC table
 * (whose place a syscall program asks the kernel for: kallsyms_lookup_name;
 * found through a lookup table made here as the kernel's is), the CFA from sp or rbp, the return
 * address below it, rbp from the frame where the rule says it was saved.
 * Only what is plainly the same as the kernel's walk is taken here:
 *  - call frames whose CFA is sp or rbp plus an offset and whose rbp is
 *    untouched or saved in the frame;
 *  - the end at a register frame that is the user's (cs), at the task's
 *    user registers, or at the end-of-stack rule (kernel threads, idle);
 *  - pcs and return addresses in the kernel's text that ORC's lookup
 *    table covers, none of them a trampoline the unwinder rewrites
 *    (function-graph's return_to_handler, rethook's), every word read on
 *    the task's stack between sp and its user registers, each CFA above
 *    the last.
 * Any other rule (interrupt and exception stacks, modules, BPF, a frame
 * pointer read through, iret frames) and the whole chain is the kernel's,
 * as before.  SPANPERF_KSTACK_CHECK (tests) compares every chain made here
 * with the kernel's.
 *
 * The rules' layout is checked by CO-RE (ks_layout_ok): 6.4+'s or 6.1's,
 * decoded by orc.bpf.h; elsewhere every chain is the kernel's.
 */
#ifndef SP_KSTACK_BPF_H
#define SP_KSTACK_BPF_H

#include "orc.bpf.h"

#define KS_KSTACK 127 /* kernel.perf_event_max_stack: the kernel chain is at most this long, as perf's */
#define KS_FRAMES 32  /* kernel chains up to this long are unwound here */
#define KS_BLOCKS (1 << 17) /* 256-byte blocks of text ks_index covers: 32 MiB (this kernel's: 18) */
#define KS_PER_BLOCK 64     /* rules of one block read at once (this kernel's: 7 on average, 34 at syscall entry) */
#define KS_RANGES 1024      /* per CPU: blocks' rules kept with the pcs they are found for, 2 a block */
#define KS_SEARCH 24  /* steps of the binary search: the table has fewer than 2^24 rules */


/*
 * The kernel's ORC tables, text and the trampolines its unwinder rewrites,
 * from the kernel (user/sys/orctables.c), set by the recorder before the
 * load; while ks_orc is 0 every chain is the kernel's.
 */
__u64 ks_orc_ip, ks_orc_ip_end, ks_orc, ks_stext, ks_etext, ks_tramp[2];
/* Tests: every chain made here checked against the kernel's walk, which is then what the sample carries. */
const volatile bool ks_check = false;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SP_KS_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} ks_stats SEC(".maps");

/* Per CPU: the walk's state, and the binary search's. */
struct ks_work {
	__u64 pc, sp, bp, lo_sp, regs; /* [lo_sp, regs): the stack the walk may read */
	__u32 n, signal, done;		/* entries written to the sample's ips from 1; done: 1 ended well, 2 refused */
	__u64 addr;			/* ks_addr's */
	__u64 lo, hi, found, want;
	__s32 rel[KS_PER_BLOCK]; /* a block's rules' pcs, as the table holds them */
	__u64 mine[KS_FRAMES];	  /* ks_check: the chain made here */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ks_work);
} ks_works SEC(".maps");

static __always_inline void ks_stat(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&ks_stats, &idx);

	if (v)
		*v += 1;
}

/*
 * x & mask in the register an index is used from: where the compiler knows
 * the index small it drops a plain mask, and the verifier, after a spill,
 * no longer knows it.
 */
static __always_inline __u32 ks_idx(__u32 x, const __u32 mask)
{
	asm volatile("%0 &= %1" : "+r"(x) : "i"(mask));
	return x;
}

/* A kernel pointer as a number to compute with: through the map, as the verifier forbids arithmetic on it. */
static __always_inline __u64 ks_addr(struct ks_work *k, const void *p)
{
	k->addr = (__u64)p;
	return *(volatile __u64 *)&k->addr;
}

/* A bitfield of an orc_entry type: its first bit in the struct, and its width (CO-RE). */
#define KS_BIT(t, f) (__builtin_preserve_field_info(((t *)0)->f, BPF_FIELD_BYTE_OFFSET) * 8 + \
		      __builtin_preserve_field_info(((t *)0)->f, BPF_FIELD_RSHIFT_U64) -      \
		      __builtin_preserve_field_info(((t *)0)->f, BPF_FIELD_LSHIFT_U64))
#define KS_WIDTH(t, f) (64 - __builtin_preserve_field_info(((t *)0)->f, BPF_FIELD_RSHIFT_U64))

/*
 * Whether the kernel's orc_entry is a layout orc_decode reads (orc.bpf.h):
 * 6.4+'s (type:3, signal:1), or 6.1's (type:2, end:1), where the kernel's
 * walk is the same for the rules taken here.
 */
static __always_inline bool ks_layout_ok(void)
{
	if (!bpf_core_type_exists(struct orc_entry) || bpf_core_type_size(struct orc_entry) != 6 ||
	    !bpf_core_field_exists(struct orc_entry, bp_reg) || !bpf_core_field_exists(struct orc_entry, bp_offset) ||
	    bpf_core_field_offset(struct orc_entry, sp_offset) != 0 || bpf_core_field_offset(struct orc_entry, bp_offset) != 2)
		return false;
	if (bpf_core_field_exists(struct orc_entry, signal))
		return KS_BIT(struct orc_entry, sp_reg) == 32 && KS_WIDTH(struct orc_entry, sp_reg) == 4 &&
		       KS_BIT(struct orc_entry, bp_reg) == 36 && KS_WIDTH(struct orc_entry, bp_reg) == 4 &&
		       KS_BIT(struct orc_entry, type) == 40 && KS_WIDTH(struct orc_entry, type) == 3 &&
		       KS_BIT(struct orc_entry, signal) == 43 && KS_WIDTH(struct orc_entry, signal) == 1;
	return bpf_core_field_exists(struct orc_entry___v61, end) && KS_BIT(struct orc_entry___v61, sp_reg) == 32 &&
	       KS_WIDTH(struct orc_entry___v61, sp_reg) == 4 && KS_BIT(struct orc_entry___v61, bp_reg) == 36 &&
	       KS_WIDTH(struct orc_entry___v61, bp_reg) == 4 && KS_BIT(struct orc_entry___v61, type) == 40 &&
	       KS_WIDTH(struct orc_entry___v61, type) == 2 && KS_BIT(struct orc_entry___v61, end) == 42 &&
	       KS_WIDTH(struct orc_entry___v61, end) == 1;
}

/* One step of __orc_find's search: the rightmost rule whose pc is at most want. */
static long ks_search_step(__u32 i, void *unused)
{
	__u32 zero = 0;
	struct ks_work *k = bpf_map_lookup_elem(&ks_works, &zero);
	__u64 mid, at;
	__s32 rel;

	if (!k || k->lo > k->hi)
		return 1;
	mid = k->lo + (k->hi - k->lo) / 2;
	at = ks_orc_ip + mid * 4;
	if (bpf_probe_read_kernel(&rel, 4, (void *)at)) {
		k->found = ~0ull;
		return 1;
	}
	if (at + (__s64)rel <= k->want) {
		k->found = mid;
		k->lo = mid + 1;
	} else {
		if (!mid)
			return 1;
		k->hi = mid - 1;
	}
	return 0;
}

/*
 * ORC's lookup table, made here as it is needed: for each 256-byte block of
 * text from _stext, the index of the rule in force at its start, plus 1 (0:
 * not known yet).  The kernel's own (orc_lookup) is in no kallsyms list.  A
 * binary search per pc cost as much as the kernel's walk: a leaf pc is any
 * instruction, and a busy host's kernel samples met thousands of blocks.
 * Every CPU writes the same value for a block, so they may race.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, KS_BLOCKS);
	__type(key, __u32);
	__type(value, __u32);
} ks_index SEC(".maps");

/*
 * Per CPU, in front of the table: rules with the pcs [lo, hi) they are
 * found for, 2 ways by the pc's block.  Keyed by the exact pc, return
 * addresses hit (they come back often) but a sampled leaf pc, which may be
 * any instruction, missed nearly always: 0.8-1.2 lookups of the table a
 * chain (5.6-6.1 frames), each reading rules the CPU's cache had not.  By
 * range, 0.46-0.54 (by turns in one run, `workload spin` -a).
 */
struct ks_range {
	struct {
		__u64 lo, hi;
		__u64 raw; /* the orc_entry's 6 bytes */
	} way[2];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KS_RANGES);
	__type(key, __u32);
	__type(value, struct ks_range);
} ks_ranges SEC(".maps");

/* The index of the rightmost rule whose pc is at most want (__orc_find's), or ~0. */
static __always_inline __u64 ks_search(struct ks_work *k, __u64 want, __u64 n)
{
	k->lo = 0;
	k->hi = n - 1;
	k->found = ~0ull;
	k->want = want;
	bpf_loop(KS_SEARCH + 1, ks_search_step, NULL, 0);
	return k->lo <= k->hi || k->found >= n ? ~0ull : k->found;
}

/* orc_lookup[block]: the rule in force at the block's start, or ~0. */
static __always_inline __u64 ks_block(struct ks_work *k, __u32 block, __u64 n)
{
	__u32 *v = bpf_map_lookup_elem(&ks_index, &block);
	__u64 found;

	if (!v)
		return ~0ull;
	if (*v)
		return *v - 1;
	found = ks_search(k, ks_stext + ((__u64)block << 8), n);
	if (found < n)
		*v = found + 1;
	return found;
}

/*
 * One step of the scan of a block's rules (k->rel, indexes [lo, hi)): the
 * rightmost whose pc is at most want.  Sorted, so the first past it ends
 * the scan.  A callback, verified once, where an unrolled scan was 950
 * instructions more to verify.
 */
static long ks_scan_step(__u32 j, void *unused)
{
	__u32 zero = 0;
	struct ks_work *k = bpf_map_lookup_elem(&ks_works, &zero);
	__u64 at;

	if (!k)
		return 1;
	at = k->found + 1;
	if (at >= k->hi || at - k->lo > KS_PER_BLOCK - 1 ||
	    ks_orc_ip + at * 4 + (__s64)k->rel[ks_idx(at - k->lo, KS_PER_BLOCK - 1)] > k->want)
		return 1;
	k->found = at;
	return 0;
}

/* The ORC rule for pc (the 6 bytes), as orc_find gives it for core kernel text, or ~0. */
static __always_inline __u64 ks_rule_of(struct ks_work *k, __u64 pc)
{
	__u64 raw = 0, n = (ks_orc_ip_end - ks_orc_ip) / 4, lo, hi, at, end;
	__u32 block, cnt, slot;
	struct ks_range *g;

	if (!n || n >= (1ull << KS_SEARCH) || pc < ks_stext)
		return ~0ull;
	block = (pc - ks_stext) >> 8;
	slot = block & (KS_RANGES - 1);
	g = bpf_map_lookup_elem(&ks_ranges, &slot);
	if (!g)
		return ~0ull;
	if (pc - g->way[0].lo < g->way[0].hi - g->way[0].lo)
		return g->way[0].raw;
	if (pc - g->way[1].lo < g->way[1].hi - g->way[1].lo)
		return g->way[1].raw;
	if (block + 1 >= KS_BLOCKS)
		return ~0ull;
	/* __orc_find over [orc_lookup[idx], orc_lookup[idx + 1]]: the rightmost whose pc is at most pc. */
	lo = ks_block(k, block, n);
	hi = ks_block(k, block + 1, n);
	if (lo >= n || hi >= n || hi < lo || hi - lo >= KS_PER_BLOCK)
		return ~0ull;
	cnt = hi - lo + 1;
	asm volatile("if %0 <= %1 goto +1; %0 = %1" : "+r"(cnt) : "i"(KS_PER_BLOCK));
	if (bpf_probe_read_kernel(k->rel, cnt * 4, (void *)(ks_orc_ip + lo * 4)))
		return ~0ull;
	if (ks_orc_ip + lo * 4 + (__s64)k->rel[0] > pc)
		return ~0ull;
	k->lo = k->found = lo;
	k->hi = lo + cnt;
	k->want = pc;
	bpf_loop(KS_PER_BLOCK, ks_scan_step, NULL, 0);
	if (bpf_probe_read_kernel(&raw, 6, (void *)(ks_orc + k->found * 6)))
		return ~0ull;
	/*
	 * The pcs the search gives this rule for: from its own to the next
	 * rule's (the table is sorted and the search takes the rightmost of
	 * equal pcs, so the next's is above pc); for the block's last rule, to
	 * the next block's start, as orc_lookup[idx + 1] is that rule too.
	 * Adjacent rules go to different ways.  found is in [lo, hi) (the scan's).
	 */
	at = k->found;
	if (at + 1 < k->hi)
		end = ks_orc_ip + (at + 1) * 4 + (__s64)k->rel[ks_idx(at + 1 - lo, KS_PER_BLOCK - 1)];
	else
		end = ks_stext + ((__u64)(block + 1) << 8);
	lo = ks_orc_ip + at * 4 + (__s64)k->rel[ks_idx(at - lo, KS_PER_BLOCK - 1)];
	slot = ks_idx(at, 1);
	g->way[slot].lo = lo;
	g->way[slot].hi = end;
	g->way[slot].raw = raw;
	return raw;
}

/* A word of the walk's stack, read as unwind_next_frame reads it; -1 off that stack. */
static __always_inline int ks_read(struct ks_work *k, __u64 at, __u64 *v)
{
	if (at < k->lo_sp || at + 8 > k->regs || bpf_probe_read_kernel(v, 8, (void *)at))
		return -1;
	return 0;
}

/*
 * Whether pc is one the kernel's unwinder would give as it is: in the text
 * ORC's table covers (its last block falls back to rbp), no trampoline.
 */
static __always_inline bool ks_pc_ok(__u64 pc)
{
	return pc >= ks_stext && pc + 2 * ORC_LOOKUP_BLOCK < ks_etext && pc != ks_tramp[0] && pc != ks_tramp[1];
}

/*
 * One step of unwind_next_frame from the frame at k->pc: its rule, its CFA,
 * the next pc (written to the sample) and rbp.  Returns 1 to stop: done 1
 * when the kernel's chain ends here, 2 when the step is not one taken here.
 */
static long ks_step(__u32 i, void *unused)
{
	__u32 zero = 0, sp_reg, bp_reg, type;
	struct ks_work *k = bpf_map_lookup_elem(&ks_works, &zero);
	struct sp_eh_sample *s = bpf_map_lookup_elem(&eh_scratch, &zero);
	__u64 cfa, ra = 0, bp = 0, cs = 0;
	struct orc_rule r;
	union orc_raw u;
	__s16 off, bp_off;

	if (!k || !s)
		return 1;
	k->done = 2;
	if (k->n >= KS_FRAMES)
		return 1;
	u.raw = ks_rule_of(k, k->signal ? k->pc : k->pc - 1);
	if (u.raw == ~0ull || !orc_decode(&u, &r))
		return 1;
	sp_reg = r.sp_reg;
	bp_reg = r.bp_reg;
	type = r.type;
	off = r.sp_off;
	bp_off = r.bp_off;
	if (type == ORC_TYPE_END_OF_STACK) {
		k->done = 1;
		return 1;
	}
	if (sp_reg == ORC_REG_SP)
		cfa = k->sp + off;
	else if (sp_reg == ORC_REG_BP)
		cfa = k->bp + off;
	else
		return 1;
	if (type == ORC_TYPE_REGS) {
		/* The user's registers (the rule's CFA is where they are): the kernel's chain ends at this pc. */
		if (cfa == k->regs && !bpf_probe_read_kernel(&cs, 8, (void *)(cfa + __builtin_offsetof(struct pt_regs, cs))) &&
		    (cs & 3) == 3)
			k->done = 1;
		return 1;
	}
	/* Every CFA above the last (the kernel's "wrong direction" check), on the walk's stack. */
	if (type != ORC_TYPE_CALL || cfa <= k->sp || ks_read(k, cfa - 8, &ra) || !ks_pc_ok(ra))
		return 1;
	if (bp_reg == ORC_REG_PREV_SP) {
		if (ks_read(k, cfa + bp_off, &bp))
			return 1;
		k->bp = bp;
	} else if (bp_reg != ORC_REG_UNDEFINED) {
		return 1;
	}
	k->signal = r.signal;
	k->pc = ra;
	k->sp = cfa;
	s->ips[ks_idx(k->n + 1, EH_IPS - 1)] = ra;
	k->n++;
	k->done = 0;
	return 0;
}

/*
 * The kernel chain of the interrupted task from ip, sp and rbp, into
 * s->ips from 1: its length, or 0 where the kernel must walk it.  k is
 * the caller's lookup of ks_works (each inlined lookup is a patch at load).
 */
static __always_inline __u32 ks_walk(struct ks_work *k, struct task_struct *task, struct sp_eh_sample *s, __u64 ip,
				      __u64 sp, __u64 bp)
{
	if (!k || !ks_pc_ok(ip))
		return 0;
	k->regs = ks_addr(k, (void *)bpf_task_pt_regs(task));
	k->lo_sp = ks_addr(k, task->stack);
	/* On the task's stack: not an interrupt's or an exception's, which the kernel's walk crosses. */
	if (sp < k->lo_sp || sp >= k->regs)
		return 0;
	k->lo_sp = sp;
	k->pc = ip;
	k->sp = sp;
	k->bp = bp;
	k->signal = 1; /* the interrupted frame: its pc is not a return address */
	k->n = 1;
	k->done = 2;
	s->ips[1] = ip;
	bpf_loop(KS_FRAMES, ks_step, NULL, 0);
	return k->done == 1 ? k->n : 0;
}

/*
 * The kernel chain of a sample in kernel mode into eh_scratch's ips (the
 * PERF_CONTEXT_KERNEL marker at 0, then at most KS_KSTACK of the kernel's):
 * unwound here where it can be (see the top), else by the kernel.  Returns
 * the entries written, 0 for none.  Global: verified once, alone.
 */
__noinline int sp_kstack(struct bpf_perf_event_data *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 zero = 0, n = 0, why = SP_KS_WALKED;
	struct sp_eh_sample *s = bpf_map_lookup_elem(&eh_scratch, &zero);
	struct ks_work *k = bpf_map_lookup_elem(&ks_works, &zero);
	long got;

	if (!s || !ctx)
		return 0;
	if (ks_layout_ok() && ks_orc) {
		n = ks_walk(k, task, s, ctx->regs.ip, ctx->regs.sp, ctx->regs.bp);
		if (n && ks_check && k) {
			for (__u32 i = 0; i < KS_FRAMES; i++)
				k->mine[i] = i < n ? s->ips[i + 1] : 0;
			got = bpf_get_stack(ctx, &s->ips[1], KS_KSTACK * 8, 0);
			if (got != n * 8)
				n = 0;
			for (__u32 i = 0; i < KS_FRAMES; i++)
				if (i < n && k->mine[i] != s->ips[i + 1])
					n = 0;
			if (!n) {
				ks_stat(SP_KS_CHECK_BAD);
				goto walked;
			}
		}
		if (n) {
			/* Out through the kernel's walk's exit: one ks_stat site, not two. */
			why = SP_KS_HERE;
			got = (long)n * 8;
			goto out;
		}
	}
	got = bpf_get_stack(ctx, &s->ips[1], KS_KSTACK * 8, 0);
walked:
	if (got <= 0)
		return 0;
out:
	ks_stat(why);
	s->ips[0] = (__u64)-128; /* PERF_CONTEXT_KERNEL */
	return (__u64)got / 8 + 1;
}

#endif
