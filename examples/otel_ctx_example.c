// SPDX-License-Identifier: GPL-2.0
/*
 * Publishes an OTEP 4947 thread context around some CPU work, so that
 * `spanperf record` sees each span with no probe, and an OTEP 4719 process
 * context that names the spans' attributes (http.route, user.id):
 *
 *   cc -O2 -Iinclude examples/otel_ctx_example.c \
 *      -Wl,--export-dynamic-symbol=otel_thread_ctx_v1 -o otel_ctx_example
 *   spanperf record -o perf.data -- ./otel_ctx_example 20
 *   spanperf record --otel -o perf.data -- ./otel_ctx_example 20
 *   spanperf report --spans        # attributes: http.route, user.id
 */
#define OTEL_THREAD_CTX_DEFINE
#include "otel_thread_ctx.h"
#include "otel_process_ctx.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static void work_ms(long ms)
{
	struct timespec ts;
	double end;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	end = ts.tv_sec + ts.tv_nsec / 1e9 + ms / 1e3;
	do {
		for (int i = 0; i < 10000; i++)
			sink += i;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < end);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10;
	uint8_t trace[16] = { 0x4b, 0xf9, 0x2f, 0x35 }, span[8] = { 0 };
	static const char *const resource[] = { "service.name", "otel-ctx-example", NULL };
	/* key_index 0 and 1 of every record's attributes */
	static const char *const keys[] = { "http.route", "user.id", NULL };

	if (otel_process_ctx_publish(resource, keys))
		perror("otel_process_ctx_publish"); /* the spans still go out, their attributes unnamed */
	for (long i = 0; i < n; i++) {
		struct otel_thread_ctx_record r, *prev;
		char user[16];

		span[7] = (uint8_t)(i + 1);
		/* Complete before it is published: a reader never sees a span without its attributes. */
		otel_thread_ctx_record_init(&r, trace, span, 1); /* sampled */
		otel_thread_ctx_record_add_attr(&r, 0, i % 2 ? "/cart" : "/checkout", i % 2 ? 5 : 9);
		otel_thread_ctx_record_add_attr(&r, 1, user, (size_t)snprintf(user, sizeof(user), "%ld", 1000 + i));
		prev = otel_thread_ctx_swap(&r);
		work_ms(10);
		otel_thread_ctx_swap(prev);
	}
	printf("%ld spans of 10 ms\n", n);
	return 0;
}
