/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A recording made from the fuzzer's bytes, for the targets past the
 * reader (the span join, the page, speedscope, pprof, flame graphs):
 * fuzz_perf_data feeds the reader any bytes, and mutations of a real file
 * rarely get past its checks.  Here every record is well formed, written
 * by the project's own writers, and the bytes choose what they say: which
 * threads, which times (overlapping or backwards), which stacks, span
 * edges, ids, attributes and wall splits, names of any bytes (comms, span
 * sources, counter names, JIT symbols in a kept perf map), process
 * contexts, off-CPU blocks, their wakers and the scheduler's records.
 *
 * Input: a byte of options for the target, then the names, then one
 * operation per byte until the input ends (a value past it reads as 0).
 */
#ifndef SP_FUZZ_REC_H
#define SP_FUZZ_REC_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <time.h>
#include <linux/perf_event.h>

#include "fuzz_common.h"
#include "names.h"
#include "offcpu.h"
#include "otel_pctx.h"
#include "perf_data.h"
#include "sbuf.h"
#include "sched_codec.h"
#include "span_codec.h"
#include "util.h"
#include "waker_codec.h"

/* The bytes still to read. */
struct fz {
	const uint8_t *p;
	size_t n;
};

/* The next `bytes` bytes, little-endian; 0 once the input ends. */
static inline uint64_t fz_take(struct fz *f, int bytes)
{
	uint64_t v = 0;

	for (int i = 0; i < bytes && f->n; i++, f->p++, f->n--)
		v |= (uint64_t)*f->p << (8 * i);
	return v;
}

/* A length byte (at most max - 1), then that many bytes as a string, cut at a NUL. */
static inline void fz_str(struct fz *f, char *out, size_t max)
{
	size_t l = fz_take(f, 1) % max, i;

	for (i = 0; i < l && f->n; i++)
		out[i] = (char)fz_take(f, 1);
	out[i] = 0;
}

/* Where the files of one process's runs go: made once, removed at exit. */
static char fz_dir[64];

static inline void fz_dir_remove(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fz_dir);
	if (system(cmd))
		fprintf(stderr, "fuzz: could not remove %s\n", fz_dir);
}

static inline const char *fz_dir_get(void)
{
	if (!fz_dir[0]) {
		const char *tmp = getenv("TMPDIR");

		snprintf(fz_dir, sizeof(fz_dir), "%s/spanperf-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(fz_dir))
			abort();
		/* FUZZ_REC_KEEP=1: the last input's recording stays, to read with spanperf report. */
		if (getenv("FUZZ_REC_KEEP"))
			fprintf(stderr, "fuzz: the recording is kept in %s\n", fz_dir);
		else
			atexit(fz_dir_remove);
	}
	return fz_dir;
}

#define FZ_NSPAN_MAX 4	       /* span sources besides otel */
#define FZ_KBASE 0xffffffff81000000ull /* the fixture's kallsyms (tests/fuzz/root/proc/kallsyms) */
#define FZ_MODBASE 0xffffffffc0000000ull
#define FZ_UBASE 0x400000ull
#define FZ_JITBASE 0x7f0000001000ull /* an //anon mapping, named by the kept perf map */
#define FZ_T0 1000000000ull
/* RAW is a u32 size and the payload, padded so that the record stays 8-byte aligned. */
#define FZ_RAW_SIZE(n) (((((n) + 4) + 7) & ~7ul) - 4)

/* What a recording was made into, and what the bytes chose for the target. */
struct fz_rec {
	char path[PATH_MAX];	 /* the perf.data */
	char ext[PATH_MAX];	 /* annotate's spans (JSON lines), "" when the input made none */
	uint8_t opts;		 /* the first byte: the target's to use */
	int nr_records;
};

/* Attrs, in this order; their ids. */
enum { FA_CLOCK, FA_OFFCPU, FA_WAKER, FA_SCHED, FA_PCTX, FA_SPAN0 };

struct fz_writer {
	struct fz *f;
	struct pd_writer *w;
	struct perf_event_attr clock, offcpu, waker, sched, span;
	int nspan;		/* span sources, the last of them otel */
	__u64 t;		/* now */
	struct sbuf ext;	/* annotate's spans */
	int err;
};

/* A thread of four processes: 100 (threads 100, 101), 102 (102, 103)... */
static inline void fz_thread(struct fz *f, __u32 *pid, __u32 *tid)
{
	unsigned b = fz_take(f, 1);

	*tid = 100 + (b & 7);
	*pid = 100 + (b & 6);
}

/* A time near now: mostly ahead, sometimes behind (records out of order, spans that end before they start). */
static inline __u64 fz_time(struct fz_writer *g)
{
	unsigned b = fz_take(g->f, 2);

	return b & 0x8000 ? g->t - SP_MIN(g->t, (__u64)(b & 0x7fff) * 97) : g->t + (__u64)b * 97;
}

/* An address a stack may hold: kernel text, a module, a user file, JIT code, a context marker, or any. */
static inline __u64 fz_ip(struct fz *f)
{
	unsigned b = fz_take(f, 1);
	__u64 off = fz_take(f, 2);

	switch (b % 8) {
	case 0: return FZ_KBASE + off;
	case 1: return FZ_MODBASE + (off & 0x1fff);
	case 2: case 3: return FZ_UBASE + off * 4;
	case 4: case 5: return FZ_JITBASE + off;
	case 6: return b & 8 ? PD_CONTEXT_KERNEL : PD_CONTEXT_USER;
	default: return fz_take(f, 8);
	}
}

static inline void fz_put(struct fz_writer *g, const void *buf, long n)
{
	if (n <= 0)
		return;
	if (!g->err)
		g->err = pd_writer__write(g->w, buf, n);
}

/* The stack of a sample: up to 12 frames. */
static inline __u64 fz_chain(struct fz *f, __u64 *chain)
{
	__u64 n = fz_take(f, 1) % 13;

	for (__u64 i = 0; i < n; i++)
		chain[i] = fz_ip(f);
	return n;
}

static inline void fz_sideband(struct fz_writer *g, struct pd_sideband *r, __u32 pid, __u32 tid)
{
	unsigned char buf[512];

	r->sample_id = (struct pd_sample){ .id = 1, .pid = pid, .tid = tid, .time = g->t, .cpu = tid & 1 };
	fz_put(g, buf, pd_sideband_write(buf, sizeof(buf), &g->clock, r));
}

/* One span of source idx, its record's fields all the input's. */
static inline void fz_span(struct fz_writer *g, int idx)
{
	struct fz *f = g->f;
	unsigned char buf[1024];
	struct span_rec r = { .magic = SPAN_REC_MAGIC, .version = SPAN_REC_VERSION };
	unsigned flags;
	__u64 late;

	fz_thread(f, &r.pid, &r.tid);
	r.start_ns = fz_time(g);
	r.end_ns = (flags = fz_take(f, 1)) & 0x80 ? fz_time(g) : r.start_ns + fz_take(f, 2) * 211;
	r.idx = idx;
	r.ip = fz_ip(f);
	r.samples = fz_take(f, 1);
	r.cpu = flags & 1;
	r.flags = flags & 0x0f;
	r.depth = fz_take(f, 1) % 20;
	r.source = idx == g->nspan - 1 ? SP_SRC_OTEL : 1 + fz_take(f, 1) % 7;
	for (int k = 0; k < SP_MAX_COUNTERS; k++)
		r.counters[k] = flags & 0x10 ? fz_take(f, 2) : 0;
	if (flags & 0x20) {
		/* A few trace and span ids, so that spans and samples share them. */
		unsigned id = fz_take(f, 1);

		memset(r.trace_id, id & 3 ? 0x11 * (id & 3) : 0, sizeof(r.trace_id));
		memset(r.span_id, (id >> 2) & 7, sizeof(r.span_id));
		r.flags |= SPAN_HAS_CONTEXT;
	}
	if (flags & 0x40) {
		r.attrs_size = fz_take(f, 1) % 64;
		for (int i = 0; i < r.attrs_size; i++)
			r.attrs[i] = fz_take(f, 1);
	}
	if (idx & 1 || flags & 0x80) {
		r.sched.how = fz_take(f, 1) % 5;
		r.sched.on_ns = fz_take(f, 3) * 13;
		r.sched.runq_ns = fz_take(f, 3) * 13;
		r.sched.blocked_ns = fz_take(f, 3) * 13;
	}
	late = fz_take(f, 1) * 1000;
	fz_put(g, buf, span_codec_write_at(buf, sizeof(buf), &g->span, &r, r.end_ns + late));
}

/* An external span for annotate, a JSON line whose name is any bytes. */
static inline void fz_ext_span(struct fz_writer *g)
{
	struct fz *f = g->f;
	char name[48];
	__u32 pid, tid;
	__u64 start = fz_time(g), end = fz_time(g);
	unsigned id = fz_take(f, 1);

	fz_thread(f, &pid, &tid);
	fz_str(f, name, sizeof(name));
	sbuf_printf(&g->ext, "{\"tid\":%u,\"pid\":%u,\"start_ns\":%llu,\"end_ns\":%llu,\"name\":", tid, pid,
		    (unsigned long long)start, (unsigned long long)end);
	sbuf_json_str(&g->ext, name);
	if (id & 1)
		sbuf_printf(&g->ext, ",\"trace_id\":\"%032x\",\"span_id\":\"%016x\"", id >> 1, id);
	sbuf_printf(&g->ext, "}\n");
}

/* A process's OTEP 4719 context: a service name and attribute keys of any bytes. */
static inline void fz_pctx(struct fz_writer *g, __u32 pid)
{
	struct fz *f = g->f;
	char svc[32], keys[8][24];
	struct otel_pctx pc = { .service_name = svc };
	struct sbuf b = {};

	fz_str(f, svc, sizeof(svc));
	pc.nkeys = fz_take(f, 1) % 9;
	for (int i = 0; i < pc.nkeys; i++) {
		fz_str(f, keys[i], sizeof(keys[i]));
		/* The key that names otel spans, sometimes. */
		pc.keys[i] = fz_take(f, 1) % 4 ? keys[i] : (char *)OTEL_SPAN_NAME_KEY;
	}
	if (!otel_pctx_rec_write(&b, &g->span, OTEL_PCTX_ID, pid, g->t, &pc))
		fz_put(g, b.p, b.len);
	sbuf_free(&b);
}

static inline void fz_op(struct fz_writer *g)
{
	struct fz *f = g->f;
	unsigned char buf[1024];
	__u64 chain[16];
	struct pd_sideband r = {};
	struct pd_sample s = {};
	unsigned op = fz_take(f, 1);
	__u32 pid, tid;

	g->t += (op >> 5) * 1000;
	fz_thread(f, &pid, &tid);
	switch (op % 16) {
	case 0: {
		char comm[20];

		fz_str(f, comm, sizeof(comm));
		r.type = PERF_RECORD_COMM;
		r.misc = op & 0x10 ? PERF_RECORD_MISC_COMM_EXEC : 0;
		r.comm = (struct pd_comm){ pid, tid, comm };
		fz_sideband(g, &r, pid, tid);
		return;
	}
	case 1: {
		static const char *const files[] = { "/usr/lib/fuzz/libx.so", "//anon", "[vdso]", "/memfd:jit (deleted)",
						     "/tmp/fuzz ;name\n" };
		unsigned which = fz_take(f, 1);

		r.type = PERF_RECORD_MMAP2;
		r.misc = PERF_RECORD_MISC_USER;
		r.mmap = (struct pd_mmap){ .pid = pid, .tid = tid, .prot = 5, .flags = 2,
					   .filename = files[which % 5] };
		r.mmap.start = which % 5 == 1 ? FZ_JITBASE & ~0xfffull : FZ_UBASE;
		r.mmap.len = (fz_take(f, 1) + 1) * 0x1000;
		r.mmap.pgoff = (which >> 4) * 0x1000;
		if (which & 8) {
			r.mmap.build_id_size = 20;
			memset(r.mmap.build_id, which, 20);
		}
		fz_sideband(g, &r, pid, tid);
		return;
	}
	case 2:
		/* A new process or thread, from one of the four. */
		r.type = PERF_RECORD_FORK;
		r.task = (struct pd_task){ .pid = pid, .tid = tid, .time = g->t };
		r.task.ppid = 100 + (op >> 4 & 1) * 2;
		r.task.ptid = r.task.ppid;
		fz_sideband(g, &r, pid, tid);
		return;
	case 3:
		r.type = PERF_RECORD_EXIT;
		r.task = (struct pd_task){ .pid = pid, .ppid = pid, .tid = tid, .ptid = tid, .time = g->t };
		fz_sideband(g, &r, pid, tid);
		return;
	case 4: case 5: case 6:
		/* On CPU. */
		/* One field a statement: the order of an initializer list's expressions is unspecified. */
		s = (struct pd_sample){ .id = 1 + (op & 1), .pid = pid, .tid = tid, .cpu = tid & 1 };
		s.ip = fz_ip(f);
		s.time = fz_time(g);
		s.period = 1 + fz_take(f, 2) * 1000;
		s.callchain_nr = fz_chain(f, chain);
		s.callchain = chain;
		fz_put(g, buf, pd_sample_write(buf, sizeof(buf), &g->clock,
					       s.ip >= FZ_KBASE ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER, &s));
		return;
	case 7: {
		/* Off CPU: a block one by one, or a sum; stamped late sometimes. */
		unsigned k = fz_take(f, 1);

		s = (struct pd_sample){ .id = OFFCPU_ID, .pid = pid, .tid = tid };
		s.ip = fz_ip(f);
		s.time = fz_time(g);
		s.period = fz_take(f, 3) * 31;
		s.cpu_res = (k & 1 ? OFFCPU_RES_SUM : 0) | (k & 2 ? (k >> 2) << OFFCPU_RES_LATE_SHIFT : 0);
		s.callchain_nr = fz_chain(f, chain);
		s.callchain = chain;
		fz_put(g, buf, pd_sample_write(buf, sizeof(buf), &g->offcpu, PERF_RECORD_MISC_KERNEL, &s));
		return;
	}
	case 8: {
		/* Who ended a block of the thread (the wakee here, pid/tid the waker's). */
		struct waker_rec w = { .magic = WAKER_REC_MAGIC, .version = 1, .size = sizeof(w) };
		char raw[FZ_RAW_SIZE(sizeof(w))] = {};
		__u32 wpid, wtid;

		fz_thread(f, &wpid, &wtid);
		w.wakee_pid = pid;
		w.wakee_tid = tid;
		w.block_end_ns = fz_time(g);
		w.wake_ns = fz_time(g);
		w.ctx = fz_take(f, 1) % 6;
		fz_str(f, w.comm, sizeof(w.comm));
		s = (struct pd_sample){ .id = OFFCPU_WAKER_ID, .pid = w.ctx == SP_WAKER_TASK ? wpid : 0,
					.tid = w.ctx == SP_WAKER_TASK ? wtid : 0, .time = w.block_end_ns,
					.raw = raw, .raw_size = sizeof(raw) };
		memcpy(raw, &w, sizeof(w));
		s.ip = fz_ip(f);
		s.period = fz_take(f, 3) * 31;
		s.callchain_nr = fz_chain(f, chain);
		s.callchain = chain;
		fz_put(g, buf, pd_sample_write(buf, sizeof(buf), &g->waker, PERF_RECORD_MISC_KERNEL, &s));
		return;
	}
	case 9: {
		struct sched_rec sr = { .magic = SCHED_REC_MAGIC, .version = 1, .size = sizeof(sr) };
		char raw[FZ_RAW_SIZE(sizeof(sr))] = {};
		unsigned k = fz_take(f, 1);

		sr.state = k % 4;
		sr.flags = k & 4 ? SCHED_HAS_RUN_DELAY : 0;
		sr.run_delay = fz_take(f, 3) * 7;
		s = (struct pd_sample){ .id = SCHED_ID, .pid = pid, .tid = tid, .raw = raw, .raw_size = sizeof(raw),
					.cpu_res = k & 8 ? (k >> 4) << OFFCPU_RES_LATE_SHIFT : 0 };
		s.time = fz_time(g);
		s.period = fz_take(f, 3) * 31;
		memcpy(raw, &sr, sizeof(sr));
		fz_put(g, buf, pd_sample_write(buf, sizeof(buf), &g->sched, PERF_RECORD_MISC_KERNEL, &s));
		return;
	}
	case 10: case 11:
		fz_span(g, fz_take(f, 1) % g->nspan);
		return;
	case 12:
		fz_pctx(g, pid);
		return;
	case 13:
		fz_ext_span(g);
		return;
	case 14:
		r.type = PD_RECORD_FINISHED_ROUND;
		fz_put(g, buf, pd_sideband_write(buf, sizeof(buf), NULL, &r));
		return;
	default:
		r.type = PERF_RECORD_LOST;
		r.lost = (struct pd_lost){ .id = 1, .lost = fz_take(f, 1) };
		fz_sideband(g, &r, pid, tid);
		return;
	}
}

/*
 * The recording the bytes describe, into this process's folder: 0, or -1
 * when the input is too short to say anything or the writer failed.
 */
static inline int fuzz_recording(const uint8_t *data, size_t size, struct fz_rec *out)
{
	struct fz f = { data, size };
	struct fz_writer g = { .f = &f, .t = FZ_T0 };
	char names[FZ_NSPAN_MAX + 1][24], counters[64], jit[512], host[32], name[64];
	char *argv[] = { "spanperf", "record", "-a", "--span", names[0] };
	struct pd_jit_map jm = { .pid = 100 + (size & 6), .text = jit };
	struct pd_meta meta = {
		.hostname = host, .osrelease = "6.18.0-fuzz", .version = "fuzz", .arch = "x86_64",
		.cpudesc = "Fuzz CPU", .cpuid = "GenuineIntel,6,85,7", .nr_cpus_avail = 2, .nr_cpus_online = 2,
		.total_mem_kb = 1 << 20, .cmdline_argc = 5, .cmdline_argv = argv, .clockid = CLOCK_MONOTONIC,
		.clockid_res_ns = 1, .clock_tod_ns = 1700000000000000000ull, .clock_ref_ns = FZ_T0, .jit_maps = &jm, .nr_jit_maps = 1,
	};
	__u64 id;
	int e = 0;

	if (size < 4)
		return -1;
	out->opts = fz_take(&f, 1);
	out->ext[0] = 0;
	snprintf(out->path, sizeof(out->path), "%s/perf.data", fz_dir_get());
	/* No FILE.old kept from the last run: record keeps the one it replaces. */
	unlink(out->path);
	snprintf(name, sizeof(name), "%s.old", out->path);
	unlink(name);
	g.nspan = 1 + fz_take(&f, 1) % FZ_NSPAN_MAX;
	fz_str(&f, host, sizeof(host));
	for (int i = 0; i < g.nspan - 1; i++)
		fz_str(&f, names[i], sizeof(names[i]));
	snprintf(names[g.nspan - 1], sizeof(names[0]), "otel");
	fz_str(&f, counters, sizeof(counters));
	/* The kept perf map's text: "START SIZE NAME" lines with names of any bytes. */
	jm.len = fz_take(&f, 2) % sizeof(jit);
	for (size_t i = 0; i < jm.len; i++)
		jit[i] = (char)fz_take(&f, 1);
	if (!jm.len) {
		jm.len = snprintf(jit, sizeof(jit), "7f0000001000 100 jit_a\n7f0000001100 80 jit \xff\xfe<b>&\n");
	}

	g.clock = (struct perf_event_attr){
		.type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_CPU_CLOCK, .size = sizeof(g.clock),
		.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			       PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN,
		.freq = 1, .sample_freq = 999, .sample_id_all = 1, .use_clockid = 1, .clockid = CLOCK_MONOTONIC,
		.mmap = 1, .mmap2 = 1, .comm = 1, .comm_exec = 1, .task = 1, .disabled = 1,
	};
	offcpu__attr(&g.offcpu);
	offcpu__waker_attr(&g.waker);
	offcpu__sched_attr(&g.sched);
	span_codec_attr(&g.span);
	g.span.sample_type |= PERF_SAMPLE_RAW;
	if ((e = pd_writer__open(&g.w, out->path)))
		return -1;
	e = pd_writer__add_attr(g.w, &g.clock, "cpu-clock", (__u64[]){ 1, 2 }, 2);
	id = OFFCPU_ID;
	e = e ?: pd_writer__add_attr(g.w, &g.offcpu, OFFCPU_EVENT_NAME, &id, 1);
	id = OFFCPU_WAKER_ID;
	e = e ?: pd_writer__add_attr(g.w, &g.waker, OFFCPU_WAKER_EVENT_NAME, &id, 1);
	id = SCHED_ID;
	e = e ?: pd_writer__add_attr(g.w, &g.sched, SCHED_EVENT_NAME, &id, 1);
	id = OTEL_PCTX_ID;
	e = e ?: pd_writer__add_attr(g.w, &g.span, OTEL_PCTX_ATTR_NAME, &id, 1);
	for (int i = 0; i < g.nspan && !e; i++) {
		snprintf(name, sizeof(name), "%s%s", SPAN_ATTR_PREFIX, names[i]);
		id = SPAN_ID_BASE + i;
		e = pd_writer__add_attr(g.w, &g.span, name, &id, 1);
	}
	snprintf(name, sizeof(name), "%s%s", SPAN_COUNTERS_PREFIX, counters);
	id = SPAN_COUNTERS_ID;
	e = e ?: pd_writer__add_attr(g.w, &g.span, name, &id, 1);
	e = e ?: pd_writer__begin(g.w);
	if (e)
		goto cleanup;
	{
		/* Every thread named first, as record writes them from /proc. */
		unsigned char buf[256];

		for (__u32 tid = 100; tid < 108; tid++) {
			struct pd_sideband r = { .type = PERF_RECORD_COMM, .comm = { 100 + (tid & 6), tid, "worker" } };

			r.sample_id = (struct pd_sample){ .id = 1, .pid = 100 + (tid & 6), .tid = tid };
			fz_put(&g, buf, pd_sideband_write(buf, sizeof(buf), &g.clock, &r));
		}
	}
	while (f.n && !g.err) {
		fz_op(&g);
		out->nr_records++;
	}
	e = g.err ?: g.ext.err;
	if (!e) {
		meta.first_sample_ns = FZ_T0;
		meta.last_sample_ns = g.t;
		e = pd_writer__finish(g.w, &meta);
	}
	if (!e && g.ext.len) {
		int fd;

		snprintf(out->ext, sizeof(out->ext), "%s/spans.jsonl", fz_dir_get());
		fd = open(out->ext, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		e = fd < 0 || write_all(fd, g.ext.p, g.ext.len);
		if (fd >= 0)
			close(fd);
	}
cleanup:
	pd_writer__free(g.w);
	sbuf_free(&g.ext);
	return e ? -1 : 0;
}

#endif
