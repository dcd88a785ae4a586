// SPDX-License-Identifier: GPL-2.0
/*
 * A publisher that names key 2 "spanperf.counters" as libspanperf does and
 * leaves hostile final states in its records, for the recorder's reader of
 * counter deltas (record --otel):
 *
 *   otel_final_client
 *
 * One span per case below, each burning 5 ms of its thread's CPU (so the
 * recorder sees it begin), then given its final attribute bytes, then left
 * for no context and a short sleep (so the recorder sees it end while the
 * record still holds them).  Each record is its own, never reused.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define OTEL_THREAD_CTX_DEFINE
#include "otel_thread_ctx.h"
#include "otel_process_ctx.h"

static volatile uint64_t sink;

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void burn(uint64_t ns)
{
	uint64_t end = cpu_ns() + ns;

	while (cpu_ns() < end)
		for (int i = 0; i < 2000; i++)
			sink += (uint64_t)i * i;
}

enum { NAME_KEY, PARENT_KEY, COUNTERS_KEY };

struct kase {
	const char *name;
	const char *vals[3]; /* spanperf.counters values, NULL-ended */
	int lie;	     /* the last attribute's length byte claims more than attrs_data_size holds */
};

static const struct kase cases[] = {
	{ "good", { "task-clock=1000000,context-switches=2,page-faults=3", NULL } },
	{ "split", { "task-clock=2000000", "page-faults=5", NULL } },
	{ "huge", { "task-clock=18446744073709551615,context-switches=99999999999999999999", NULL } },
	{ "unknown", { "cycles=5,evil\x01name=3,context-switches=7,task-clock-but-longer=9", NULL } },
	{ "malformed", { "task-clock=12a,=5,page-faults=,context-switches=-1,task-clock=123456789012345678901",
			 "@zz:task-clock=1", "@0123456789abcdeg:page-faults=1" } },
	{ "lie", { "task-clock=1000000", NULL }, 1 },
	{ "none", { NULL } },
};

static struct otel_thread_ctx_record recs[sizeof(cases) / sizeof(cases[0])];

int main(void)
{
	static const char *const keys[] = { "span.name", "span.parent_id", "spanperf.counters", NULL };
	static const char *const resource[] = { "service.name", "otel-final", NULL };
	uint8_t trace[16] = { 0xf1, 0x4a }, span[8] = { 0x77 };

	if (otel_process_ctx_publish(resource, keys)) {
		fprintf(stderr, "cannot publish the process context\n");
		return 1;
	}
	/* Give a recorder of this command a tick to find the context. */
	usleep(300000);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct kase *k = &cases[i];
		struct otel_thread_ctx_record *r = &recs[i];

		span[7] = (uint8_t)(i + 1);
		otel_thread_ctx_record_init(r, trace, span, 1);
		otel_thread_ctx_record_add_attr(r, NAME_KEY, k->name, strlen(k->name));
		otel_thread_ctx_swap(r);
		burn(5000000);
		for (int v = 0; v < 3 && k->vals[v]; v++)
			otel_thread_ctx_record_add_attr(r, COUNTERS_KEY, k->vals[v], strlen(k->vals[v]));
		if (k->lie) {
			/* Said to be 200 bytes long, of which the record holds 8. */
			r->valid = 0;
			OTEL_THREAD_CTX_BARRIER();
			r->attrs[r->attrs_data_size - strlen(k->vals[0]) - 1] = 200;
			r->attrs_data_size -= (uint16_t)strlen(k->vals[0]) - 8;
			OTEL_THREAD_CTX_BARRIER();
			r->valid = 1;
		}
		otel_thread_ctx_swap(NULL);
		usleep(20000);
	}
	return 0;
}
