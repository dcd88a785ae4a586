// SPDX-License-Identifier: GPL-2.0
/*
 * libspanperf against ground truth the workload measures of itself: its own
 * CPU clock, pages it touched for the first time, sleeps it made.  Run as
 * root it also runs itself again as nobody (setpriv), where
 * perf_event_paranoid 2 allows user-only counting only.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "spanperf/spanperf.h"
#include "otel_thread_ctx.h"
#include "page.h"

#define EVENTS "task-clock,context-switches,page-faults"

static volatile uint64_t sink;

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void spin_ns(uint64_t ns)
{
	uint64_t end = thread_cpu_ns() + ns;

	while (thread_cpu_ns() < end)
		for (int i = 0; i < 1000; i++)
			sink += i;
}

/* USER_HZ ticks the hypervisor took from this VM, all CPUs (/proc/stat's steal). */
static uint64_t steal_ticks(void)
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "re");

	if (!f)
		return 0;
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
		   &v[6], &v[7]) != 8)
		v[7] = 0;
	fclose(f);
	return v[7];
}

/*
 * task-clock counts time on CPU by the scheduler's clock, steal included;
 * the thread's CPU clock leaves steal out (paravirt accounting).  So a
 * figure may exceed the truth by the steal of the window, and no more.
 */
static uint64_t steal_bound_ns(uint64_t before)
{
	uint64_t d = steal_ticks() - before;
	long hz = sysconf(_SC_CLK_TCK);

	return d ? (d + (uint64_t)sysconf(_SC_NPROCESSORS_ONLN)) * (1000000000ull / (uint64_t)hz) : 0;
}

static void test_task_clock_matches_thread_cpu_time(void **state)
{
	struct spanperf_counters *c = spanperf_counters_open(EVENTS, 0);
	uint64_t a[3], b[3], t0, t1, st;
	double got, truth;

	(void)state;
	assert_non_null(c);
	for (int round = 0; round < 3; round++) {
		st = steal_ticks();
		assert_int_equal(spanperf_counters_read(c, a), 0);
		t0 = thread_cpu_ns();
		spin_ns(200 * 1000000ull);
		t1 = thread_cpu_ns();
		assert_int_equal(spanperf_counters_read(c, b), 0);
		got = (double)(b[0] - a[0]);
		truth = (double)(t1 - t0);
		print_message("task-clock %.3f ms, thread CPU time %.3f ms (%+.2f%%), path %s\n", got / 1e6,
			      truth / 1e6, (got - truth) / truth * 100, spanperf_counters_path(c, 0));
		if (got >= truth * 0.98 && got <= truth * 1.02 + (double)steal_bound_ns(st))
			break;
		/* A round the hypervisor stole from beyond its own account: say so and try again. */
		assert_true(round < 2);
	}
	spanperf_counters_close(c);
}

/*
 * One write per page.  Not instrumented: under ASan each write would also
 * fault in its shadow page, which is the sanitizer's, not the workload's.
 */
__attribute__((no_sanitize_address, noinline)) static void touch(char *m, size_t n, size_t page)
{
	for (size_t i = 0; i < n; i++)
		m[i * page] = 1;
}

static void test_page_faults_count_fresh_pages(void **state)
{
	struct spanperf_counters *c = spanperf_counters_open(EVENTS, 0);
	const size_t n = 1000, page = (size_t)sysconf(_SC_PAGESIZE);
	uint64_t a[3], b[3];
	char *m;

	(void)state;
	assert_non_null(c);
	m = mmap(NULL, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	/* One fault per page, not one per huge page. */
	madvise(m, n * page, MADV_NOHUGEPAGE);
	assert_int_equal(spanperf_counters_read(c, a), 0);
	touch(m, n, page);
	assert_int_equal(spanperf_counters_read(c, b), 0);
	print_message("page-faults %llu for %zu fresh pages\n", (unsigned long long)(b[2] - a[2]), n);
	assert_in_range(b[2] - a[2], n, n + 16);
	munmap(m, n * page);
	spanperf_counters_close(c);
}

static void test_context_switches_count_sleeps(void **state)
{
	struct spanperf_counters *c = spanperf_counters_open(EVENTS, 0);
	const int k = 50;
	uint64_t a[3], b[3];

	(void)state;
	struct rusage ra, rb;
	long truth;

	assert_non_null(c);
	assert_int_equal(spanperf_counters_read(c, a), 0);
	getrusage(RUSAGE_THREAD, &ra);
	for (int i = 0; i < k; i++)
		usleep(500);
	getrusage(RUSAGE_THREAD, &rb);
	assert_int_equal(spanperf_counters_read(c, b), 0);
	/*
	 * The truth is the thread's own count, not k: on a loaded host a
	 * sleep whose timer fired before the switch does not switch, and
	 * preemptions add some.  The reads themselves may switch once each.
	 */
	truth = (rb.ru_nvcsw - ra.ru_nvcsw) + (rb.ru_nivcsw - ra.ru_nivcsw);
	print_message("context-switches %llu for %d sleeps (the thread's own count %ld), path %s\n",
		      (unsigned long long)(b[1] - a[1]), k, truth, spanperf_counters_path(c, 1));
	assert_true(truth >= k - 5);
	assert_in_range(b[1] - a[1], truth, truth + 2);
	spanperf_counters_close(c);
}

static void touch_pages(int n)
{
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(m != MAP_FAILED);
	madvise(m, n * page, MADV_NOHUGEPAGE);
	touch(m, (size_t)n, page);
	munmap(m, n * page);
}

static void test_nested_spans_add_up(void **state)
{
	struct spanperf_span outer, in1, in2;
	int tc, pf;

	(void)state;
	setenv("SPANPERF_EVENTS", EVENTS, 1);
	assert_int_equal(spanperf_span_begin("outer"), 0);
	assert_int_equal(spanperf_span_begin("inner-1"), 0);
	spin_ns(30 * 1000000ull);
	touch_pages(300);
	assert_int_equal(spanperf_span_end(&in1), 0);
	assert_int_equal(spanperf_span_begin("inner-2"), 0);
	spin_ns(20 * 1000000ull);
	touch_pages(200);
	assert_int_equal(spanperf_span_end(&in2), 0);
	assert_int_equal(spanperf_span_end(&outer), 0);

	assert_string_equal(outer.name, "outer");
	assert_string_equal(in1.name, "inner-1");
	assert_int_equal(outer.nr_counters, 3);
	assert_int_equal(in1.nr_counters, 3);
	tc = 0;
	pf = 2;
	assert_string_equal(outer.counter_names[tc], "task-clock");
	assert_string_equal(outer.counter_names[pf], "page-faults");
	/* The children's ids chain to the parent's. */
	assert_memory_equal(in1.trace_id, outer.trace_id, 16);
	assert_memory_equal(in2.trace_id, outer.trace_id, 16);
	assert_memory_equal(in1.parent_span_id, outer.span_id, 8);
	assert_memory_equal(in2.parent_span_id, outer.span_id, 8);
	assert_memory_not_equal(in1.span_id, in2.span_id, 8);
	for (int i = 0; i < 3; i++)
		assert_true(outer.deltas[i] >= in1.deltas[i] + in2.deltas[i]);
	assert_true(outer.wall_ns >= in1.wall_ns + in2.wall_ns);
	/* All the work is inside the children: the parent adds only the library's own time. */
	print_message("outer task-clock %.3f ms = %.3f + %.3f + %.3f; page-faults %llu = %llu + %llu\n",
		      outer.deltas[tc] / 1e6, in1.deltas[tc] / 1e6, in2.deltas[tc] / 1e6,
		      (outer.deltas[tc] - in1.deltas[tc] - in2.deltas[tc]) / 1e6,
		      (unsigned long long)outer.deltas[pf], (unsigned long long)in1.deltas[pf],
		      (unsigned long long)in2.deltas[pf]);
	assert_true(outer.deltas[tc] - in1.deltas[tc] - in2.deltas[tc] < 1000000);
	assert_in_range(outer.deltas[pf] - in1.deltas[pf] - in2.deltas[pf], 0, 4);
	assert_in_range(in1.deltas[pf], 300, 316);
	assert_in_range(in2.deltas[pf], 200, 216);
}

static void test_span_publishes_thread_context(void **state)
{
	struct otel_thread_ctx_record app, *seen;
	uint8_t trace[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	uint8_t span[8] = { 0xaa, 0xbb, 0xcc, 0xdd, 1, 2, 3, 4 };
	struct spanperf_span s, t;

	(void)state;
	assert_null(otel_thread_ctx_v1);
	assert_int_equal(spanperf_span_begin("published"), 0);
	seen = otel_thread_ctx_v1;
	assert_non_null(seen);
	assert_int_equal(seen->valid, 1);
	/* Attribute 0 is the name (span.name in the process context's key map). */
	assert_int_equal(seen->attrs[0], 0);
	assert_int_equal(seen->attrs[1], strlen("published"));
	assert_memory_equal(&seen->attrs[2], "published", strlen("published"));
	assert_int_equal(spanperf_span_end(&s), 0);
	assert_memory_equal(seen->span_id, s.span_id, 8);
	assert_null(otel_thread_ctx_v1);

	/* Under a context the application published itself: its trace, and it comes back after. */
	otel_thread_ctx_record_init(&app, trace, span, 1);
	otel_thread_ctx_swap(&app);
	assert_int_equal(spanperf_span_begin("child-of-app"), 0);
	assert_int_equal(spanperf_span_end(&s), 0);
	assert_memory_equal(s.trace_id, trace, 16);
	assert_memory_equal(s.parent_span_id, span, 8);
	assert_ptr_equal(otel_thread_ctx_v1, &app);
	otel_thread_ctx_swap(NULL);

	/* The caller's own ids, from its tracer. */
	assert_int_equal(spanperf_span_begin_ids("given", trace, span, 1), 0);
	assert_memory_equal(otel_thread_ctx_v1->span_id, span, 8);
	assert_int_equal(spanperf_span_end(&t), 0);
	assert_memory_equal(t.trace_id, trace, 16);
	assert_memory_equal(t.span_id, span, 8);

	/* Ending by id: another span's id changes nothing. */
	assert_int_equal(spanperf_span_begin("by-id"), 0);
	memcpy(span, otel_thread_ctx_v1->span_id, 8);
	span[0] ^= 1;
	assert_int_equal(spanperf_span_end_id(span, &t), -ESRCH);
	assert_non_null(otel_thread_ctx_v1);
	span[0] ^= 1;
	assert_int_equal(spanperf_span_end_id(span, &t), 0);
	assert_string_equal(t.name, "by-id");
	assert_null(otel_thread_ctx_v1);

	assert_int_equal(spanperf_span_end(NULL), -ENOENT);
	assert_non_null(strstr(spanperf_strerror(), "no span is open"));
	assert_int_equal(spanperf_span_begin(NULL), -EINVAL);
}

struct worker {
	int spin; /* else sleep */
	uint64_t cpu_ns, task_clock, cs;
	int err;
	pthread_barrier_t *go;
};

static void *worker_main(void *p)
{
	struct worker *w = p;
	struct spanperf_counters *c = spanperf_counters_open(EVENTS, 0);
	uint64_t a[3], b[3], t0;

	if (!c) {
		w->err = errno;
		pthread_barrier_wait(w->go);
		return NULL;
	}
	pthread_barrier_wait(w->go);
	spanperf_counters_read(c, a);
	t0 = thread_cpu_ns();
	if (w->spin)
		spin_ns(80 * 1000000ull);
	else
		for (int i = 0; i < 20; i++)
			usleep(4000);
	w->cpu_ns = thread_cpu_ns() - t0;
	spanperf_counters_read(c, b);
	w->task_clock = b[0] - a[0];
	w->cs = b[1] - a[1];
	spanperf_counters_close(c);
	return NULL;
}

static void test_threads_are_independent(void **state)
{
	pthread_barrier_t go;
	struct worker w[2] = { { .spin = 1, .go = &go }, { .spin = 0, .go = &go } };
	pthread_t t[2];

	(void)state;
	pthread_barrier_init(&go, NULL, 2);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&go);
	assert_int_equal(w[0].err, 0);
	assert_int_equal(w[1].err, 0);
	print_message("spinner: task-clock %.1f ms (own CPU %.1f ms), sleeper: task-clock %.2f ms, %llu switches\n",
		      w[0].task_clock / 1e6, w[0].cpu_ns / 1e6, w[1].task_clock / 1e6, (unsigned long long)w[1].cs);
	/* Each sees its own: the spinner's CPU is not in the sleeper's clock, the sleeps not in the spinner's switches. */
	assert_true(w[0].task_clock >= w[0].cpu_ns * 98 / 100);
	assert_true(w[1].task_clock < w[1].cpu_ns + 2000000);
	assert_true(w[1].task_clock < w[0].task_clock / 10);
	assert_in_range(w[1].cs, 20, 22);
}

static void *child_work(void *p)
{
	uint64_t *cpu = p, t0 = thread_cpu_ns();

	touch_pages(2000);
	spin_ns(30 * 1000000ull);
	*cpu = thread_cpu_ns() - t0;
	return NULL;
}

static void test_inherit_counts_child_thread(void **state)
{
	struct spanperf_counters *inh = spanperf_counters_open("task-clock,page-faults", SPANPERF_INHERIT);
	struct spanperf_counters *own = spanperf_counters_open("task-clock,page-faults", 0);
	uint64_t a[2], b[2], oa[2], ob[2], child_cpu = 0;
	pthread_t t;

	(void)state;
	assert_non_null(inh);
	assert_non_null(own);
	assert_string_equal(spanperf_counters_path(inh, 0), "read");
	assert_int_equal(spanperf_counters_read(inh, a), 0);
	assert_int_equal(spanperf_counters_read(own, oa), 0);
	assert_int_equal(pthread_create(&t, NULL, child_work, &child_cpu), 0);
	pthread_join(t, NULL);
	assert_int_equal(spanperf_counters_read(inh, b), 0);
	assert_int_equal(spanperf_counters_read(own, ob), 0);
	print_message("inherit: task-clock %.1f ms (child's CPU %.1f ms), page-faults %llu; without: %.1f ms, %llu\n",
		      (b[0] - a[0]) / 1e6, child_cpu / 1e6, (unsigned long long)(b[1] - a[1]), (ob[0] - oa[0]) / 1e6,
		      (unsigned long long)(ob[1] - oa[1]));
	assert_true(b[0] - a[0] >= child_cpu * 98 / 100);
	assert_true(b[1] - a[1] >= 2000);
	assert_true(ob[1] - oa[1] < 2000);
	assert_true(ob[0] - oa[0] < child_cpu / 2);
	spanperf_counters_close(inh);
	spanperf_counters_close(own);
}

static void nothing(void *arg)
{
	(void)arg;
}

static void test_uncountable_event_gives_null_and_a_sentence(void **state)
{
	struct spanperf_counters *c;

	(void)state;
	if (!access("/sys/bus/event_source/devices/cpu", F_OK)) {
		print_message("SKIP: this machine has a hardware PMU, so cycles can be counted\n");
		skip();
	}
	errno = 0;
	c = spanperf_counters_open("task-clock,cycles", 0);
	assert_null(c);
	assert_int_equal(errno, ENOENT);
	print_message("%s\n", spanperf_strerror());
	assert_non_null(strstr(spanperf_strerror(), "'cycles'"));
	assert_non_null(strstr(spanperf_strerror(), "no hardware PMU"));
	assert_int_equal(spanperf_measure("cycles", nothing, NULL, (uint64_t[1]){ 0 }), -ENOENT);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void test_bad_input_and_fd_leaks(void **state)
{
	static const char *const bad[] = { "", "task-clock,", "no-such-event", "cpu/bogus=1/", "task-clock:q",
					   "r123456789abcdef01" };
	uint64_t v[SPANPERF_MAX_COUNTERS];
	int before;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		assert_null(spanperf_counters_open(bad[i], 0));
		assert_int_not_equal(errno, 0);
		print_message("'%s': %s\n", bad[i], spanperf_strerror());
		assert_true(strlen(spanperf_strerror()) > 10);
		assert_null(strchr(spanperf_strerror(), '\n'));
	}
	assert_null(spanperf_counters_open(NULL, 0));
	assert_null(spanperf_counters_open("task-clock", 0x80));
	assert_null(spanperf_counters_open("task-clock,page-faults,cs,faults,minor-faults,major-faults,"
					   "task-clock,page-faults,cs,faults,minor-faults,major-faults,"
					   "task-clock,page-faults,cs,faults,minor-faults",
					   0));
	assert_int_equal(errno, E2BIG);
	/* Closed (NULL) handles. */
	assert_int_equal(spanperf_counters_read(NULL, v), -EINVAL);
	assert_int_equal(spanperf_counters_count(NULL), 0);
	assert_null(spanperf_counters_name(NULL, 0));
	spanperf_counters_close(NULL);

	before = count_fds();
	for (int i = 0; i < 10000; i++) {
		struct spanperf_counters *c = spanperf_counters_open(EVENTS, 0);

		assert_non_null(c);
		assert_null(spanperf_counters_name(c, 3));
		assert_null(spanperf_counters_name(c, -1));
		assert_int_equal(spanperf_counters_read(c, v), 0);
		spanperf_counters_close(c);
	}
	assert_int_equal(count_fds(), before);
}

static void *fail_elsewhere(void *p)
{
	(void)p;
	spanperf_counters_open("other-thread-bad", 0);
	return NULL;
}

static void test_strerror_is_per_thread(void **state)
{
	pthread_t t;

	(void)state;
	assert_null(spanperf_counters_open("this-thread-bad", 0));
	pthread_create(&t, NULL, fail_elsewhere, NULL);
	pthread_join(t, NULL);
	assert_non_null(strstr(spanperf_strerror(), "this-thread-bad"));
}

static void test_forked_child_gets_echild(void **state)
{
	struct spanperf_counters *c = spanperf_counters_open(EVENTS, 0);
	uint64_t v[3];
	int status;
	pid_t pid;

	(void)state;
	assert_non_null(c);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		_exit(spanperf_counters_read(c, v) == -ECHILD ? 0 : 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(spanperf_counters_read(c, v), 0);
	spanperf_counters_close(c);
}

static void measured(void *arg)
{
	spin_ns(*(uint64_t *)arg);
}

static void test_measure(void **state)
{
	uint64_t ns = 20 * 1000000ull, v[2];

	(void)state;
	assert_int_equal(spanperf_measure("task-clock,page-faults", measured, &ns, v), 0);
	assert_true(v[0] >= ns * 98 / 100 && v[0] < ns * 3);
	assert_int_equal(spanperf_measure("task-clock", NULL, NULL, v), -EINVAL);
}

static void test_export_writes_otlp_lines(void **state)
{
	char path[] = "/tmp/spanperf-lib-XXXXXX", buf[65536];
	struct spanperf_span s;
	ssize_t n;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(spanperf_spans_export(path), 0);
	assert_int_equal(spanperf_span_begin("exported \"quoted\""), 0);
	spin_ns(2 * 1000000ull);
	assert_int_equal(spanperf_span_end(&s), 0);
	assert_int_equal(spanperf_spans_export(NULL), 0);
	assert_int_equal(spanperf_span_begin("not exported"), 0);
	assert_int_equal(spanperf_span_end(NULL), 0);
	n = read(fd, buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = 0;
	print_message("%s", buf);
	assert_non_null(strstr(buf, "\"name\":\"exported \\\"quoted\\\"\""));
	assert_non_null(strstr(buf, "\"perf.task_clock_ms\",\"value\":{\"doubleValue\":"));
	assert_non_null(strstr(buf, "\"perf.context_switches\",\"value\":{\"intValue\":\""));
	assert_non_null(strstr(buf, "\"perf.page_faults\""));
	assert_non_null(strstr(buf, "\"thread.id\""));
	assert_null(strstr(buf, "not exported"));
	assert_int_equal(strchr(buf, '\n') - buf, n - 1);
	close(fd);
	unlink(path);
	assert_int_equal(spanperf_spans_export("/nonexistent-dir/spans.jsonl"), -ENOENT);
	assert_non_null(strstr(spanperf_strerror(), "/nonexistent-dir/spans.jsonl"));
}

/* ---- the no-syscall path, on pages built to the ABI (no machine here offers it) ---- */

static uint64_t fake_tsc_val, fake_pmc_val;
static uint32_t fake_pmc_idx;
static struct perf_event_mmap_page *fake_page;
static int bumps;

static uint64_t fake_tsc(void)
{
	/* The kernel rewrites the page once mid-read: the reader must go round again. */
	if (bumps-- > 0) {
		fake_page->lock += 2;
		fake_page->time_enabled += 1000;
	}
	return fake_tsc_val;
}

static uint64_t fake_pmc(uint32_t idx)
{
	fake_pmc_idx = idx;
	return fake_pmc_val;
}

static void test_page_read_protocol(void **state)
{
	static struct perf_event_mmap_page pg;
	struct page_snap s;

	(void)state;
	fake_page = &pg;
	memset(&pg, 0, sizeof(pg));
	pg.cap_user_time = 1;
	pg.cap_user_rdpmc = 1;
	pg.time_mult = 1u << 31; /* 0.5 ns per cycle */
	pg.time_shift = 32;
	pg.time_offset = (uint64_t)-1000;
	pg.time_enabled = 5000;
	pg.time_running = 4000;
	pg.index = 3;
	pg.pmc_width = 48;
	pg.offset = 100;
	fake_tsc_val = 4000;		  /* 2000 ns at 0.5 ns per cycle */
	fake_pmc_val = 0xffffffffffffull; /* -1 in 48 bits */
	bumps = 1;
	page_read(&pg, true, fake_tsc, fake_pmc, &s);
	assert_int_equal(fake_pmc_idx, 2); /* rdpmc takes index - 1 */
	assert_int_equal(s.count, 99);	   /* offset + sign-extended PMC */
	/* delta = time_offset + cyc * mult >> shift = -1000 + 4000 / 2 = 1000 */
	assert_int_equal(s.enabled, 5000 + 1000 + 1000); /* +1000 from the rewrite the retry saw */
	assert_int_equal(s.running, 4000 + 1000);
	assert_int_equal(s.index, 3);
	/* Off the PMU: the count is the page's, time runs for enabled only. */
	pg.index = 0;
	page_read(&pg, true, fake_tsc, fake_pmc, &s);
	assert_int_equal(s.count, 100);
	assert_int_equal(s.index, 0);
	assert_int_equal(s.running, 4000);
	/* Large cycle counts do not overflow the multiplication. */
	assert_int_equal(page_cyc_to_ns(1ull << 62, 3u << 30, 31), (1ull << 62) / 2 * 3);
}

/* As nobody, at this machine's perf_event_paranoid: everything above again. */
static void test_unprivileged_run(void **state)
{
	char self[4096], cmd[4600], san[] = "/tmp/spanperf-unpriv-XXXXXX";
	bool reports;
	ssize_t n;
	int r;

	(void)state;
	if (getenv("SPANPERF_TEST_UNPRIV")) {
		print_message("SKIP: this is the unprivileged run\n");
		skip();
	}
	if (geteuid() != 0) {
		print_message("SKIP: not root, so there is no other user to become (this run is the unprivileged one)\n");
		skip();
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	assert_true(n > 0);
	self[n] = 0;
	if (system("command -v setpriv >/dev/null 2>&1")) {
		print_message("SKIP: setpriv (util-linux) is not installed\n");
		skip();
	}
	snprintf(cmd, sizeof(cmd), "setpriv --reuid=nobody --regid=nogroup --clear-groups test -x '%s'", self);
	if (system(cmd)) {
		print_message("SKIP: nobody cannot run %s (a parent directory is not searchable)\n", self);
		skip();
	}
	/*
	 * Under make check the sanitizers log into a folder nobody cannot write:
	 * the child logs into one of its own, and any report there fails the case.
	 */
	if (!mkdtemp(san) || chmod(san, 0777)) {
		print_message("SKIP: no folder for the unprivileged run's sanitizer logs\n");
		skip();
	}
	snprintf(cmd, sizeof(cmd),
		 "cd / && SPANPERF_TEST_UNPRIV=1 ASAN_OPTIONS=log_path=%s/asan:exitcode=86 "
		 "UBSAN_OPTIONS=log_path=%s/ubsan:exitcode=86:print_stacktrace=1 "
		 "setpriv --reuid=nobody --regid=nogroup --clear-groups '%s' >%s/out.log 2>&1",
		 san, san, self, san);
	r = system(cmd);
	snprintf(cmd, sizeof(cmd), "ls %s | grep -q san", san);
	reports = !system(cmd);
	if (r || reports) {
		snprintf(cmd, sizeof(cmd), "cat %s/*", san);
		system(cmd);
	}
	assert_int_equal(r, 0);
	assert_false(reports);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", san);
	system(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_task_clock_matches_thread_cpu_time),
		cmocka_unit_test(test_page_faults_count_fresh_pages),
		cmocka_unit_test(test_context_switches_count_sleeps),
		cmocka_unit_test(test_nested_spans_add_up),
		cmocka_unit_test(test_span_publishes_thread_context),
		cmocka_unit_test(test_threads_are_independent),
		cmocka_unit_test(test_inherit_counts_child_thread),
		cmocka_unit_test(test_uncountable_event_gives_null_and_a_sentence),
		cmocka_unit_test(test_bad_input_and_fd_leaks),
		cmocka_unit_test(test_strerror_is_per_thread),
		cmocka_unit_test(test_forked_child_gets_echild),
		cmocka_unit_test(test_measure),
		cmocka_unit_test(test_export_writes_otlp_lines),
		cmocka_unit_test(test_page_read_protocol),
		cmocka_unit_test(test_unprivileged_run),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
