// SPDX-License-Identifier: GPL-2.0
/*
 * The sampling program, attached to every per-CPU sampling event when it
 * has something to do beyond counting (-p/-t, spans, --otel): otherwise
 * user space counts samples per thread from the records and no program runs.
 *
 * It is a filter in front of perf's own ring buffer: the kernel has already
 * built the sample (including the call chain, walked once) and writes it to
 * the ring only if we return non-zero.  Measured against a BPF ring buffer
 * that re-copies both stacks, this costs a tenth of the in-BPF time, and
 * user space copies the records to the file without re-encoding them.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#define SP_WANT_THREADS_MAP
#define SP_WANT_FILTER_MAP
#include "maps.bpf.h"
#include "helpers.bpf.h"
/* The walk, with its tail cache. */
#include "ehkeep.bpf.h"
#include "kstack.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * OTEP 4947 thread context.  Where to find otel_thread_ctx_v1, per process
 * (user space fills it from the ELF and the GOT); sized from user space, 1
 * entry when record runs without --otel, so the lookup below misses.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct sp_otel_recipe);
} otel_recipes SEC(".maps");

/* Context changes, for user space; sized from user space. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
} otel_events SEC(".maps");

/*
 * Bumped by user space after each change to otel_recipes: a thread's cached
 * recipe (in its threads entry) of another generation is looked up again.
 */
__u32 otel_gen;

static __always_inline struct sp_thread *thread_get(__u32 pid, __u32 tid)
{
	struct sp_thread *t = bpf_map_lookup_elem(&threads, &tid);
	struct sp_thread zero = { .pid = pid };

	if (t)
		return t;
	bpf_get_current_comm(zero.comm, sizeof(zero.comm));
	/* NOEXIST: two CPUs may race to create the entry; either wins. */
	if (bpf_map_update_elem(&threads, &tid, &zero, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&threads, &tid)) {
		stat_inc(SP_STAT_THREADS_FULL);
		return NULL;
	}
	return bpf_map_lookup_elem(&threads, &tid);
}

/*
 * The thread's recipe, from its cache unless user space changed the
 * recipes since or the tid now belongs to another process; NULL when its
 * process does not publish.  A thread is sampled on one CPU at a time, so
 * its entry is written by one program at a time.
 */
static __always_inline const struct sp_otel_recipe *otel_recipe(struct sp_otel_thread *o, __u32 pid)
{
	__u32 gen = *(volatile __u32 *)&otel_gen;
	struct sp_otel_recipe *r;

	if (o->gen != gen || o->pid != pid) {
		r = bpf_map_lookup_elem(&otel_recipes, &pid);
		if (r)
			o->recipe = *r;
		else
			o->recipe.kind = 0;
		o->gen = gen;
		o->pid = pid;
	}
	return o->recipe.kind ? &o->recipe : NULL;
}

/*
 * The interrupted thread's published context: into *c and, when asked, the
 * record's address into *rec.  0, or -1 when it cannot be read now
 * (counted); no context is all zero.  The thread is stopped on this CPU
 * while we read, which is what the writer protocol relies on.
 */
static __always_inline int otel_read(const struct sp_otel_recipe *r, struct sp_otel_ctx *c, __u64 *rec,
				     __u16 *attrs_size)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 fsbase = task->thread.fsbase, addr, ptr = 0;
	__u8 hdr[SP_OTEL_HEADER];

	if (r->kind == SP_OTEL_TP) {
		addr = fsbase + r->off;
	} else {
		__u64 dtv = 0, block = 0;

		/* glibc's tcbhead_t { tcb, dtv, ... }; dtv entries are { val, to_free }. */
		if (bpf_probe_read_user(&dtv, 8, (void *)(fsbase + 8)) ||
		    bpf_probe_read_user(&block, 8, (void *)(dtv + r->modid * 16)))
			goto fault;
		if (block == ~0ull) /* TLS_DTV_UNALLOCATED: the thread never touched it, so NULL */
			return 0;
		addr = block + r->off;
	}
	if (bpf_probe_read_user(&ptr, 8, (void *)addr))
		goto fault;
	if (!ptr)
		return 0;
	if (bpf_probe_read_user(hdr, sizeof(hdr), (void *)ptr))
		goto fault;
	if (hdr[24] != 1) {
		stat_inc(SP_STAT_OTEL_INVALID);
		return -1;
	}
	__builtin_memcpy(c, hdr, 24);
	c->flags = hdr[25];
	*rec = ptr;
	*attrs_size = hdr[26] | (__u16)hdr[27] << 8; /* x86-64: host order is little-endian */
	return 0;
fault:
	stat_inc(SP_STAT_OTEL_FAULT);
	return -1;
}

static __always_inline bool ctx_empty(const struct sp_otel_ctx *c)
{
	return !(c->span_id | c->trace_id[0] | c->trace_id[1]);
}

static __always_inline bool ctx_equal(const struct sp_otel_ctx *a, const struct sp_otel_ctx *b)
{
	return a->span_id == b->span_id && a->trace_id[0] == b->trace_id[0] && a->trace_id[1] == b->trace_id[1];
}

/*
 * n, checked against SP_OTEL_ATTRS_MAX already, bounded again in the
 * register the read takes: the compiler may spill a checked length and
 * reload it, and the verifier then no longer knows its bound.
 */
static __always_inline __u32 attrs_len(__u32 n)
{
	asm volatile("if %0 <= %1 goto +1; %0 = %1" : "+r"(n) : "i"(SP_OTEL_ATTRS_MAX));
	return n;
}

/*
 * The ended context's record as it is now, if it still names that context:
 * a publisher may leave its final state there (libspanperf: the span's
 * counter deltas) before it swaps the pointer away, and reuses the memory
 * only later.  Another span id, or valid != 1: nothing of it is taken.
 */
static __always_inline void otel_final(const struct sp_otel_state *st, struct sp_otel_event *e)
{
	__u8 hdr[SP_OTEL_HEADER];
	__u64 id;
	__u32 n;

	if (!st->rec || ctx_empty(&st->ctx) || bpf_probe_read_user(hdr, sizeof(hdr), (void *)st->rec))
		return;
	__builtin_memcpy(&id, &hdr[16], 8);
	n = hdr[26] | (__u32)hdr[27] << 8;
	if (hdr[24] != 1 || id != st->ctx.span_id || !n || n > SP_OTEL_ATTRS_MAX)
		return;
	n = attrs_len(n);
	if (!bpf_probe_read_user(e->prev_attrs, n, (void *)(st->rec + SP_OTEL_HEADER)))
		e->prev_attrs_size = n;
}

/* Tells user space that the thread's context changed: the one that ended and the new one. */
static __always_inline void otel_changed(const struct sp_otel_state *st, const struct sp_otel_ctx *c, __u64 rec,
					 __u16 attrs_size, __u64 now, __u32 pid, __u32 tid)
{
	struct sp_otel_event *e = bpf_ringbuf_reserve(&otel_events, sizeof(*e), 0);
	__u32 n = attrs_size;

	if (!e) {
		stat_inc(SP_STAT_OTEL_LOST);
		return;
	}
	e->time = now;
	e->prev = *st;
	e->ctx = *c;
	e->tid = tid;
	e->pid = pid;
	e->cpu = bpf_get_smp_processor_id();
	e->attrs_size = 0;
	e->prev_attrs_size = 0;
	otel_final(st, e);
	/* Read now: the record may be gone or reused by the time the span ends. */
	if (n > SP_OTEL_ATTRS_MAX) {
		stat_inc(SP_STAT_OTEL_ATTRS_BAD);
	} else if (n && !ctx_empty(c)) {
		n = attrs_len(n);
		if (bpf_probe_read_user(e->attrs, n, (void *)(rec + SP_OTEL_HEADER)))
			stat_inc(SP_STAT_OTEL_ATTRS_BAD);
		else
			e->attrs_size = n;
	}
	/* User space gives this ring no size setting: the ring says it. */
	bpf_ringbuf_submit(e, ring_wakeup_flag(&otel_events, bpf_ringbuf_query(&otel_events, BPF_RB_RING_SIZE)));
}

/*
 * The current thread runs (a sample, or its switch-out) while the mark of
 * its last switch-out is still set: its switch-in was hidden from the
 * tracepoint.  This VM's kernel hides a task's switches now and then
 * (bpftrace misses the same ones; see sched_time.bpf.h), and the span would
 * otherwise end one period after that switch-out, as if the thread had
 * never come back in it (a busy host's 47 ms).  Its context held until it
 * began to run again: now less the CPU time it has had since it was picked
 * (prev_sum_exec_runtime is set at each pick).  That is late by the
 * interrupt and steal time of the run, and by what the scheduler has not
 * charged yet at a sample; never earlier than the switch-out.
 */
static __always_inline void otel_hidden_in(struct sp_otel_state *st, __u64 now)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 ran = task->se.sum_exec_runtime - task->se.prev_sum_exec_runtime;

	st->flags &= ~SP_OTEL_OFF;
	if (ctx_empty(&st->ctx))
		return;
	stat_inc(SP_STAT_OTEL_HIDDEN_IN);
	if (ran < now && now - ran > st->last_ns) {
		st->last_ns = now - ran;
		st->flags |= SP_OTEL_SWITCH_END;
	}
}

/*
 * The current thread's context, read at a sample or (at_switch) as it
 * leaves the CPU.  A switch-out counts no sample; it marks the context as
 * held while the thread is off CPU, and a change it finds is stamped there:
 * the change happened before the switch, no later.
 */
static __always_inline void otel_sample(struct sp_thread *t, __u32 pid, __u32 tid, bool at_switch)
{
	const struct sp_otel_recipe *r = otel_recipe(&t->otel, pid);
	struct sp_otel_state *st = &t->otel.st;
	struct sp_otel_ctx c = {};
	__u16 attrs_size = 0;
	__u64 rec = 0, now;

	if (!r)
		return;
	now = bpf_ktime_get_ns();
	if (st->flags & SP_OTEL_OFF)
		otel_hidden_in(st, now);
	if (otel_read(r, &c, &rec, &attrs_size)) {
		/*
		 * Unread at a switch-out, the context may have changed since the
		 * last read: the span is not held through the block (it ends at
		 * that read, never later than known), and the loss is counted.
		 */
		if (at_switch && !ctx_empty(&st->ctx))
			stat_inc(SP_STAT_OTEL_SWITCH_UNREAD);
		return;
	}
	if (ctx_empty(&c) && ctx_empty(&st->ctx))
		return; /* no context, then or now: nothing to time */
	if (ctx_equal(&st->ctx, &c)) {
		st->last_ns = now;
		if (at_switch) {
			st->flags |= SP_OTEL_OFF | SP_OTEL_SWITCH_END;
		} else {
			st->flags &= ~SP_OTEL_SWITCH_END;
			st->samples++;
		}
		return;
	}
	otel_changed(st, &c, rec, attrs_size, now, pid, tid);
	st->ctx = c;
	st->pid = pid;
	st->start_ns = st->last_ns = now;
	st->rec = rec;
	st->samples = at_switch ? 0 : 1;
	st->flags = at_switch ? SP_OTEL_OFF : 0;
}

/*
 * A sample's bookkeeping, whoever builds its record: -p/-t, then the
 * thread's sample count and its OTel context.  false: the filter drops it.
 */
static __always_inline bool sample_keeps(__u32 pid, __u32 tid)
{
	if (filter_keeps(pid, tid))
		return true;
	stat_inc(SP_STAT_FILTERED);
	return false;
}

static __always_inline bool sample_account(__u32 pid, __u32 tid)
{
	struct sp_thread *t;

	if (!sample_keeps(pid, tid))
		return false;
	t = thread_get(pid, tid);
	if (!t)
		return true;
	if (tid)
		otel_sample(t, pid, tid, false);
	/*
	 * A thread is sampled only on the CPU it runs on, one sample at a
	 * time: plain adds.  tid 0 is every CPU's idle task at once.
	 */
	if (tid)
		t->samples++;
	else
		__sync_fetch_and_add(&t->samples, 1);
	return true;
}

/*
 * sample_account for on_sample_eh, global: its frame (thread_get's new
 * entry, the OTel reads: 248 bytes on 6.18) sits beside the walk's rather than
 * under it, where 6.1 holds the program's frame and the walk's calls to 512
 * bytes together.  Verified once, alone.
 */
__noinline int sp_sample_account(__u32 pid, __u32 tid)
{
	return sample_account(pid, tid);
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();

	return sample_account(id >> 32, (__u32)id);
}

/*
 * --call-graph ehframe: the samples, with user chains unwound here, in a ring
 * per CPU (user space makes them, each eh_ring_size bytes).  One ring shared
 * by every CPU cost about 170-220 ns more per sample on a busy 2-CPU host
 * (by turns in one run, workload spin): its lock and producer position
 * went back and forth between the CPUs at every sample.
 */
struct eh_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096); /* the template of each CPU's, sized from user space */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__type(key, __u32);
	__array(values, struct eh_ring);
} eh_rbs SEC(".maps");

const volatile __u64 eh_ring_size = 0;

/*
 * Per CPU: the samples sent, so that the ring's fill is asked only at every
 * EH_WAKE_EVERY-th (bpf_ringbuf_query: 11-14 ns a sample, by turns in one
 * run).  The reader is woken at half full (ring_wakeup_flag); between two
 * asks a ring fills by at most EH_WAKE_EVERY records of at most 2 KiB,
 * against the 128 KiB or more the smallest ring still has free then.
 */
#define EH_WAKE_EVERY 16
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} eh_sent SEC(".maps");

const volatile bool eh_fp_only = false;
const volatile bool eh_timing = false; /* -v: time the user chains */
/* The perf event ids of the sampling events per CPU, when attach cookies are missing (before 5.15). */
const volatile bool eh_have_cookie = true;
/*
 * Spans and --otel read a thread's entry in the threads map.  Without them
 * nothing does but record's summary, which then counts the records instead
 * (source_samples.c): the entry's lookup was about 190 ns of a 3-frame
 * chain's 1,850 (measured by turns, one sample each way).
 */
const volatile bool eh_threads = true;

/*
 * --call-graph ehframe: the same bookkeeping as on_sample, then the whole
 * sample built here (the kernel chain by its ORC rules, else bpf_get_stack:
 * kstack.bpf.h; the user chain by the tables) and sent through eh_rbs in
 * perf.data's own layout.  Returns 0: perf's ring gets no sample of its own,
 * only the side-band.
 */
/* A measuring copy's eh_cost mask bit (tools/sample_turns.sh); always clear in the plain copy. */
#define EH_SKIPS(bit) (measure && (eh_cost_skip() & (bit)))

static __always_inline int sample_eh(struct bpf_perf_event_data *ctx, const bool measure)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, tid = (__u32)id, zero = 0, nk = 0, nu;
	struct sp_eh_sample *s;
	__u64 *sent;
	void *rb;
	/* ctx->regs is read in whole words only: cs is the low half of pt_regs' 18th. */
	bool user = (((volatile __u64 *)&ctx->regs)[17] & 3) == 3;
	long n, size;

	if (measure)
		eh_cost_begin();
	if (!EH_SKIPS(EH_COST_KEEPS) && (eh_threads ? !sp_sample_account(pid, tid) : !sample_keeps(pid, tid)))
		return 0;
	s = bpf_map_lookup_elem(&eh_scratch, &zero);
	if (!s)
		return 0;
	s->type = 9; /* PERF_RECORD_SAMPLE */
	s->misc = user ? 2 : 1; /* PERF_RECORD_MISC_USER : _KERNEL */
	s->ip = ctx->regs.ip;
	s->pid = pid;
	s->tid = tid;
	if (!EH_SKIPS(EH_COST_IDS)) {
		s->id = bpf_get_attach_cookie(ctx);
		s->time = bpf_ktime_get_ns();
		s->cpu = bpf_get_smp_processor_id();
	}
	s->res = 0;
	s->period = ctx->sample_period;
	if (!user && !EH_SKIPS(EH_COST_KSTACK))
		nk = sp_kstack(ctx);
	if (nk > KS_KSTACK + 1)
		nk = KS_KSTACK + 1;
	if (tid) {
		struct eh_walk *w = user ? bpf_map_lookup_elem(&eh_walks, &zero) : NULL;
		__u64 t0 = measure && eh_timing ? bpf_ktime_get_ns() : 0;

		if (w) {
			w->ip = ctx->regs.ip;
			w->sp = ctx->regs.sp;
			w->bp = ctx->regs.bp;
			w->ur_cs = ((volatile __u64 *)&ctx->regs)[17];
			w->ur_r13 = ctx->regs.r13;
			w->ur_rbx = ctx->regs.bx;
			w->ur_rdi = ctx->regs.di;
		}

		if (measure)
			eh_cost_walk(true);
		if (EH_SKIPS(EH_COST_USER)) {
			nu = 0;
		} else if (measure && eh_fp_only) {
			/* For measuring only: the kernel's frame-pointer walk through the same path. */
			__u64 k = nk;

			/*
			 * The kernel chain's length bounded in a register: the
			 * compiler drops nk's mask as proven by the clamp above,
			 * which the verifier does not carry this far (R2/R8
			 * unbounded access).  The user marker at k, its frames after.
			 */
			asm volatile("if %0 <= %1 goto +1; %0 = %1" : "+r"(k) : "i"(KS_KSTACK + 1));
			n = bpf_get_stack(ctx, &s->ips[k + 1], SP_EH_MAX_FRAMES * 8, BPF_F_USER_STACK);
			nu = n > 0 ? (__u64)n / 8 + 1 : 0;
			s->ips[k] = (__u64)-512;
		} else {
			nu = eh_unwind_user(nk, w != NULL);
		}
		if (measure)
			eh_cost_walk(false);
		if (measure && eh_timing) {
			__u32 k = SP_EH_USER_NS;
			__u64 *v = bpf_map_lookup_elem(&eh_stats, &k);

			if (v)
				*v += bpf_ktime_get_ns() - t0;
			eh_stat(SP_EH_USER_RUNS);
		}
	} else {
		nu = 0;
	}
	s->nr = nk + nu;
	size = (64 + s->nr * 8) & 0xfff;
	/*
	 * Bounded in the register the call takes: in the plain copy the
	 * compiler proves the bound from nk and nu and drops a C test, and the
	 * verifier, which reads s->nr back, then cannot.
	 */
	asm volatile("if %0 <= %1 goto +1; %0 = %1" : "+r"(size) : "i"(sizeof(*s)));
	s->size = size;
	rb = bpf_map_lookup_elem(&eh_rbs, &s->cpu);
	sent = bpf_map_lookup_elem(&eh_sent, &zero);
	if (sent)
		++*sent;
	if (EH_SKIPS(EH_COST_RING))
		rb = NULL;
	else if (!rb || bpf_ringbuf_output(rb, s, size,
					   sent && *sent % EH_WAKE_EVERY ? BPF_RB_NO_WAKEUP : ring_wakeup_flag(rb, eh_ring_size)))
		sp_eh_rare(SP_EH_LOST);
	if (measure)
		eh_cost_end(user, nu);
	return 0;
}

/*
 * Two copies of the above: the plain one, without any of the measuring
 * parts (eh_cost by turns, -v's timing, the frame-pointer walk), and one
 * with them all.  With each part's rodata test in one body, the parts left
 * unused made dead ranges and hard-wired branches, each removed at load by
 * a recopy of the whole program (verifier_remove_insns); now the unused
 * copy is one range (on_sample_eh without -v: 45 dead ranges -> 32).
 */
SEC("perf_event")
int on_sample_eh(struct bpf_perf_event_data *ctx)
{
	if (eh_cost_on || eh_timing || eh_fp_only)
		return sample_eh(ctx, true);
	return sample_eh(ctx, false);
}

/*
 * --call-graph ehframe: a process that execs should have its mappings read
 * within a few ms, but the 2 ms poll that did it on every host was most of
 * what ehframe cost over fp.  So the recorder polls slowly while nothing
 * changes, with this armed: the first exec then wakes it, once, and it
 * polls often again while processes start (ehsource.c).
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} eh_wake SEC(".maps");

__u32 eh_wake_armed = 0;

struct eh_note_ctx {
	struct eh_fresh *e;
	__u64 start, end;
};

/*
 * sp_eh_note's step: a noted mapping that the new one overlaps is hidden.
 * A bpf_loop step rather than a loop of up to EH_FRESH_MAPS rounds, which
 * the verifier walked once per round, with the rest of the function after
 * each exit: on_mmap_eh and on_exec_eh verified 1,776 and 1,866 insns
 * (1.7-1.8 ms each at every start, 6.18), now 907 and 997 (0.9-1.0 ms).
 * Both run outside the sampling interrupt, at a new process's exec and mmaps.
 */
static long eh_note_hide(__u32 i, void *ctx)
{
	struct eh_note_ctx *c = ctx;
	struct eh_vma_find *m = &c->e->m[i & (EH_FRESH_MAPS - 1)];

	if (m->start < c->end && c->start < m->end)
		m->found = EH_VMA_NONE;
	return 0;
}

/*
 * The executable mapping at addr of the current process, noted in its
 * eh_fresh entry (ehframe.bpf.h) if it has one for this image.  Outside the
 * sampling interrupt bpf_find_vma always works.  The entry is the main
 * thread's alone (on_mmap_eh): one writer, and a sample reads m[0, n) only,
 * so the slot is written whole before n counts it; a mapping made over one
 * noted before hides that one first.
 *
 * Global, so verified once per program rather than at each of
 * on_exec_eh's three calls (8,346 instructions, 13 ms of a recorder's
 * start on 6.18).  mm is read with bpf_probe_read_kernel, not loaded
 * through the trusted task: each such load of a pointer costs 6.18's
 * verifier scans of the kernel's BTF by name (btf_find_by_name_kind), and
 * an exec or a new process's mmap can pay a helper call.
 */
__noinline int sp_eh_note(__u64 addr)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct eh_note_ctx c;
	struct eh_vma_find f = {};
	__u32 tgid = task->tgid, n;
	struct eh_fresh *e = bpf_map_lookup_elem(&eh_fresh, &tgid);
	struct mm_struct *mm = BPF_CORE_READ(task, mm);

	if (!e || !mm || e->start_stack != BPF_CORE_READ(mm, start_stack))
		return 0;
	if (bpf_find_vma(task, addr, eh_vma_cb, &f, 0) || (f.found != EH_VMA_FILE && f.found != EH_VMA_VDSO))
		return 0;
	n = e->n;
	if (n >= EH_FRESH_MAPS)
		n = EH_FRESH_MAPS;
	c.e = e;
	c.start = f.start;
	c.end = f.end;
	bpf_loop(n, eh_note_hide, &c, 0);
	if (n >= EH_FRESH_MAPS)
		return 0;
	e->m[n & (EH_FRESH_MAPS - 1)] = f;
	barrier();
	*(volatile __u32 *)&e->n = n + 1;
	return 0;
}

/* A zeroed entry to start a process's eh_fresh with (too large for the stack). */
static struct eh_fresh eh_fresh_zero;

/*
 * A new image's mappings, as the exec made them: the program (its lowest
 * executable segment starts start_code), the dynamic loader (where the
 * thread starts) and the vDSO; the loader's mmaps add the libraries
 * (on_mmap_eh).
 */
static __always_inline void eh_fresh_exec(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct mm_struct *mm = BPF_CORE_READ(task, mm);
	__u32 tgid = task->tgid;
	struct pt_regs *regs;
	struct eh_fresh *e;

	if (!mm || bpf_map_update_elem(&eh_fresh, &tgid, &eh_fresh_zero, BPF_ANY))
		return;
	e = bpf_map_lookup_elem(&eh_fresh, &tgid);
	if (!e)
		return;
	e->exec_ns = bpf_ktime_get_ns();
	barrier();
	e->start_stack = BPF_CORE_READ(mm, start_stack);
	sp_eh_note(BPF_CORE_READ(mm, start_code));
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (regs)
		sp_eh_note(regs->ip);
	sp_eh_note((__u64)BPF_CORE_READ(mm, context.vdso));
}

/* The main thread's mmaps in its first EH_FRESH_NS: the dynamic loader mapping libraries. */
SEC("tracepoint/syscalls/sys_exit_mmap")
int on_mmap_eh(struct trace_event_raw_sys_exit *ctx)
{
	struct eh_fresh *e;
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;

	if ((__u32)id != tgid || (__u64)ctx->ret >= (__u64)-4095)
		return 0;
	e = bpf_map_lookup_elem(&eh_fresh, &tgid);
	if (!e || bpf_ktime_get_ns() - e->exec_ns > EH_FRESH_NS)
		return 0;
	sp_eh_note(ctx->ret);
	return 0;
}

SEC("tracepoint/sched/sched_process_exec")
int on_exec_eh(void *ctx)
{
	__u32 one = 1;

	eh_fresh_exec();

	/* A new image: a layout it inherited at a fork (eh_fork below) is no longer its own. */
	if (py_walk || hs_walk) {
		__u32 tgid = bpf_get_current_pid_tgid() >> 32;

		if (py_walk)
			bpf_map_delete_elem(&py_procs, &tgid);
		if (hs_walk)
			bpf_map_delete_elem(&hs_procs, &tgid);
	}
	if (!eh_wake_armed)
		return 0;
	/*
	 * -- CMD and -p: the tables are kept for the targets only (ehsource.c),
	 * so another process's exec has nothing for the loop to do, and on a
	 * busy host would wake it at every idle pass.  The filter follows CMD's
	 * forks here in BPF, and an exec keeps the pid.
	 */
	if (filter_mode == SP_FILTER_TREE || filter_mode == SP_FILTER_PID) {
		__u64 pt = bpf_get_current_pid_tgid();

		if (!filter_keeps(pt >> 32, (__u32)pt))
			return 0;
	}
	/* Two CPUs may both see it armed: two wakes, no harm. */
	eh_wake_armed = 0;
	bpf_ringbuf_output(&eh_wake, &one, sizeof(one), BPF_RB_FORCE_WAKEUP);
	return 0;
}

/*
 * A process forks (multiprocessing's workers, a pre-forking server): the
 * child has its parent's image at the same addresses, so the parent's slice
 * of eh_maps, and its Python or Java layout, serve it until it execs.  User
 * space copies them too, when it reads the fork from the sideband
 * (eh_tables__fork, py_procs__fork), but on a loaded host that came tens of
 * ms late, and the child's samples until then had no Python frames; here
 * they are in place before the child first runs.  A slice copied here and
 * never made again is still safe: the walk takes it only while the stack's
 * start is the one it was made for.  A thread (same process) needs nothing,
 * nor a child -p or -t leave out.  The exec above and the recorder at the
 * child's exit take the entries out again.
 */
static __always_inline void eh_fork(__u32 parent_tgid, __u32 child_pid, __u32 child_tgid)
{
	void *v;

	if (child_pid != child_tgid)
		return;
	/*
	 * The parent's noted mappings, which are the child's too until either
	 * maps more: a process exec'd moments ago (gcc) vforks before user space
	 * has read its mappings, and its child had none.  Else a pid's last
	 * owner's entry goes: the child's is made at its exec, if it has one.
	 */
	v = bpf_map_lookup_elem(&eh_fresh, &parent_tgid);
	if (!v || bpf_map_update_elem(&eh_fresh, &child_tgid, v, BPF_ANY))
		bpf_map_delete_elem(&eh_fresh, &child_tgid);
	if (filter_mode == SP_FILTER_PID || filter_mode == SP_FILTER_TID)
		return;
	v = bpf_map_lookup_elem(&eh_procs, &parent_tgid);
	if (v)
		bpf_map_update_elem(&eh_procs, &child_tgid, v, BPF_ANY);
	if (py_walk && (v = bpf_map_lookup_elem(&py_procs, &parent_tgid)))
		bpf_map_update_elem(&py_procs, &child_tgid, v, BPF_ANY);
	if (hs_walk && (v = bpf_map_lookup_elem(&hs_procs, &parent_tgid)))
		bpf_map_update_elem(&hs_procs, &child_tgid, v, BPF_ANY);
}

SEC("?tp_btf/sched_process_fork")
int BPF_PROG(eh_fork_btf, struct task_struct *parent, struct task_struct *child)
{
	eh_fork(parent->tgid, child->pid, child->tgid);
	return 0;
}

/* The raw_tp twin, for kernels without tp_btf (before 5.5). */
SEC("?raw_tp/sched_process_fork")
int eh_fork_raw(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *parent = (void *)ctx->args[0], *child = (void *)ctx->args[1];

	eh_fork(BPF_CORE_READ(parent, tgid), BPF_CORE_READ(child, pid), BPF_CORE_READ(child, tgid));
	return 0;
}

/*
 * record --otel: a publisher's context read also as it leaves the CPU, so
 * that a block or a wait for the CPU is charged to the span it happened in,
 * not cut off at the last sample before it.  The context is the thread's own
 * memory, which nothing but the thread writes: it cannot change while the
 * thread is off CPU, so at its switch-in the span is known to hold until
 * then, without a read (which would be of another mm).  Only processes with
 * a recipe are read: for every other thread this is a map lookup.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(otel_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 prev_tid = prev->pid, next_tid = next->pid;
	struct sp_thread *t;

	(void)preempt;
	if (prev_tid) {
		t = bpf_map_lookup_elem(&threads, &prev_tid);
		if (t && t->otel.recipe.kind)
			otel_sample(t, prev->tgid, prev_tid, true);
	}
	if (next_tid) {
		t = bpf_map_lookup_elem(&threads, &next_tid);
		if (t && (t->otel.st.flags & SP_OTEL_OFF)) {
			t->otel.st.flags &= ~SP_OTEL_OFF;
			if (!ctx_empty(&t->otel.st.ctx)) {
				t->otel.st.last_ns = bpf_ktime_get_ns();
				t->otel.st.flags |= SP_OTEL_SWITCH_END;
			}
		}
	}
	return 0;
}
