// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "report_spans.h"
#include "util.h"

/* A comm a thread had from `time` on. */
struct comm_ev {
	__u64 time;
	__u32 tid, ptid; /* ptid: for FORK, the thread it inherits its comm from */
	const char *comm; /* NULL for a FORK until resolved */
	int fork;
};

/* pid+ip -> function, so that each distinct address is symbolized once. */
struct ipc_slot {
	__u64 ip;
	__u32 pid; /* (u32)-1 for kernel addresses */
	__u32 func_plus1;
};

struct priv {
	struct ipc_slot *ipc;
	size_t ipc_cap, ipc_n;
	struct u64_map func_idx; /* hash(dso_id, name ptr) -> index + 1, probed */
	struct u64_map stack_idx; /* hash of a stack -> index + 1, probed */
	char **comms;		  /* interned names */
	size_t nr_comms;
	struct u64_map comm_idx;
	struct comm_ev *cev;
	size_t nr_cev, cap_cev;
	size_t *cev_by_tid_first; /* unused: lookups bsearch the sorted array */
	size_t cap_funcs, cap_stacks;
	struct pframe *scratch;
	size_t cap_scratch;
};

static __u64 mix(__u64 h, __u64 v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h;
}

static const char *intern_comm(struct priv *pv, const char *s)
{
	__u64 h = 1469598103934665603ull;
	uint64_t *v;

	for (const char *c = s; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ull;
	for (;; h++) {
		v = u64_map_get(&pv->comm_idx, h, false);
		if (!v)
			break;
		if (!strcmp(pv->comms[*v], s))
			return pv->comms[*v];
	}
	{
		char **nc = realloc(pv->comms, (pv->nr_comms + 1) * sizeof(*nc));

		if (!nc)
			return NULL;
		pv->comms = nc;
		nc[pv->nr_comms] = strdup(s);
		v = u64_map_get(&pv->comm_idx, h, true);
		if (!nc[pv->nr_comms] || !v)
			return NULL;
		*v = pv->nr_comms;
		return nc[pv->nr_comms++];
	}
}

static int add_cev(struct priv *pv, struct comm_ev ev)
{
	if (pv->nr_cev == pv->cap_cev) {
		struct comm_ev *n = realloc(pv->cev, (pv->cap_cev = pv->cap_cev ? pv->cap_cev * 2 : 1024) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		pv->cev = n;
	}
	pv->cev[pv->nr_cev++] = ev;
	return 0;
}

static int cmp_cev_time(const void *a, const void *b)
{
	const struct comm_ev *x = a, *y = b;

	return (x->time > y->time) - (x->time < y->time);
}

static int cmp_cev_tid(const void *a, const void *b)
{
	const struct comm_ev *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->time > y->time) - (x->time < y->time);
}

/* Threads created during the run inherit their creator's comm at the fork. */
static void resolve_forks(struct priv *pv)
{
	struct u64_map cur = {}; /* tid -> comm index + 1 */

	sort_n(pv->cev, pv->nr_cev, sizeof(*pv->cev), cmp_cev_time);
	for (size_t i = 0; i < pv->nr_cev; i++) {
		struct comm_ev *e = &pv->cev[i];
		uint64_t *v;

		if (e->fork) {
			v = u64_map_get(&cur, e->ptid, false);
			e->comm = v ? (const char *)(uintptr_t)*v : NULL;
		}
		if (e->comm) {
			v = u64_map_get(&cur, e->tid, true);
			if (v)
				*v = (uintptr_t)e->comm;
		}
	}
	u64_map_free(&cur);
	sort_n(pv->cev, pv->nr_cev, sizeof(*pv->cev), cmp_cev_tid);
}

/* The comm of tid at time t: its latest name by then, else its first. */
static const char *comm_at(struct priv *pv, __u32 tid, __u64 t)
{
	size_t lo = 0, hi = pv->nr_cev, first;
	const char *best = NULL;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pv->cev[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	first = lo;
	for (size_t i = first; i < pv->nr_cev && pv->cev[i].tid == tid; i++) {
		if (!pv->cev[i].comm)
			continue;
		if (!best || pv->cev[i].time <= t)
			best = pv->cev[i].comm;
		if (pv->cev[i].time > t)
			break;
	}
	return best;
}

static int func_of(struct profile *p, const struct sym *s, __u32 *out)
{
	struct priv *pv = p->priv;
	__u64 h = mix(mix(0, (__u64)(uintptr_t)s->name), (__u64)(s->dso_id + 2));
	uint64_t *v;

	for (;; h++) {
		v = u64_map_get(&pv->func_idx, h, false);
		if (!v)
			break;
		if (p->funcs[*v].name == s->name && p->funcs[*v].dso_id == s->dso_id &&
		    p->funcs[*v].kernel == s->kernel && (s->dso_id >= 0 || !strcmp(p->funcs[*v].dso, s->dso))) {
			*out = *v;
			return 0;
		}
	}
	if (p->nr_funcs == pv->cap_funcs) {
		struct pfunc *n = realloc(p->funcs, (pv->cap_funcs = pv->cap_funcs ? pv->cap_funcs * 2 : 1024) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		p->funcs = n;
	}
	p->funcs[p->nr_funcs] = (struct pfunc){ s->name, s->dso, s->path, s->build_id, s->dso_id, s->kernel };
	v = u64_map_get(&pv->func_idx, h, true);
	if (!v)
		return -ENOMEM;
	*v = p->nr_funcs;
	*out = p->nr_funcs++;
	return 0;
}

static int resolve_ip(struct profile *p, __u32 pid, __u64 ip, __u64 t, bool kernel, __u32 *func)
{
	struct priv *pv = p->priv;
	__u32 key_pid = kernel ? (__u32)-1 : pid;
	size_t i;
	struct sym s;
	int e;

	if (2 * (pv->ipc_n + 1) > pv->ipc_cap) {
		size_t cap = pv->ipc_cap ? pv->ipc_cap * 2 : 1 << 14;
		struct ipc_slot *n = calloc(cap, sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (size_t k = 0; k < pv->ipc_cap; k++) {
			struct ipc_slot *o = &pv->ipc[k];

			if (!o->func_plus1)
				continue;
			for (i = mix(o->ip, o->pid) & (cap - 1); n[i].func_plus1; i = (i + 1) & (cap - 1))
				;
			n[i] = *o;
		}
		free(pv->ipc);
		pv->ipc = n;
		pv->ipc_cap = cap;
	}
	for (i = mix(ip, key_pid) & (pv->ipc_cap - 1); pv->ipc[i].func_plus1; i = (i + 1) & (pv->ipc_cap - 1))
		if (pv->ipc[i].ip == ip && pv->ipc[i].pid == key_pid) {
			*func = pv->ipc[i].func_plus1 - 1;
			return 0;
		}
	symbolizer__resolve(p->sym, pid, ip, t, kernel, &s);
	e = func_of(p, &s, func);
	if (e)
		return e;
	pv->ipc[i] = (struct ipc_slot){ ip, key_pid, *func + 1 };
	pv->ipc_n++;
	return 0;
}

static int add_stack(struct profile *p, __u32 pid, __u32 tid, const char *comm, struct pframe *f, __u32 nr,
		     __u64 period)
{
	struct priv *pv = p->priv;
	__u64 h = mix(mix(mix(0, tid), (__u64)(uintptr_t)comm), nr);
	uint64_t *v;

	for (__u32 i = 0; i < nr; i++)
		h = mix(h, f[i].func);
	for (;; h++) {
		struct pstack *s;

		v = u64_map_get(&pv->stack_idx, h, false);
		if (!v)
			break;
		s = &p->stacks[*v];
		if (s->tid == tid && s->comm == comm && s->nr == nr) {
			__u32 i;

			for (i = 0; i < nr && s->frames[i].func == f[i].func; i++)
				;
			if (i == nr) {
				s->count++;
				s->period += period;
				return 0;
			}
		}
	}
	if (p->nr_stacks == pv->cap_stacks) {
		struct pstack *n = realloc(p->stacks, (pv->cap_stacks = pv->cap_stacks ? pv->cap_stacks * 2 : 1024) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		p->stacks = n;
	}
	p->stacks[p->nr_stacks] = (struct pstack){ pid, tid, comm, nr, malloc((nr ? nr : 1) * sizeof(*f)), 1, period };
	if (!p->stacks[p->nr_stacks].frames)
		return -ENOMEM;
	memcpy(p->stacks[p->nr_stacks].frames, f, nr * sizeof(*f));
	v = u64_map_get(&pv->stack_idx, h, true);
	if (!v)
		return -ENOMEM;
	*v = p->nr_stacks++;
	return 0;
}

static int add_sample(struct profile *p, const struct pd_event *ev)
{
	struct priv *pv = p->priv;
	const struct pd_sample *s = &ev->sample;
	bool kernel = (ev->hdr->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
	const char *comm;
	__u32 nr = 0;
	char name[32];
	int e;

	if (pv->cap_scratch < s->callchain_nr + 1) {
		struct pframe *n = realloc(pv->scratch, (s->callchain_nr + 1) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		pv->scratch = n;
		pv->cap_scratch = s->callchain_nr + 1;
	}
	if (s->callchain_nr) {
		bool k = kernel;

		p->callchains = true;
		for (__u64 i = 0; i < s->callchain_nr; i++) {
			__u64 ip = s->callchain[i];

			if (ip >= PD_CONTEXT_MAX) {
				/* A context marker says whose addresses follow. */
				k = ip == PD_CONTEXT_KERNEL;
				if (ip != PD_CONTEXT_KERNEL && ip != PD_CONTEXT_USER)
					break; /* guest or hypervisor frames: not ours to name */
				continue;
			}
			e = resolve_ip(p, s->pid, ip, s->time, k, &pv->scratch[nr].func);
			if (e)
				return e;
			pv->scratch[nr++].ip = ip;
		}
	}
	if (!nr) {
		e = resolve_ip(p, s->pid, s->ip, s->time, kernel, &pv->scratch[0].func);
		if (e)
			return e;
		pv->scratch[nr++].ip = s->ip;
	}
	comm = comm_at(pv, s->tid, s->time);
	if (!comm) {
		/* As perf names them: the idle task, or the thread id. */
		if (s->tid == 0)
			snprintf(name, sizeof(name), "swapper");
		else
			snprintf(name, sizeof(name), ":%u", s->tid);
		comm = intern_comm(pv, name);
		if (!comm)
			return -ENOMEM;
	}
	p->samples++;
	p->period += s->period;
	if (!p->first_ns || s->time < p->first_ns)
		p->first_ns = s->time;
	if (s->time > p->last_ns)
		p->last_ns = s->time;
	return add_stack(p, s->pid, s->tid, comm, pv->scratch, nr, s->period);
}

static bool is_sampling_attr(const struct pd_attr *a)
{
	return a && !(a->name && !strncmp(a->name, "spanperf", 8));
}

int profile__load(struct profile **out, const char *path, const char *root, char *err, size_t errlen)
{
	struct profile *p;
	struct priv *pv;
	struct pd_iter it = {};
	struct pd_event ev;
	int e;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	pv = calloc(1, sizeof(*pv));
	if (!p || !pv) {
		free(p);
		free(pv);
		return -ENOMEM;
	}
	p->priv = pv;
	e = pd_reader__open(&p->rd, path, err, errlen);
	if (e)
		goto cleanup;
	for (int i = 0; i < p->rd->nr_attrs; i++)
		if (is_sampling_attr(&p->rd->attrs[i])) {
			const struct perf_event_attr *a = &p->rd->attrs[i].attr;

			p->event = p->rd->attrs[i].name ? p->rd->attrs[i].name : "cycles";
			p->event_is_clock = a->type == PERF_TYPE_SOFTWARE &&
					    (a->config == PERF_COUNT_SW_CPU_CLOCK || a->config == PERF_COUNT_SW_TASK_CLOCK);
			p->sample_freq = a->freq ? a->sample_freq : 0;
			break;
		}
	p->sym = symbolizer__new(&p->rd->meta, root);
	if (!p->sym) {
		e = -ENOMEM;
		goto oom;
	}
	e = symbolizer__load_maps(p->sym, p->rd);
	if (e < 0)
		goto bad;
	/* First pass: names of threads over time. */
	while ((e = pd_reader__next(p->rd, &it, &ev)) > 0) {
		const char *rec = (const char *)ev.hdr;

		if (ev.hdr->type == PERF_RECORD_COMM && ev.hdr->size > 16 && memchr(rec + 16, 0, ev.hdr->size - 16)) {
			struct comm_ev c = { .time = ev.sample.time };
			const char *name = intern_comm(pv, rec + 16);

			memcpy(&c.tid, rec + 12, 4);
			c.comm = name;
			if (!name || add_cev(pv, c))
				goto oom;
		} else if (ev.hdr->type == PERF_RECORD_FORK && ev.hdr->size >= 32) {
			struct comm_ev c = { .time = ev.sample.time, .fork = 1 };

			memcpy(&c.tid, rec + 16, 4);
			memcpy(&c.ptid, rec + 20, 4);
			if (add_cev(pv, c))
				goto oom;
		} else if (ev.hdr->type == PERF_RECORD_LOST && ev.hdr->size >= 24) {
			__u64 lost;

			memcpy(&lost, rec + 16, 8);
			p->lost += lost;
		}
	}
	if (e < 0)
		goto bad;
	resolve_forks(pv);
	it.pos = 0;
	while ((e = pd_reader__next(p->rd, &it, &ev)) > 0)
		if (ev.hdr->type == PERF_RECORD_SAMPLE && is_sampling_attr(ev.attr) && add_sample(p, &ev))
			goto oom;
	if (e < 0)
		goto bad;
	*out = p;
	return 0;
bad:
	snprintf(err, errlen, "%s", p->rd->err);
	e = -EINVAL;
	goto cleanup;
oom:
	snprintf(err, errlen, "out of memory reading %s", path);
	e = -ENOMEM;
cleanup:
	profile__free(p);
	return e;
}

void profile__free(struct profile *p)
{
	struct priv *pv;

	if (!p)
		return;
	pv = p->priv;
	for (size_t i = 0; i < p->nr_stacks; i++)
		free(p->stacks[i].frames);
	free(p->stacks);
	free(p->funcs);
	if (pv) {
		for (size_t i = 0; i < pv->nr_comms; i++)
			free(pv->comms[i]);
		free(pv->comms);
		free(pv->ipc);
		free(pv->cev);
		free(pv->scratch);
		u64_map_free(&pv->func_idx);
		u64_map_free(&pv->stack_idx);
		u64_map_free(&pv->comm_idx);
		free(pv);
	}
	symbolizer__free(p->sym);
	pd_reader__free(p->rd);
	free(p);
}
