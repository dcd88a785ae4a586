// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "events.h"
#include "fileio.h"
#include "log.h"
#include "parse.h"
#include "util.h"

static const char *pmu_root = "/sys/bus/event_source/devices";
static const char *tracefs_root = "/sys/kernel/tracing";

void events_set_roots(const char *sysfs_pmu_dir, const char *tracefs_dir)
{
	if (sysfs_pmu_dir)
		pmu_root = sysfs_pmu_dir;
	if (tracefs_dir)
		tracefs_root = tracefs_dir;
}

const char *events_tracefs_dir(void)
{
	return tracefs_root;
}

struct named { const char *name; enum ev_kind kind; __u64 config; const char *unit; };

/*
 * perf's spellings, aliases after the canonical name.  The rows are alike
 * because they are data, a name for each (type, config) pair perf knows:
 * the hardware events here, counted by the PMU where there is one...
 */
static const struct named builtin[] = {
	{ "cycles", EV_HW, PERF_COUNT_HW_CPU_CYCLES, NULL },
	{ "cpu-cycles", EV_HW, PERF_COUNT_HW_CPU_CYCLES, NULL },
	{ "instructions", EV_HW, PERF_COUNT_HW_INSTRUCTIONS, NULL },
	{ "cache-references", EV_HW, PERF_COUNT_HW_CACHE_REFERENCES, NULL },
	{ "cache-misses", EV_HW, PERF_COUNT_HW_CACHE_MISSES, NULL },
	{ "branches", EV_HW, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, NULL },
	{ "branch-instructions", EV_HW, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, NULL },
	{ "branch-misses", EV_HW, PERF_COUNT_HW_BRANCH_MISSES, NULL },
	{ "bus-cycles", EV_HW, PERF_COUNT_HW_BUS_CYCLES, NULL },
	{ "stalled-cycles-frontend", EV_HW, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, NULL },
	{ "idle-cycles-frontend", EV_HW, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, NULL },
	{ "stalled-cycles-backend", EV_HW, PERF_COUNT_HW_STALLED_CYCLES_BACKEND, NULL },
	{ "idle-cycles-backend", EV_HW, PERF_COUNT_HW_STALLED_CYCLES_BACKEND, NULL },
	{ "ref-cycles", EV_HW, PERF_COUNT_HW_REF_CPU_CYCLES, NULL },
	/* ...and the software events, which the kernel counts itself: no PMU needed, and the clocks in ms. */
	{ "cpu-clock", EV_SW, PERF_COUNT_SW_CPU_CLOCK, "msec" },
	{ "task-clock", EV_SW, PERF_COUNT_SW_TASK_CLOCK, "msec" },
	{ "page-faults", EV_SW, PERF_COUNT_SW_PAGE_FAULTS, NULL },
	{ "faults", EV_SW, PERF_COUNT_SW_PAGE_FAULTS, NULL },
	{ "minor-faults", EV_SW, PERF_COUNT_SW_PAGE_FAULTS_MIN, NULL },
	{ "major-faults", EV_SW, PERF_COUNT_SW_PAGE_FAULTS_MAJ, NULL },
	{ "context-switches", EV_SW, PERF_COUNT_SW_CONTEXT_SWITCHES, NULL },
	{ "cs", EV_SW, PERF_COUNT_SW_CONTEXT_SWITCHES, NULL },
	{ "cpu-migrations", EV_SW, PERF_COUNT_SW_CPU_MIGRATIONS, NULL },
	{ "migrations", EV_SW, PERF_COUNT_SW_CPU_MIGRATIONS, NULL },
	{ "alignment-faults", EV_SW, PERF_COUNT_SW_ALIGNMENT_FAULTS, NULL },
	{ "emulation-faults", EV_SW, PERF_COUNT_SW_EMULATION_FAULTS, NULL },
	{ "dummy", EV_SW, PERF_COUNT_SW_DUMMY, NULL },
	/* Not perf's: where a thread's time off CPU went (stat --per-thread). */
	{ "run-delay", EV_SCHED, EV_SCHED_RUN_DELAY, "msec" },
	{ "sleep", EV_SCHED, EV_SCHED_SLEEP, "msec" },
	{ "blocked", EV_SCHED, EV_SCHED_BLOCKED, "msec" },
};

static const char *const cache_ids[] = {
	[PERF_COUNT_HW_CACHE_L1D] = "L1-dcache", [PERF_COUNT_HW_CACHE_L1I] = "L1-icache",
	[PERF_COUNT_HW_CACHE_LL] = "LLC",	 [PERF_COUNT_HW_CACHE_DTLB] = "dTLB",
	[PERF_COUNT_HW_CACHE_ITLB] = "iTLB",	 [PERF_COUNT_HW_CACHE_BPU] = "branch",
	[PERF_COUNT_HW_CACHE_NODE] = "node",
};
/* Singular and plural, as perf prints "-loads" but "-load-misses". */
static const char *const cache_ops[][2] = {
	[PERF_COUNT_HW_CACHE_OP_READ] = { "load", "loads" },
	[PERF_COUNT_HW_CACHE_OP_WRITE] = { "store", "stores" },
	[PERF_COUNT_HW_CACHE_OP_PREFETCH] = { "prefetch", "prefetches" },
};

static struct event_name *cache_names;
static size_t n_cache_names;
static char cache_name_buf[64][40];

const struct event_name *events_builtin(size_t *n)
{
	static struct event_name all[ARRAY_SIZE(builtin) + 64];
	size_t k = 0;

	for (size_t i = 0; i < ARRAY_SIZE(builtin); i++)
		all[k++] = (struct event_name){ builtin[i].name, builtin[i].kind };
	if (!cache_names) {
		for (size_t c = 0; c < ARRAY_SIZE(cache_ids); c++)
			for (size_t o = 0; o < ARRAY_SIZE(cache_ops); o++)
				for (int miss = 0; miss < 2; miss++) {
					char *b = cache_name_buf[n_cache_names];

					snprintf(b, sizeof(cache_name_buf[0]), "%s-%s", cache_ids[c],
						 miss ? cache_ops[o][0] : cache_ops[o][1]);
					if (miss)
						strcat(b, "-misses");
					all[k + n_cache_names++] = (struct event_name){ b, EV_CACHE };
				}
		cache_names = &all[k];
	}
	*n = k + n_cache_names;
	return all;
}

#define set_err(err, len, ...) set_errorf(err, len, 0, __VA_ARGS__)

static int parse_cache(const char *s, struct perf_event_attr *a)
{
	for (size_t c = 0; c < ARRAY_SIZE(cache_ids); c++) {
		size_t l = strlen(cache_ids[c]);

		if (strncasecmp(s, cache_ids[c], l) || s[l] != '-')
			continue;
		for (size_t o = 0; o < ARRAY_SIZE(cache_ops); o++)
			for (int miss = 0; miss < 2; miss++) {
				char want[40];

				snprintf(want, sizeof(want), "%s%s", miss ? cache_ops[o][0] : cache_ops[o][1],
					 miss ? "-misses" : "");
				if (strcasecmp(s + l + 1, want))
					continue;
				a->type = PERF_TYPE_HW_CACHE;
				a->config = c | (o << 8) |
					    ((miss ? PERF_COUNT_HW_CACHE_RESULT_MISS
						   : PERF_COUNT_HW_CACHE_RESULT_ACCESS) << 16);
				return 0;
			}
	}
	return -ENOENT;
}

/*
 * A sysfs format file says where a term's bits go: "config:0-7,21" or
 * "config1:0-15".  The value's low bits fill the ranges in order.
 */
static int apply_format(const char *fmt, __u64 val, struct perf_event_attr *a)
{
	char field[16], *p;
	__u64 *dst;
	int used = 0;

	p = strchr(fmt, ':');
	if (!p || p - fmt >= (long)sizeof(field))
		return -EINVAL;
	memcpy(field, fmt, p - fmt);
	field[p - fmt] = 0;
	if (!strcmp(field, "config"))
		dst = (__u64 *)&a->config;
	else if (!strcmp(field, "config1"))
		dst = (__u64 *)&a->config1;
	else if (!strcmp(field, "config2"))
		dst = (__u64 *)&a->config2;
	else
		return -EINVAL;
	for (p++; *p;) {
		char *end;
		long lo = strtol(p, &end, 10), hi = lo;

		if (end == p || lo < 0 || lo > 63)
			return -EINVAL;
		if (*end == '-') {
			p = end + 1;
			hi = strtol(p, &end, 10);
			if (end == p || hi < lo || hi > 63)
				return -EINVAL;
		}
		for (long b = lo; b <= hi && used < 64; b++, used++)
			if (val >> used & 1)
				*dst |= 1ull << b;
		p = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -EINVAL;
	}
	/* Bits of the value that found no place are a user error. */
	if (used < 64 && val >> used)
		return -ERANGE;
	return 0;
}

static int pmu_apply_terms(const char *pmu, const char *terms, struct perf_event_attr *a,
			   int depth, char *err, size_t errlen);

static int pmu_apply_term(const char *pmu, const char *term, struct perf_event_attr *a, int depth,
			  char *err, size_t errlen)
{
	char path[512], buf[4096], key[64];
	const char *eq = strchr(term, '=');
	uint64_t val = 1;
	size_t kl = eq ? (size_t)(eq - term) : strlen(term);
	int r;

	if (!kl || kl >= sizeof(key)) {
		set_err(err, errlen, "PMU term '%s' is malformed", term);
		return -EINVAL;
	}
	memcpy(key, term, kl);
	key[kl] = 0;
	if (eq && parse_u64(eq + 1, &val, 0, UINT64_MAX)) {
		set_err(err, errlen, "PMU term '%s' has a value that is not a number", term);
		return -EINVAL;
	}
	if (!strcmp(key, "config") || !strcmp(key, "config1") || !strcmp(key, "config2")) {
		__u64 *dst = key[6] == '1' ? (__u64 *)&a->config1
			     : key[6] == '2' ? (__u64 *)&a->config2 : (__u64 *)&a->config;
		*dst = val;
		return 0;
	}
	snprintf(path, sizeof(path), "%s/%s/format/%s", pmu_root, pmu, key);
	if (!read_file_str(path, buf, sizeof(buf))) {
		r = apply_format(buf, val, a);
		if (r)
			set_err(err, errlen, "PMU term '%s' does not fit %s/%s's format '%s'", term,
				pmu, key, buf);
		return r;
	}
	/* Not a format term: maybe an event the PMU exports by name. */
	snprintf(path, sizeof(path), "%s/%s/events/%s", pmu_root, pmu, key);
	if (!eq && depth < 2 && !read_file_str(path, buf, sizeof(buf)))
		return pmu_apply_terms(pmu, buf, a, depth + 1, err, errlen);
	set_err(err, errlen, "PMU '%s' has no format term or event named '%s'", pmu, key);
	return -ENOENT;
}

static int pmu_apply_terms(const char *pmu, const char *terms, struct perf_event_attr *a,
			   int depth, char *err, size_t errlen)
{
	char *copy = strdup(terms), *tok, *save = NULL;
	int r = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok && !r; tok = strtok_r(NULL, ",", &save)) {
		while (isspace((unsigned char)*tok))
			tok++;
		if (*tok)
			r = pmu_apply_term(pmu, tok, a, depth, err, errlen);
	}
	free(copy);
	return r;
}

static int pmu_type(const char *pmu, __u32 *type)
{
	char path[512], buf[32];
	uint64_t v;
	int r;

	if (strchr(pmu, '/') || !strcmp(pmu, ".") || !strcmp(pmu, ".."))
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/%s/type", pmu_root, pmu);
	r = read_file_str(path, buf, sizeof(buf));
	if (r)
		return r;
	if (parse_u64(buf, &v, 0, UINT32_MAX))
		return -EINVAL;
	*type = v;
	return 0;
}

/* "pmu/terms/" */
static int parse_pmu(const char *s, struct event_spec *ev, char *err, size_t errlen)
{
	const char *slash = strchr(s, '/');
	size_t len = strlen(s);
	char pmu[64], terms[EV_NAME_LEN];
	int r;

	if (!slash || len < 3 || s[len - 1] != '/' || slash == s + len - 1 ||
	    (size_t)(slash - s) >= sizeof(pmu) || len - (slash - s) - 2 >= sizeof(terms)) {
		set_err(err, errlen, "event '%s' is not of the form pmu/term=value,.../", s);
		return -EINVAL;
	}
	memcpy(pmu, s, slash - s);
	pmu[slash - s] = 0;
	memcpy(terms, slash + 1, len - (slash - s) - 2);
	terms[len - (slash - s) - 2] = 0;
	if (pmu_type(pmu, &ev->attr.type)) {
		set_err(err, errlen, "event '%s' names PMU '%s', which is not in %s", s, pmu, pmu_root);
		return -ENOENT;
	}
	r = pmu_apply_terms(pmu, terms, &ev->attr, 0, err, errlen);
	if (r)
		return r;
	ev->kind = EV_PMU;
	return 0;
}

/* A bare name that some PMU exports under events/ (exactly one PMU). */
static int parse_pmu_event_name(const char *s, struct event_spec *ev, char *err, size_t errlen)
{
	char found[64] = "", path[512], buf[EV_NAME_LEN];
	struct dirent *de;
	DIR *d;
	int hits = 0;

	if (strchr(s, '/') || strlen(s) > 64)
		return -ENOENT;
	d = opendir(pmu_root);
	if (!d)
		return -ENOENT;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/events/%s", pmu_root, de->d_name, s);
		if (!access(path, R_OK) && strlen(de->d_name) < sizeof(found)) {
			if (!hits++)
				strcpy(found, de->d_name);
		}
	}
	closedir(d);
	if (hits != 1)
		return -ENOENT;
	snprintf(buf, sizeof(buf), "%s/%s/", found, s);
	return parse_pmu(buf, ev, err, errlen);
}

static int parse_tracepoint(const char *cat, const char *name, struct event_spec *ev, char *err,
			    size_t errlen)
{
	char path[512], buf[32];
	uint64_t id;
	int r;

	if (!*cat || !*name || strchr(cat, '/') || strchr(name, '/') || !strcmp(cat, "..") ||
	    !strcmp(name, "..")) {
		set_err(err, errlen, "tracepoint '%s:%s' is malformed", cat, name);
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "%s/events/%s/%s/id", tracefs_root, cat, name);
	r = read_file_str(path, buf, sizeof(buf));
	if (r) {
		char events[512];

		snprintf(events, sizeof(events), "%s/events", tracefs_root);
		if (access(events, F_OK))
			set_err(err, errlen, "tracepoint '%s:%s' cannot be looked up: tracefs is not mounted at %s",
				cat, name, tracefs_root);
		else
			set_err(err, errlen, "tracepoint '%s:%s' does not exist in %s/events", cat,
				name, tracefs_root);
		return -ENOENT;
	}
	if (parse_u64(buf, &id, 0, UINT64_MAX)) {
		set_err(err, errlen, "tracepoint '%s:%s' has an unreadable id '%s'", cat, name, buf);
		return -EINVAL;
	}
	ev->attr.type = PERF_TYPE_TRACEPOINT;
	ev->attr.config = id;
	ev->kind = EV_TRACEPOINT;
	return 0;
}

static bool is_modifier(const char *m)
{
	if (!*m)
		return false;
	for (; *m; m++)
		if (!strchr("ukhpGH", *m))
			return false;
	return true;
}

static int apply_modifiers(const char *m, struct perf_event_attr *a)
{
	bool u = strchr(m, 'u'), k = strchr(m, 'k'), h = strchr(m, 'h');
	int p = 0;

	for (const char *c = m; *c; c++)
		p += *c == 'p';
	if (p > 3)
		return -EINVAL;
	/* perf: naming any of u/k/h excludes the others. */
	if (u || k || h) {
		a->exclude_user = !u;
		a->exclude_kernel = !k;
		a->exclude_hv = !h;
	}
	a->precise_ip = p;
	return 0;
}

static int parse_base(const char *s, struct event_spec *ev, char *err, size_t errlen)
{
	const char *colon;

	for (size_t i = 0; i < ARRAY_SIZE(builtin); i++)
		if (!strcmp(s, builtin[i].name)) {
			ev->kind = builtin[i].kind;
			/* EV_SCHED is no perf event: a type the kernel refuses, should anything open it. */
			ev->attr.type = builtin[i].kind == EV_HW	   ? PERF_TYPE_HARDWARE
					: builtin[i].kind == EV_SCHED ? PERF_TYPE_MAX
								      : PERF_TYPE_SOFTWARE;
			ev->attr.config = builtin[i].config;
			ev->unit = builtin[i].unit;
			return 0;
		}
	if (!parse_cache(s, &ev->attr)) {
		ev->kind = EV_CACHE;
		return 0;
	}
	if (s[0] == 'r' && s[1] && strspn(s + 1, "0123456789abcdefABCDEF") == strlen(s + 1)) {
		if (strlen(s + 1) > 16) {
			set_err(err, errlen, "raw event '%s' has more than 64 bits", s);
			return -ERANGE;
		}
		ev->kind = EV_RAW;
		ev->attr.type = PERF_TYPE_RAW;
		ev->attr.config = strtoull(s + 1, NULL, 16);
		return 0;
	}
	if (strchr(s, '/'))
		return parse_pmu(s, ev, err, errlen);
	colon = strchr(s, ':');
	if (colon) {
		char cat[EV_NAME_LEN];

		snprintf(cat, sizeof(cat), "%.*s", (int)(colon - s), s);
		return parse_tracepoint(cat, colon + 1, ev, err, errlen);
	}
	if (!parse_pmu_event_name(s, ev, err, errlen))
		return 0;
	set_err(err, errlen, "event '%s' is unknown; run 'spanperf list' to see what this machine offers",
		s);
	return -ENOENT;
}

/*
 * Where do the modifiers start?  "cycles:u" and "cpu/event=0x3c/:k" have
 * them; "sched:sched_switch" is a tracepoint and "sched:sched_switch:k" is
 * one with modifiers.  Returns the length of the base name.
 */
static size_t split_modifiers(const char *s)
{
	const char *last = strrchr(s, ':'), *first = strchr(s, ':');
	size_t len = strlen(s);
	struct event_spec probe;
	char base[EV_NAME_LEN];

	if (!last || !is_modifier(last + 1))
		return len;
	if (strchr(s, '/'))
		return last > s && last[-1] == '/' ? (size_t)(last - s) : len;
	if (first != last)
		return last - s; /* cat:name:mods */
	/* One colon: modifiers only if the part before it is an event by itself. */
	snprintf(base, sizeof(base), "%.*s", (int)(last - s), s);
	return parse_base(base, &probe, NULL, 0) ? len : (size_t)(last - s);
}

int event_parse(const char *s, struct event_spec *ev, char *err, size_t errlen)
{
	char base[EV_NAME_LEN];
	size_t blen;
	int r;

	memset(ev, 0, sizeof(*ev));
	if (!s || !*s) {
		set_err(err, errlen, "event name is empty");
		return -EINVAL;
	}
	if (strlen(s) >= EV_NAME_LEN) {
		set_err(err, errlen, "event '%.40s...' is longer than %d characters", s, EV_NAME_LEN - 1);
		return -ENAMETOOLONG;
	}
	blen = split_modifiers(s);
	memcpy(base, s, blen);
	base[blen] = 0;
	r = parse_base(base, ev, err, errlen);
	if (r)
		return r;
	if (s[blen] && apply_modifiers(s + blen + 1, &ev->attr)) {
		set_err(err, errlen, "event '%s' has bad modifiers ':%s' (use u, k, h and up to three p)",
			s, s + blen + 1);
		return -EINVAL;
	}
	snprintf(ev->name, sizeof(ev->name), "%s", s);
	ev->attr.size = sizeof(ev->attr);
	return 0;
}

int event_list_parse(const char *s, struct event_spec **evs, int *n, char *err, size_t errlen)
{
	struct event_spec *v = NULL;
	int cnt = 0, r = 0;
	const char *p = s;

	*evs = NULL;
	*n = 0;
	if (!s || !*s) {
		set_err(err, errlen, "event list is empty");
		return -EINVAL;
	}
	while (*p) {
		char one[EV_NAME_LEN + 1];
		int in_pmu = 0;
		size_t l = 0;
		struct event_spec *nv;

		/* Split on commas, except inside pmu/.../ */
		while (p[l] && (p[l] != ',' || in_pmu)) {
			if (p[l] == '/')
				in_pmu = !in_pmu;
			l++;
		}
		if (l == 0 || l > EV_NAME_LEN) {
			set_err(err, errlen, l ? "event '%.40s...' is too long" : "event list '%s' has an empty entry",
				l ? p : s);
			r = -EINVAL;
			goto cleanup;
		}
		memcpy(one, p, l);
		one[l] = 0;
		nv = realloc(v, (cnt + 1) * sizeof(*v));
		if (!nv) {
			r = -ENOMEM;
			goto cleanup;
		}
		v = nv;
		r = event_parse(one, &v[cnt], err, errlen);
		if (r)
			goto cleanup;
		cnt++;
		p += l;
		if (*p == ',') {
			p++;
			if (!*p) {
				set_err(err, errlen, "event list '%s' ends with a comma", s);
				r = -EINVAL;
				goto cleanup;
			}
		}
	}
	*evs = v;
	*n = cnt;
	v = NULL;
cleanup:
	free(v);
	return r;
}

void event_default_cycles(struct event_spec *ev)
{
	event_parse("cycles", ev, NULL, 0);
}

void event_cpu_clock(struct event_spec *ev)
{
	event_parse("cpu-clock", ev, NULL, 0);
}

void event_sampling_attr(struct perf_event_attr *a, bool freq, __u64 n)
{
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
	if (freq) {
		a->freq = 1;
		a->sample_freq = n;
	} else {
		a->sample_period = n;
	}
	a->disabled = 1;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
}

bool event_errno_means_no_pmu(int err)
{
	err = err < 0 ? -err : err;
	return err == EOPNOTSUPP || err == ENOENT || err == ENODEV || err == EINVAL || err == EACCES;
}
