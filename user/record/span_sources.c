// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "events.h"
#include "kernel_features.h"
#include "libbpf_setup.h"
#include "span_codec.h"
#include "span_sources.h"
#include "target.h"
#include "elf_syms.h"
#include "log.h"
#include "util.h"
#include "spans.skel.h"

#define fail(err, len, ...) set_errorf(err, len, -EINVAL, __VA_ARGS__)

static bool is_ident(const char *s, const char *extra)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && !strchr(extra, *s))
			return false;
	return true;
}

/*
 * A uprobe's function may be a C++ name as report prints it: "maxof<int>",
 * "ns::Foo::operator()", "(anonymous namespace)::hidden".  Any printable
 * text is looked up; only control characters are refused.
 */
static bool is_func_name(const char *s)
{
	if (!*s || *s == ' ')
		return false;
	for (; *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			return false;
	return true;
}

static int copy_part(char *dst, size_t len, const char *src, size_t n)
{
	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(dst, src, n);
	dst[n] = 0;
	return 0;
}

/* "CAT:NAME" */
static int parse_tp(const char *s, size_t n, char *cat, char *ev)
{
	const char *colon = memchr(s, ':', n);

	if (!colon || copy_part(cat, 64, s, colon - s) || copy_part(ev, 64, colon + 1, s + n - colon - 1))
		return -EINVAL;
	return is_ident(cat, "") && is_ident(ev, "") ? 0 : -EINVAL;
}

int span_spec_parse(const char *s, struct span_spec *sp, char *err, size_t errlen)
{
	const char *rest;

	memset(sp, 0, sizeof(*sp));
	if (!s || strlen(s) >= sizeof(sp->text))
		return fail(err, errlen, "--span '%.40s': the spec is too long", s ? s : "");
	snprintf(sp->text, sizeof(sp->text), "%s", s);
	if (!strncmp(s, "kprobe:", 7)) {
		const char *at;

		rest = s + 7;
		sp->kind = SPAN_KPROBE;
		at = strchr(rest, '@');
		if (copy_part(sp->func, sizeof(sp->func), rest, at ? (size_t)(at - rest) : strlen(rest)) ||
		    !is_ident(sp->func, "."))
			return fail(err, errlen, "--span '%s': 'kprobe:' needs a kernel function name", s);
		if (at) {
			if (!strcmp(at + 1, "kprobe"))
				sp->kmode = KMODE_KPROBE;
			else if (!strcmp(at + 1, "fentry"))
				sp->kmode = KMODE_FENTRY;
			else if (!strcmp(at + 1, "auto"))
				sp->kmode = KMODE_AUTO;
			else
				return fail(err, errlen, "--span '%s': mode '@%s' is not @kprobe, @fentry or @auto", s, at + 1);
		}
		snprintf(sp->name, sizeof(sp->name), "%s", sp->func);
		return 0;
	}
	if (!strncmp(s, "uprobe:", 7)) {
		const char *colon;

		rest = s + 7;
		sp->kind = SPAN_UPROBE;
		colon = strchr(rest, ':');
		if (!colon || colon == rest || !colon[1])
			return fail(err, errlen, "--span '%s': the form is uprobe:PATH:FUNC", s);
		if (copy_part(sp->path, sizeof(sp->path), rest, colon - rest) ||
		    copy_part(sp->func, sizeof(sp->func), colon + 1, strlen(colon + 1)) || !is_func_name(sp->func))
			return fail(err, errlen, "--span '%s': '%s' is not a function name", s, colon + 1);
		snprintf(sp->name, sizeof(sp->name), "%s", sp->func);
		return 0;
	}
	if (!strncmp(s, "syscall:", 8)) {
		rest = s + 8;
		sp->kind = SPAN_SYSCALL;
		if (!is_ident(rest, "") || strlen(rest) > 40)
			return fail(err, errlen, "--span '%s': 'syscall:' needs a syscall name like read", s);
		snprintf(sp->name, sizeof(sp->name), "%s", rest);
		snprintf(sp->cat[0], 64, "syscalls");
		snprintf(sp->cat[1], 64, "syscalls");
		snprintf(sp->ev[0], sizeof(sp->ev[0]), "sys_enter_%.40s", rest);
		snprintf(sp->ev[1], sizeof(sp->ev[1]), "sys_exit_%.40s", rest);
		return 0;
	}
	if (!strncmp(s, "tracepoint:", 11)) {
		const char *comma;

		rest = s + 11;
		sp->kind = SPAN_TRACEPOINT;
		comma = strchr(rest, ',');
		if (!comma || parse_tp(rest, comma - rest, sp->cat[0], sp->ev[0]) ||
		    parse_tp(comma + 1, strlen(comma + 1), sp->cat[1], sp->ev[1]))
			return fail(err, errlen, "--span '%s': the form is tracepoint:CAT:BEGIN,CAT:END", s);
		snprintf(sp->name, sizeof(sp->name), "%s", sp->ev[0]);
		return 0;
	}
	return fail(err, errlen, "--span '%s': unknown source; use kprobe:, uprobe:, syscall: or tracepoint:", s);
}

/* Library names go through the usual directories; command names through $PATH. */
static int find_file(const char *name, char *out, size_t len)
{
	static const char *const dirs[] = { "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64",
					     "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib" };
	const char *env[2] = { getenv("LD_LIBRARY_PATH"), getenv("PATH") };

	if (strchr(name, '/')) {
		if (access(name, R_OK))
			return -errno;
		if (!realpath(name, out))
			snprintf(out, len, "%s", name);
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		if (snprintf(out, len, "%s/%s", dirs[i], name) >= (int)len)
			continue;
		if (!access(out, R_OK))
			return 0;
	}
	for (int e = 0; e < 2; e++) {
		char *copy, *tok, *save = NULL;

		if (!env[e])
			continue;
		copy = strdup(env[e]);
		for (tok = copy ? strtok_r(copy, ":", &save) : NULL; tok; tok = strtok_r(NULL, ":", &save)) {
			if (snprintf(out, len, "%s/%s", tok, name) >= (int)len)
				continue;
			if (!access(out, R_OK)) {
				free(copy);
				return 0;
			}
		}
		free(copy);
	}
	return -ENOENT;
}

static int tp_exists(const char *tracefs, const char *cat, const char *ev)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%.100s/events/%.64s/%.80s/id", tracefs, cat, ev);
	return access(path, R_OK) == 0;
}

static const struct {
	const char *name;
	int nr;
} syscalls[] = {
#include "syscall_table.h"
};

int syscall_nr(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(syscalls); i++)
		if (!strcmp(syscalls[i].name, name))
			return syscalls[i].nr;
	return -1;
}

int span_spec_resolve(struct span_spec *sp, const struct sp_features *f, bool raw_syscalls, char *err,
		      size_t errlen)
{
	char path[PATH_MAX], candidates[256];
	int e;

	switch (sp->kind) {
	case SPAN_UPROBE:
		if (!f->uprobe)
			return fail(err, errlen, "--span '%s': this kernel has no uprobes (CONFIG_UPROBE_EVENTS)", sp->text);
		e = find_file(sp->path, path, sizeof(path));
		if (e)
			return fail(err, errlen, "--span '%s': cannot find '%s'%s", sp->text, sp->path,
				    strchr(sp->path, '/') ? "" : " in the library directories or $PATH");
		e = elf_find_function(path, sp->func, &sp->offset, candidates, sizeof(candidates));
		if (e == -ENOEXEC)
			return fail(err, errlen, "--span '%s': %s is not an ELF file", sp->text, path);
		if (e == -ENOTUNIQ)
			return fail(err, errlen, "--span '%s': '%s' names several functions in %s (%s); give one by its mangled name",
				    sp->text, sp->func, path, candidates);
		if (e)
			return fail(err, errlen, "--span '%s': no function '%s' in %s", sp->text, sp->func, path);
		snprintf(sp->path, sizeof(sp->path), "%s", path);
		sp->source = SP_SRC_UPROBE;
		return 0;
	case SPAN_SYSCALL:
		if (raw_syscalls || f->tracefs_err || !f->syscall_tps) {
			sp->sysnr = syscall_nr(sp->name);
			if (sp->sysnr < 0 || sp->sysnr >= SP_MAX_SYSCALLS)
				return fail(err, errlen, "--span '%s': no syscall named '%s'", sp->text, sp->name);
			if (f->raw_tp_err)
				return fail(err, errlen, "--span '%s': no syscall tracepoints (%s) and no raw tracepoints (%s)",
					    sp->text, f->tracefs_err ? strerror(-f->tracefs_err) : "not in tracefs",
					    strerror(-f->raw_tp_err));
			sp->raw_syscall = true;
			sp->source = SP_SRC_SYSCALL;
			return 0;
		}
		/* fall through */
	case SPAN_TRACEPOINT:
		if (f->tracefs_err)
			return fail(err, errlen, "--span '%s': tracefs is not mounted and cannot be (%s)", sp->text,
				    strerror(-f->tracefs_err));
		for (int i = 0; i < 2; i++)
			if (!tp_exists(f->tracefs_path, sp->cat[i], sp->ev[i])) {
				if (sp->kind == SPAN_SYSCALL)
					return fail(err, errlen, "--span '%s': no syscall named '%s' (no tracepoint syscalls/%s)",
						    sp->text, sp->name, sp->ev[i]);
				return fail(err, errlen, "--span '%s': no tracepoint %s:%s", sp->text, sp->cat[i], sp->ev[i]);
			}
		sp->source = sp->kind == SPAN_SYSCALL ? SP_SRC_SYSCALL : SP_SRC_TRACEPOINT;
		return 0;
	case SPAN_KPROBE:
		if (sp->kmode != KMODE_FENTRY && !f->kprobe_err) {
			sp->source = SP_SRC_KPROBE;
			return 0;
		}
		if (sp->kmode != KMODE_KPROBE && !f->fentry_err) {
			sp->source = SP_SRC_FENTRY;
			return 0;
		}
		if (sp->kmode == KMODE_KPROBE)
			return fail(err, errlen, "--span '%s': kprobes do not work on this kernel (%s; CONFIG_KPROBES off?)",
				    sp->text, strerror(-f->kprobe_err));
		if (sp->kmode == KMODE_FENTRY)
			return fail(err, errlen, "--span '%s': fentry does not work on this kernel (%s)", sp->text,
				    strerror(-f->fentry_err));
		return fail(err, errlen, "--span '%s': neither kprobes (%s) nor fentry (%s) work on this kernel",
			    sp->text, strerror(-f->kprobe_err), strerror(-f->fentry_err));
	}
	return -EINVAL;
}

struct span_set {
	struct spans_bpf *skel;
	const struct span_spec *specs;
	int nr;
	struct bpf_link *links[2 * SP_MAX_SPANS + 3];
	int nr_links;
	bool raw_syscalls;	/* the raw_syscalls pair is loaded */
	struct ring_buffer *rb;
	span_fn fn;
	void *ctx;
	int nr_cpus;
};

/*
 * The begin and end programs of spec i for its source: spans.bpf.c makes
 * one pair per index and kind from one macro, named KIND_begin_I and
 * KIND_end_I (fentry's end is fexit_end_I), so they are found by name.
 */
static void progs_for(struct spans_bpf *k, int i, int source, struct bpf_program **b, struct bpf_program **e)
{
	const char *begin = source == SP_SRC_UPROBE ? "uprobe_begin" : source == SP_SRC_KPROBE ? "kprobe_begin"
			    : source == SP_SRC_FENTRY ? "fentry_begin" : "tp_begin";
	const char *end = source == SP_SRC_UPROBE ? "uprobe_end" : source == SP_SRC_KPROBE ? "kprobe_end"
			  : source == SP_SRC_FENTRY ? "fexit_end" : "tp_end";
	char name[32];

	snprintf(name, sizeof(name), "%s_%d", begin, i);
	*b = bpf_object__find_program_by_name(k->obj, name);
	snprintf(name, sizeof(name), "%s_%d", end, i);
	*e = bpf_object__find_program_by_name(k->obj, name);
}

static int on_ring(void *ctx, void *data, size_t size)
{
	struct span_set *s = ctx;

	if (size < sizeof(struct sp_span_ev))
		return 0;
	return s->fn ? s->fn(s->ctx, data) : 0;
}

int span_set__open(struct span_set **out, const struct span_set_opts *o, char *err, size_t errlen)
{
	struct span_set *s;
	struct bpf_program *p;
	int e;

	*out = NULL;
	if (o->nr > SP_MAX_SPANS)
		return fail(err, errlen, "%d --span given; at most %d per recording", o->nr, SP_MAX_SPANS);
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->specs = o->specs;
	s->nr = o->nr;
	s->nr_cpus = libbpf_num_possible_cpus();
	s->skel = spans_bpf__open();
	if (!s->skel) {
		e = -errno;
		fail(err, errlen, "cannot open the spans BPF object: %s", strerror(-e));
		goto cleanup;
	}
	s->skel->rodata->nr_cpus = s->nr_cpus;
	s->skel->rodata->nr_span_counters = o->nr_counters;
	for (__u32 k = 0; k < o->nr_counters && k < SP_MAX_COUNTERS; k++) {
		s->skel->rodata->span_ctr_kind[k] = o->ctr_kind[k];
		s->skel->rodata->span_ctr_slot[k] = o->ctr_slot[k];
	}
	s->skel->rodata->min_ns = o->min_ns;
	s->skel->rodata->sched_split = o->sched_split;
	/* The same choice as the counters program's, whose stamps these read. */
	s->skel->rodata->split_stamps = o->sched_split && features_split_stamps();
	s->skel->rodata->ring_size = o->ring_bytes;
	bpf_map__set_max_entries(s->skel->maps.spans_rb, o->ring_bytes);
	/* The counters' and the sampler's maps, shared: the spans read what those write. */
	if ((e = bpf_map__reuse_fd(s->skel->maps.counters, o->counters_fd)) ||
	    (e = bpf_map__reuse_fd(s->skel->maps.snap, o->snap_fd)) ||
	    (e = bpf_map__reuse_fd(s->skel->maps.counts, o->counts_fd)) ||
	    (e = bpf_map__reuse_fd(s->skel->maps.threads, o->threads_fd))) {
		fail(err, errlen, "cannot share the counter maps with the span programs: %s", strerror(-e));
		goto cleanup;
	}
	bpf_object__for_each_program(p, s->skel->obj)
		bpf_program__set_autoload(p, false);
	bpf_program__set_autoload(s->skel->progs.span_exit, true);
	for (int i = 0; i < o->nr; i++) {
		const struct span_spec *sp = &o->specs[i];
		struct bpf_program *b, *en;

		s->skel->rodata->span_source[i] = sp->source;
		if (sp->raw_syscall) {
			/* One pair serves every syscall span, each number marking one spec. */
			if (s->skel->rodata->sys_span[sp->sysnr]) {
				e = fail(err, errlen, "--span '%s': syscall %s is marked twice", sp->text, sp->name);
				goto cleanup;
			}
			s->skel->rodata->sys_span[sp->sysnr] = i + 1;
			s->raw_syscalls = true;
			bpf_program__set_autoload(s->skel->progs.sys_span_enter, true);
			bpf_program__set_autoload(s->skel->progs.sys_span_exit, true);
			continue;
		}
		progs_for(s->skel, i, sp->source, &b, &en);
		if (!b || !en) {
			e = fail(err, errlen, "--span '%s': the span programs have no pair %d for it", sp->text, i);
			goto cleanup;
		}
		bpf_program__set_autoload(b, true);
		bpf_program__set_autoload(en, true);
		if (sp->source == SP_SRC_FENTRY &&
		    ((e = bpf_program__set_attach_target(b, 0, sp->func)) ||
		     (e = bpf_program__set_attach_target(en, 0, sp->func)))) {
			fail(err, errlen, "--span '%s': no kernel function '%s' in BTF", sp->text, sp->func);
			goto cleanup;
		}
	}
	s->skel->rodata->filter_mode = o->target ? o->target->mode : SP_FILTER_NONE;
	e = target__prepare(o->target, s->skel->obj, s->skel->maps.filter);
	if (e) {
		fail(err, errlen, "cannot share the BPF filter with the span programs: %s", strerror(-e));
		goto cleanup;
	}
	e = libbpf_load_skel(s->skel->skeleton, "spans");
	if (e) {
		fail(err, errlen, "cannot load the span programs: %s", libbpf_explain(e));
		goto cleanup;
	}
	e = target__loaded(o->target, s->skel->obj, s->skel->maps.filter);
	if (e) {
		fail(err, errlen, "cannot fill the span programs' filter: %s", strerror(-e));
		goto cleanup;
	}
	e = bpf_ring_open(&s->rb, bpf_map__fd(s->skel->maps.spans_rb), on_ring, s, "span ring buffer", err, errlen);
	if (e)
		goto cleanup;
	*out = s;
	return 0;
cleanup:
	span_set__free(s);
	return e;
}

int span_set__attach(struct span_set *s, char *err, size_t errlen)
{
	struct bpf_link *l;

	l = bpf_program__attach(s->skel->progs.span_exit);
	if (!l)
		return fail(err, errlen, "cannot attach the thread-exit program: %s", strerror(errno));
	s->links[s->nr_links++] = l;
	for (int end = 0; s->raw_syscalls && end < 2; end++) {
		l = bpf_program__attach(end ? s->skel->progs.sys_span_exit : s->skel->progs.sys_span_enter);
		if (!l)
			return fail(err, errlen, "cannot attach the raw_syscalls %s program of syscall spans: %s",
				    end ? "sys_exit" : "sys_enter", strerror(errno));
		s->links[s->nr_links++] = l;
	}
	for (int i = 0; i < s->nr; i++) {
		const struct span_spec *sp = &s->specs[i];
		struct bpf_program *b, *en;

		if (sp->raw_syscall)
			continue;
		progs_for(s->skel, i, sp->source, &b, &en);
		for (int end = 0; end < 2; end++) {
			struct bpf_program *p = end ? en : b;

			switch (sp->source) {
			case SP_SRC_UPROBE:
				/* -1: every process that maps the file. */
				l = bpf_program__attach_uprobe(p, end, -1, sp->path, sp->offset);
				break;
			case SP_SRC_KPROBE:
				l = bpf_program__attach_kprobe(p, end, sp->func);
				break;
			case SP_SRC_FENTRY:
				l = bpf_program__attach(p);
				break;
			default:
				l = bpf_program__attach_tracepoint(p, sp->cat[end], sp->ev[end]);
				break;
			}
			if (!l)
				return fail(err, errlen, "--span '%s': cannot attach its %s (%s): %s", sp->text,
					    end ? "end" : "begin", span_source_name(sp->source), strerror(errno));
			s->links[s->nr_links++] = l;
		}
	}
	return 0;
}

int span_set__consume(struct span_set *s, span_fn fn, void *ctx)
{
	int n;

	s->fn = fn;
	s->ctx = ctx;
	n = ring_buffer__consume(s->rb);
	return n < 0 ? n : 0;
}

int span_set__ring_fd(const struct span_set *s)
{
	return ring_buffer__epoll_fd(s->rb);
}

void span_set__stats(struct span_set *s, struct span_stats *st)
{
	int fd = bpf_map__fd(s->skel->maps.stats);

	st->lost = bpf_percpu_sum(fd, SP_STAT_SPANS_LOST);
	st->too_deep = bpf_percpu_sum(fd, SP_STAT_SPANS_TOO_DEEP);
	st->unmatched = bpf_percpu_sum(fd, SP_STAT_SPANS_UNMATCHED);
	st->short_dropped = bpf_percpu_sum(fd, SP_STAT_SPANS_SHORT);
	st->nostack = bpf_percpu_sum(fd, SP_STAT_SPANS_NOSTACK);
	st->unfinished = bpf_percpu_sum(fd, SP_STAT_SPANS_UNFINISHED);
}

void span_set__free(struct span_set *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->nr_links; i++)
		bpf_link__destroy(s->links[i]);
	ring_buffer__free(s->rb);
	spans_bpf__destroy(s->skel);
	free(s);
}
