// SPDX-License-Identifier: GPL-2.0
/*
 * The off-CPU source (--off-cpu): time blocked, with the stack that
 * blocked, as samples of offcpu-time (offcpu.c), as perf writes them.
 */
#include <errno.h>
#include <stdlib.h>
#include <bpf/libbpf.h>

#include "hash.h"
#include "log.h"
#include "names.h"
#include "offcpu.h"
#include "perf_data.h"
#include "sideband.h"
#include "source.h"
#include "target.h"
#include "sample.skel.h"

struct offcpu_src {
	struct offcpu_set *oc;
	struct rec_ctx *ctx;
	struct pd_writer *w;   /* during a drain or the finish */
	struct u64_map named;  /* wakers' processes outside the target, synthesized */
};

#define OC(src) (((struct offcpu_src *)(src)->priv)->oc)

/* offcpu-time, and the wakers' samples that follow its blocks (waker_codec.h). */
static int offcpu_attrs(struct rec_source *src, struct pd_writer *w)
{
	struct perf_event_attr a;
	__u64 id = OFFCPU_ID;
	int e;

	if (offcpu__sched(OC(src))) {
		id = SCHED_ID;
		offcpu__sched_attr(&a);
		e = pd_writer__add_attr(w, &a, SCHED_EVENT_NAME, &id, 1);
		if (e || !offcpu__offcpu(OC(src)))
			return e;
		id = OFFCPU_ID;
	}
	offcpu__attr(&a);
	e = pd_writer__add_attr(w, &a, OFFCPU_EVENT_NAME, &id, 1);
	if (e || !offcpu__wakers(OC(src)))
		return e;
	id = OFFCPU_WAKER_ID;
	offcpu__waker_attr(&a);
	return pd_writer__add_attr(w, &a, OFFCPU_WAKER_EVENT_NAME, &id, 1);
}

static int offcpu_start(struct rec_source *src)
{
	struct offcpu_set *oc = OC(src);
	char err[512];

	if (offcpu__attach(oc, err, sizeof(err))) {
		pr_err("%s", err);
		return -EINVAL;
	}
	pr_debug("off-CPU on %s/sched_switch, the block's state from %s", offcpu__hook(oc),
		 offcpu__has_prev_state(oc) ? "the tracepoint's prev_state" : "the task");
	return 0;
}

static int offcpu_fds(struct rec_source *src, int *fds, int max)
{
	if (max < 1)
		return 0;
	fds[0] = offcpu__ring_fd(OC(src));
	return 1;
}

static int write_rec(void *w, const void *p, size_t n)
{
	return pd_writer__write(w, p, n);
}

/* The switch-in stamps each off-CPU block, before now: it belongs to this round too. */
static long offcpu_drain(struct rec_source *src, struct pd_writer *w)
{
	struct offcpu_src *os = src->priv;
	__u64 n = 0;
	int e;

	os->w = w;
	e = offcpu__consume(os->oc, write_rec, w, &n);

	return e ?: (long)n;
}

/* The sums and the blocks still going, stamped end_ns: after every other record. */
static int offcpu_finish(struct rec_source *src, struct pd_writer *w, __u64 end_ns)
{
	struct offcpu_src *os = src->priv;

	os->w = w;
	return offcpu__finish(os->oc, end_ns, write_rec, w);
}

/* A window's sums, stamped at its end (the agent's windows). */
static int offcpu_window_end(struct rec_source *src, struct pd_writer *w, __u64 end_ns)
{
	struct offcpu_src *os = src->priv;

	os->w = w;
	return offcpu__sums(os->oc, end_ns, write_rec, w);
}

/* What the off-CPU program could not time or name, said once each. */
static void offcpu_stats(struct rec_source *src)
{
	struct offcpu_stats st;

	offcpu__stats(OC(src), &st);
	if (offcpu__sched(OC(src)))
		pr_info("sched: %llu times off CPU written (every switch-out of the threads watched)",
			(unsigned long long)st.sched);
	REC_SAY(
		{ st.late, REC_INFO, "times off CPU found rounds late (their switch-in hidden): stamped later than they ended, which the records say" },
		{ st.too_late, REC_WARN, "times off CPU left out: found over half an hour after they ended" });
	if (!offcpu__offcpu(OC(src))) {
		REC_SAY({ st.lost, REC_WARN, "switch-outs LOST: their ring buffer was full (raise --off-cpu-entries)" });
		return;
	}
	pr_info("off-CPU: %llu blocks written one by one, %llu summed into %llu samples, %llu still blocked at the end; %.3f s in all",
		(unsigned long long)st.samples, (unsigned long long)st.summed, (unsigned long long)st.sums,
		(unsigned long long)st.open_at_end, st.ns / 1e9);
	REC_SAY(
		{ st.lost, REC_WARN, "off-CPU blocks LOST: their ring buffer was full (raise --off-cpu-entries)" },
		{ st.noslot, REC_WARN, "off-CPU blocks not timed: the per-thread map was full (raise --max-threads)" },
		{ st.agg_full, REC_WARN, "short off-CPU blocks were written one by one: the sum map was full (raise --off-cpu-entries)" });
	if (st.kstack || st.ustack)
		pr_info("off-CPU stacks not taken: %llu kernel, %llu user (unreadable, or the stack map full)",
			(unsigned long long)st.kstack, (unsigned long long)st.ustack);
	if (st.kchain_hits || st.kchain_misses)
		pr_info("off-CPU kernel stacks: %llu reused as proven the same, %llu taken by the kernel and tried, %llu of those kept",
			(unsigned long long)st.kchain_hits, (unsigned long long)st.kchain_misses,
			(unsigned long long)st.kchain_kept);
	REC_SAY(
		{ st.hidden, REC_INFO, "off-CPU blocks ended by their thread's run time: the switch tracepoint did not show it coming back" },
		{ st.unseen, REC_WARN, "off-CPU blocks dropped: the switch tracepoint never showed their thread coming back" },
		{ st.stale + st.exited, REC_INFO, "off-CPU starts dropped: their thread was gone or another process's" });
	if (st.py_retried)
		pr_info("off-CPU Python chains not named whole when new: %llu, %llu of them named whole later",
			(unsigned long long)st.py_retried, (unsigned long long)st.py_renamed);
	if (offcpu__wakers(OC(src)))
		pr_info("wakers: %llu blocks named theirs, %llu wakings from interrupts, %llu blocks ended with no waking seen",
			(unsigned long long)st.wakers, (unsigned long long)st.waker_irq, (unsigned long long)st.waker_none);
	if (st.waker_kstack || st.waker_ustack)
		pr_info("waker stacks not taken: %llu kernel, %llu user (unreadable, or the stack map full)",
			(unsigned long long)st.waker_kstack, (unsigned long long)st.waker_ustack);
	REC_SAY({ st.waker_unclassified, REC_INFO,
		  "wakers with no kernel stack: taken for threads, since no interrupt entry could be seen" });
}

static void offcpu_free(struct rec_source *src)
{
	struct offcpu_src *os = src->priv;

	offcpu__free(os->oc);
	u64_map_free(&os->named);
}

/*
 * A waker from outside the target (-p, -t, -- CMD): its process's COMM and
 * maps from /proc, once, stamped with its first waker sample, which follows.
 * Gone already, it keeps its name (in the sample) and its kernel frames.
 */
static int name_outsider(void *arg, __u32 pid, __u64 time)
{
	struct offcpu_src *os = arg;
	struct rec_ctx *ctx = os->ctx;
	uint64_t *done = u64_map_get(&os->named, pid, true);
	struct int_list one = { .v = (int[]){ pid }, .n = 1 };
	struct sideband sb = {
		.w = os->w, .attr = ctx->track_attr, .id = ctx->track_id, .time = time, .dsos = ctx->dsos,
		.bcache = ctx->bcache, .jits = ctx->jits, .data_maps = ctx->o->dwarf_stack,
	};

	if (!done || *done)
		return 0;
	*done = 1;
	return sideband_synthesize(&sb, &one);
}

int offcpu_source__new(struct rec_source **out, struct rec_ctx *ctx)
{
	const struct record_opts *o = ctx->o;
	/* Spans (--otel ones too, and --sched's external ones) need each block's time; sums have none. */
	__s64 ms = o->offcpu_thresh_ms >= 0		  ? o->offcpu_thresh_ms
		   : o->nr_spans || o->otel || o->sched ? 0
							  : OFFCPU_DEFAULT_THRESH_MS;
	struct offcpu_opts oo = {
		.cpus = o->cpus.n ? &o->cpus : NULL,
		.target = ctx->target,
		.outsider = name_outsider,
		.max_threads = o->max_threads,
		.entries = o->offcpu_entries,
		.thresh_ns = ms * 1000000ull,
		.prefer_raw_tp = o->raw_tp,
		.no_wakers = o->no_wakers,
		/* --off-cpu keeps every switch-out too: what annotate needs for the split of spans it did not mark. */
		.sched = o->sched || o->offcpu,
		.no_offcpu = !o->offcpu,
		.sorted_ns = &ctx->sorted_ns,
		.stamp_late = getenv("SPANPERF_OFFCPU_STAMP_LATE") != NULL,
	};
	/* With ehframe, the off-CPU user chains are unwound as the samples are: the same tables and maps. */
	struct offcpu_eh_fds eh = {
		.rows = bpf_map__fd(ctx->skel->maps.eh_rows), .pages = bpf_map__fd(ctx->skel->maps.eh_pages),
		.maps = bpf_map__fd(ctx->skel->maps.eh_maps), .procs = bpf_map__fd(ctx->skel->maps.eh_procs),
		.files = bpf_map__fd(ctx->skel->maps.eh_files), .gen = bpf_map__fd(ctx->skel->maps.eh_gen),
		.fresh = bpf_map__fd(ctx->skel->maps.eh_fresh),
		.py_procs = ctx->py ? bpf_map__fd(ctx->skel->maps.py_procs) : -1,
		.py_stats = bpf_map__fd(ctx->skel->maps.py_stats),
		.hs_procs = ctx->py && ctx->skel->rodata->hs_walk ? bpf_map__fd(ctx->skel->maps.hs_procs) : -1,
		.hs_stats = bpf_map__fd(ctx->skel->maps.hs_stats),
	};
	struct rec_source *src;
	struct offcpu_src *os;
	char err[512];
	int e;

	*out = NULL;
	if (!o->offcpu && !o->sched)
		return 0;
	if (o->ehframe)
		oo.eh = &eh;
	oo.py = ctx->py;
	src = rec_source__alloc(o->offcpu ? "off-cpu" : "sched", sizeof(*os));
	if (!src)
		return -ENOMEM;
	*out = src;
	os = src->priv;
	os->ctx = ctx;
	oo.outsider_arg = os;
	src->attrs = offcpu_attrs;
	src->start = offcpu_start;
	src->fds = offcpu_fds;
	src->drain = offcpu_drain;
	src->finish = offcpu_finish;
	src->window_end = offcpu_window_end;
	src->stats = offcpu_stats;
	src->free = offcpu_free;
	e = offcpu__open(&os->oc, &oo, err, sizeof(err));
	if (e)
		pr_err("%s", err);
	return e;
}
