// SPDX-License-Identifier: GPL-2.0
/*
 * A publisher of OTEP 4947 thread context for the otel integration tests,
 * built by the test itself: -DLIB makes the library (with -fPIC -shared and
 * the TLS model under test), the rest the program linked to it.
 *
 *   otel_client good N US FILE   N spans of US µs of CPU, through the library;
 *                                FILE gets each span with its ids
 *   otel_client invalid N US     the record's valid byte stays 0 (a writer
 *                                forever mid-update)
 *   otel_client badptr N US      the pointer aims at unmapped memory
 *
 * Built with -DDLOPEN=\"PATH\" the program is not linked to the library: it
 * idles OTEL_CLIENT_DLOPEN_MS (default 1000) first, then dlopens PATH, as
 * a process that loads a publishing plugin late does.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef LIB
#define OTEL_THREAD_CTX_DEFINE
#include "otel_thread_ctx.h"

static volatile uint64_t sink;

static uint64_t cpu_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

__attribute__((noinline)) void lib_burn(uint64_t ns)
{
	uint64_t end = cpu_ns(CLOCK_THREAD_CPUTIME_ID) + ns;

	while (cpu_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 2000; i++)
			sink += (uint64_t)i * i;
}

void lib_run(const char *mode, long n, uint64_t ns, FILE *f)
{
	static struct otel_thread_ctx_record bad;
	uint8_t trace[16] = { 0xc1, 0x1e, 0x47 }, span[8] = { 0x5a };

	for (long i = 0; i < n; i++) {
		uint64_t t0, t1, c0, c1;

		trace[15] = (uint8_t)(i / 10 + 1);
		span[7] = (uint8_t)(i + 1);
		t0 = cpu_ns(CLOCK_MONOTONIC);
		c0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
		if (!strcmp(mode, "invalid")) {
			otel_thread_ctx_record_init(&bad, trace, span, 1);
			bad.valid = 0;
			otel_thread_ctx_swap(&bad);
		} else if (!strcmp(mode, "badptr")) {
			otel_thread_ctx_swap((struct otel_thread_ctx_record *)(uintptr_t)0x10);
		} else {
			otel_thread_ctx_enter(trace, span, 1);
		}
		lib_burn(ns);
		otel_thread_ctx_leave();
		c1 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
		t1 = cpu_ns(CLOCK_MONOTONIC);
		if (f) {
			fprintf(f, "{\"start_ns\":%llu,\"end_ns\":%llu,\"cpu_ns\":%llu,\"trace_id\":\"",
				(unsigned long long)t0, (unsigned long long)t1, (unsigned long long)(c1 - c0));
			for (int k = 0; k < 16; k++)
				fprintf(f, "%02x", trace[k]);
			fprintf(f, "\",\"span_id\":\"");
			for (int k = 0; k < 8; k++)
				fprintf(f, "%02x", span[k]);
			fprintf(f, "\"}\n");
		}
	}
}
#else
#include <unistd.h>
#include <sys/syscall.h>

#ifdef DLOPEN
#include <dlfcn.h>

static void (*lib_run)(const char *mode, long n, uint64_t ns, FILE *f);

static int load(void)
{
	const char *ms = getenv("OTEL_CLIENT_DLOPEN_MS");
	struct timespec ts = { 0, 0 };
	long v = ms ? atol(ms) : 1000;
	void *h;

	ts.tv_sec = v / 1000;
	ts.tv_nsec = v % 1000 * 1000000;
	nanosleep(&ts, NULL);
	h = dlopen(DLOPEN, RTLD_NOW);
	lib_run = h ? (void (*)(const char *, long, uint64_t, FILE *))dlsym(h, "lib_run") : NULL;
	if (!lib_run)
		fprintf(stderr, "otel_client: %s\n", dlerror());
	return lib_run ? 0 : -1;
}
#else
void lib_run(const char *mode, long n, uint64_t ns, FILE *f);

static int load(void)
{
	return 0;
}
#endif

int main(int argc, char **argv)
{
	FILE *f;

	if (argc < 4) {
		fprintf(stderr, "usage: otel_client good|invalid|badptr N US [FILE]\n");
		return 2;
	}
	if (load())
		return 1;
	f = argc > 4 ? fopen(argv[4], "w") : NULL;
	lib_run(argv[1], atol(argv[2]), strtoull(argv[3], NULL, 10) * 1000, f);
	if (f)
		fclose(f);
	printf("{\"pid\":%d,\"tid\":%ld}\n", getpid(), (long)syscall(SYS_gettid));
	return 0;
}
#endif
