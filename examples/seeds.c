// SPDX-License-Identifier: GPL-2.0
/*
 * The four Go libraries spanperf grew from, their README examples ported to
 * libspanperf in C.  Each line is "SEED EVENT VALUE", with "truth T" where
 * the thread knows its own truth (its CPU clock, getrusage); an event this
 * machine cannot count says why and the rest are kept.
 *
 *   cc -O2 examples/seeds.c $(pkg-config --cflags --libs spanperf) -o seeds
 *   ./seeds perf-utils|perfevents|opentelemetry-perf|perfevent   (perfevent: root)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include <spanperf/spanperf.h>

static volatile unsigned long total;

/* perf-utils' foo, made long enough to measure. */
static void foo(void *arg)
{
	(void)arg;
	for (int i = 0; i < 20000000; i++)
		total++;
}

static uint64_t thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* truth[i]: the thread's own figure for event i, or ~0 where it has none. */
static void report(const char *seed, struct spanperf_counters *c, const uint64_t *d, const uint64_t *truth)
{
	for (int i = 0; i < spanperf_counters_count(c); i++) {
		const char *ev = spanperf_counters_name(c, i);

		if (!spanperf_counters_counted(c, i))
			printf("%s %s unavailable: %s\n", seed, ev, spanperf_counters_why(c, i));
		else if (truth[i] != ~0ull)
			printf("%s %s %llu truth %llu\n", seed, ev, (unsigned long long)d[i],
			       (unsigned long long)truth[i]);
		else
			printf("%s %s %llu\n", seed, ev, (unsigned long long)d[i]);
	}
}

/* perf-utils: how many CPU instructions foo takes. */
static int perf_utils(void)
{
	uint64_t v[2], a[2], b[2], t0;
	struct spanperf_counters *c;

	if (spanperf_measure("instructions", foo, NULL, v))
		printf("perf-utils measure(instructions) failed: %s; keeping what can be counted\n", spanperf_strerror());
	c = spanperf_counters_open("instructions,task-clock", SPANPERF_SKIP_UNCOUNTABLE);
	if (!c)
		return -1;
	spanperf_counters_read(c, a);
	t0 = thread_cpu();
	foo(NULL);
	t0 = thread_cpu() - t0;
	spanperf_counters_read(c, b);
	v[0] = b[0] - a[0];
	v[1] = b[1] - a[1];
	report("perf-utils", c, v, (uint64_t[]){ ~0ull, t0 });
	spanperf_counters_close(c);
	return 0;
}

/* perfevents: open "cpu-cycles,cache-misses,instructions" enabled, read, disable and close; and the software events. */
static int perfevents(void)
{
	const char *events = "cpu-cycles,cache-misses,instructions,task-clock,page-faults,context-switches";
	struct spanperf_counters *c = spanperf_counters_open(events, SPANPERF_SKIP_UNCOUNTABLE);
	uint64_t a[6], b[6], d[6];
	struct rusage r0, r1;
	size_t n = 64 << 20;
	char *buf;

	if (!c)
		return -1;
	spanperf_counters_read(c, a);
	getrusage(RUSAGE_THREAD, &r0);
	foo(NULL);
	buf = malloc(n);
	for (size_t i = 0; buf && i < n; i += 4096)
		buf[i] = 1;
	usleep(1000);
	getrusage(RUSAGE_THREAD, &r1);
	spanperf_counters_read(c, b);
	spanperf_counters_disable(c);
	for (int i = 0; i < 6; i++)
		d[i] = b[i] - a[i];
	report("perfevents", c, d,
	       (uint64_t[]){ ~0ull, ~0ull, ~0ull, ~0ull, (uint64_t)(r1.ru_minflt - r0.ru_minflt),
			     (uint64_t)(r1.ru_nvcsw + r1.ru_nivcsw - r0.ru_nvcsw - r0.ru_nivcsw) });
	spanperf_counters_close(c);
	free(buf);
	return 0;
}

/* opentelemetry-perf: a worker thread bound to a CPU, each call a span with its counters. */
static void *worker(void *arg)
{
	struct spanperf_span *s = arg;
	cpu_set_t set;
	uint64_t t0;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return "sched_setaffinity";
	spanperf_span_begin_events("pooled", "cpu-cycles,instructions,task-clock");
	t0 = thread_cpu();
	foo(NULL);
	t0 = thread_cpu() - t0;
	spanperf_span_end(s);
	for (int i = 0; i < s->nr_counters; i++)
		printf("opentelemetry-perf %s %llu truth %llu\n", s->counter_names[i], (unsigned long long)s->deltas[i],
		       (unsigned long long)t0);
	for (int i = 0; i < s->nr_unavailable; i++)
		printf("opentelemetry-perf %s unavailable: %s\n", s->unavailable[i], s->unavailable_why[i]);
	return NULL;
}

static int otel_perf(void)
{
	struct spanperf_span s;
	pthread_t t;
	void *r;

	pthread_create(&t, NULL, worker, &s);
	pthread_join(t, &r);
	if (r)
		fprintf(stderr, "%s: %s\n", (char *)r, strerror(errno));
	return r ? -1 : 0;
}

/* perfevent: probe cycles (cpu-clock on a VM), one event per CPU with a BPF program counting its runs. */
static int bpf_sys(int cmd, union bpf_attr *a)
{
	return (int)syscall(SYS_bpf, cmd, a, sizeof(*a));
}

static int perfevent(void)
{
	struct spanperf_sampler_spec spec;
	struct spanperf_sampler *s;
	union bpf_attr a;
	uint32_t key = 0;
	uint64_t runs = 0;
	int mfd, pfd, r = spanperf_probe_cycles(100, &spec);
	struct timespec t0, t1;

	if (r < 0)
		return -1;
	if (r == 1)
		printf("perfevent fell back: %s\n", spanperf_strerror());
	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_ARRAY;
	a.key_size = 4;
	a.value_size = 8;
	a.max_entries = 1;
	mfd = bpf_sys(BPF_MAP_CREATE, &a);
	if (mfd < 0) {
		perror("BPF_MAP_CREATE");
		return -1;
	}
	struct bpf_insn insns[] = {
		{ .code = BPF_ST | BPF_MEM | BPF_W, .dst_reg = 10, .off = -4, .imm = 0 },
		{ .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = 1, .src_reg = BPF_PSEUDO_MAP_FD, .imm = mfd },
		{ 0 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = 2, .src_reg = 10 },
		{ .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = 2, .imm = -4 },
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_map_lookup_elem },
		{ .code = BPF_JMP | BPF_JEQ | BPF_K, .dst_reg = 0, .off = 2, .imm = 0 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 1, .imm = 1 },
		{ .code = BPF_STX | BPF_ATOMIC | BPF_DW, .dst_reg = 0, .src_reg = 1, .imm = BPF_ADD },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_PERF_EVENT;
	a.insns = (uintptr_t)insns;
	a.insn_cnt = sizeof(insns) / sizeof(insns[0]);
	a.license = (uintptr_t) "GPL";
	pfd = bpf_sys(BPF_PROG_LOAD, &a);
	if (pfd < 0) {
		perror("BPF_PROG_LOAD");
		return -1;
	}
	s = spanperf_sampler_open(&spec, pfd, SPANPERF_DEFERRED_ENABLE);
	if (!s)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	spanperf_sampler_enable(s);
	sleep(1);
	memset(&a, 0, sizeof(a));
	a.map_fd = mfd;
	a.key = (uintptr_t)&key;
	a.value = (uintptr_t)&runs;
	bpf_sys(BPF_MAP_LOOKUP_ELEM, &a);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("perfevent runs %llu truth %.0f\n", (unsigned long long)runs,
	       spanperf_sampler_count(s) * 100.0 * ((t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9));
	spanperf_sampler_close(s);
	close(pfd);
	close(mfd);
	return 0;
}

int main(int argc, char **argv)
{
	int r;

	if (argc != 2)
		goto usage;
	if (!strcmp(argv[1], "perf-utils"))
		r = perf_utils();
	else if (!strcmp(argv[1], "perfevents"))
		r = perfevents();
	else if (!strcmp(argv[1], "opentelemetry-perf"))
		r = otel_perf();
	else if (!strcmp(argv[1], "perfevent"))
		r = perfevent();
	else
		goto usage;
	if (r)
		fprintf(stderr, "seeds %s: %s\n", argv[1], spanperf_strerror());
	return r ? 1 : 0;
usage:
	fprintf(stderr, "usage: seeds perf-utils|perfevents|opentelemetry-perf|perfevent\n");
	return 1;
}
