// SPDX-License-Identifier: GPL-2.0
/*
 * A program that marks its work with libspanperf, for the integration test:
 *
 *   libspanperf_client N US TRUTH [THREADS]
 *
 * N spans "request", each burning US/2 µs of CPU itself and then holding one
 * span "work-a" or "work-b" that burns US µs.  TRUTH gets one JSON line per
 * span with what the library and the thread measured of it: its ids, window
 * (CLOCK_MONOTONIC), the CPU time spent in its own context, the same by a
 * task-clock of the thread's own (user_ns: the library's clock, which starts
 * at perf's switch-in, where the thread's CPU clock also holds the switch
 * path before it) and the counter deltas.  The first line on
 * stdout gives the pid and tid.  With THREADS, that many threads each do the
 * N spans at once, and each truth line names its thread ("tid").
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>

#include "spanperf/spanperf.h"

static volatile uint64_t sink;

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A user-only task-clock of this thread, opened with a raw syscall, as an unprivileged user may. */
static __thread int user_clock = -1;
static int threads;
static pthread_mutex_t truth_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t user_ns(void)
{
	uint64_t v = 0;

	if (user_clock < 0 || read(user_clock, &v, sizeof(v)) != sizeof(v))
		return 0;
	return v;
}

__attribute__((noinline)) static uint64_t burn(uint64_t ns, uint64_t *user)
{
	uint64_t t0 = thread_cpu_ns(), u0 = user_ns(), end = t0 + ns;

	while (thread_cpu_ns() < end)
		for (int i = 0; i < 2000; i++)
			sink += (uint64_t)i * i;
	*user = user_ns() - u0;
	return thread_cpu_ns() - t0;
}

static void hex(FILE *f, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * from, to: read right after the span began and right before it ended, so
 * that its context was published all that while.  The library's own stamps
 * lie outside the context's window (start before it is published, end after
 * it is taken back), and a wait for the CPU between a stamp and the swap (24.8
 * ms on a busy host) lies in the stamps' window only.
 */
static void truth(FILE *f, const struct spanperf_span *s, uint64_t own_cpu, uint64_t own_user, uint64_t from,
		  uint64_t to)
{
	if (threads)
		fprintf(f, "{\"tid\":%ld,", (long)syscall(SYS_gettid));
	else
		fprintf(f, "{");
	fprintf(f, "\"name\":\"%s\",\"trace_id\":\"", s->name);
	hex(f, s->trace_id, 16);
	fprintf(f, "\",\"span_id\":\"");
	hex(f, s->span_id, 8);
	fprintf(f, "\",\"parent_span_id\":\"");
	hex(f, s->parent_span_id, 8);
	fprintf(f, "\",\"start_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64 ",\"ctx_from_ns\":%" PRIu64 ",\"ctx_to_ns\":%" PRIu64
		   ",\"cpu_ns\":%" PRIu64, s->start_ns, s->end_ns, from, to, own_cpu);
	if (user_clock >= 0)
		fprintf(f, ",\"user_ns\":%" PRIu64, own_user);
	fprintf(f, ",\"counters\":{");
	for (int i = 0; i < s->nr_counters; i++)
		fprintf(f, "%s\"%s\":%" PRIu64, i ? "," : "", s->counter_names[i], s->deltas[i]);
	fprintf(f, "}}\n");
}

static long n;
static uint64_t us;
static FILE *f;

static void *spans(void *arg)
{
	struct perf_event_attr a = { .type = PERF_TYPE_SOFTWARE, .size = sizeof(a), .config = PERF_COUNT_SW_TASK_CLOCK,
				     .exclude_kernel = 1, .exclude_hv = 1 };
	struct spanperf_span inner, outer;
	uint64_t c_out, c_in, u_out, u_in, o_from, o_to, i_from, i_to;

	user_clock = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	for (long i = 0; i < n; i++) {
		if (spanperf_span_begin("request")) {
			fprintf(stderr, "span_begin: %s\n", spanperf_strerror());
			exit(1);
		}
		o_from = mono_ns();
		c_out = burn(us * 500, &u_out);
		spanperf_span_begin(i % 2 ? "work-b" : "work-a");
		i_from = mono_ns();
		c_in = burn(us * 1000, &u_in);
		i_to = mono_ns();
		spanperf_span_end(&inner);
		o_to = mono_ns();
		spanperf_span_end(&outer);
		pthread_mutex_lock(&truth_lock);
		truth(f, &inner, c_in, u_in, i_from, i_to);
		truth(f, &outer, c_out, u_out, o_from, o_to);
		pthread_mutex_unlock(&truth_lock);
	}
	/*
	 * Off the CPU once with no span open: a recorder then sees the last
	 * span end while the thread lives, and reads its final state (the
	 * library's counts), which an exit would not leave it.
	 */
	usleep(20000);
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t t[8];

	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: libspanperf_client N US TRUTH [THREADS]\n");
		return 1;
	}
	n = atol(argv[1]);
	us = strtoull(argv[2], NULL, 10);
	threads = argc == 5 ? atoi(argv[4]) : 0;
	if (threads < 0 || threads > 8) {
		fprintf(stderr, "THREADS: 1 to 8\n");
		return 1;
	}
	f = fopen(argv[3], "w");
	if (!f) {
		perror(argv[3]);
		return 1;
	}
	printf("{\"pid\":%d,\"tid\":%ld}\n", getpid(), (long)syscall(SYS_gettid));
	fflush(stdout);
	/* Give a whole-host recorder a tick to find this process's context (at most 100 ms). */
	usleep(300000);
	if (!threads) {
		spans(NULL);
	} else {
		for (int i = 0; i < threads; i++)
			if (pthread_create(&t[i], NULL, spans, NULL)) {
				fprintf(stderr, "pthread_create failed\n");
				return 1;
			}
		for (int i = 0; i < threads; i++)
			pthread_join(t[i], NULL);
	}
	fclose(f);
	return 0;
}
