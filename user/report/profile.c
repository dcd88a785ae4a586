// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "log.h"
#include "names.h"
#include "profile.h"
#include "session.h"
#include "srclines.h"
#include "unwind.h"
#include "util.h"
#include "waker_codec.h"

/*
 * An address already symbolized: key (ip, pid, address space) -> its
 * frames, exp[first .. first + nr), innermost inlined function first.
 */
struct resolved_ip {
	__u64 ip, epoch;
	__u32 pid; /* (u32)-1 for kernel addresses */
	__u32 first, nr;
	bool inl; /* with its inlined functions */
};

struct exp_frame {
	__u32 func;
	const char *srcline;
};

struct profile_builder {
	struct profile *p;
	struct resolved_ip *ips;
	size_t nr_ips, cap_ips;
	struct hindex ip_idx, func_idx, stack_idx, off_idx;
	size_t cap_funcs, cap_stacks, cap_off;
	struct pframe *scratch; /* the sample being folded */
	size_t nr_scratch, cap_scratch;
	struct exp_frame *exp; /* resolved addresses' frames */
	size_t nr_exp, cap_exp;
	__u64 user_ips[UNWIND_MAX_FRAMES];
	/*
	 * With wakers: an off-CPU block waits here for the spanperf:waker
	 * sample that follows it in the file (offcpu.h) before it is folded.
	 */
	struct {
		bool on;
		__u32 pid, tid, nr;
		const char *comm;
		__u64 time, period;
		struct pframe *f;
		size_t cap;
	} pend;
	struct pframe *wscratch; /* a waker's frames */
	size_t cap_wscratch;
	bool timeline; /* keep every sample's time in p->ticks */
	size_t cap_ticks;
	__u64 lost_before; /* the session's count when the profile began (a live session's window) */
	__u64 filtered_before[4]; /* the session's filtered_* then, likewise */
};

static int add_tick(struct profile_builder *b, const struct pd_sample *s, __u32 stack, bool off)
{
	struct profile *p = b->p;

	if (!b->timeline)
		return 0;
	if (array_reserve((void **)&p->ticks, &b->cap_ticks, p->nr_ticks, sizeof(*p->ticks)))
		return -ENOMEM;
	p->ticks[p->nr_ticks++] = (struct ptick){ .time = s->time, .period = s->period, .tid = s->tid, .stack = stack,
						  .off = off, .sum = off && (s->cpu_res & OFFCPU_RES_SUM) };
	return 0;
}

/* perf report's al->addr: map-relative in a file (ip - start + pgoff), the address itself elsewhere. */
static __u64 unknown_addr(const struct sym *s, __u64 ip)
{
	__u64 addr;

	if (s->known)
		return 0;
	addr = !s->kernel && s->dso_id >= 0 && s->file_offset ? s->file_offset : ip;
	return addr ? addr : PFUNC_UNKNOWN_AT_ZERO;
}

const char *pfunc_sym(const struct pfunc *f, char *buf, size_t len)
{
	if (!f->unknown_addr)
		return f->name;
	/* perf's "%#llx" gives 0 no 0x: a sample with no frame at all (ip 0) prints as 0000000000000000. */
	if (f->unknown_addr == PFUNC_UNKNOWN_AT_ZERO)
		snprintf(buf, len, "%016llx", 0ull);
	else
		snprintf(buf, len, "0x%016llx", (unsigned long long)f->unknown_addr);
	return buf;
}

static bool func_eq(const void *ctx, size_t idx)
{
	const void *const *c = ctx;
	const struct pfunc *f = &((const struct profile *)c[0])->funcs[idx];
	const struct sym *s = c[1];

	/* Names are the symbolizer's: one pointer per symbol of a dso. */
	return f->name == s->name && f->dso_id == s->dso_id && f->kernel == s->kernel && !f->inlined &&
	       f->unknown_addr == unknown_addr(s, *(const __u64 *)c[2]) && (s->dso_id >= 0 || !strcmp(f->dso, s->dso));
}

static int func_of(struct profile_builder *b, const struct sym *s, __u64 ip, __u32 *out)
{
	struct profile *p = b->p;
	__u64 addr = unknown_addr(s, ip);
	__u64 h = hash_mix(hash_mix(hash_mix(0, (__u64)(uintptr_t)s->name), (__u64)(s->dso_id + 2)), addr);
	const void *ctx[3] = { p, s, &addr };
	long i = hindex_find(&b->func_idx, h, func_eq, ctx);

	if (i >= 0) {
		*out = i;
		return 0;
	}
	if (array_reserve((void **)&p->funcs, &b->cap_funcs, p->nr_funcs, sizeof(*p->funcs)))
		return -ENOMEM;
	p->funcs[p->nr_funcs] = (struct pfunc){ s->name, s->dso, s->path, s->build_id, s->dso_id, s->kernel, addr,
						s->sym_start, s->sym_end, false, NULL, s->src_file };
	/* Unnamed in a file: where, so that it can be symbolized elsewhere (perf script users do it by hand). */
	if (p->opts.unknown_offsets && addr && addr != PFUNC_UNKNOWN_AT_ZERO && !s->kernel && s->dso_id >= 0) {
		char buf[512];

		snprintf(buf, sizeof(buf), "%s+0x%llx", s->dso, (unsigned long long)addr);
		if (!(p->funcs[p->nr_funcs].label = strpool_intern(&p->labels, buf, NULL)))
			return -ENOMEM;
	}
	if (hindex_add(&b->func_idx, h, p->nr_funcs))
		return -ENOMEM;
	*out = p->nr_funcs++;
	return 0;
}

static bool inl_eq(const void *ctx, size_t idx)
{
	const void *const *c = ctx;
	const struct pfunc *f = &((const struct profile *)c[0])->funcs[idx];

	return f->inlined && f->name == c[1] && f->dso_id == *(const int *)c[2];
}

/* A function inlined in dso: one pfunc per (DWARF name, dso), with the real symbol's dso fields. */
static int inl_func_of(struct profile_builder *b, const struct sym *s, const char *name, __u32 *out)
{
	struct profile *p = b->p;
	__u64 h = hash_mix(hash_mix(hash_mix(0, (__u64)(uintptr_t)name), (__u64)(s->dso_id + 2)), 0x1a1);
	const void *ctx[3] = { p, name, &s->dso_id };
	long i = hindex_find(&b->func_idx, h, inl_eq, ctx);

	if (i >= 0) {
		*out = i;
		return 0;
	}
	if (array_reserve((void **)&p->funcs, &b->cap_funcs, p->nr_funcs, sizeof(*p->funcs)))
		return -ENOMEM;
	p->funcs[p->nr_funcs] = (struct pfunc){ name, s->dso, s->path, s->build_id, s->dso_id, false, 0,
						s->sym_start, s->sym_end, true, NULL, NULL };
	{
		char buf[1024];

		snprintf(buf, sizeof(buf), "%s (inlined)", name);
		if (!(p->funcs[p->nr_funcs].label = strpool_intern(&p->labels, buf, NULL)))
			return -ENOMEM;
	}
	if (hindex_add(&b->func_idx, h, p->nr_funcs))
		return -ENOMEM;
	*out = p->nr_funcs++;
	return 0;
}

static int push_exp(struct profile_builder *b, __u32 func, const char *srcline)
{
	if (array_reserve((void **)&b->exp, &b->cap_exp, b->nr_exp, sizeof(*b->exp)))
		return -ENOMEM;
	b->exp[b->nr_exp++] = (struct exp_frame){ func, srcline };
	return 0;
}

/*
 * The frames of one symbolized address: the function, and with DWARF the
 * functions inlined there (innermost first) and the source lines, as
 * perf's addr2line gives them.  The last DWARF function is the symbol's
 * own frame, named by the symbol table (a clone's "f.part.0" stays so).
 */
static int expand(struct profile_builder *b, const struct sym *s, __u64 ip, __u32 func, bool inl)
{
	struct profile *p = b->p;
	struct src_info si = {};
	int e;

	/*
	 * A Python frame: its line from the code object's table, FILE:LINE as
	 * for C ("??" where the instruction has none); no inlined frames.
	 */
	if (s->src_file) {
		char buf[PATH_MAX + 32];
		const char *base = strrchr(s->src_file, '/');

		if (!p->src || !p->opts.srclines)
			return push_exp(b, func, NULL);
		base = p->opts.full_srcline || !base ? s->src_file : base + 1;
		if (s->src_line >= 0)
			snprintf(buf, sizeof(buf), "%s:%d", base, s->src_line);
		else
			snprintf(buf, sizeof(buf), "%s:??", base);
		si.srcline = srclines__intern(p->src, buf);
		return si.srcline ? push_exp(b, func, si.srcline) : -ENOMEM;
	}
	/* DWARF is read only for what it gives: inlined frames here, or source lines. */
	if (p->src && (inl || p->opts.srclines) && s->known && !s->kernel && s->dso_id >= 0) {
		e = srclines__lookup_as(p->src, s->dso_id, symbolizer__vaddr(p->sym, s->dso_id, s->file_offset), inl,
					&si);
		if (e)
			return e;
	}
	if (p->src && p->opts.srclines && !si.srcline) {
		/* perf's srcline where DWARF has none: the symbol and the offset in it (decimal), else dso[addr]. */
		char buf[600];

		if (s->known)
			snprintf(buf, sizeof(buf), "%s+%llu", s->name, (unsigned long long)s->offset);
		else
			snprintf(buf, sizeof(buf), "%s[%llx]", s->dso,
				 (unsigned long long)(s->kernel || s->dso_id < 0 ? ip : s->file_offset));
		si.srcline = srclines__intern(p->src, buf);
		if (!si.srcline)
			return -ENOMEM;
	}
	if (inl && si.nr > 1) {
		for (int i = 0; i < si.nr - 1; i++) {
			__u32 f;

			e = inl_func_of(b, s, si.frames[i].name, &f);
			if (e || (e = push_exp(b, f, p->opts.srclines ? si.frames[i].srcline : NULL)))
				return e;
		}
		return push_exp(b, func, p->opts.srclines ? si.frames[si.nr - 1].srcline : NULL);
	}
	return push_exp(b, func, p->opts.srclines ? si.srcline : NULL);
}

static bool ip_eq(const void *ctx, size_t idx)
{
	const struct resolved_ip *k = ((const void *const *)ctx)[1];
	const struct resolved_ip *r = &((const struct profile_builder *)((const void *const *)ctx)[0])->ips[idx];

	return r->ip == k->ip && r->pid == k->pid && r->epoch == k->epoch && r->inl == k->inl;
}

/* Appends ip's frames to the sample being folded; each distinct address of each address space is symbolized once. */
static int resolve_ip(struct profile_builder *b, __u32 pid, __u64 ip, __u64 t, bool kernel, bool dwarf)
{
	struct symbolizer *sym = b->p->sym;
	struct resolved_ip key = { .ip = ip, .pid = kernel ? (__u32)-1 : pid };
	enum profile_inline mode = b->p->opts.inline_frames;
	const void *ctx[2] = { b, &key };
	__u64 h;
	long i;
	struct sym s;
	__u32 func;
	int e;

	if (!kernel)
		key.epoch = symbolizer__epoch(sym, pid, t);
	key.inl = !kernel && (mode == INLINE_ALL || (mode == INLINE_DWARF && dwarf));
	h = hash_mix(hash_mix(hash_mix(hash_mix(0, ip), key.pid), key.epoch), key.inl);
	i = hindex_find(&b->ip_idx, h, ip_eq, ctx);
	if (i < 0) {
		symbolizer__resolve(sym, pid, ip, t, kernel, &s);
		key.first = b->nr_exp;
		e = func_of(b, &s, ip, &func) ?: expand(b, &s, ip, func, key.inl);
		if (e || array_reserve((void **)&b->ips, &b->cap_ips, b->nr_ips, sizeof(*b->ips)))
			return e ?: -ENOMEM;
		key.nr = b->nr_exp - key.first;
		b->ips[b->nr_ips] = key;
		if (hindex_add(&b->ip_idx, h, b->nr_ips))
			return -ENOMEM;
		i = b->nr_ips++;
	}
	if (array_reserve((void **)&b->scratch, &b->cap_scratch, b->nr_scratch + b->ips[i].nr, sizeof(*b->scratch)))
		return -ENOMEM;
	for (__u32 j = 0; j < b->ips[i].nr; j++) {
		const struct exp_frame *x = &b->exp[b->ips[i].first + j];

		b->scratch[b->nr_scratch++] = (struct pframe){ x->func, ip, x->srcline };
	}
	return 0;
}

struct stack_key {
	__u32 tid, nr;
	const char *comm;
	const struct pframe *f;
	const char *waker;
	__u32 nr_waker;
	const struct pframe *wf;
};

static bool stack_eq(const void *ctx, size_t idx)
{
	const struct stack_key *k = ((const void *const *)ctx)[1];
	const struct pstack *s = &(*(struct pstack *const *)((const void *const *)ctx)[0])[idx];
	__u32 i;

	if (s->tid != k->tid || s->comm != k->comm || s->nr != k->nr || s->waker != k->waker ||
	    s->nr_waker != k->nr_waker)
		return false;
	for (i = 0; i < k->nr && s->frames[i].func == k->f[i].func && s->frames[i].srcline == k->f[i].srcline; i++)
		;
	if (i != k->nr)
		return false;
	for (i = 0; i < k->nr_waker && s->waker_frames[i].func == k->wf[i].func; i++)
		;
	return i == k->nr_waker;
}

/* Identical (thread, comm, functions) samples fold into one stack; off-CPU ones apart. */
static int add_stack(struct profile_builder *b, __u32 pid, const struct stack_key *k, __u64 period, bool off, __u32 *out)
{
	struct profile *p = b->p;
	struct pstack **stacks = off ? &p->off_stacks : &p->stacks;
	size_t *nr = off ? &p->nr_off_stacks : &p->nr_stacks;
	struct hindex *idx = off ? &b->off_idx : &b->stack_idx;
	const void *ctx[2] = { stacks, k };
	__u64 h = hash_mix(hash_mix(hash_mix(0, k->tid), (__u64)(uintptr_t)k->comm), k->nr);
	struct pstack *s;
	long i;

	for (__u32 j = 0; j < k->nr; j++)
		h = hash_mix(hash_mix(h, k->f[j].func), (__u64)(uintptr_t)k->f[j].srcline);
	h = hash_mix(h, (__u64)(uintptr_t)k->waker);
	for (__u32 j = 0; j < k->nr_waker; j++)
		h = hash_mix(h, k->wf[j].func);
	i = hindex_find(idx, h, stack_eq, ctx);
	if (i >= 0) {
		(*stacks)[i].count++;
		(*stacks)[i].period += period;
		*out = i;
		return 0;
	}
	if (array_reserve((void **)stacks, off ? &b->cap_off : &b->cap_stacks, *nr, sizeof(**stacks)))
		return -ENOMEM;
	s = &(*stacks)[*nr];
	*s = (struct pstack){ pid, k->tid, k->comm, k->nr, malloc((k->nr ? k->nr : 1) * sizeof(*k->f)), 1, period, {}, NULL,
			      k->waker, k->nr_waker, NULL };
	if (!s->frames)
		return -ENOMEM;
	if (k->nr_waker) {
		s->waker_frames = malloc(k->nr_waker * sizeof(*k->wf));
		if (!s->waker_frames) {
			free(s->frames);
			return -ENOMEM;
		}
		memcpy(s->waker_frames, k->wf, k->nr_waker * sizeof(*k->wf));
	}
	memcpy(s->frames, k->f, k->nr * sizeof(*k->f));
	if (hindex_add(idx, h, *nr))
		return -ENOMEM;
	*out = (*nr)++;
	return 0;
}

/*
 * Resolves a chain's frames (markers skipped) into *out, grown as needed;
 * how many, or -errno.  They are made past the sample being folded, in
 * b->scratch, and copied out.
 */
static long resolve_chain(struct profile_builder *b, const struct pd_sample *s, bool kernel, struct pframe **out,
			  size_t *cap)
{
	size_t base = b->nr_scratch, n;
	int e;

	for (__u64 i = 0; i < s->callchain_nr; i++) {
		__u64 ip = s->callchain[i];

		if (ip >= PD_CONTEXT_MAX) {
			kernel = ip == PD_CONTEXT_KERNEL;
			if (ip != PD_CONTEXT_KERNEL && ip != PD_CONTEXT_USER)
				break;
			continue;
		}
		e = resolve_ip(b, s->pid, ip, s->time, kernel, false);
		if (e) {
			b->nr_scratch = base;
			return e;
		}
	}
	n = b->nr_scratch - base;
	b->nr_scratch = base;
	if (*cap < n) {
		struct pframe *f = realloc(*out, n * sizeof(*f));

		if (!f)
			return -ENOMEM;
		*out = f;
		*cap = n;
	}
	if (n) /* *out is still NULL before the first chain with a frame */
		memcpy(*out, b->scratch + base, n * sizeof(**out));
	return n;
}

/*
 * Folds the off-CPU block waiting in b->pend, with its waker if `w` is the
 * spanperf:waker sample that names it (else with none).
 */
static int flush_pending(struct profile_builder *b, const struct sess_sample *w)
{
	struct stack_key k = { .tid = b->pend.tid, .comm = b->pend.comm, .nr = b->pend.nr, .f = b->pend.f };
	/* The block's place in the timeline, as its own sample gave it (a held block is never a sum). */
	struct pd_sample tick = { .time = b->pend.time, .period = b->pend.period, .tid = b->pend.tid };
	struct waker_rec rec;
	__u32 idx;

	b->pend.on = false;
	if (w && !waker_rec_decode(w->ev->sample.raw, w->ev->sample.raw_size, &rec) &&
	    rec.wakee_tid == b->pend.tid && rec.block_end_ns == b->pend.time) {
		const char *name = waker_ctx_name(rec.ctx);
		long n = resolve_chain(b, &w->ev->sample, w->kernel, &b->wscratch, &b->cap_wscratch);

		if (n < 0)
			return n;
		k.waker = strpool_intern(&b->p->wakers, name ? name : rec.comm[0] ? rec.comm : w->comm, NULL);
		if (!k.waker)
			return -ENOMEM;
		k.nr_waker = n;
		k.wf = b->wscratch;
	}
	return add_stack(b, b->pend.pid, &k, b->pend.period, true, &idx) ?: add_tick(b, &tick, idx, true);
}

static int stash_pending(struct profile_builder *b, const struct pd_sample *s, const char *comm, const struct stack_key *k)
{
	if (b->pend.cap < k->nr) {
		struct pframe *f = realloc(b->pend.f, k->nr * sizeof(*f));

		if (!f)
			return -ENOMEM;
		b->pend.f = f;
		b->pend.cap = k->nr;
	}
	memcpy(b->pend.f, k->f, k->nr * sizeof(*k->f));
	b->pend.nr = k->nr;
	b->pend.pid = s->pid;
	b->pend.tid = s->tid;
	b->pend.comm = comm;
	b->pend.time = s->time;
	b->pend.period = s->period;
	b->pend.on = true;
	return 0;
}

static int on_sample(void *ctx, const struct sess_sample *ss)
{
	struct profile_builder *b = ctx;
	struct profile *p = b->p;
	const struct pd_sample *s = &ss->ev->sample;
	struct stack_key k = { .tid = s->tid, .comm = ss->comm };
	__u32 idx;
	int e;

	if (b->pend.on) {
		e = flush_pending(b, ss->kind == SESS_WAKER ? ss : NULL);
		if (e || ss->kind == SESS_WAKER)
			return e;
	}
	if (ss->kind != SESS_SAMPLING && ss->kind != SESS_OFFCPU)
		return 0;
	b->nr_scratch = 0;
	if (p->opts.leaf_only) {
		p->callchains |= s->callchain_nr || (p->unwinder && s->regs_user);
	} else if (s->callchain_nr) {
		bool kernel = ss->kernel;

		p->callchains = true;
		for (__u64 i = 0; i < s->callchain_nr; i++) {
			__u64 ip = s->callchain[i];

			if (ip >= PD_CONTEXT_MAX) {
				/* A context marker says whose addresses follow. */
				kernel = ip == PD_CONTEXT_KERNEL;
				if (ip != PD_CONTEXT_KERNEL && ip != PD_CONTEXT_USER)
					break; /* guest or hypervisor frames: not ours to name */
				continue;
			}
			e = resolve_ip(b, s->pid, ip, s->time, kernel, false);
			if (e)
				return e;
		}
	}
	/* --call-graph dwarf: the user part, unwound from the registers and the stack copy. */
	if (p->unwinder && s->regs_user && !p->opts.leaf_only) {
		int n = unwinder__sample(p->unwinder, p->sym, ss->ev, b->user_ips, UNWIND_MAX_FRAMES);

		p->callchains = true;
		for (int i = 0; i < n; i++) {
			e = resolve_ip(b, s->pid, b->user_ips[i], s->time, false, true);
			if (e)
				return e;
		}
	}
	if (!b->nr_scratch) {
		e = resolve_ip(b, s->pid, s->ip, s->time, ss->kernel, false);
		if (e)
			return e;
	}
	k.nr = b->nr_scratch;
	k.f = b->scratch;
	if (ss->kind == SESS_OFFCPU) {
		p->off_samples++;
		p->off_period += s->period;
		/* Sums of short blocks have no one waker: none is written for them. */
		if (p->has_wakers && !(s->cpu_res & OFFCPU_RES_SUM))
			return stash_pending(b, s, ss->comm, &k);
		return add_stack(b, s->pid, &k, s->period, true, &idx) ?: add_tick(b, s, idx, true);
	}
	p->samples++;
	p->period += s->period;
	if (!p->first_ns || s->time < p->first_ns)
		p->first_ns = s->time;
	if (s->time > p->last_ns)
		p->last_ns = s->time;
	e = add_stack(b, s->pid, &k, s->period, false, &idx) ?: add_tick(b, s, idx, false);
	if (e || !p->otel || b->timeline)
		return e;
	return otel_join__add_sample(p->otel, s->tid, s->time, idx, s->period);
}

static int on_span(void *ctx, const struct sess_span *ss)
{
	struct profile_builder *b = ctx;

	if (!b->p->otel)
		return 0;
	return otel_join__add_span(b->p->otel, &ss->rec);
}

static const struct otel_pctx *pctx_of(void *sess, __u32 pid)
{
	return session__otel_process(sess, pid);
}

/* After the pass: what the session counted, and the otel spans' attributes named. */
static int on_finish(void *ctx)
{
	struct profile_builder *b = ctx;
	struct profile *p = b->p;
	int e = b->pend.on ? flush_pending(b, NULL) : 0;

	if (e)
		return e;
	p->lost = p->sess->lost - b->lost_before;
	p->filtered_samples = p->sess->filtered_samples - b->filtered_before[0];
	p->filtered_period = p->sess->filtered_period - b->filtered_before[1];
	p->off_filtered_samples = p->sess->off_filtered_samples - b->filtered_before[2];
	p->off_filtered_period = p->sess->off_filtered_period - b->filtered_before[3];
	return p->otel ? otel_join__name_attrs(p->otel, pctx_of, p->sess) : 0;
}

/* Each on-CPU stack split by the OTel context (and the spans, --span-prefix) its samples ran in. */
static int split_by_otel(struct profile *p)
{
	struct otel_fold *f;
	struct pstack *ns;
	size_t n;
	int e = otel_join__fold(p->otel, &f, &n);

	if (e)
		return e;
	ns = calloc(n ? n : 1, sizeof(*ns));
	if (!ns) {
		free(f);
		return -ENOMEM;
	}
	/* The split stacks share their frames with the stacks as sampled, which keep them. */
	for (size_t i = 0; i < n; i++) {
		ns[i] = p->stacks[f[i].stack];
		ns[i].count = f[i].count;
		ns[i].period = f[i].period;
		ns[i].otel = f[i].ids;
		ns[i].span_prefix = f[i].prefix;
	}
	p->sampled = p->stacks;
	p->nr_sampled = p->nr_stacks;
	p->stacks = ns;
	p->nr_stacks = n;
	free(f);
	return 0;
}

static void builder_free(struct profile_builder *b)
{
	if (!b)
		return;
	free(b->ips);
	free(b->exp);
	free(b->scratch);
	free(b->pend.f);
	free(b->wscratch);
	hindex_free(&b->ip_idx);
	hindex_free(&b->func_idx);
	hindex_free(&b->stack_idx);
	hindex_free(&b->off_idx);
	free(b);
}

int profile__new(struct profile **out, struct session *sess, const struct profile_opts *o)
{
	static const struct session_ops ops = { .sample = on_sample, .span = on_span, .finish = on_finish };
	struct profile *p = calloc(1, sizeof(*p));
	int e = -ENOMEM;

	*out = NULL;
	if (!p || !(p->b = calloc(1, sizeof(*p->b))))
		goto cleanup;
	p->opts = *o;
	p->b->p = p;
	p->b->timeline = o->timeline;
	p->b->lost_before = sess->lost;
	p->b->filtered_before[0] = sess->filtered_samples;
	p->b->filtered_before[1] = sess->filtered_period;
	p->b->filtered_before[2] = sess->off_filtered_samples;
	p->b->filtered_before[3] = sess->off_filtered_period;
	p->sess = sess;
	p->sym = sess->sym;
	p->rd = sess->rd;
	e = unwinder__for_file(p->rd, o->root, &p->unwinder);
	if (e)
		goto cleanup;
	if ((o->inline_frames != INLINE_NONE || o->srclines) && !(p->src = srclines__new(p->sym, o->full_srcline)))
		goto oom;
	if (sess->first_sampling >= 0) {
		const struct pd_attr *a = &p->rd->attrs[sess->first_sampling];

		p->event = a->name ? a->name : "cycles";
		p->event_is_clock = a->attr.type == PERF_TYPE_SOFTWARE &&
				    (a->attr.config == PERF_COUNT_SW_CPU_CLOCK ||
				     a->attr.config == PERF_COUNT_SW_TASK_CLOCK);
		p->sample_freq = a->attr.freq ? a->attr.sample_freq : 0;
	}
	/* Only a file with otel spans (or --span-prefix) pays for noting every sample. */
	for (int i = 0; i < p->rd->nr_attrs && !p->otel; i++) {
		const char *name = span_codec_name(&p->rd->attrs[i]);

		if (name && !strcmp(name, "otel") && !(p->otel = otel_join__new()))
			goto oom;
	}
	if (o->span_prefix) {
		if (!p->otel && !(p->otel = otel_join__new()))
			goto oom;
		otel_join__want_prefixes(p->otel);
	}
	for (int i = 0; i < sess->rd->nr_attrs; i++)
		p->has_wakers |= sess->kind[i] == SESS_WAKER;
	e = session__add_consumer(sess, &ops, p->b);
	if (e)
		goto cleanup;
	*out = p;
	return 0;
oom:
	e = -ENOMEM;
cleanup:
	profile__free(p);
	return e;
}

int profile__add_prefix_span(struct profile *p, __u32 tid, __u64 start, __u64 end, const char *label)
{
	return otel_join__add_prefix_span(p->otel, tid, start, end, label);
}

int profile__finish(struct profile *p)
{
	int e = 0;

	/* A timeline's ticks name the stacks as sampled. */
	if (!p->b->timeline && (otel_join__has_spans(p->otel) || otel_join__has_prefixes(p->otel)))
		e = split_by_otel(p);
	builder_free(p->b);
	p->b = NULL;
	/* Every address is resolved: the outputs read the pooled strings, never the DWARF. */
	srclines__release(p->src);
	return e;
}

int profile__end(struct profile *p, bool keep)
{
	int e = session__end_consumer(p->sess, p->b, keep);

	return e ?: keep ? profile__finish(p) : 0;
}

int profile__load(struct profile **out, const char *path, const char *root, char *err, size_t errlen)
{
	struct profile_opts o = { .root = root };
	struct session *sess = NULL;
	struct profile *p = NULL;
	int e = session__open(&sess, path, &(struct session_opts){ .root = root }, err, errlen);

	*out = NULL;
	if (e)
		return e;
	e = profile__new(&p, sess, &o);
	if (e) {
		set_errorf(err, errlen, e, "cannot read %s: %s", path, strerror(-e));
		session__free(sess);
		return e;
	}
	p->own_sess = true;
	e = session__run(sess, err, errlen);
	if (!e && (e = profile__finish(p)))
		set_errorf(err, errlen, e, "out of memory reading %s", path);
	if (e) {
		profile__free(p);
		return e;
	}
	*out = p;
	return 0;
}

void profile__free(struct profile *p)
{
	if (!p)
		return;
	/* Split stacks borrow the frames of the stacks as sampled. */
	for (size_t i = 0; i < (p->sampled ? p->nr_sampled : p->nr_stacks); i++)
		free((p->sampled ? p->sampled : p->stacks)[i].frames);
	free(p->sampled);
	free(p->stacks);
	for (size_t i = 0; i < p->nr_off_stacks; i++) {
		free(p->off_stacks[i].frames);
		free(p->off_stacks[i].waker_frames);
	}
	free(p->off_stacks);
	strpool_free(&p->wakers);
	free(p->funcs);
	free(p->dso_infos);
	free(p->ticks);
	srclines__free(p->src);
	strpool_free(&p->labels);
	unwinder__free(p->unwinder);
	otel_join__free(p->otel);
	builder_free(p->b);
	if (p->own_sess)
		session__free(p->sess);
	free(p);
}
