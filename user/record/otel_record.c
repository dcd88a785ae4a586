// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "hash.h"
#include "libbpf_setup.h"
#include "log.h"
#include "otel_process.h"
#include "otel_record.h"
#include "proc_file.h"
#include "otel_tls.h"
#include "sbuf.h"
#include "span_codec.h"
#include "spanperf_abi.h"
#include "target.h"
#include "util.h"

#define SCAN_EVERY_NS 1000000000ull
#define CMD_WATCH_NS 2000000000ull
/*
 * How long an exec'ed process is watched: the dynamic linker maps and
 * relocates a publishing library within milliseconds of the exec.  Looks
 * happen at ticks (one per drain of the rings, 100 ms apart at most: the
 * loop is not made to spin faster, since shorter rounds would let perf see
 * late otel spans out of order), spaced 2, 4, 8 ... ms at least, so that a
 * busy host's execs cost a few ELF reads each.
 */
#define EXEC_WATCH_NS 500000000ull
#define EXEC_FIRST_WAIT_NS 2000000ull
/* ~6,300 changes (1.3 KB each, both contexts' attributes): 0.3 s of 2 CPUs at -F 9999 */
#define EVENTS_RING_BYTES (8u << 20)
#define MAX_RECIPES 4096
/*
 * A publisher's counter deltas, from the final state of its record: at most
 * this much each (2^48: 78 hours of task-clock ns), so that no process can
 * make a span's figures, or a report's sums of them, overflow.
 */
#define FINAL_COUNT_MAX (1ull << 48)
/* The process context's key whose values hold them, as libspanperf names it. */
#define FINAL_COUNTERS_KEY "spanperf.counters"
/* A span with attributes from a process whose context was not read: read again, but not more often. */
#define PCTX_RETRY_NS 20000000ull

enum proc_state { PROC_NONE, PROC_AGAIN, PROC_DONE };

/* A process looked at: its executable when we did, so an exec is seen as a change. */
struct proc {
	int pid;
	enum proc_state state;
	char *exe;
	/* Exec'ed: looked at again at next_visit, each wait twice the last, until watch_until or it publishes. */
	__u64 watch_until, next_visit, wait_ns;
	bool watched; /* in the watch list */
	bool by_mmap; /* watched since it mapped a file that defines the variable */
	__u64 pctx_published; /* the process context's published-at when read; 0: none yet */
	struct otel_pctx pctx;	/* as read last: written to the file when the process exits, or at the end */
	__u64 pctx_tried;     /* when it was last looked for */
	__u64 pctx_addr;      /* where its OTEL_CTX mapping was */
	int pctx_err;	      /* what that look found: a process is counted once per kind of failure */
};

/* How a publisher was found, for record -v. */
enum otel_found_by { FOUND_SCAN, FOUND_EXEC, FOUND_CMD, FOUND_MMAP };

/* A file mapped executable into a process, as the rings' MMAP2 record told. */
struct mapped {
	int pid;
	char *path;
};

/* The attribute bytes of a thread's open context, as BPF read them when it began. */
struct open_attrs {
	__u16 size;
	__u8 bytes[];
};

/*
 * Nesting, where a context names its parent (the attribute span.parent_id,
 * as libspanperf publishes it): a context that gives way to its own child is
 * held, not ended, and goes on when the child gives way back to it, so the
 * parent's span covers its children as it did in the application.
 */
#define NEST_MAX 16
struct held {
	struct sp_otel_ctx ctx;
	__u64 start_ns, samples;
	__u32 pid;
	struct open_attrs *attrs; /* owned */
};

struct nest {
	int n;
	struct held h[NEST_MAX]; /* ancestors of the open context, outermost first */
	struct held cont;	 /* the open context is h[] popped: its start and samples so far */
	bool has_cont;
};

struct otel_record {
	struct otel_record_opts o;
	struct pd_writer *w; /* the writer of the drain in progress */
	struct u64_map open; /* tid -> struct open_attrs *, for contexts with attributes */
	struct ring_buffer *rb;
	struct proc *procs;
	size_t nprocs, cap;
	struct u64_map by_pid; /* pid -> index in procs + 1: the scan looks up every pid each second */
	__u64 last_scan, spans, with_attrs;
	__u64 cmd_watch_until; /* the command is looked at every tick until then */
	/* COMM-exec records seen while the rings are copied: looked at in the next tick. */
	int *execq;
	size_t nexecq, cap_execq;
	/* Exec'ed processes being watched (pids; their proc holds the deadline). */
	int *watch;
	size_t nwatch, cap_watch;
	__u64 execs_seen, exec_looks;
	/*
	 * Executable mappings seen since the last tick, and, per file path ever
	 * seen (files' ids), whether it defines the variable: a process that
	 * dlopens a publisher late is looked at as an exec'ed one is.
	 */
	struct mapped *mmapq;
	size_t nmmapq, cap_mmapq;
	struct strpool files;
	bool *defines; /* by the files' ids */
	size_t ndefines, cap_defines;
	__u64 mmaps_seen, mmaps_matched;
	/*
	 * Threads whose EXIT went by: their open context is written as a span
	 * in the same round as the EXIT, not at the end of the recording, where
	 * perf would find it out of order behind later rounds.  closed: tid ->
	 * start of the context so written, so that it is not written twice.
	 */
	struct exited { __u32 tid; __u64 time; } *exitq;
	size_t nexitq, cap_exitq;
	struct u64_map closed;
	struct u64_map nests; /* tid -> struct nest *, for threads whose contexts nest */
	__u64 nested;	      /* contexts held across a child */
	long write_err;
	unsigned long found[OTEL_TLS_GD + 1], found_by[FOUND_MMAP + 1], unusable, again;
	struct otel_process_stats pst;
	unsigned long pctx_written;
	/* Spans given a publisher's counters; deltas dropped as malformed, unknown or capped. */
	__u64 with_counters, ctr_malformed, ctr_unknown, ctr_capped;
};

void otel_record_size_maps(struct bpf_map *recipes, struct bpf_map *events, bool on)
{
	bpf_map__set_max_entries(recipes, on ? MAX_RECIPES : 1);
	/* A ring buffer is at least a page. */
	bpf_map__set_max_entries(events, on ? EVENTS_RING_BYTES : (__u32)sysconf(_SC_PAGESIZE));
}

static void ctx_bytes(const struct sp_otel_ctx *c, struct span_rec *r)
{
	memcpy(r->trace_id, c->trace_id, 16);
	memcpy(r->span_id, &c->span_id, 8);
}

static bool ctx_empty(const struct sp_otel_ctx *c)
{
	return !(c->span_id | c->trace_id[0] | c->trace_id[1]);
}

/* The attributes of tid's open context, or NULL if it has none. */
static const struct open_attrs *open_attrs(struct otel_record *r, __u32 tid)
{
	uint64_t *v = u64_map_get(&r->open, tid, false);

	return v ? (const struct open_attrs *)(uintptr_t)*v : NULL;
}

/* tid's new context has these attributes (size 0: none); 0 or -ENOMEM. */
static int set_open_attrs(struct otel_record *r, __u32 tid, const __u8 *bytes, __u16 size)
{
	uint64_t *v = u64_map_get(&r->open, tid, size > 0);
	struct open_attrs *a = NULL;

	if (!v)
		return size ? -ENOMEM : 0;
	if (size) {
		a = malloc(sizeof(*a) + size);
		if (!a)
			return -ENOMEM;
		a->size = size;
		memcpy(a->bytes, bytes, size);
	}
	free((void *)(uintptr_t)*v);
	*v = (uintptr_t)a;
	return 0;
}

static struct proc *proc_find(struct otel_record *r, int pid);

/* ctr: the span's counters as the file names them (ctr_names); NULL: its publisher left none. */
static int write_rec(struct otel_record *r, const struct sp_otel_state *st, __u32 tid, __u32 cpu, __u64 end,
		     const struct open_attrs *oa, const __u64 *ctr)
{
	struct span_rec rec = {
		.magic = SPAN_REC_MAGIC, .version = SPAN_REC_VERSION, .size = sizeof(rec),
		.start_ns = st->start_ns, .end_ns = end < st->start_ns ? st->start_ns : end,
		.samples = st->samples, .pid = st->pid, .tid = tid, .cpu = cpu, .idx = r->o.idx,
		.flags = SPAN_HAS_CONTEXT | SPAN_EDGES_SAMPLED | (st->flags & SP_OTEL_SWITCH_END ? SPAN_END_AT_SWITCH : 0),
		.source = SP_SRC_OTEL,
	};
	char buf[1024];
	long n;

	ctx_bytes(&st->ctx, &rec);
	if (ctr) {
		memcpy(rec.counters, ctr, sizeof(rec.counters));
		r->with_counters++;
	} else {
		rec.flags |= SPAN_NO_COUNTERS;
	}
	if (oa) {
		rec.attrs_size = SP_MIN((size_t)oa->size, sizeof(rec.attrs));
		memcpy(rec.attrs, oa->bytes, rec.attrs_size);
		r->with_attrs++;
	}
	n = span_codec_write_at(buf, sizeof(buf), r->o.attr, &rec, r->o.round_ns ? *r->o.round_ns : 0);
	if (n < 0)
		return n;
	r->spans++;
	return pd_writer__write(r->w, buf, n);
}

static struct nest *nest_of(struct otel_record *r, __u32 tid, bool make)
{
	uint64_t *v = u64_map_get(&r->nests, tid, make);

	if (!v)
		return NULL;
	if (!*v && make)
		*v = (uintptr_t)calloc(1, sizeof(struct nest));
	return (struct nest *)(uintptr_t)*v;
}

/* Counter deltas of a span, from the final state a publisher left: its own, or an ancestor's. */
struct final {
	__u64 span_id; /* 0: the ended context's own */
	__u64 ctr[SP_MAX_COUNTERS];
	bool any; /* some count was taken: else the span has none, not zeros */
};

/* The set of the span with this id (0: the ended context's own) among n; NULL: none. */
static const __u64 *final_of(const struct final *f, int n, __u64 span_id)
{
	for (int i = 0; i < n; i++)
		if (f[i].span_id == span_id && f[i].any)
			return f[i].ctr;
	return NULL;
}

/* The context that ends, with what it held before its children: its first start, all its samples. */
static int write_span(struct otel_record *r, const struct sp_otel_state *st, __u32 tid, __u32 cpu, __u64 end,
		      const __u64 *ctr)
{
	struct nest *nt = nest_of(r, tid, false);
	struct sp_otel_state s = *st;

	if (nt && nt->has_cont && nt->cont.ctx.span_id == st->ctx.span_id) {
		s.start_ns = SP_MIN(s.start_ns, nt->cont.start_ns);
		s.samples += nt->cont.samples;
		nt->has_cont = false;
	}
	/* The attributes of the context that ends, as BPF read them when it began. */
	return write_rec(r, &s, tid, cpu, end, open_attrs(r, tid), ctr);
}

/*
 * Its ancestors, held, end no earlier than it: written at end, innermost
 * first, down to keep (not written), each with its counters where the
 * ended context's final state (fin, nfin) holds them.
 */
static int write_held(struct otel_record *r, struct nest *nt, __u32 tid, __u32 cpu, __u64 end, int keep,
		      const struct final *fin, int nfin)
{
	int err = 0;

	while (nt && nt->n > keep && !err) {
		struct held *h = &nt->h[--nt->n];
		struct sp_otel_state s = { .ctx = h->ctx, .start_ns = h->start_ns, .samples = h->samples, .pid = h->pid };

		err = write_rec(r, &s, tid, cpu, end, h->attrs, h->ctx.span_id ? final_of(fin, nfin, h->ctx.span_id) : NULL);
		free(h->attrs);
		h->attrs = NULL;
	}
	return err;
}

/* The key index process pid's context gives name; -1: none (or its context is not read). */
static int key_of(struct otel_record *r, __u32 pid, const char *name)
{
	struct proc *p = proc_find(r, pid);
	int key = -1;

	for (int k = 0; p && k < p->pctx.nkeys; k++)
		if (p->pctx.keys[k] && !strcmp(p->pctx.keys[k], name))
			key = k;
	return key;
}

/* The parent span id a context names with span.parent_id (its key found in the process's key map); 0: none. */
static __u64 parent_of(struct otel_record *r, const struct sp_otel_event *e)
{
	size_t size = SP_MIN(e->attrs_size, (__u16)sizeof(e->attrs));
	int key = key_of(r, e->pid, "span.parent_id");

	if (key < 0)
		return 0;
	for (size_t i = 0; i + 2 <= size;) {
		__u8 k = e->attrs[i], len = e->attrs[i + 1];

		if (i + 2 + len > size)
			break;
		if (k == key && len == 16) {
			__u8 id[8];
			__u64 v = 0;

			for (int j = 0; j < 8; j++) {
				unsigned hi, lo;

				if (sscanf((const char *)&e->attrs[i + 2 + 2 * j], "%1x%1x", &hi, &lo) != 2)
					return 0;
				id[j] = (__u8)(hi << 4 | lo);
			}
			memcpy(&v, id, 8);
			return v;
		}
		i += 2 + len;
	}
	return 0;
}

/* One "name=count" of a deltas value into ctr[]: its index, or -1 (counted why). */
static int final_one(struct otel_record *r, const __u8 *p, size_t len, __u64 *ctr)
{
	const __u8 *eq = memchr(p, '=', len);
	size_t nlen = eq ? (size_t)(eq - p) : 0, dlen = eq ? len - nlen - 1 : 0;
	__u64 v = 0;
	int k;

	/* A decimal count of at most 20 digits, under a name the file's counters have: nothing else. */
	if (!eq || !nlen || !dlen || dlen > 20) {
		r->ctr_malformed++;
		return -1;
	}
	for (size_t i = 0; i < dlen; i++) {
		__u8 c = eq[1 + i];

		if (c < '0' || c > '9') {
			r->ctr_malformed++;
			return -1;
		}
		v = v > FINAL_COUNT_MAX ? v : v * 10 + (c - '0');
	}
	for (k = 0; k < r->o.nr_ctr; k++)
		if (strlen(r->o.ctr_names[k]) == nlen && !memcmp(r->o.ctr_names[k], p, nlen))
			break;
	if (k == r->o.nr_ctr) {
		r->ctr_unknown++;
		return -1;
	}
	if (v > FINAL_COUNT_MAX) {
		r->ctr_capped++;
		v = FINAL_COUNT_MAX;
	}
	ctr[k] = v;
	return k;
}

/* An ancestor's id, "@" and 16 hex digits, as the bytes of its span id; false if malformed. */
static bool final_id(const __u8 *p, __u64 *id)
{
	__u8 b[8];

	for (int j = 0; j < 16; j++) {
		__u8 c = p[1 + j];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;

		if (d < 0)
			return false;
		b[j / 2] = (__u8)(j % 2 ? b[j / 2] | d : d << 4);
	}
	memcpy(id, b, 8);
	return *id != 0;
}

/*
 * The counter deltas the ended context's publisher left in its record (the
 * event's prev_attrs: libspanperf's spanperf.counters values, each
 * "task-clock=1234,context-switches=2", or "@<span id>:..." for an
 * ancestor that ended with it), under the names the file's counters have.
 * Another process's memory: every length is checked against what was read,
 * names are only matched against our own table, counts are capped, at most
 * max sets.  How many sets were taken into out.
 */
static int final_counters(struct otel_record *r, const struct sp_otel_event *e, struct final *out, int max)
{
	size_t size = SP_MIN(e->prev_attrs_size, (__u16)sizeof(e->prev_attrs));
	int key, n = 0;

	if (!size || !r->o.nr_ctr || (key = key_of(r, e->prev.pid, FINAL_COUNTERS_KEY)) < 0)
		return 0;
	for (size_t i = 0; i + 2 <= size;) {
		__u8 k = e->prev_attrs[i], len = e->prev_attrs[i + 1];
		const __u8 *v = &e->prev_attrs[i + 2];
		struct final *f = NULL;
		size_t a = 0;
		__u64 id = 0;

		if (i + 2 + len > size)
			break;
		i += 2 + len;
		if (k != key)
			continue;
		if (len && v[0] == '@') {
			if (len < 18 || v[17] != ':' || !final_id(v, &id)) {
				r->ctr_malformed++;
				continue;
			}
			a = 18;
		}
		/* A span's values may come in several attributes: one set per span. */
		for (int j = 0; j < n && !f; j++)
			if (out[j].span_id == id)
				f = &out[j];
		if (!f && n == max)
			continue;
		if (!f) {
			f = &out[n++];
			memset(f, 0, sizeof(*f));
			f->span_id = id;
		}
		while (a < len) {
			const __u8 *comma = memchr(v + a, ',', len - a);
			size_t l = comma ? (size_t)(comma - (v + a)) : len - a;

			f->any |= final_one(r, v + a, l, f->ctr) >= 0;
			a += l + 1;
		}
	}
	return n;
}


static void pctx_check(struct otel_record *r, struct proc *p, __u64 now, bool force);

/*
 * The context was written already when its thread exited.  forget: BPF has
 * moved on from it (a reused tid's next context), so the note goes.
 */
static bool closed_at_exit(struct otel_record *r, __u32 tid, const struct sp_otel_state *st, bool forget)
{
	uint64_t *v = u64_map_get(&r->closed, tid, false);
	bool yes = v && *v == st->start_ns + 1;

	if (v && forget)
		*v = 0;
	return yes;
}

/*
 * A thread's context changed.  The one that ended, if any, becomes a span:
 * it ended where the next one was first seen, or one period after its last
 * sample.  The one that began keeps its attributes until it ends too.
 */
static int on_event(void *ctx, void *data, size_t size)
{
	struct otel_record *r = ctx;
	const struct sp_otel_event *e = data;
	/* The ended context's counters and those of the ancestors that ended with it. */
	struct final fin[NEST_MAX + 1];
	struct nest *nt;
	__u64 end, parent;
	int err = 0, nfin;

	if (size < sizeof(*e))
		return 0;
	nfin = final_counters(r, e, fin, NEST_MAX + 1);
	end = e->prev.last_ns + r->o.period_ns;
	if (end >= e->time)
		end = e->time - 1;
	parent = ctx_empty(&e->ctx) ? 0 : parent_of(r, e);
	nt = nest_of(r, e->tid, false);
	if (!ctx_empty(&e->prev.ctx) && !closed_at_exit(r, e->tid, &e->prev, true)) {
		if (parent && parent == e->prev.ctx.span_id && (nt = nest_of(r, e->tid, true)) && nt->n < NEST_MAX) {
			/* Its own child begins: it goes on, held with its attributes, until the child gives way. */
			struct held *h = &nt->h[nt->n++];
			uint64_t *v = u64_map_get(&r->open, e->tid, false);

			h->ctx = e->prev.ctx;
			h->start_ns = e->prev.start_ns;
			h->samples = e->prev.samples;
			h->pid = e->prev.pid;
			if (nt->has_cont && nt->cont.ctx.span_id == e->prev.ctx.span_id) {
				h->start_ns = SP_MIN(h->start_ns, nt->cont.start_ns);
				h->samples += nt->cont.samples;
				nt->has_cont = false;
			}
			h->attrs = v ? (struct open_attrs *)(uintptr_t)*v : NULL;
			if (v)
				*v = 0;
			r->nested++;
		} else {
			err = write_span(r, &e->prev, e->tid, e->cpu, end, final_of(fin, nfin, 0));
		}
	}
	if (!err && nt && nt->n) {
		/* Back to a held ancestor: it goes on; those above it (and all, with no context) ended with the child. */
		int k = ctx_empty(&e->ctx) ? -1 : nt->n - 1;

		while (k >= 0 && nt->h[k].ctx.span_id != e->ctx.span_id && nt->h[k].ctx.span_id != parent)
			k--;
		if (k >= 0 && nt->h[k].ctx.span_id == e->ctx.span_id) {
			err = write_held(r, nt, e->tid, e->cpu, end, k + 1, fin, nfin);
			nt->cont = nt->h[--nt->n];
			free(nt->cont.attrs);
			nt->cont.attrs = NULL;
			nt->has_cont = true;
		} else if (!(parent && parent == e->prev.ctx.span_id)) {
			err = write_held(r, nt, e->tid, e->cpu, end, k < 0 ? 0 : k + 1, fin, nfin);
		}
	}
	if (!err)
		/* The size as BPF wrote it, but never past the event. */
		err = set_open_attrs(r, e->tid, e->attrs,
				     ctx_empty(&e->ctx) ? 0 : SP_MIN(e->attrs_size, (__u16)sizeof(e->attrs)));
	if (err) {
		r->write_err = err;
		return err;
	}
	/*
	 * Attributes from a process whose key map is not in the file yet: it
	 * may have published its context since it was found, and may be gone
	 * by the next scan.
	 */
	if (e->attrs_size && !ctx_empty(&e->ctx)) {
		struct proc *p = proc_find(r, e->pid);

		if (p && !p->pctx_published)
			pctx_check(r, p, now_ns(CLOCK_MONOTONIC), false);
	}
	return 0;
}

int otel_record__new(struct otel_record **out, const struct otel_record_opts *o)
{
	struct otel_record *r = calloc(1, sizeof(*r));
	int err;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->o = *o;
	r->cmd_watch_until = now_ns(CLOCK_MONOTONIC) + CMD_WATCH_NS;
	r->rb = ring_buffer__new(o->events_fd, on_event, r, NULL);
	if (!r->rb) {
		err = -errno;
		free(r);
		return err;
	}
	*out = r;
	return 0;
}

static struct proc *proc_find(struct otel_record *r, int pid)
{
	uint64_t *v = u64_map_get(&r->by_pid, (__u32)pid, false);

	return v && *v ? &r->procs[*v - 1] : NULL;
}

/*
 * Reads p's process context again if it may have changed; force: whatever
 * the time since the last look.  What cannot be read is counted by
 * otel_process_read, never fatal.  The latest version is kept until the
 * process exits or the recording ends (the key map only grows), when it
 * goes into the file (proc_exited, write_pctx).
 */
static void pctx_check(struct otel_record *r, struct proc *p, __u64 now, bool force)
{
	struct otel_process_stats one = {};
	struct otel_pctx pc;
	__u64 published;
	int err;

	if (!r->o.pctx_id || (!force && p->pctx_tried && now - p->pctx_tried < PCTX_RETRY_NS))
		return;
	p->pctx_tried = now;
	published = p->pctx_published;
	err = otel_process_read(p->pid, &p->pctx_addr, &published, &pc, &one);
	if (err == -EALREADY)
		return; /* the version already kept */
	if (err && err != p->pctx_err) {
		r->pst.bad_header += one.bad_header;
		r->pst.bad_size += one.bad_size;
		r->pst.unstable += one.unstable;
		r->pst.unreadable += one.unreadable;
		r->pst.malformed += one.malformed;
	}
	p->pctx_err = err;
	if (err)
		return;
	otel_pctx_clear(&p->pctx);
	p->pctx = pc;
	p->pctx_published = published;
	pr_debug("otel: process %d's context: %d attribute keys, service.name %s", p->pid, pc.nkeys,
		 pc.service_name ?: "(none)");
}

/* p's context as one record, stamped t; 0 or -errno. */
static int write_one_pctx(struct otel_record *r, const struct proc *p, __u64 t)
{
	struct sbuf b = {};
	int err = otel_pctx_rec_write(&b, r->o.attr, r->o.pctx_id, p->pid, t, &p->pctx) ?:
		  pd_writer__write(r->w, b.p, b.len);

	r->pctx_written += !err;
	sbuf_free(&b);
	return err;
}

/* Every live process's context, one record each, stamped now: after everything before. */
static int write_pctx(struct otel_record *r)
{
	__u64 now = now_ns(CLOCK_MONOTONIC);
	int err = 0;

	for (size_t i = 0; i < r->nprocs && !err; i++)
		if (r->procs[i].pctx_published)
			err = write_one_pctx(r, &r->procs[i], now);
	return err;
}

static struct proc *proc_get(struct otel_record *r, int pid)
{
	struct proc *p = proc_find(r, pid);
	uint64_t *v;

	if (p)
		return p;
	if (array_reserve((void **)&r->procs, &r->cap, r->nprocs, sizeof(*r->procs)) ||
	    !(v = u64_map_get(&r->by_pid, (__u32)pid, true)))
		return NULL;
	*v = r->nprocs + 1;
	r->procs[r->nprocs] = (struct proc){ .pid = pid };
	return &r->procs[r->nprocs++];
}

/* The recipes changed: every thread looks its own up again at its next sample. */
static void otel_record_bump(struct otel_record *r)
{
	__atomic_add_fetch(r->o.gen, 1, __ATOMIC_RELEASE);
}

/*
 * Everything kept of p goes, its recipe in the sampling program's map too
 * (room for MAX_RECIPES): the last of the array takes its place.  Pointers
 * into procs are stale after.
 */
static void proc_release(struct otel_record *r, struct proc *p)
{
	size_t i = p - r->procs;
	__u32 key = p->pid;
	uint64_t *v;

	if (!bpf_map_delete_elem(r->o.recipes_fd, &key))
		otel_record_bump(r);
	free(p->exe);
	otel_pctx_clear(&p->pctx);
	v = u64_map_get(&r->by_pid, key, false);
	if (v)
		*v = 0;
	if (i + 1 < r->nprocs) {
		r->procs[i] = r->procs[r->nprocs - 1];
		v = u64_map_get(&r->by_pid, (__u32)r->procs[i].pid, false);
		if (v)
			*v = i + 1;
	}
	r->nprocs--;
}

/* Whether threads of pid's live on after its leader exited (it left by pthread_exit). */
static bool group_lives(int pid)
{
	char path[64];
	struct dirent *de;
	bool other = false;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return false;
	while (!other && (de = readdir(d)))
		other = de->d_name[0] != '.' && atoi(de->d_name) != pid;
	closedir(d);
	return other;
}

/*
 * Process p exited at time (~0: not known, found gone by the scan): its
 * context goes into the file now, in the round of its EXIT and stamped as
 * its spans are (never before what perf may have let go already), and all
 * that was kept of it is let go.  A host's short-lived publishers would
 * otherwise each hold theirs, up to a megabyte, until the recording ends.
 */
static int proc_exited(struct otel_record *r, struct proc *p, __u64 time)
{
	__u64 round = r->o.round_ns ? *r->o.round_ns : 0, t;
	int err = 0;

	if (p->pctx_published) {
		t = time != ~0ull ? SP_MAX(time, round) : round ? round : now_ns(CLOCK_MONOTONIC);
		err = write_one_pctx(r, p, t);
	}
	proc_release(r, p);
	return err;
}

/* Looks at pid again if it is new, exec'ed since, or was not relocated yet. */
static void visit(struct otel_record *r, int pid, enum otel_found_by by)
{
	char link[64], exe[PATH_MAX];
	struct sp_otel_recipe recipe;
	enum otel_tls_model model;
	struct proc *p;
	ssize_t n;
	__u32 key = pid;
	int err;

	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n < 0)
		return; /* a kernel thread, or gone */
	exe[n] = 0;
	p = proc_get(r, pid);
	if (!p)
		return;
	/*
	 * The command is looked at every tick for its first seconds: the
	 * dynamic linker, or a dlopen at start-up, may bring the publisher in.
	 */
	if (p->exe && !strcmp(p->exe, exe) && p->state != PROC_AGAIN &&
	    (pid != r->o.cmd_pid || p->state == PROC_DONE || now_ns(CLOCK_MONOTONIC) > r->cmd_watch_until) &&
	    (by != FOUND_EXEC || p->state == PROC_DONE || now_ns(CLOCK_MONOTONIC) > p->watch_until))
		return;
	/* An exec: the old image's process context is not the new one's. */
	if (p->exe && strcmp(p->exe, exe)) {
		otel_pctx_clear(&p->pctx);
		p->pctx_published = p->pctx_addr = 0;
	}
	free(p->exe);
	p->exe = strdup(exe);
	err = otel_tls_recipe(pid, &recipe, &model);
	if (err == -EAGAIN) {
		p->state = PROC_AGAIN;
		r->again++;
		return;
	}
	p->state = err ? PROC_NONE : PROC_DONE;
	if (err) {
		/* An exec away from a publisher, or a publisher no reader can follow. */
		if (!bpf_map_delete_elem(r->o.recipes_fd, &key))
			otel_record_bump(r);
		if (err != -ENOENT && err != -ESRCH) {
			r->unusable++;
			pr_warn("otel: process %d (%s) exports %s but its thread context cannot be read (%s%s%s)", pid,
				exe, OTEL_TLS_SYMBOL, model ? otel_tls_model_name(model) : "", model ? ": " : "",
				otel_tls_why(err));
		}
		return;
	}
	if (bpf_map_update_elem(r->o.recipes_fd, &key, &recipe, BPF_ANY)) {
		pr_warn("otel: no room for process %d's recipe (%d processes at most)", pid, MAX_RECIPES);
		return;
	}
	otel_record_bump(r);
	r->found[model]++;
	r->found_by[pid == r->o.cmd_pid ? FOUND_CMD : p->by_mmap ? FOUND_MMAP : by]++;
	pctx_check(r, p, now_ns(CLOCK_MONOTONIC), true);
	pr_debug("otel: process %d (%s): %s, %s offset %lld module %llu", pid, exe, otel_tls_model_name(model),
		 recipe.kind == SP_OTEL_TP ? "tp" : "dtv", (long long)recipe.off, (unsigned long long)recipe.modid);
}

int otel_record__await_cmd(struct otel_record *r, __u64 timeout_ns)
{
	__u64 until = now_ns(CLOCK_MONOTONIC) + timeout_ns;
	struct proc *p;

	if (!r->o.cmd_pid)
		return 0;
	/* Just released: the command's first seconds, which the ticks watch, begin now. */
	r->cmd_watch_until = SP_MAX(r->cmd_watch_until, until - timeout_ns + CMD_WATCH_NS);
	/*
	 * Until it publishes, or the time is up: the dynamic linker maps and
	 * relocates a publishing library some time after the exec.
	 */
	do {
		visit(r, r->o.cmd_pid, FOUND_CMD);
		p = proc_get(r, r->o.cmd_pid);
		if (!p || p->state == PROC_DONE)
			return 0;
		usleep(500);
	} while (now_ns(CLOCK_MONOTONIC) < until);
	return -ETIMEDOUT;
}

void otel_record__exec(struct otel_record *r, int pid)
{
	if (!r)
		return;
	r->execs_seen++;
	/* A full queue only delays the process to the next scan. */
	if (!array_reserve((void **)&r->execq, &r->cap_execq, r->nexecq, sizeof(*r->execq)))
		r->execq[r->nexecq++] = pid;
}

void otel_record__mmap(struct otel_record *r, int pid, const char *path)
{
	struct mapped m = { pid, NULL };

	if (!r || path[0] != '/')
		return;
	r->mmaps_seen++;
	/* A full queue only leaves the process to the scan. */
	if (array_reserve((void **)&r->mmapq, &r->cap_mmapq, r->nmmapq, sizeof(*r->mmapq)) || !(m.path = strdup(path)))
		return;
	r->mmapq[r->nmmapq++] = m;
}

/*
 * Whether the file pid mapped at path defines otel_thread_ctx_v1, usable or
 * not.  Opened through the process's root, since a container's path names
 * its own file; known by device and inode, so each file is read once.
 */
static bool file_defines(struct otel_record *r, int pid, const char *path)
{
	char key[48];
	struct otel_tls_elf e;
	struct stat st;
	size_t id;
	int err, fd;

	/* Under the process's root, never on the host by that name (proc_file.h). */
	fd = proc_open_in_root(pid, path);
	if (fd < 0)
		return false; /* gone already, or not a regular file of the container's */
	if (fstat(fd, &st)) {
		close(fd);
		return false;
	}
	snprintf(key, sizeof(key), "%llx:%llx", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	if (!strpool_intern(&r->files, key, &id)) {
		close(fd);
		return false;
	}
	if (id < r->ndefines) {
		close(fd);
		return r->defines[id];
	}
	/* Ids are dense, in order of arrival: this path is the next one. */
	if (array_reserve((void **)&r->defines, &r->cap_defines, r->ndefines, sizeof(*r->defines))) {
		close(fd);
		return false;
	}
	err = otel_tls_elf_find_fd(fd, false, &e);
	close(fd);
	r->defines[r->ndefines++] = !err || err == -EPROTO || err == -ENOEXEC;
	return r->defines[id];
}

static bool wanted(const struct otel_record *r, int pid);

/* pid exec'ed lately: already queued or watched, and counted as found by the exec (the command never is). */
static bool exec_watched(const struct otel_record *r, const struct proc *p, int pid)
{
	if (pid == r->o.cmd_pid)
		return false;
	if (p && p->watched)
		return true;
	for (size_t i = 0; i < r->nexecq; i++)
		if (r->execq[i] == pid)
			return true;
	return false;
}

/*
 * The processes that mapped a file defining the variable (a dlopen, or the
 * exec'ed image and its libraries): watched as exec'ed ones are, since the
 * dynamic linker relocates the file's GOT right after; the command's watch
 * is lengthened instead.
 */
static void check_mmaps(struct otel_record *r, __u64 now)
{
	for (size_t i = 0; i < r->nmmapq; i++) {
		struct mapped *m = &r->mmapq[i];
		struct proc *p = proc_find(r, m->pid);

		if (wanted(r, m->pid) && (!p || p->state != PROC_DONE) && !exec_watched(r, p, m->pid) &&
		    file_defines(r, m->pid, m->path)) {
			r->mmaps_matched++;
			if (m->pid == r->o.cmd_pid) {
				r->cmd_watch_until = SP_MAX(r->cmd_watch_until, now + EXEC_WATCH_NS);
			} else if ((p = proc_get(r, m->pid)) &&
				   !array_reserve((void **)&r->execq, &r->cap_execq, r->nexecq, sizeof(*r->execq))) {
				p->by_mmap = true;
				r->execq[r->nexecq++] = m->pid;
			}
		}
		free(m->path);
	}
	r->nmmapq = 0;
}

static bool wanted(const struct otel_record *r, int pid)
{
	if (r->o.target)
		return target__has(r->o.target, pid);
	if (!r->o.pids)
		return true;
	for (int i = 0; i < r->o.pids->n; i++)
		if (r->o.pids->v[i] == pid)
			return true;
	return false;
}

/* The exec'ed processes queued since the last tick join the watch; each watched one is looked at. */
static void watch_execs(struct otel_record *r, __u64 now)
{
	size_t k = 0;

	for (size_t i = 0; i < r->nexecq; i++) {
		int pid = r->execq[i];
		struct proc *p;

		/*
		 * The command exec'ed (from setpriv, a shell...) once released:
		 * its new image is watched as the command, from this tick.  The
		 * first window, from the recorder's start, may have passed while
		 * a busy host delayed the start-up (seen: a publisher never found).
		 */
		if (pid == r->o.cmd_pid) {
			r->cmd_watch_until = SP_MAX(r->cmd_watch_until, now + CMD_WATCH_NS);
			continue;
		}
		if (!wanted(r, pid) || !(p = proc_get(r, pid)))
			continue;
		if (!p->watched) {
			if (array_reserve((void **)&r->watch, &r->cap_watch, r->nwatch, sizeof(*r->watch)))
				continue;
			r->watch[r->nwatch++] = pid;
			p->watched = true;
		}
		/* A new image: whatever was found for the old one no longer holds. */
		p->state = PROC_NONE;
		free(p->exe);
		p->exe = NULL;
		p->watch_until = now + EXEC_WATCH_NS;
		p->next_visit = now;
		p->wait_ns = EXEC_FIRST_WAIT_NS;
	}
	r->nexecq = 0;
	for (size_t i = 0; i < r->nwatch; i++) {
		int pid = r->watch[i];
		struct proc *p;

		/* None if it exited meanwhile and was let go: it leaves the watch. */
		p = proc_find(r, pid);
		if (p && now >= p->next_visit) {
			r->exec_looks++;
			visit(r, pid, FOUND_EXEC);
			p = proc_find(r, pid); /* visit may have moved the array */
			p->next_visit = now + p->wait_ns;
			p->wait_ns *= 2;
		}
		if (p && p->state != PROC_DONE && now < p->watch_until && !kill(pid, 0))
			r->watch[k++] = pid;
		else if (p)
			p->watched = false;
	}
	r->nwatch = k;
}

int otel_record__tick(struct otel_record *r, __u64 now)
{
	DIR *d;
	struct dirent *de;

	if (r->o.cmd_pid && now < r->cmd_watch_until) {
		struct proc *p;

		visit(r, r->o.cmd_pid, FOUND_CMD);
		/* It publishes its process context some time after its thread-context symbol is found. */
		p = proc_find(r, r->o.cmd_pid);
		if (p && p->state == PROC_DONE && !p->pctx_published)
			pctx_check(r, p, now, false);
	}
	if (r->nmmapq)
		check_mmaps(r, now);
	if (r->nexecq || r->nwatch)
		watch_execs(r, now);
	if (r->last_scan && now - r->last_scan < SCAN_EVERY_NS)
		return 0;
	r->last_scan = now;
	/* A new version of a context (the key map only grows) is written again. */
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].state == PROC_DONE)
			pctx_check(r, &r->procs[i], now, true);
	/*
	 * Processes gone without an EXIT seen (the rings lost it): let go at
	 * the next drain as if it had been, so that nothing of them stays.
	 */
	for (size_t i = 0; i < r->nprocs; i++)
		if (kill(r->procs[i].pid, 0) && errno == ESRCH)
			otel_record__exit(r, r->procs[i].pid, 0);
	if (r->o.pids) {
		for (int i = 0; i < r->o.pids->n; i++)
			visit(r, r->o.pids->v[i], FOUND_SCAN);
		return 0;
	}
	d = opendir("/proc");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (!*end && pid > 0 && (!r->o.target || target__has(r->o.target, pid)))
			visit(r, pid, FOUND_SCAN);
	}
	closedir(d);
	return 0;
}

void otel_record__exit(struct otel_record *r, __u32 tid, __u64 time)
{
	/* A full queue only leaves the span to the final flush. */
	if (r && !array_reserve((void **)&r->exitq, &r->cap_exitq, r->nexitq, sizeof(*r->exitq)))
		r->exitq[r->nexitq++] = (struct exited){ .tid = tid, .time = time ?: ~0ull };
}

/* tid's open context, if any, as a span ending at its exit at the latest. */
static int close_thread(struct otel_record *r, __u32 tid, __u64 time)
{
	struct sp_thread t;
	uint64_t *v;
	int err;

	if (bpf_map_lookup_elem(r->o.threads_fd, &tid, &t) || ctx_empty(&t.otel.st.ctx) ||
	    closed_at_exit(r, tid, &t.otel.st, false))
		return 0;
	/*
	 * Ended one period after its last sample, but no later than its
	 * thread: a thread that exits within a period of that sample would
	 * otherwise have a span ending after its EXIT, stamped past what the
	 * rest of the round holds.
	 */
	err = write_span(r, &t.otel.st, tid, 0, SP_MIN(t.otel.st.last_ns + r->o.period_ns, time), NULL) ?:
	      write_held(r, nest_of(r, tid, false), tid, 0, SP_MIN(t.otel.st.last_ns + r->o.period_ns, time), 0, NULL, 0) ?:
	      set_open_attrs(r, tid, NULL, 0);
	v = u64_map_get(&r->closed, tid, true);
	if (!err && !v)
		err = -ENOMEM;
	if (!err)
		*v = t.otel.st.start_ns + 1;
	return err;
}

/*
 * The open contexts of the threads that exited since the last drain, as
 * spans; and the processes whose last thread that was, let go.
 */
static int close_exited(struct otel_record *r)
{
	int err = 0;

	for (size_t i = 0; i < r->nexitq && !err; i++) {
		__u32 tid = r->exitq[i].tid;
		struct proc *p;

		err = close_thread(r, tid, r->exitq[i].time);
		/* A leader's tid is its pid: a process of ours, unless its threads live on without it. */
		p = err ? NULL : proc_find(r, tid);
		if (p && !group_lives(tid))
			err = proc_exited(r, p, r->exitq[i].time);
	}
	r->nexitq = 0;
	return err;
}

int otel_record__ring_fd(const struct otel_record *r)
{
	return ring_buffer__epoll_fd(r->rb);
}

long otel_record__consume(struct otel_record *r, struct pd_writer *w)
{
	__u64 before = r->spans;
	int n;

	r->w = w;
	n = ring_buffer__consume(r->rb);

	if (r->write_err)
		return r->write_err;
	if (n >= 0 && r->nexitq) {
		int err = close_exited(r);

		if (err)
			return err;
	}
	return n < 0 ? n : (long)(r->spans - before);
}

long otel_record__flush(struct otel_record *r, struct pd_writer *w)
{
	__u32 key, next, *prev = NULL;
	__u64 before, now;
	long n = otel_record__consume(r, w);
	int err;

	if (n < 0)
		return n;
	/* Last, the contexts as they are now, of the publishers still alive. */
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].state == PROC_DONE)
			pctx_check(r, &r->procs[i], now_ns(CLOCK_MONOTONIC), true);
	err = write_pctx(r);
	if (err)
		return err;
	before = r->spans;
	now = now_ns(CLOCK_MONOTONIC);
	while (!bpf_map_get_next_key(r->o.threads_fd, prev, &next)) {
		struct sp_thread t;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(r->o.threads_fd, &key, &t) || ctx_empty(&t.otel.st.ctx) ||
		    closed_at_exit(r, key, &t.otel.st, false))
			continue;
		/* Not past now: the recording ends here. */
		err = write_span(r, &t.otel.st, key, 0, SP_MIN(t.otel.st.last_ns + r->o.period_ns, now), NULL) ?:
		      write_held(r, nest_of(r, key, false), key, 0, SP_MIN(t.otel.st.last_ns + r->o.period_ns, now), 0, NULL, 0);
		if (err)
			return err;
	}
	return r->spans - before;
}

void otel_record__report(struct otel_record *r)
{
	__u64 fault = bpf_percpu_sum(r->o.stats_fd, SP_STAT_OTEL_FAULT);
	__u64 invalid = bpf_percpu_sum(r->o.stats_fd, SP_STAT_OTEL_INVALID);
	__u64 lost = bpf_percpu_sum(r->o.stats_fd, SP_STAT_OTEL_LOST);
	__u64 attrs_bad = bpf_percpu_sum(r->o.stats_fd, SP_STAT_OTEL_ATTRS_BAD);
	__u64 switch_unread = bpf_percpu_sum(r->o.stats_fd, SP_STAT_OTEL_SWITCH_UNREAD);
	__u64 hidden_in = bpf_percpu_sum(r->o.stats_fd, SP_STAT_OTEL_HIDDEN_IN);
	unsigned long procs = 0;

	for (int m = 0; m <= OTEL_TLS_GD; m++)
		procs += r->found[m];
	pr_info("otel: %lu processes publish thread context (%lu local-exec, %lu initial-exec, %lu tlsdesc, %lu general-dynamic); "
		"%llu spans (%llu with attributes)",
		procs, r->found[OTEL_TLS_EXEC], r->found[OTEL_TLS_IE], r->found[OTEL_TLS_DESC], r->found[OTEL_TLS_GD],
		(unsigned long long)r->spans, (unsigned long long)r->with_attrs);
	if (fault || invalid)
		pr_info("otel: %llu samples found the context unreadable (unmapped or paged out), %llu mid-update (valid != 1); "
			"those samples kept the thread's previous context",
			(unsigned long long)fault, (unsigned long long)invalid);
	if (hidden_in)
		pr_info("otel: %llu switch-ins hidden from the tracepoint: those threads' contexts held until their run "
			"began (now less the run's CPU time)",
			(unsigned long long)hidden_in);
	if (switch_unread)
		pr_info("otel: %llu switch-outs inside a span found the context unreadable: those spans end where it was "
			"last read, not held through the block that followed",
			(unsigned long long)switch_unread);
	pr_debug("otel: publishers found by the exec record %lu, by the mmap record %lu, by the /proc scan %lu, "
		 "as the command %lu; %llu execs seen, looked at %llu times; %llu executable mappings seen, %llu of "
		 "files that define " OTEL_TLS_SYMBOL " (%zu files read)",
		 r->found_by[FOUND_EXEC], r->found_by[FOUND_MMAP], r->found_by[FOUND_SCAN], r->found_by[FOUND_CMD],
		 (unsigned long long)r->execs_seen, (unsigned long long)r->exec_looks,
		 (unsigned long long)r->mmaps_seen, (unsigned long long)r->mmaps_matched, r->ndefines);
	if (attrs_bad)
		pr_info("otel: %llu contexts' attributes dropped (attrs-data-size over %d bytes, or unreadable)",
			(unsigned long long)attrs_bad, SP_OTEL_ATTRS_MAX);
	if (lost)
		pr_warn("otel: %llu context changes LOST: their ring buffer was full", (unsigned long long)lost);
	if (procs)
		pr_info("otel: %lu process contexts (OTEP 4719) written", r->pctx_written);
	if (r->with_counters)
		pr_info("otel: %llu spans carry their publisher's counter deltas", (unsigned long long)r->with_counters);
	if (r->ctr_malformed || r->ctr_unknown || r->ctr_capped)
		pr_info("otel: publishers' counter deltas: %llu malformed and %llu not among the recording's counters "
			"(dropped), %llu capped at %llu",
			(unsigned long long)r->ctr_malformed, (unsigned long long)r->ctr_unknown,
			(unsigned long long)r->ctr_capped, FINAL_COUNT_MAX);
	if (r->pst.bad_header || r->pst.bad_size || r->pst.unstable || r->pst.unreadable || r->pst.malformed)
		pr_info("otel: process contexts not read (processes): %lu bad signature or version, %lu bad size or pointer, "
			"%lu always mid-update, %lu unreadable, %lu malformed payloads; their attribute keys print as numbers",
			r->pst.bad_header, r->pst.bad_size, r->pst.unstable, r->pst.unreadable, r->pst.malformed);
}

__u64 otel_record__spans(const struct otel_record *r)
{
	return r ? r->spans : 0;
}

void otel_record__free(struct otel_record *r)
{
	if (!r)
		return;
	ring_buffer__free(r->rb);
	for (size_t i = 0; i < r->open.cap; i++)
		if (r->open.used[i])
			free((void *)(uintptr_t)r->open.slot[i].val);
	u64_map_free(&r->open);
	for (size_t i = 0; i < r->nprocs; i++) {
		free(r->procs[i].exe);
		otel_pctx_clear(&r->procs[i].pctx);
	}
	free(r->procs);
	u64_map_free(&r->by_pid);
	free(r->execq);
	for (size_t i = 0; i < r->nmmapq; i++)
		free(r->mmapq[i].path);
	free(r->mmapq);
	strpool_free(&r->files);
	free(r->defines);
	free(r->watch);
	free(r->exitq);
	u64_map_free(&r->closed);
	for (size_t i = 0; i < r->nests.cap; i++)
		if (r->nests.used[i]) {
			struct nest *nt = (struct nest *)(uintptr_t)r->nests.slot[i].val;

			for (int k = 0; nt && k < nt->n; k++)
				free(nt->h[k].attrs);
			free(nt);
		}
	u64_map_free(&r->nests);
	free(r);
}
