// SPDX-License-Identifier: GPL-2.0
/*
 * libspanperf from C: what a function costs this thread, and spans that a
 * whole-host recording and the OTLP JSON lines both show.
 *
 *   make lib && make install PREFIX=$HOME/.local
 *   cc -O2 examples/libspanperf_example.c $(pkg-config --cflags --libs spanperf) -o example
 *   SPANPERF_SPANS=spans.jsonl ./example
 *   spanperf record --otel -o perf.data -- ./example     # root: spans by name, no probe
 *   spanperf report --spans
 *   spanperf annotate --spans spans.jsonl
 */
#include <stdio.h>
#include <stdlib.h>

#include <spanperf/spanperf.h>

static void work(void *arg)
{
	size_t n = *(size_t *)arg;
	volatile char *p = malloc(n);

	/* Fresh pages: one page fault each (or one per huge page). */
	for (size_t i = 0; p && i < n; i += 4096)
		p[i] = 1;
	free((void *)p);
}

int main(void)
{
	const char *events = "task-clock,context-switches,page-faults";
	struct spanperf_counters *c;
	struct spanperf_span s;
	uint64_t v[3];
	size_t n = 4 << 20;

	/* One measurement: open, read, run, read, close. */
	if (spanperf_measure(events, work, &n, v)) {
		fprintf(stderr, "%s\n", spanperf_strerror());
		return 1;
	}
	printf("work: %.3f ms task-clock, %llu context switches, %llu page faults\n", v[0] / 1e6,
	       (unsigned long long)v[1], (unsigned long long)v[2]);

	/* A handle kept open: each read is one group read (see COST PATHS in the header). */
	c = spanperf_counters_open(events, 0);
	if (!c) {
		fprintf(stderr, "%s\n", spanperf_strerror());
		return 1;
	}
	for (int i = 0; i < spanperf_counters_count(c); i++)
		printf("%s is read by %s\n", spanperf_counters_name(c, i), spanperf_counters_path(c, i));
	spanperf_counters_close(c);

	/* An event this machine cannot count is an error that says why, never zeros. */
	if (!spanperf_counters_open("cycles", 0))
		printf("cycles: %s\n", spanperf_strerror());

	/* Spans nest; each is the thread's OpenTelemetry context while it runs. */
	for (int i = 0; i < 10; i++) {
		spanperf_span_begin("request");
		spanperf_span_begin("parse");
		work(&n);
		spanperf_span_end(&s);
		spanperf_span_end(NULL);
	}
	printf("last %s: %.3f ms wall, %s %llu, %s %llu\n", s.name, s.wall_ns / 1e6, s.counter_names[1],
	       (unsigned long long)s.deltas[1], s.counter_names[2], (unsigned long long)s.deltas[2]);
	return 0;
}
