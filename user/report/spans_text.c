// SPDX-License-Identifier: GPL-2.0
/* report --spans as text: one row per span name, and otel spans by attribute. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbuf.h"
#include "spans_view.h"

#define SPLIT_BAR 20
#define TOP_SHOWN 3
#define ATTR_VALUES_SHOWN 10
/*
 * Every name here is a recorded process's to choose (span names, counter
 * names, functions, attributes): printed as text_name shows them, so that
 * no newline forges a row and no escape sequence reaches a terminal.
 */
#define NAME_MAX_SHOWN 1024

/* The first n bytes of s (up to a NUL), escaped into buf. */
static const char *shown_n(const char *s, size_t n, char *buf, size_t len)
{
	char raw[NAME_MAX_SHOWN];

	snprintf(raw, sizeof(raw), "%.*s", (int)(n < sizeof(raw) ? n : sizeof(raw) - 1), s);
	return text_name(raw, NULL, buf, len) == raw ? strcpy(buf, raw) : buf;
}

/*
 * [####rr....DD      ]: the summed split of a name's spans, SPLIT_BAR cells,
 * each part rounded by the largest remainder so that the cells add up.
 */
static void split_bar(FILE *out, const struct span_split *x)
{
	static const char mark[4] = { '#', 'r', '.', 'D' };
	__u64 part[4] = { x->on, x->runq, x->sleep, x->blocked }, total = 0;
	int cells[4], used = 0;
	bool spent[4] = {};
	char bar[SPLIT_BAR + 1];

	for (int i = 0; i < 4; i++)
		total += part[i];
	if (!total) {
		fprintf(out, "  %-*s", SPLIT_BAR + 2, "-");
		return;
	}
	for (int i = 0; i < 4; i++) {
		cells[i] = part[i] * SPLIT_BAR / total;
		used += cells[i];
	}
	while (used < SPLIT_BAR) {
		int best = -1;
		__u64 rem = 0;

		for (int i = 0; i < 4; i++) {
			__u64 rm = part[i] * SPLIT_BAR - (__u64)cells[i] * total;

			if (!spent[i] && (best < 0 || rm > rem)) {
				rem = rm;
				best = i;
			}
		}
		cells[best]++;
		spent[best] = true;
		used++;
	}
	used = 0;
	for (int i = 0; i < 4; i++)
		for (int k = 0; k < cells[i]; k++)
			bar[used++] = mark[i];
	bar[used] = 0;
	fprintf(out, "  [%s]", bar);
}

void spans_print_columns(const struct spans_view *v, FILE *out)
{
	char esc[NAME_MAX_SHOWN];

	fprintf(out, "# %-20s %-10s %8s", "name", "source", "count");
	if (v->window_s > 0)
		fprintf(out, " %9s", "rate/s");
	fprintf(out, " %10s %10s %10s %8s", "p50 ms", "p99 ms", "max ms", "samples");
	for (int k = 0; k < v->table_ctr; k++)
		fprintf(out, " %14s", text_name(v->ctr_names[k], NULL, esc, sizeof(esc)));
	if (v->offcpu)
		fprintf(out, " %12s  %-24s", "off-CPU ms", "blocked in");
	if (v->any_split)
		fprintf(out, "  %-*s", SPLIT_BAR + 2, "wall: on|runq|sleep|D");
	fprintf(out, "  top functions inside\n");
}

static void print_header(const struct spans_view *v, FILE *out)
{
	fprintf(out, "# %zu spans of %zu kinds, %zu samples\n#\n", v->nr_rows, v->table->nr_kinds, v->nr_samples);
	spans_print_columns(v, out);
}

/* A name's spans: counters and time off CPU per span, what one of them typically costs. */
void spans_print_kind(const struct spans_view *v, const struct spans_kind *kd, FILE *out)
{
	size_t cnt = kd->count;
	char esc[NAME_MAX_SHOWN];

	fprintf(out, "  %-20s", text_name(kd->name, NULL, esc, sizeof(esc)));
	fprintf(out, " %-10s %8zu", kd->source, cnt);
	if (v->window_s > 0)
		fprintf(out, " %9.1f", kd->rate);
	fprintf(out, " %10.3f %10.3f %10.3f %8zu", kd->p50 / 1e6, kd->p99 / 1e6, kd->max / 1e6, kd->samples);
	for (int k = 0; k < v->table_ctr; k++) {
		double mean = cnt ? (double)kd->ctr_sum[k] / cnt : 0;

		if (v->ctr_clock[k])
			fprintf(out, " %11.3f ms", mean / 1e6);
		else
			fprintf(out, " %14.1f", mean);
	}
	if (v->offcpu)
		fprintf(out, " %9.3f ms  %-24.24s", cnt ? kd->off_ns / 1e6 / cnt : 0,
			kd->blocked_in ? text_name(kd->blocked_in, NULL, esc, sizeof(esc)) : "-");
	if (v->any_split)
		split_bar(out, &kd->split);
	fprintf(out, " ");
	for (size_t t = 0; t < kd->nr_top && t < TOP_SHOWN; t++)
		fprintf(out, " %s %.0f%%", text_name(kd->top[t].name, NULL, esc, sizeof(esc)), kd->samples ? 100.0 * kd->top[t].n / kd->samples : 0);
	fprintf(out, "\n");
}

static bool same_key(const struct spans_attr_group *a, const struct spans_attr_group *b)
{
	return a->key_len == b->key_len && !memcmp(a->key, b->key, a->key_len);
}

/* otel spans by the value of each attribute; a key with many values (user.id) shows its busiest. */
static void print_groups(const struct spans_view *v, FILE *out)
{
	const struct spans_table *t = v->table;
	char key[NAME_MAX_SHOWN], value[NAME_MAX_SHOWN];
	size_t shown = 0;

	if (!t->nr_groups)
		return;
	fprintf(out, "#\n# otel spans by attribute\n# %-24s %-24s %8s %10s %10s %8s\n", "attribute", "value", "count",
		"p50 ms", "p99 ms", "samples");
	for (size_t i = 0; i < t->nr_groups; i++) {
		const struct spans_attr_group *g = &t->group[i];

		shown = i && !same_key(g, &t->group[i - 1]) ? 0 : shown;
		if (shown++ == ATTR_VALUES_SHOWN) {
			size_t more = 0;

			while (i + more < t->nr_groups && same_key(&t->group[i + more], g))
				more++;
			fprintf(out, "  %-24s (%zu more values)\n", shown_n(g->key, g->key_len, key, sizeof(key)), more);
			i += more - 1;
			continue;
		}
		fprintf(out, "  %-24s", shown_n(g->key, g->key_len, key, sizeof(key)));
		fprintf(out, " %-24s %8zu %10.3f %10.3f %8zu\n", text_name(g->value, NULL, value, sizeof(value)), g->count,
			g->p50 / 1e6, g->p99 / 1e6, g->samples);
	}
}

/* Text: one row per span name, with percentiles, samples, counters per span and top functions. */
int spans_print_table(const struct spans_view *v, FILE *out)
{
	print_header(v, out);
	for (size_t k = 0; k < v->table->nr_kinds; k++)
		spans_print_kind(v, &v->table->kind[k], out);
	if (v->table_ctr)
		fprintf(out, "#\n# counters are means per span; samples are those of the span's thread inside it\n");
	if (v->any_split)
		fprintf(out, "# wall: where the spans' time went, from the scheduler's accounts: # on CPU, r waiting for a CPU, . asleep, D blocked (uninterruptible, I/O)\n");
	if (v->offcpu)
		fprintf(out, "# off-CPU ms: mean time blocked per span; blocked in: the first span's heaviest blocking stack%s\n",
			v->unjoinable ? " (sums of short blocks are left out: record with --off-cpu-thresh 0)" : "");
	print_groups(v, out);
	return 0;
}

static void print_kind(const void *v, const void *kd, FILE *out)
{
	spans_print_kind(v, kd, out);
}

int spans_rows__build(struct spans_rows *r, const struct spans_view *v, const char *filter, size_t max_rows)
{
	const struct spans_table *t = v->table;

	*r = (struct spans_rows){ .nr_all = t->nr_kinds };
	r->kind = calloc(t->nr_kinds ? t->nr_kinds : 1, sizeof(*r->kind));
	if (!r->kind)
		return -ENOMEM;
	for (size_t k = 0; k < t->nr_kinds && (!max_rows || r->nr < max_rows); k++)
		if (!filter || !filter[0] || printed_holds(print_kind, v, &t->kind[k], filter))
			r->kind[r->nr++] = &t->kind[k];
	return 0;
}

void spans_rows__free(struct spans_rows *r)
{
	if (!r)
		return;
	free(r->kind);
	r->kind = NULL;
	r->nr = 0;
}
