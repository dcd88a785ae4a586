// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "util.h"

int parse_u64(const char *s, uint64_t *out, uint64_t min, uint64_t max)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (*end || end == s || errno)
		return -EINVAL;
	/* NaN fails both comparisons, so test for the good range. */
	if (!(v > 0 && v <= 365.0 * 86400))
		return -ERANGE;
	*out = v;
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

int int_list_parse(struct int_list *l, const char *s, bool ranges, int max)
{
	char *copy = NULL, *tok, *save = NULL;
	int err = 0, cap = 0, i, j;

	l->v = NULL;
	l->n = 0;
	if (!s || !*s)
		return -EINVAL;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t lo, hi;
		char *dash = ranges ? strchr(tok, '-') : NULL;

		if (dash)
			*dash = 0;
		err = parse_u64(tok, &lo, 0, max);
		if (!err)
			err = dash ? parse_u64(dash + 1, &hi, lo, max) : 0;
		if (err)
			goto cleanup;
		if (!dash)
			hi = lo;
		for (uint64_t x = lo; x <= hi; x++) {
			if (l->n == cap) {
				int *nv;

				cap = cap ? cap * 2 : 8;
				nv = realloc(l->v, cap * sizeof(*nv));
				if (!nv) {
					err = -ENOMEM;
					goto cleanup;
				}
				l->v = nv;
			}
			l->v[l->n++] = (int)x;
		}
	}
	if (!l->n) {
		err = -EINVAL;
		goto cleanup;
	}
	sort_n(l->v, l->n, sizeof(*l->v), cmp_int);
	for (i = 1, j = 1; i < l->n; i++)
		if (l->v[i] != l->v[j - 1])
			l->v[j++] = l->v[i];
	l->n = j;
cleanup:
	free(copy);
	if (err)
		int_list_free(l);
	return err;
}

bool int_list_has(const struct int_list *l, int x)
{
	return l->n && bsearch(&x, l->v, l->n, sizeof(int), cmp_int);
}

void int_list_free(struct int_list *l)
{
	if (!l)
		return;
	free(l->v);
	l->v = NULL;
	l->n = 0;
}
