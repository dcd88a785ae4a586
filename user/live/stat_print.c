// SPDX-License-Identifier: GPL-2.0
/* stat's text (perf stat's layout) and JSON lines (perf stat -j's fields). */
#include <stdio.h>
#include <string.h>

#include "sbuf.h"
#include "stat_print.h"

static bool is_clock(const struct counter_event *e)
{
	return e->spec.unit && !strcmp(e->spec.unit, "msec");
}

/* Scaled as perf does for multiplexed counters; software counters always run. */
static double scaled(__u64 v, __u64 ena, __u64 run)
{
	if (!run)
		return 0;
	return run < ena ? (double)v * ena / run : (double)v;
}

static void commas(char *buf, size_t len, double v)
{
	char raw[64];
	int n, lead, o = 0;

	snprintf(raw, sizeof(raw), "%.0f", v);
	n = strlen(raw);
	lead = n % 3 ? n % 3 : 3;
	for (int i = 0; i < n && o + 2 < (int)len; i++) {
		if (i && i >= lead && (i - lead) % 3 == 0 && raw[i - 1] != '-')
			buf[o++] = ',';
		buf[o++] = raw[i];
	}
	buf[o] = 0;
}

static void print_value(FILE *f, const char *prefix, const struct counter_event *e, double v,
			__u64 ena, __u64 run, double elapsed_s, double task_clock_ms)
{
	char num[64];

	if (is_clock(e)) {
		snprintf(num, sizeof(num), "%.2f", v / 1e6);
		fprintf(f, "%s%18s msec %-30s", prefix, num, e->spec.name);
		if (!strcmp(e->spec.name, "task-clock") && elapsed_s > 0)
			fprintf(f, " # %8.3f CPUs utilized", v / 1e9 / elapsed_s);
	} else {
		commas(num, sizeof(num), v);
		fprintf(f, "%s%18s      %-30s", prefix, num, e->spec.name);
		if (task_clock_ms > 0)
			fprintf(f, " # %10.3f K/sec", v / task_clock_ms);
		else if (elapsed_s > 0)
			fprintf(f, " # %10.2f /sec", v / elapsed_s);
	}
	if (run && run < ena)
		fprintf(f, "  (%.2f%%)", 100.0 * run / ena);
	fputc('\n', f);
}

static void print_json(FILE *f, const struct thread_counts *t, const struct counter_event *e, double v,
		       __u64 ena, __u64 run, double interval)
{
	struct sbuf b = {};

	sbuf_printf(&b, "{");
	if (interval >= 0)
		sbuf_printf(&b, "\"interval\":%.9f,", interval);
	sbuf_printf(&b, "\"pid\":%d,\"tid\":%d,\"comm\":", (int)t->pid, (int)t->tid);
	sbuf_json_str(&b, t->comm);
	sbuf_printf(&b, ",\"event\":");
	sbuf_json_str(&b, e->spec.name);
	if (e->slot == COUNTER_UNSUPPORTED) {
		sbuf_printf(&b, ",\"counter-value\":\"<not supported>\",\"unit\":\"\",\"event-runtime\":0,"
				"\"pcnt-running\":0.00,\"reason\":");
		sbuf_json_str(&b, e->why);
	} else if (is_clock(e)) {
		sbuf_printf(&b, ",\"counter-value\":%.6f,\"unit\":\"msec\"", v / 1e6);
	} else {
		sbuf_printf(&b, ",\"counter-value\":%.0f,\"unit\":\"\"", v);
	}
	if (e->slot != COUNTER_UNSUPPORTED)
		sbuf_printf(&b, ",\"event-runtime\":%llu,\"pcnt-running\":%.2f", (unsigned long long)run,
			    ena ? 100.0 * run / ena : 100.0);
	sbuf_printf(&b, "}\n");
	if (!b.err)
		fwrite(b.p, 1, b.len, f);
	sbuf_free(&b);
}

int stat_cmp_threads(const void *a, const void *b)
{
	const struct thread_counts *x = a, *y = b;

	if (x->value[0] != y->value[0])
		return x->value[0] < y->value[0] ? 1 : -1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

static bool any_count(const struct thread_counts *t, int nr)
{
	for (int k = 0; k < nr; k++)
		if (t->value[k] || t->running[k])
			return true;
	return false;
}

/* perf stat -j's lines: one per thread and event, then one per event not supported. */
static void print_json_reading(FILE *out, const struct stat_events *evs, const struct stat_reading *rd,
			       double interval)
{
	const struct thread_counts *t = rd->t;

	for (int i = 0; i < rd->n; i++) {
		if (!any_count(&t[i], SP_MAX_COUNTERS))
			continue;
		for (int k = 0; k < evs->nr; k++) {
			if (evs->ev[k].slot == COUNTER_UNSUPPORTED)
				continue;
			print_json(out, &t[i], &evs->ev[k], scaled(t[i].value[k], t[i].enabled[k], t[i].running[k]),
				   t[i].enabled[k], t[i].running[k], interval);
		}
	}
	for (int k = 0; k < evs->nr; k++)
		if (evs->ev[k].slot == COUNTER_UNSUPPORTED) {
			struct thread_counts none = { .tid = -1, .pid = -1 };

			print_json(out, &none, &evs->ev[k], 0, 0, 0, interval);
		}
}

static void target_desc(const struct stat_opts *o, char *buf, size_t len)
{
	if (o->pids.n)
		snprintf(buf, len, "process id '%d%s'", o->pids.v[0], o->pids.n > 1 ? ",..." : "");
	else if (o->tids.n)
		snprintf(buf, len, "thread id '%d%s'", o->tids.v[0], o->tids.n > 1 ? ",..." : "");
	else
		snprintf(buf, len, "'system wide'");
}

static void print_title(FILE *out, const struct stat_opts *o)
{
	char what[128];

	if (o->cmd) {
		struct sbuf b = {};

		for (char **a = o->cmd; *a; a++)
			sbuf_printf(&b, "%s%s", a == o->cmd ? "" : " ", *a);
		sbuf_zero(&b, 1);
		/* perf's words: CMD's own count, or what -a, -p and -t count while it runs. */
		if (!o->all_cpus && !o->pids.n && !o->tids.n)
			fprintf(out, "\n Performance counter stats for '%s':\n\n", b.err ? "?" : b.p);
		else
			fprintf(out, "\n Performance counter stats for '%s' (%s):\n\n", b.err ? "?" : b.p,
				o->pids.n || o->tids.n ? "filtered" : "system wide");
		sbuf_free(&b);
	} else {
		target_desc(o, what, sizeof(what));
		fprintf(out, "\n Performance counter stats for %s:\n\n", what);
	}
}

/* The task-clock of a row, in ms, for the K/sec of the others; 0 without one. */
static double task_clock_ms(const struct stat_events *evs, const __u64 *value)
{
	double ms = 0;

	for (int k = 0; k < evs->nr; k++)
		if (evs->ev[k].slot != COUNTER_UNSUPPORTED && !strcmp(evs->ev[k].spec.name, "task-clock"))
			ms = value[k] / 1e6;
	return ms;
}

static void print_per_thread(FILE *out, const struct stat_events *evs, const struct stat_reading *rd,
			     const char *prefix)
{
	const struct thread_counts *t = rd->t;

	for (int i = 0; i < rd->n; i++) {
		char who[64];
		double ms;

		if (!any_count(&t[i], SP_MAX_COUNTERS))
			continue;
		snprintf(who, sizeof(who), "%s%16s-%-8d", prefix, t[i].comm, (int)t[i].tid);
		ms = task_clock_ms(evs, t[i].value);
		for (int k = 0; k < evs->nr; k++) {
			const struct counter_event *e = &evs->ev[k];

			if (e->slot == COUNTER_UNSUPPORTED)
				continue;
			print_value(out, who, e, scaled(t[i].value[k], t[i].enabled[k], t[i].running[k]),
				    t[i].enabled[k], t[i].running[k], 0, is_clock(e) ? 0 : ms);
		}
	}
}

static void print_totals(FILE *out, const struct stat_events *evs, const struct event_sums *tot,
			 const char *prefix, double elapsed_s)
{
	double task_ms = task_clock_ms(evs, tot->value);

	for (int k = 0; k < evs->nr; k++) {
		const struct counter_event *e = &evs->ev[k];

		if (e->slot == COUNTER_UNSUPPORTED) {
			fprintf(out, "%s%18s      %s\n", prefix, "<not supported>", e->spec.name);
			continue;
		}
		print_value(out, prefix, e, scaled(tot->value[k], tot->enabled[k], tot->running[k]),
			    tot->enabled[k], tot->running[k], elapsed_s, is_clock(e) ? 0 : task_ms);
	}
}

void stat_print(FILE *out, const struct stat_opts *o, const struct stat_events *evs, const struct stat_reading *rd,
		double interval, double elapsed_s)
{
	char prefix[32] = "";

	if (interval >= 0)
		snprintf(prefix, sizeof(prefix), "%16.9f ", interval);
	if (o->json) {
		print_json_reading(out, evs, rd, interval);
	} else {
		if (interval < 0)
			print_title(out, o);
		if (o->per_thread)
			print_per_thread(out, evs, rd, prefix);
		else
			print_totals(out, evs, &rd->tot, prefix, interval >= 0 ? 0 : elapsed_s);
		if (interval < 0) {
			fprintf(out, "\n%18.9f seconds time elapsed\n\n", elapsed_s);
			for (int k = 0; k < evs->nr; k++)
				if (evs->ev[k].slot == COUNTER_UNSUPPORTED)
					fprintf(out, "%s\n", evs->ev[k].why);
		}
	}
	fflush(out);
}
