// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "log.h"
#include "report_filter.h"
#include "util.h"

static int add_name(struct name_set *set, const char *name, size_t len)
{
	char *s = strndup(name, len);
	int e = s && strpool_intern(&set->pool, s, NULL) ? 0 : -ENOMEM;

	free(s);
	return e;
}

/* file://PATH: one entry per line, blank lines skipped, as perf's strlist reads it. */
static int add_file(struct name_set *set, const char *path, const char *opt, char *err, size_t errlen)
{
	char *text = NULL;
	size_t len;
	int e = read_file_all(path, &text, &len);

	if (e)
		return set_errorf(err, errlen, e, "%s: cannot read file://%s: %s", opt, path, strerror(-e));
	for (char *p = text, *nl; !e && p < text + len; p = nl + 1) {
		nl = memchr(p, '\n', text + len - p);
		if (!nl)
			nl = text + len;
		if (nl > p)
			e = add_name(set, p, nl - p);
	}
	free(text);
	return e ? set_errorf(err, errlen, e, "out of memory reading %s's list", opt) : 0;
}

int name_set_add(struct name_set *set, const char *arg, const char *opt, char *err, size_t errlen)
{
	set->on = true;
	for (const char *p = arg, *c; *p; p = *c ? c + 1 : c) {
		char path[4096];
		int e;

		c = strchr(p, ',');
		if (!c)
			c = p + strlen(p);
		if (c - p > 7 && !strncmp(p, "file://", 7)) {
			if ((size_t)(c - p - 7) >= sizeof(path))
				return set_errorf(err, errlen, -ENAMETOOLONG, "%s: the file name in '%.*s' is too long",
						  opt, (int)(c - p), p);
			snprintf(path, sizeof(path), "%.*s", (int)(c - p - 7), p + 7);
			e = add_file(set, path, opt, err, errlen);
			if (e)
				return e;
		} else if (c > p && add_name(set, p, c - p)) {
			return set_errorf(err, errlen, -ENOMEM, "out of memory reading %s", opt);
		}
	}
	return 0;
}

static bool pool_eq(const void *ctx, size_t idx)
{
	const void *const *c = ctx;

	return !strcmp(((const struct strpool *)c[0])->str[idx], c[1]);
}

bool name_set_has(const struct name_set *set, const char *name)
{
	const void *ctx[2] = { &set->pool, name };

	return name && hindex_find(&set->pool.idx, hash_str(name), pool_eq, ctx) >= 0;
}

/*
 * perf's seconds: digits, then optionally '.' and up to 9 digits of the
 * fraction (padded to nanoseconds).  Empty: 0, the open side.
 */
static int parse_secs(const char *s, size_t len, __u64 *ns)
{
	__u64 sec = 0, frac = 0;
	size_t i = 0, digits = 0;

	*ns = 0;
	if (!len)
		return 0;
	for (; i < len && isdigit((unsigned char)s[i]); i++) {
		if (sec > (UINT64_MAX / 1000000000ull - 9) / 10)
			return -ERANGE;
		sec = sec * 10 + (s[i] - '0');
	}
	if (!i)
		return -EINVAL;
	if (i < len) {
		if (s[i++] != '.')
			return -EINVAL;
		for (; i < len && isdigit((unsigned char)s[i]); i++, digits++)
			frac = frac * 10 + (s[i] - '0');
		if (i < len || digits > 9)
			return -EINVAL;
		while (digits++ < 9)
			frac *= 10;
	}
	*ns = sec * 1000000000ull + frac;
	return 0;
}

/* START and END of "START,END": either may be empty; an end before its start is no range. */
static int parse_abs(const char *a, size_t alen, const char *b, size_t blen, struct time_range *r)
{
	while (blen && isspace((unsigned char)*b)) {
		b++;
		blen--;
	}
	if (memchr(b, ',', blen) || parse_secs(a, alen, &r->start) || parse_secs(b, blen, &r->end))
		return -EINVAL;
	return r->end && r->end < r->start ? -EINVAL : 0;
}

/* "P%": the fraction P/100, P a number; the '%' ends it. */
static int parse_pct(const char *s, size_t len, double *out)
{
	char buf[64], *end;

	if (len < 2 || len >= sizeof(buf) || s[len - 1] != '%')
		return -EINVAL;
	memcpy(buf, s, len - 1);
	buf[len - 1] = 0;
	*out = strtod(buf, &end);
	if (end == buf || *end || !(isdigit((unsigned char)buf[0]) || buf[0] == '.') || !isfinite(*out))
		return -EINVAL;
	*out /= 100.0;
	return 0;
}

/* As perf's set_percent_time: the end is the last ns before the next slice, but at the last sample. */
static int pct_range(double a, double b, __u64 first, __u64 last, struct time_range *r)
{
	__u64 total = last - first;

	if (a < 0 || a > 1 || b < 0 || b > 1)
		return -EINVAL;
	r->start = first + (__u64)llround(a * total);
	r->end = first + (__u64)llround(b * total);
	if (r->end > r->start && r->end != last)
		r->end--;
	return 0;
}

/* One percent piece: "P%/N", "A%-B%" or (alone) "P%". */
static int parse_pct_piece(const char *s, size_t len, char form, __u64 first, __u64 last, struct time_range *r)
{
	const char *sep = form ? memchr(s, form, len) : NULL;
	double a, b;

	if (form == '/') {
		char num[16], *end;
		long n;

		if (!sep || parse_pct(s, sep - s, &a) || a <= 0 || s + len - sep - 1 <= 0 ||
		    s + len - sep - 1 >= (long)sizeof(num))
			return -EINVAL;
		memcpy(num, sep + 1, s + len - sep - 1);
		num[s + len - sep - 1] = 0;
		n = strtol(num, &end, 10);
		if (*end || end == num)
			return -EINVAL;
		return pct_range(a * (n - 1), a * n, first, last, r);
	}
	if (form == '-') {
		if (!sep || parse_pct(s, sep - s, &a) || parse_pct(sep + 1, s + len - sep - 1, &b))
			return -EINVAL;
		return pct_range(a, b, first, last, r);
	}
	if (parse_pct(s, len, &a) || a <= 0)
		return -EINVAL;
	return pct_range(0, a, first, last, r);
}

int time_ranges_parse(const char *s, __u64 first, __u64 last, struct time_range **out, size_t *n, char *err,
		      size_t errlen)
{
	bool pct = strchr(s, '%');
	char form = !pct ? 0 : strchr(s, '/') ? '/' : strchr(s, '-') ? '-' : 0;
	size_t cap = 1, k = 0;
	struct time_range *r;
	int e = 0;

	*out = NULL;
	*n = 0;
	for (const char *p = s; *p; p++)
		cap += *p == ',';
	if (pct && !first && !last)
		return set_errorf(err, errlen, -EINVAL,
				  "--time '%s': percentages need the first and last sample times, which this file does not have",
				  s);
	r = calloc(cap, sizeof(*r));
	if (!r)
		return set_errorf(err, errlen, -ENOMEM, "out of memory reading --time");
	if (pct) {
		/* Comma-separated pieces of one form; "P%" alone. */
		for (const char *p = s, *c; !e; p = c + 1) {
			c = strchr(p, ',');
			if (!c)
				c = p + strlen(p);
			if (!form && (*c || k))
				e = -EINVAL;
			else
				e = parse_pct_piece(p, c - p, form, first, last, &r[k++]);
			if (!*c)
				break;
		}
	} else {
		/*
		 * "S,E" ranges separated by white space, in order and apart
		 * (perf_time__parse_strs): space may follow a comma, END runs
		 * to the next space.
		 */
		for (const char *p = s, *c, *q; !e; p = q) {
			while (isspace((unsigned char)*p))
				p++;
			if (!*p)
				break;
			c = strchr(p, ',');
			if (!c || k == cap) {
				e = -EINVAL;
				break;
			}
			for (q = c + 1; isspace((unsigned char)*q); q++)
				;
			while (*q && !isspace((unsigned char)*q))
				q++;
			e = parse_abs(p, c - p, c + 1, q - c - 1, &r[k++]);
		}
		if (!k)
			e = -EINVAL;
		for (size_t i = 0; i + 1 < k && !e; i++)
			if (r[i].end >= r[i + 1].start)
				e = -EINVAL;
	}
	if (e) {
		free(r);
		return set_errorf(err, errlen, -EINVAL,
				  "--time '%s' is not START,END (seconds, as perf script prints them; several separated "
				  "by spaces), P%%, P%%/N or A%%-B%% (several separated by commas)", s);
	}
	*out = r;
	*n = k;
	return 0;
}

bool time_ranges_keep(const struct time_range *r, size_t n, __u64 t)
{
	if (!n || !t)
		return true;
	for (size_t i = 0; i < n; i++)
		if ((!r[i].start || t >= r[i].start) && (!r[i].end || t <= r[i].end))
			return true;
	return false;
}

bool report_filter_active(const struct report_filter *f)
{
	return report_filter_lists(f) || (f && f->time);
}

bool report_filter_lists(const struct report_filter *f)
{
	return f && (f->comms.on || f->dsos.on || f->syms.on || f->pids.n || f->tids.n);
}

bool report_filter_by_address(const struct report_filter *f)
{
	return f && (f->dsos.on || f->syms.on);
}

void report_filter_free(struct report_filter *f)
{
	if (!f)
		return;
	strpool_free(&f->comms.pool);
	strpool_free(&f->dsos.pool);
	strpool_free(&f->syms.pool);
	int_list_free(&f->pids);
	int_list_free(&f->tids);
}
