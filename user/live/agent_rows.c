// SPDX-License-Identifier: GPL-2.0
/* A window of the agent as RowBinary rows of its tables (agent_rows.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_rows.h"
#include "buildid.h"
#include "ch_wire.h"
#include "fileio.h"
#include "hash.h"
#include "proc_file.h"
#include "profile.h"
#include "session.h"
#include "spans_view.h"

struct labels {
	char *cgroup;
	char container[65], pod[37];
};

struct rows {
	const struct agent_window_meta *m;
	struct session *sess;
	const struct profile *p;
	struct sbuf *body;
	uint64_t n;
	struct u64_map stack_seen; /* stack id -> 1 */
	struct u64_map by_pid;	   /* pid -> index + 1 into lab */
	struct labels *lab;
	size_t nr_lab;
	struct u64_map sample_idx; /* (off, pid, tid, comm, stack) -> index + 1 into agg */
	struct u64_map bid_of;	   /* a file's path (the symbolizer's pointer) -> id + 1 in bids, or UINT64_MAX */
	struct strpool bids;
	struct agg {
		const struct pstack *s;
		uint64_t stack, count, period;
		uint8_t off;
	} *agg;
	size_t nr_agg, cap_agg;
};

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

void agent_cgroup_labels(const char *path, char *container, char *pod)
{
	const char *p;

	container[0] = pod[0] = 0;
	/* The last run of 64 hex digits: docker-ID.scope, cri-containerd-ID.scope, /docker/ID, crio-ID. */
	for (p = path; *p; p++) {
		size_t n = 0;

		while (is_hex(p[n]))
			n++;
		if (n == 64 && (p == path || !is_hex(p[-1]))) {
			memcpy(container, p, 64);
			container[64] = 0;
		}
		if (n)
			p += n - 1;
	}
	/* "pod" and a UUID, its dashes as '_' under systemd's cgroup driver. */
	for (p = path; (p = strstr(p, "pod")); p += 3) {
		size_t n = 0;

		while (n < 36 && (is_hex(p[3 + n]) || p[3 + n] == '-' || p[3 + n] == '_'))
			n++;
		if (n == 36 && !is_hex(p[3 + 36])) {
			for (size_t i = 0; i < 36; i++)
				pod[i] = p[3 + i] == '_' ? '-' : p[3 + i];
			pod[36] = 0;
		}
	}
}

/* pid's labels, read from /proc once per window (a process gone by then has none). */
static const struct labels *labels_of(struct rows *r, uint32_t pid)
{
	static const struct labels none = { .cgroup = "" };
	uint64_t *slot = u64_map_get(&r->by_pid, pid, true);
	char path[64], *buf, *line;
	struct labels *l;

	if (!slot)
		return &none;
	if (*slot)
		return *slot == UINT64_MAX ? &none : &r->lab[*slot - 1];
	*slot = UINT64_MAX;
	buf = malloc(8192);
	l = realloc(r->lab, (r->nr_lab + 1) * sizeof(*l));
	if (!buf || !l) {
		free(buf);
		return &none;
	}
	r->lab = l;
	l = &r->lab[r->nr_lab];
	memset(l, 0, sizeof(*l));
	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	if (!pid || read_file_str(path, buf, 8192)) {
		free(buf);
		return &none;
	}
	/* cgroup v2's line, "0::/PATH"; a path with a newline in it is cut there, as the file itself is. */
	for (line = buf; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (!strncmp(line, "0::", 3))
			break;
	if (line) {
		size_t n = strcspn(line + 3, "\n");

		l->cgroup = strndup(line + 3, n);
	}
	free(buf);
	if (!l->cgroup)
		return &none;
	agent_cgroup_labels(l->cgroup, l->container, l->pod);
	*slot = ++r->nr_lab;
	return l;
}

static uint16_t day_of(uint64_t unix_ns)
{
	return unix_ns / 1000000000ull / 86400;
}

static void where_from(struct rows *r, struct sbuf *b, uint32_t pid)
{
	const struct labels *l = labels_of(r, pid);

	rb_str(b, r->m->host);
	rb_str(b, l->container);
	rb_str(b, l->pod);
	rb_str(b, l->cgroup);
}

/* A stack's identity: every frame's function, file, build id, offset and side, so that equal text is equal id. */
static uint64_t stack_id(const struct profile *p, const struct pstack *s)
{
	uint64_t h = hash_mix(0x5350414e, s->nr);

	for (uint32_t i = 0; i < s->nr; i++) {
		const struct pfunc *f = &p->funcs[s->frames[i].func];

		h = hash_mix(h, hash_str(f->name));
		h = hash_mix(h, hash_str(f->dso ? f->dso : ""));
		h = hash_mix(h, hash_str(f->build_id ? f->build_id : ""));
		h = hash_mix(h, f->unknown_addr);
		h = hash_mix(h, f->kernel | f->inlined << 1);
	}
	return h;
}

/*
 * A user file's build id where the symbolizer names none (a live session
 * reads them from no file's header): read from the file as the process
 * sees it, once a window per file; NULL if none.  Its notes are read once
 * per inode while it stays the same (buildid_memo): the open stays, since
 * which inode the process's name leads to is what may change.  The name is the
 * process's: resolved inside its root (proc_file.h), never by a plain open
 * of /proc/PID/root/PATH, where the kernel follows the container's absolute
 * symlinks from the host's root and its magic links anywhere (a JIT's
 * /tmp/perf-PID.map through a /tmp that was a link to /proc/N/root/DIR
 * had root read the host's DIR).
 */
static const char *build_id_of(struct rows *r, const struct pfunc *f, uint32_t pid)
{
	uint64_t *slot;
	char hex[2 * BUILD_ID_MAX + 1];
	__u8 id[BUILD_ID_MAX], n = 0;
	size_t at;
	int fd;

	if ((f->build_id && f->build_id[0]) || f->kernel || !f->path || f->path[0] != '/')
		return f->build_id;
	slot = u64_map_get(&r->bid_of, (uint64_t)(uintptr_t)f->path, true);
	if (!slot)
		return NULL;
	if (*slot)
		return *slot == UINT64_MAX ? NULL : r->bids.str[*slot - 1];
	*slot = UINT64_MAX;
	fd = proc_open_in_root((int)pid, f->path);
	if (fd < 0)
		return NULL;
	if (!buildid_memo__fd(r->m->bids, fd, id, &n) && n) {
		buildid_hex(id, n, hex);
		if (strpool_intern(&r->bids, hex, &at))
			*slot = at + 1;
	}
	close(fd);
	return *slot == UINT64_MAX ? NULL : r->bids.str[*slot - 1];
}

static void stack_row(struct rows *r, const struct pstack *s, uint64_t id)
{
	uint64_t *seen = u64_map_get(&r->stack_seen, id, true);
	struct sbuf *b = &r->body[CH_STACKS];
	const struct pfunc *fn;

	if (!seen || *seen)
		return;
	*seen = 1;
	rb_u16(b, day_of(r->m->start_ns));
	rb_u64(b, id);
#define EACH(emit)                                                  \
	do {                                                        \
		rb_len(b, s->nr);                                   \
		for (uint32_t i = 0; i < s->nr; i++) {              \
			fn = &r->p->funcs[s->frames[i].func];       \
			emit;                                       \
		}                                                   \
	} while (0)
	EACH(rb_str(b, fn->name));
	EACH(rb_str(b, fn->dso));
	EACH(rb_str(b, build_id_of(r, fn, s->pid)));
	EACH(rb_u64(b, fn->unknown_addr));
	EACH(rb_u8(b, fn->kernel));
	EACH(rb_u8(b, fn->inlined));
#undef EACH
	r->n++;
}

/* A stack's samples added to its (side, process, thread, comm, stack) row. */
static int add_stack(struct rows *r, const struct pstack *s, bool off)
{
	uint64_t id = stack_id(r->p, s);
	uint64_t key = hash_mix(hash_mix(hash_mix(hash_mix(id, off), s->pid), s->tid), hash_str(s->comm));
	uint64_t *slot = u64_map_get(&r->sample_idx, key, true);
	struct agg *a;

	if (!slot)
		return -ENOMEM;
	stack_row(r, s, id);
	if (*slot) {
		a = &r->agg[*slot - 1];
		a->count += s->count;
		a->period += s->period;
		return 0;
	}
	if (r->nr_agg == r->cap_agg) {
		size_t cap = r->cap_agg ? 2 * r->cap_agg : 256;
		struct agg *n = realloc(r->agg, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		r->agg = n;
		r->cap_agg = cap;
	}
	r->agg[r->nr_agg] = (struct agg){ s, id, s->count, s->period, off };
	*slot = ++r->nr_agg;
	return 0;
}

static void sample_rows(struct rows *r)
{
	struct sbuf *b = &r->body[CH_SAMPLES];

	for (size_t i = 0; i < r->nr_agg; i++) {
		const struct agg *a = &r->agg[i];

		rb_u16(b, day_of(r->m->start_ns));
		rb_u32(b, r->m->start_ns / 1000000000ull);
		rb_str(b, r->m->token);
		where_from(r, b, a->s->pid);
		rb_u32(b, a->s->pid);
		rb_u32(b, a->s->tid);
		rb_str(b, a->s->comm);
		rb_u8(b, a->off);
		rb_u64(b, a->stack);
		rb_u64(b, a->count);
		rb_u64(b, a->period);
		r->n++;
	}
}

static void span_row(struct rows *r, const struct spans_view *v, const struct spans_row *s)
{
	struct sbuf *b = &r->body[CH_SPANS];
	int nc = s->has_counters ? v->nr_ctr : 0;
	rb_u16(b, day_of(r->m->start_ns));
	rb_u32(b, r->m->start_ns / 1000000000ull);
	rb_str(b, r->m->token);
	where_from(r, b, s->pid);
	rb_str(b, s->name);
	rb_str(b, s->source);
	rb_u32(b, s->pid);
	rb_u32(b, s->tid);
	rb_str(b, r->sess ? session__comm(r->sess, s->tid, s->start) : NULL); /* its thread's name as it began */
	rb_u64(b, s->start + r->m->mono_to_unix);
	rb_u64(b, s->end + r->m->mono_to_unix);
	rb_u64(b, s->samples);
	rb_u8(b, s->unfinished);
	rb_len(b, nc);
	for (int k = 0; k < nc; k++)
		rb_str(b, v->ctr_names[k]);
	rb_len(b, nc);
	for (int k = 0; k < nc; k++)
		rb_u64(b, s->counters[k]);
	rb_str(b, s->trace_id);
	rb_str(b, s->span_id);
	rb_u8(b, s->has_ctx);
	rb_u64(b, (uint64_t)s->on_cpu_ns);
	rb_u8(b, s->has_split);
	rb_u64(b, s->split.on);
	rb_u64(b, s->split.runq);
	rb_u64(b, s->split.off);
	rb_u64(b, s->split.sleep);
	rb_u64(b, s->split.blocked);
	rb_str(b, s->split_how);
	rb_u64(b, s->off_ns);
	rb_str(b, s->blocked_in);
	rb_len(b, s->nr_top);
	for (size_t i = 0; i < s->nr_top; i++)
		rb_str(b, s->top[i].name);
	rb_len(b, s->nr_top);
	for (size_t i = 0; i < s->nr_top; i++)
		rb_u64(b, s->top[i].n);
	rb_len(b, s->nr_woken_by);
	for (int i = 0; i < s->nr_woken_by; i++)
		rb_str(b, s->woken_by[i].comm);
	rb_len(b, s->nr_woken_by);
	for (int i = 0; i < s->nr_woken_by; i++)
		rb_u32(b, s->woken_by[i].tid);
	rb_len(b, s->nr_woken_by);
	for (int i = 0; i < s->nr_woken_by; i++)
		rb_u64(b, s->woken_by[i].stack.ns);
	r->n++;
}

static void window_row(struct rows *r, uint64_t sample_rows, uint64_t stack_rows, uint64_t span_rows)
{
	struct sbuf *b = &r->body[CH_WINDOWS];
	const struct profile *p = r->p;

	rb_u16(b, day_of(r->m->start_ns));
	rb_str(b, r->m->token);
	rb_str(b, r->m->host);
	rb_u64(b, r->m->start_ns);
	rb_u64(b, r->m->end_ns);
	rb_str(b, p && p->event ? p->event : "");
	rb_u8(b, p && p->event_is_clock);
	rb_u64(b, r->m->hz);
	rb_u64(b, p ? p->samples : 0);
	rb_u64(b, p ? p->lost : 0);
	rb_u64(b, sample_rows);
	rb_u64(b, stack_rows);
	rb_u64(b, span_rows);
	r->n++;
}

int agent_rows(const struct agent_window_meta *m, struct session *sess, const struct profile *p,
	       const struct spans_view *v, struct sbuf body[CH_NR_TABLES], uint64_t *rows)
{
	struct rows r = { .m = m, .sess = sess, .p = p, .body = body };
	uint64_t stacks_before, spans = 0;
	int e = 0;

	/* The stacks as sampled, where the profile split them by OTel context or span. */
	const struct pstack *on = p && p->nr_sampled ? p->sampled : p ? p->stacks : NULL;
	size_t nr_on = p && p->nr_sampled ? p->nr_sampled : p ? p->nr_stacks : 0;

	for (size_t i = 0; !e && i < nr_on; i++)
		e = add_stack(&r, &on[i], false);
	for (size_t i = 0; !e && p && i < p->nr_off_stacks; i++)
		e = add_stack(&r, &p->off_stacks[i], true);
	stacks_before = r.n;
	if (!e)
		sample_rows(&r);
	for (size_t i = 0; !e && v && i < v->nr_rows; i++, spans++)
		span_row(&r, v, &v->row[i]);
	if (!e)
		window_row(&r, r.nr_agg, stacks_before, spans);
	for (int i = 0; i < CH_NR_TABLES; i++)
		if (body[i].err)
			e = -ENOMEM;
	*rows = r.n;
	u64_map_free(&r.stack_seen);
	u64_map_free(&r.by_pid);
	u64_map_free(&r.sample_idx);
	u64_map_free(&r.bid_of);
	strpool_free(&r.bids);
	for (size_t i = 0; i < r.nr_lab; i++)
		free(r.lab[i].cgroup);
	free(r.lab);
	free(r.agg);
	return e;
}
