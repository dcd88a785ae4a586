// SPDX-License-Identifier: GPL-2.0
/*
 * Ground truth for the integration tests.  Each mode does known work and
 * prints, as JSON lines, what it did: per-thread CPU time from
 * CLOCK_THREAD_CPUTIME_ID, counts of calls, sleeps and pages.
 *
 * Built with frame pointers and without inlining, so that every named
 * function below is a real frame in a call chain.
 *
 *   workload spin MS[,MS...]     one thread per MS, spinning for MS of CPU
 *                                in spin_N() called from caller_N()
 *   workload syscalls MS         getppid() in a loop for MS of CPU
 *   workload fork N              fork+exec /bin/true N times
 *   workload threads N SECS      N threads that sleep for SECS (RSS tests)
 *   workload sleeps N US         N sleeps of US microseconds in a new thread
 *   workload pages N             touch N fresh pages in a new thread
 *   workload calls N MS [FILE]   call hidden_work() N times, MS of CPU each,
 *                                in a new thread; FILE gets the calls as
 *                                external spans (JSON lines)
 *   workload nest N              outer() calls inner() twice, N times; then
 *                                recurse(5) N times
 *   workload exit-inside         a thread that exits inside dying_work()
 *   workload reads N             read() 4 KiB from /dev/zero N times, in a new thread
 *   workload getppid N           N getppid syscalls; prints CPU ns per call
 *   workload tiny N              N calls of an empty noinline tiny(); CPU ns per call
 *   workload readloop N          N read()s of 64 bytes from /dev/zero; CPU ns per call
 *   workload jit MS              spin MS of CPU in code copied to anonymous
 *                                memory, named in /tmp/perf-PID.map as a JIT does
 *                                (WORKLOAD_JIT_MAP_LAST: named only at the end)
 *   workload churn SECS          threads created and exiting all the time, and
 *                                a process forked now and then, for SECS
 *   workload gaps SECS           one thread per CPU reading the clock in a loop;
 *                                prints the gaps (time stolen from it) per CPU
 *   workload direct DEV N        N O_DIRECT reads of 64 KiB from DEV (a ram
 *                                disk: the kernel time is in the brd module)
 *   workload otel N US [FILE]    N spans of US microseconds of CPU each, in a
 *                                new thread, published as OTEP 4947 thread
 *                                context (include/otel_thread_ctx.h) with two
 *                                attributes, http.route (key 0) and user.id
 *                                (key 1), named by an OTEP 4719 process
 *                                context (include/otel_process_ctx.h); FILE
 *                                gets each span with its ids and attributes
 *                                (JSON lines); WORKLOAD_OTEL_NAP_US=U: each
 *                                span also sleeps U us between two halves of
 *                                its work (nap_ns: the sleep's wall time);
 *                                WORKLOAD_OTEL_GAP_US=U: sleeps U us with no
 *                                context after each span; WORKLOAD_WAIT: the
 *                                spans start on a line from stdin, once the
 *                                contexts are published (for record -p)
 *   workload otel-nopctx N US [FILE]   the same attributes, no process context
 *   workload otel-stuck N US [FILE]    a process context whose published-at
 *                                stays 0, as a writer stuck mid-update
 *   workload otel-badver|otel-badptr|otel-badsize|otel-badpayload N US [FILE]
 *                                a process context whose header lies (version
 *                                9, a pointer to unmapped memory, a size of
 *                                2 MiB) or whose payload is no protobuf
 *   workload otel-badattrs N US [FILE]  records that lie: even spans claim
 *                                700 bytes of attributes, odd ones end with
 *                                an attribute running past attrs-data-size
 *   workload offcpu N MS M PMS SPIN [FILE]
 *                                three threads at once: one sleeps N x MS in
 *                                nap_sleep(), one blocks in pipe_wait() on a
 *                                pipe fed M times, PMS apart, by a fourth
 *                                (feeder()), one spins SPIN ms of CPU; each
 *                                prints its time blocked in those calls (wall
 *                                minus its own CPU); FILE gets each sleep as an
 *                                external span named nap, with its CPU time,
 *                                preemptions, runs (schedstat's pcount) and run
 *                                delay.  With WORKLOAD_WAIT set
 *                                it starts on a line from stdin
 *   workload runq N MS [FILE [SLEEP_MS]]  the process pinned to one CPU with two spinning
 *                                threads; a third calls queued_work() N times, MS
 *                                of its own CPU each; each call prints the run_delay
 *                                and sum_exec_runtime deltas /proc/thread-self/schedstat
 *                                showed around it; FILE gets each call as an external
 *                                span; with SLEEP_MS each call also sleeps that long
 *                                halfway, and prints the nanosleep's own wall time;
 *                                and the wall time on CPU its clock did not count
 *                                (stolen_ns: a VM's steal); WORKLOAD_WAIT as above
 *   workload wakes N MS          a thread named waker_tom writes a byte to a pipe
 *                                from tom_writes() every MS; another blocks for
 *                                each in pipe_wait(), N times
 *   workload outsider N MS FIFO  a process named outsider opens FIFO for writing
 *                                (once a reader has it open) and writes a byte from
 *                                outsider_writes() every MS, N times: a waker from
 *                                outside a recorded command's tree
 *   workload dwait N MS          vfork_wait() N times: vfork, the child sleeps MS
 *                                and execs /bin/true, the parent waits in D state
 *                                until it does, then in waitpid (S) until it exits;
 *                                prints the wall time of both (wall_ns, wait_ns)
 *   workload pingpong SECS       two threads passing a byte back and forth over two
 *                                pipes for SECS; prints the round trips per second
 *   workload migrate N MS        a thread sleeps N x MS in migr_sleep() while another
 *                                moves it to the other CPU (sched_setaffinity) halfway
 *                                through each sleep; prints each call's wall and CPU
 *                                time and the CPUs it went to sleep and woke on
 *   workload whyslow N EXTRA_MS WAIT_MS  N requests of two kinds, one after the other in
 *                                one thread: req_compute() burns 2 ms of CPU in ws_common(),
 *                                and every tenth EXTRA_MS more in ws_extra(); req_pipe()
 *                                burns 1 ms, and every tenth blocks in pipe_wait() on a
 *                                pipe that a thread named filler fills WAIT_MS later (from
 *                                filler_writes()); each request prints its own wall time
 *                                (CLOCK_MONOTONIC) and CPU time around the call; FILE (the
 *                                fifth argument) gets each request as an external span
 *                                named by its kind (JSON lines)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define NOINLINE __attribute__((noinline))

#define OTEL_THREAD_CTX_DEFINE
#include "otel_thread_ctx.h"
#include "otel_process_ctx.h"

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* volatile: the loop's additions stay real instructions at any -O. */
static volatile uint64_t sink;

/*
 * Each spin_N burns CPU in its own body until the thread has used `ns` more
 * of it, so that the function a thread spins in is its top symbol.
 */
#define SPIN_FN(n)                                                  \
	static NOINLINE void spin_##n(uint64_t ns)                  \
	{                                                           \
		uint64_t end = thread_cpu_ns() + ns;                \
		while (thread_cpu_ns() < end)                       \
			for (int i = 0; i < 20000; i++)             \
				sink += (uint64_t)i * i;            \
	}                                                           \
	static NOINLINE void caller_##n(uint64_t ns)                \
	{                                                           \
		spin_##n(ns);                                       \
		sink++; /* not a tail call: caller_N stays on the stack */ \
	}
SPIN_FN(0)
SPIN_FN(1)
SPIN_FN(2)
SPIN_FN(3)
static void (*const callers[])(uint64_t) = { caller_0, caller_1, caller_2, caller_3 };

/*
 * A thread that calls fn(ns) n times under its own name (NULL: the
 * process's), and keeps its tid and the CPU time it took (its own clock).
 */
struct pager {
	long n;
	uint64_t ns;
	const char *name;
	void (*fn)(uint64_t);
	pid_t tid;
	uint64_t cpu_ns;
};

static void *pager_thread(void *arg)
{
	struct pager *p = arg;
	uint64_t c0 = thread_cpu_ns();

	p->tid = syscall(SYS_gettid);
	/* The name as given, hostile bytes and all (the kernel keeps 15). */
	if (p->name)
		prctl(PR_SET_NAME, p->name);
	for (long i = 0; i < p->n; i++)
		p->fn(p->ns);
	p->cpu_ns = thread_cpu_ns() - c0;
	return NULL;
}

static int mode_spin(const char *list)
{
	struct pager jobs[4];
	pthread_t th[4];
	int n = 0;
	char *copy = strdup(list), *tok, *save = NULL;

	for (tok = strtok_r(copy, ",", &save); tok && n < 4; tok = strtok_r(NULL, ",", &save)) {
		jobs[n] = (struct pager){ .n = 1, .ns = strtoull(tok, NULL, 10) * 1000000ull, .fn = callers[n] };
		n++;
	}
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, pager_thread, &jobs[i]);
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		printf("{\"pid\":%d,\"tid\":%d,\"func\":\"spin_%d\",\"caller\":\"caller_%d\",\"cpu_ns\":%llu}\n",
		       getpid(), jobs[i].tid, i, i, (unsigned long long)jobs[i].cpu_ns);
	}
	free(copy);
	return 0;
}

/*
 * The syscall instruction itself, not libc's syscall(): libc is built
 * without frame pointers, and a frame-pointer unwind through it would skip
 * syscall_loop, the very caller the test looks for.
 */
static NOINLINE void syscall_loop(uint64_t ns)
{
	uint64_t end = thread_cpu_ns() + ns;

	while (thread_cpu_ns() < end)
		for (int i = 0; i < 100; i++) {
			long ret;

			__asm__ volatile("syscall" : "=a"(ret) : "0"((long)SYS_getppid) : "rcx", "r11", "memory");
			sink += ret;
		}
}

static int mode_syscalls(const char *ms)
{
	uint64_t t0 = thread_cpu_ns();

	syscall_loop(strtoull(ms, NULL, 10) * 1000000ull);
	printf("{\"pid\":%d,\"tid\":%d,\"func\":\"syscall_loop\",\"cpu_ns\":%llu}\n", getpid(), getpid(),
	       (unsigned long long)(thread_cpu_ns() - t0));
	return 0;
}

static int mode_fork(const char *count)
{
	int n = atoi(count);

	for (int i = 0; i < n; i++) {
		pid_t p = fork();

		if (p == 0) {
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		printf("{\"child\":%d}\n", p);
		waitpid(p, NULL, 0);
	}
	return 0;
}

/*
 * forkspin N MS: N children forked without exec, child i spinning MS in
 * spin_(i%4); the last child forks a grandchild of its own that spins in
 * spin_0, so maps pass down two generations.  Pre-fork servers look so.
 */
static void forked_spin(int idx, uint64_t ns)
{
	uint64_t t0 = thread_cpu_ns();

	callers[idx % 4](ns);
	printf("{\"pid\":%d,\"tid\":%d,\"func\":\"spin_%d\",\"cpu_ns\":%llu}\n", getpid(), getpid(), idx % 4,
	       (unsigned long long)(thread_cpu_ns() - t0));
	fflush(stdout);
}

static int mode_forkspin(const char *count, const char *ms)
{
	int n = atoi(count);
	uint64_t ns = strtoull(ms, NULL, 10) * 1000000ull;

	fflush(stdout);
	for (int i = 0; i < n; i++) {
		pid_t p = fork();

		if (p < 0)
			return 1;
		if (p == 0) {
			if (i == n - 1) {
				pid_t g = fork();

				if (g == 0) {
					forked_spin(0, ns);
					_exit(0);
				}
				forked_spin(i, ns);
				waitpid(g, NULL, 0);
				_exit(0);
			}
			forked_spin(i, ns);
			_exit(0);
		}
	}
	while (wait(NULL) > 0)
		;
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void *sleeper(void *arg)
{
	sleep(*(unsigned *)arg);
	return NULL;
}

static int mode_threads(const char *count, const char *secs)
{
	int n = atoi(count);
	unsigned s = atoi(secs);
	pthread_attr_t a;
	pthread_t *th = calloc(n, sizeof(*th));

	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	for (int i = 0; i < n; i++)
		if (pthread_create(&th[i], &a, sleeper, &s))
			return 1;
	printf("{\"threads\":%d}\n", n);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	free(th);
	return 0;
}

struct counted {
	long n, us;
	pid_t tid;
	uint64_t *slept_ns; /* sleeps: each nanosleep's own wall time, what bounds its span */
};

/* nanosleep() is the clock_nanosleep syscall in glibc; each one is a context switch. */
static NOINLINE void *sleeper_n(void *arg)
{
	struct counted *c = arg;
	struct timespec ts = { c->us / 1000000, (c->us % 1000000) * 1000 };

	c->tid = syscall(SYS_gettid);
	for (long i = 0; i < c->n; i++) {
		uint64_t t0 = mono_ns();

		nanosleep(&ts, NULL);
		if (c->slept_ns)
			c->slept_ns[i] = mono_ns() - t0;
	}
	return NULL;
}

static NOINLINE void *toucher(void *arg)
{
	struct counted *c = arg;
	long page = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, c->n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	c->tid = syscall(SYS_gettid);
	if (p == MAP_FAILED)
		return NULL;
	/* No THP: one fault per 4 KiB page. */
	madvise(p, c->n * page, MADV_NOHUGEPAGE);
	for (long i = 0; i < c->n; i++)
		p[i * page] = 1;
	munmap(p, c->n * page);
	return NULL;
}

/* The work runs in a thread of its own, so its counts are not mixed with start-up's. */
static int mode_counted(void *(*fn)(void *), const char *what, const char *n, const char *us)
{
	struct counted c = { atol(n), us ? atol(us) : 0, 0, NULL };
	pthread_t th;

	/* WORKLOAD_WAIT: start on a line from stdin, once a recorder has attached to this pid. */
	if (getenv("WORKLOAD_WAIT")) {
		char line[8];

		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	if (fn == sleeper_n && c.n > 0)
		c.slept_ns = calloc(c.n, sizeof(*c.slept_ns));
	pthread_create(&th, NULL, fn, &c);
	pthread_join(th, NULL);
	printf("{\"pid\":%d,\"tid\":%d,\"%s\":%ld", getpid(), c.tid, what, c.n);
	if (c.slept_ns) {
		printf(",\"slept_ns\":[");
		for (long i = 0; i < c.n; i++)
			printf("%s%llu", i ? "," : "", (unsigned long long)c.slept_ns[i]);
		printf("]");
	}
	printf("}\n");
	free(c.slept_ns);
	return 0;
}

/* CPU burnt in a function of its own, so a uprobe span can mark it. */
static NOINLINE void burn_ns(uint64_t ns)
{
	uint64_t end = thread_cpu_ns() + ns;

	while (thread_cpu_ns() < end)
		for (int i = 0; i < 2000; i++)
			sink += (uint64_t)i * i;
}

NOINLINE void hidden_work(uint64_t ns)
{
	burn_ns(ns);
	sink++;
}

struct calls {
	long n;
	uint64_t ns;
	const char *file;
	pid_t tid;
	uint64_t cpu_ns;
};

static void *caller_thread(void *arg)
{
	struct calls *c = arg;
	FILE *f = c->file ? fopen(c->file, "w") : NULL;

	c->tid = syscall(SYS_gettid);
	for (long i = 0; i < c->n; i++) {
		uint64_t t0 = mono_ns(), c0 = thread_cpu_ns(), t1;

		hidden_work(c->ns);
		t1 = mono_ns();
		c->cpu_ns += thread_cpu_ns() - c0;
		/* The spans an instrumented application would write itself. */
		if (f)
			fprintf(f, "{\"name\":\"hidden_work\",\"pid\":%d,\"tid\":%d,\"start_ns\":%llu,"
				   "\"end_ns\":%llu,\"trace_id\":\"t%ld\",\"span_id\":%ld}\n",
				getpid(), c->tid, (unsigned long long)t0, (unsigned long long)t1, i / 10, i);
	}
	if (f)
		fclose(f);
	return NULL;
}

static int mode_calls(const char *n, const char *ms, const char *file)
{
	struct calls c = { atol(n), strtoull(ms, NULL, 10) * 1000000ull, file, 0, 0 };
	pthread_t th;

	pthread_create(&th, NULL, caller_thread, &c);
	pthread_join(th, NULL);
	printf("{\"pid\":%d,\"tid\":%d,\"calls\":%ld,\"cpu_ns\":%llu}\n", getpid(), c.tid, c.n,
	       (unsigned long long)c.cpu_ns);
	return 0;
}

static int otel_bad_attrs; /* otel-badattrs */

NOINLINE void otel_work(uint64_t ns)
{
	burn_ns(ns);
	sink++;
}

static void *otel_thread(void *arg)
{
	struct calls *c = arg;
	FILE *f = c->file ? fopen(c->file, "w") : NULL;
	/* A trace per 10 spans; ids never all zero, as W3C requires. */
	uint8_t trace[16] = { 0x5f, 0x0e, 0x1a }, span[8] = { 0x0b };
	long nap_us = getenv("WORKLOAD_OTEL_NAP_US") ? atol(getenv("WORKLOAD_OTEL_NAP_US")) : 0;
	long gap_us = getenv("WORKLOAD_OTEL_GAP_US") ? atol(getenv("WORKLOAD_OTEL_GAP_US")) : 0;
	/* The nap last thing before the context goes: no sample inside the span sees it end. */
	int nap_at_end = getenv("WORKLOAD_OTEL_NAP_AT_END") != NULL;

	c->tid = syscall(SYS_gettid);
	for (long i = 0; i < c->n; i++) {
		uint64_t t0, c0, t1, c1, nap_ns = 0;
		struct otel_thread_ctx_record rec;
		char route[32], user[32];

		memcpy(&trace[8], &(uint64_t){ (uint64_t)(i / 10 + 1) }, 8);
		memcpy(&span[1], &(uint64_t){ (uint64_t)(i + 1) }, 7);
		snprintf(route, sizeof(route), "/route/%ld", i % 3);
		snprintf(user, sizeof(user), "u%ld", 1000 + i);
		t0 = mono_ns();
		c0 = thread_cpu_ns();
		/* Attributes in before the record is published: BPF reads them once, at the change. */
		otel_thread_ctx_record_init(&rec, trace, span, 1);
		otel_thread_ctx_record_add_attr(&rec, 0, route, strlen(route));
		otel_thread_ctx_record_add_attr(&rec, 1, user, strlen(user));
		if (otel_bad_attrs && i % 2 == 0) {
			rec.attrs_data_size = 700; /* past the 612 bytes a record may hold */
		} else if (otel_bad_attrs) {
			/* key 1, 200 bytes claimed, 2 there */
			memcpy(&rec.attrs[rec.attrs_data_size], "\x01\xc8xy", 4);
			rec.attrs_data_size += 4;
		}
		otel_thread_ctx_swap(&rec);
		if (nap_us) {
			/* Blocked mid-span, between two halves of the work: off-CPU time inside the span. */
			struct timespec ts = { nap_us / 1000000, nap_us % 1000000 * 1000 };
			uint64_t n0;

			otel_work(nap_at_end ? c->ns : c->ns / 2);
			n0 = mono_ns();
			clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
			nap_ns = mono_ns() - n0;
			if (!nap_at_end)
				otel_work(c->ns / 2);
		} else {
			otel_work(c->ns);
		}
		otel_thread_ctx_swap(NULL);
		c1 = thread_cpu_ns();
		t1 = mono_ns();
		c->cpu_ns += c1 - c0;
		if (gap_us) {
			/* Idle with no context: no sample sees the span end until the next one begins. */
			struct timespec ts = { gap_us / 1000000, gap_us % 1000000 * 1000 };

			clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
		}
		if (f) {
			fprintf(f, "{\"name\":\"otel_work\",\"pid\":%d,\"tid\":%d,\"start_ns\":%llu,\"end_ns\":%llu,"
				   "\"cpu_ns\":%llu,\"nap_ns\":%llu,\"trace_id\":\"", getpid(), c->tid, (unsigned long long)t0,
				(unsigned long long)t1, (unsigned long long)(c1 - c0), (unsigned long long)nap_ns);
			for (int k = 0; k < 16; k++)
				fprintf(f, "%02x", trace[k]);
			fprintf(f, "\",\"span_id\":\"");
			for (int k = 0; k < 8; k++)
				fprintf(f, "%02x", span[k]);
			fprintf(f, "\",\"attributes\":{\"0\":\"%s\",\"1\":\"%s\"}}\n", route, user);
		}
	}
	if (f)
		fclose(f);
	return NULL;
}

static int mode_otel(const char *mode, const char *n, const char *us, const char *file)
{
	struct calls c = { atol(n), strtoull(us, NULL, 10) * 1000ull, file, 0, 0 };
	static const char *const resource[] = { "service.name", "spanperf-workload", NULL };
	static const char *const keys[] = { "http.route", "user.id", NULL };
	pthread_t th;

	if (strcmp(mode, "otel-nopctx") && otel_process_ctx_publish(resource, keys)) {
		perror("otel_process_ctx_publish");
		return 1;
	}
	otel_bad_attrs = !strcmp(mode, "otel-badattrs");
	if (!strcmp(mode, "otel-stuck"))
		otel_process_ctx_header()->published_at_ns = 0; /* an update that never ends */
	else if (!strcmp(mode, "otel-badver"))
		otel_process_ctx_header()->version = 9;
	else if (!strcmp(mode, "otel-badptr"))
		otel_process_ctx_header()->payload = 4096; /* the first page is never mapped */
	else if (!strcmp(mode, "otel-badsize"))
		otel_process_ctx_header()->payload_size = 2u << 20;
	else if (!strcmp(mode, "otel-badpayload"))
		memset((void *)(uintptr_t)otel_process_ctx_header()->payload, 0xff,
		       otel_process_ctx_header()->payload_size);
	/* WORKLOAD_WAIT: start on a line from stdin, once a recorder has attached to this pid. */
	if (getenv("WORKLOAD_WAIT")) {
		char line[8];

		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	pthread_create(&th, NULL, otel_thread, &c);
	pthread_join(th, NULL);
	printf("{\"pid\":%d,\"tid\":%d,\"spans\":%ld,\"cpu_ns\":%llu}\n", getpid(), c.tid, c.n,
	       (unsigned long long)c.cpu_ns);
	return 0;
}

NOINLINE void inner(void)
{
	burn_ns(1000000);
	sink++;
}

NOINLINE void outer(void)
{
	inner();
	inner();
	sink++;
}

NOINLINE void recurse(int depth)
{
	burn_ns(200000);
	if (depth > 0)
		recurse(depth - 1);
	sink++;
}

static int mode_nest(const char *n)
{
	long k = atol(n);

	for (long i = 0; i < k; i++)
		outer();
	for (long i = 0; i < k; i++)
		recurse(5);
	printf("{\"pid\":%d,\"tid\":%d,\"nest\":%ld}\n", getpid(), getpid(), k);
	return 0;
}

NOINLINE void dying_work(void)
{
	burn_ns(20000000);
	pthread_exit(NULL);
}

static void *dying_thread(void *arg)
{
	*(pid_t *)arg = syscall(SYS_gettid);
	dying_work();
	return NULL;
}

static int mode_exit_inside(void)
{
	pthread_t th;
	pid_t tid = 0;

	pthread_create(&th, NULL, dying_thread, &tid);
	pthread_join(th, NULL);
	printf("{\"pid\":%d,\"tid\":%d,\"exited\":1}\n", getpid(), tid);
	return 0;
}

/* Each read() is one vfs_read() in the kernel: ground truth for kprobe spans. */
static NOINLINE void *reader(void *arg)
{
	struct counted *c = arg;
	char buf[4096];
	int fd = open("/dev/zero", O_RDONLY);

	c->tid = syscall(SYS_gettid);
	for (long i = 0; i < c->n && fd >= 0; i++)
		if (read(fd, buf, sizeof(buf)) != sizeof(buf))
			break;
	if (fd >= 0)
		close(fd);
	return NULL;
}

static int mode_direct(const char *dev, const char *n)
{
	enum { SZ = 65536 };
	int fd = open(dev, O_RDONLY | O_DIRECT);
	void *buf = NULL;
	long i = 0;

	if (fd < 0 || posix_memalign(&buf, 4096, SZ)) {
		perror(dev);
		return 1;
	}
	/* O_DIRECT: every read goes to the driver, none to the page cache. */
	for (; i < atol(n); i++)
		if (pread(fd, buf, SZ, (off_t)(i % 64) * SZ) != SZ)
			break;
	printf("{\"pid\":%d,\"tid\":%d,\"reads\":%ld}\n", getpid(), (int)syscall(SYS_gettid), i);
	free(buf);
	close(fd);
	return 0;
}

NOINLINE void tiny(void)
{
	__asm__ volatile("" ::: "memory");
}

/* Exactly N of something, timed in CPU: the cost of what a probe adds to each. */
static int mode_loop(const char *what, const char *count)
{
	long n = atol(count);
	int fd = what[0] == 'r' ? open("/dev/zero", O_RDONLY) : -1;
	char buf[64];
	uint64_t c0 = thread_cpu_ns(), w0 = mono_ns();

	for (long i = 0; i < n; i++) {
		if (what[0] == 'r') {
			if (read(fd, buf, sizeof(buf)) < 0)
				break;
		} else if (what[0] == 'g') {
			long ret;

			__asm__ volatile("syscall" : "=a"(ret) : "0"((long)SYS_getppid) : "rcx", "r11", "memory");
		} else {
			tiny();
		}
	}
	printf("{\"calls\":%ld,\"cpu_ns_per_call\":%.1f,\"wall_ns_per_call\":%.1f}\n", n,
	       (double)(thread_cpu_ns() - c0) / n, (double)(mono_ns() - w0) / n);
	return 0;
}

/* mov rcx, 0x100000; 1: dec rcx; jnz 1b; ret */
static const unsigned char jit_code[] = { 0x48, 0xc7, 0xc1, 0x00, 0x00, 0x10, 0x00,
					  0x48, 0xff, 0xc9, 0x75, 0xfb, 0xc3 };

static int mode_jit(const char *ms)
{
	uint64_t end = thread_cpu_ns() + strtoull(ms, NULL, 10) * 1000000ull;
	unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char path[64];
	FILE *f;

	if (code == MAP_FAILED)
		return 1;
	/* WORKLOAD_JIT_MAP_LAST: the map is written after the work, just before the exit. */
	bool last = getenv("WORKLOAD_JIT_MAP_LAST");

	memcpy(code, jit_code, sizeof(jit_code));
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	while (last && thread_cpu_ns() < end)
		((void (*)(void))code)();
	f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "%lx %zx jitted_loop\n", (unsigned long)code, sizeof(jit_code));
	fclose(f);
	while (thread_cpu_ns() < end)
		((void (*)(void))code)();
	printf("{\"pid\":%d,\"tid\":%d,\"map\":\"%s\"}\n", getpid(), getpid(), path);
	return 0;
}

static void *short_life(void *arg)
{
	(void)arg;
	burn_ns(500000);
	return NULL;
}

static int mode_churn(const char *secs)
{
	uint64_t end = mono_ns() + strtoull(secs, NULL, 10) * 1000000000ull;
	long threads = 0, procs = 0;

	while (mono_ns() < end) {
		pthread_t th[16];

		for (int i = 0; i < 16; i++)
			pthread_create(&th[i], NULL, short_life, NULL);
		for (int i = 0; i < 16; i++)
			pthread_join(th[i], NULL);
		threads += 16;
		if (threads % 1600 == 0) {
			pid_t p = fork();

			if (p == 0) {
				execl("/bin/true", "true", (char *)NULL);
				_exit(127);
			}
			waitpid(p, NULL, 0);
			procs++;
		}
	}
	printf("{\"threads\":%ld,\"processes\":%ld}\n", threads, procs);
	return 0;
}

struct gaps {
	int cpu;
	double secs;
	uint64_t loops, small, small_ns, big, big_ns;
};

/*
 * Time stolen from a spinning thread, seen by the thread itself: it reads
 * the clock in a loop, and every gap over 1 us is something that ran
 * instead (an interrupt, a BPF program, another task).  Gaps over 200 us
 * are host preemptions or scheduling, counted apart.
 */
static void *gaps_thread(void *arg)
{
	struct gaps *g = arg;
	cpu_set_t set;
	uint64_t start, prev, now, end;

	CPU_ZERO(&set);
	CPU_SET(g->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	start = prev = mono_ns();
	end = start + (uint64_t)(g->secs * 1e9);
	while ((now = mono_ns()) < end) {
		uint64_t d = now - prev;

		if (d > 1000) {
			if (d < 200000) {
				g->small++;
				g->small_ns += d;
			} else {
				g->big++;
				g->big_ns += d;
			}
		}
		prev = now;
		g->loops++;
	}
	return NULL;
}

static int mode_gaps(const char *secs)
{
	int n = sysconf(_SC_NPROCESSORS_ONLN);
	struct gaps g[64];
	pthread_t th[64];

	n = n > 64 ? 64 : n;
	for (int i = 0; i < n; i++) {
		g[i] = (struct gaps){ .cpu = i, .secs = atof(secs) };
		pthread_create(&th[i], NULL, gaps_thread, &g[i]);
	}
	printf("{\"seconds\":%s,\"cpus\":[", secs);
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		printf("%s{\"loops\":%llu,\"small\":%llu,\"small_ns\":%llu,\"big\":%llu,\"big_ns\":%llu}",
		       i ? "," : "", (unsigned long long)g[i].loops, (unsigned long long)g[i].small,
		       (unsigned long long)g[i].small_ns, (unsigned long long)g[i].big,
		       (unsigned long long)g[i].big_ns);
	}
	printf("]}\n");
	return 0;
}

/* ---- offcpu: known time off CPU, in known functions ---- */

struct blocker {
	long n;
	uint64_t ms;
	const char *file;
	int fd[2];
	pid_t tid;
	uint64_t off_ns, cpu_ns, calls;
	/* Off time of the calls in which the thread was also preempted: see preempted(). */
	uint64_t preempted_ns, preempted_calls;
};

/*
 * Involuntary switches of this thread so far.  A call in which the thread
 * was preempted (not only blocked) has, in its wall less CPU time, time on
 * the run queue that no off-CPU tool counts as a block: with a 10 ms tick,
 * one preemption is a whole tick.  The tests allow for exactly those calls.
 */
static long preempted(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) ? 0 : ru.ru_nivcsw;
}

/*
 * The syscall is made here, not in libc: the C library is built without
 * frame pointers, so a chain taken inside its nanosleep() or read() skips
 * the caller's frame, and the test wants these functions named.
 */
static inline __attribute__((always_inline)) long raw_syscall3(long nr, long a, long b, long c)
{
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return ret;
}

NOINLINE void nap_sleep(uint64_t ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	raw_syscall3(SYS_nanosleep, (long)&ts, 0, 0);
	sink++;
}

NOINLINE void pipe_wait(int fd)
{
	char c;

	if (raw_syscall3(SYS_read, fd, (long)&c, 1) != 1)
		sink++;
	sink++;
}

/* /proc/thread-self/schedstat: sum_exec_runtime, run_delay (ns) and pcount (runs on a CPU); zeros if unread. */
static void sched_counts(uint64_t v[3])
{
	char buf[128];
	int fd = open("/proc/thread-self/schedstat", O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	unsigned long long a, b, c;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	if (sscanf(buf, "%llu %llu %llu", &a, &b, &c) == 3) {
		v[0] = a;
		v[1] = b;
		v[2] = c;
	}
}

/* Wall time of the call less the thread's CPU time in it: what it spent off CPU. */
static void *napper(void *arg)
{
	struct blocker *b = arg;
	FILE *f = b->file ? fopen(b->file, "w") : NULL;

	b->tid = syscall(SYS_gettid);
	for (long i = 0; i < b->n; i++) {
		uint64_t s0[3] = { 0 }, s1[3] = { 0 };
		long v0, v1;
		uint64_t t0, c0, t1, c1;

		/* The scheduler's own count of this thread's runs (pcount) and waits, around the call. */
		sched_counts(s0);
		v0 = preempted();
		t0 = mono_ns();
		c0 = thread_cpu_ns();
		nap_sleep(b->ms);
		t1 = mono_ns();
		c1 = thread_cpu_ns();
		v1 = preempted();
		sched_counts(s1);
		b->off_ns += (t1 - t0) - (c1 - c0);
		if (v1 != v0) {
			b->preempted_ns += (t1 - t0) - (c1 - c0);
			b->preempted_calls++;
		}
		b->cpu_ns += c1 - c0;
		b->calls++;
		if (f)
			fprintf(f,
				"{\"name\":\"nap\",\"pid\":%d,\"tid\":%d,\"start_ns\":%llu,\"end_ns\":%llu,"
				"\"cpu_ns\":%llu,\"preempted\":%ld,\"runs\":%llu,\"run_delay_ns\":%llu}\n",
				getpid(), b->tid, (unsigned long long)t0, (unsigned long long)t1,
				(unsigned long long)(c1 - c0), v1 - v0, (unsigned long long)(s1[2] - s0[2]),
				(unsigned long long)(s1[1] - s0[1]));
	}
	if (f)
		fclose(f);
	return NULL;
}

static void *piper(void *arg)
{
	struct blocker *b = arg;

	b->tid = syscall(SYS_gettid);
	for (long i = 0; i < b->n; i++) {
		long v0 = preempted();
		uint64_t t0 = mono_ns(), c0 = thread_cpu_ns(), t1, c1;

		pipe_wait(b->fd[0]);
		t1 = mono_ns();
		c1 = thread_cpu_ns();
		b->off_ns += (t1 - t0) - (c1 - c0);
		if (preempted() != v0) {
			b->preempted_ns += (t1 - t0) - (c1 - c0);
			b->preempted_calls++;
		}
		b->cpu_ns += c1 - c0;
		b->calls++;
	}
	return NULL;
}

NOINLINE void feeder(struct blocker *b)
{
	for (long i = 0; i < b->n; i++) {
		struct timespec ts = { 0, b->ms * 1000000 };

		nanosleep(&ts, NULL);
		if (write(b->fd[1], "x", 1) != 1)
			sink++;
	}
}

static void *feeder_thread(void *arg)
{
	feeder(arg);
	return NULL;
}

static void *spinner(void *arg)
{
	struct blocker *b = arg;
	uint64_t c0 = thread_cpu_ns();

	b->tid = syscall(SYS_gettid);
	burn_ns(b->ms * 1000000ull);
	b->cpu_ns = thread_cpu_ns() - c0;
	return NULL;
}

static void print_blocker(const char *role, const struct blocker *b)
{
	printf("{\"role\":\"%s\",\"pid\":%d,\"tid\":%d,\"calls\":%llu,\"off_ns\":%llu,\"preempted_ns\":%llu,"
	       "\"preempted_calls\":%llu,\"cpu_ns\":%llu}\n",
	       role, getpid(), b->tid, (unsigned long long)b->calls, (unsigned long long)b->off_ns,
	       (unsigned long long)b->preempted_ns, (unsigned long long)b->preempted_calls, (unsigned long long)b->cpu_ns);
}

static int mode_offcpu(char **argv, int argc)
{
	struct blocker nap = { .n = atol(argv[2]), .ms = strtoull(argv[3], NULL, 10), .file = argc > 7 ? argv[7] : NULL };
	struct blocker pipe_b = { .n = atol(argv[4]), .ms = strtoull(argv[5], NULL, 10) };
	struct blocker spin = { .n = 1, .ms = strtoull(argv[6], NULL, 10) };
	pthread_t th[4];

	if (pipe(pipe_b.fd))
		return 1;
	/* WORKLOAD_WAIT: start when a line arrives on stdin, so that a recorder can attach to this pid first. */
	if (getenv("WORKLOAD_WAIT")) {
		char line[8];

		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	pthread_create(&th[0], NULL, napper, &nap);
	pthread_create(&th[1], NULL, piper, &pipe_b);
	pthread_create(&th[2], NULL, feeder_thread, &pipe_b);
	pthread_create(&th[3], NULL, spinner, &spin);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	print_blocker("sleeper", &nap);
	print_blocker("piper", &pipe_b);
	printf("{\"role\":\"spinner\",\"pid\":%d,\"tid\":%d,\"calls\":1,\"off_ns\":0,\"preempted_ns\":0,\"cpu_ns\":%llu}\n",
	       getpid(), spin.tid, (unsigned long long)spin.cpu_ns);
	return 0;
}

/* The thread's own scheduler accounts: sum_exec_runtime, run_delay (ns), as /proc shows them. */
static int schedstat(uint64_t *sum, uint64_t *delay)
{
	char buf[128];
	int fd = open("/proc/thread-self/schedstat", O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	unsigned long long a, b;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	if (sscanf(buf, "%llu %llu", &a, &b) != 2)
		return -1;
	*sum = a;
	*delay = b;
	return 0;
}

struct runq_call {
	uint64_t ns, start, end, sum, delay;
	uint64_t sleep_ns, slept_ns; /* runq's SLEEP_MS: asked, and the nanosleep's own wall time */
	int64_t stolen_ns;	     /* wall time on CPU that its own clock did not count (see on_cpu_mark) */
	uint64_t wall, cpu, rd;	     /* on_cpu_mark's last reading */
	long sleeps;
	int ok;
};

/* The thread's voluntary switches so far (its sleeps), -1 if unknown. */
static long sleeps(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) ? -1 : ru.ru_nvcsw;
}

/*
 * A VM's hypervisor may take the CPU from the thread while it runs (steal),
 * at a tick or a switch as much as anywhere: the switch stamps count that
 * time on CPU, its schedstat does not (paravirt steal accounting).  Between
 * two readings with no sleep between them the thread was on CPU or waiting
 * in the run queue: the wall time less its run_delay (on the run queue's
 * clock, steal and all) is its time on CPU by the wall, and that less its
 * own CPU time was stolen.  The interval holding the nanosleep is left out;
 * the sleep count is read before and after each reading, so that a reading
 * taken across a sleep is seen, and so is run_delay, taken again until the
 * thread was not preempted in between (a wait between the clocks and
 * run_delay would be counted in one interval and not taken out of the
 * next).  Summed with sign, the skew of each pair of readings cancels out.
 */
static void on_cpu_mark(struct runq_call *c, bool first)
{
	uint64_t wall, cpu, sum, rd, rd0;
	long before, after;
	int bad, tries = 0;

	do {
		before = sleeps();
		bad = schedstat(&sum, &rd0);
		wall = mono_ns();
		cpu = thread_cpu_ns();
		bad |= schedstat(&sum, &rd);
		after = sleeps();
	} while (!bad && rd != rd0 && ++tries < 100);
	bad |= rd != rd0;
	if (!first && !bad && before >= 0 && after == c->sleeps)
		c->stolen_ns += (int64_t)(wall - c->wall) - (int64_t)(rd - c->rd) - (int64_t)(cpu - c->cpu);
	c->wall = wall;
	c->cpu = cpu;
	c->rd = rd;
	c->sleeps = bad || before < 0 ? -2 : before;
}

/* burn_ns, marking as it goes. */
static NOINLINE void burn_marked(struct runq_call *c, uint64_t ns)
{
	uint64_t end = thread_cpu_ns() + ns;

	while (c->cpu < end) {
		for (int i = 0; i < 2000; i++)
			sink += (uint64_t)i * i;
		on_cpu_mark(c, false);
	}
}

/*
 * Spins ns of its own CPU behind two spinners on the same CPU: most of its
 * wall time it waits for the CPU.  It reads its schedstat first and last
 * thing, so that the truth is as close to the span's edges as it can be.
 */
NOINLINE void queued_work(struct runq_call *c)
{
	uint64_t s0 = 0, d0 = 0, s1 = 0, d1 = 0;

	c->ok = !schedstat(&s0, &d0);
	c->start = mono_ns();
	c->stolen_ns = 0;
	on_cpu_mark(c, true);
	if (c->sleep_ns) {
		struct timespec ts = { c->sleep_ns / 1000000000ull, c->sleep_ns % 1000000000ull };
		uint64_t t0;

		burn_marked(c, c->ns / 2);
		t0 = mono_ns();
		nanosleep(&ts, NULL);
		c->slept_ns = mono_ns() - t0;
		on_cpu_mark(c, false);
		burn_marked(c, c->ns - c->ns / 2);
	} else {
		burn_marked(c, c->ns);
	}
	c->end = mono_ns();
	on_cpu_mark(c, false);
	c->ok &= !schedstat(&s1, &d1);
	c->sum = s1 - s0;
	c->delay = d1 - d0;
}

static volatile int spinners_stop;

static void *queue_spinner(void *arg)
{
	(void)arg;
	while (!spinners_stop)
		sink++;
	return NULL;
}

static int mode_runq(const char *n, const char *ms, const char *file, const char *sleep_ms)
{
	struct runq_call c = { .ns = strtoull(ms, NULL, 10) * 1000000ull,
			       .sleep_ns = sleep_ms ? strtoull(sleep_ms, NULL, 10) * 1000000ull : 0 };
	FILE *f = NULL;
	uint64_t sum0 = 0, delay0 = 0, sum1 = 0, delay1 = 0;
	uint64_t sum_main = 0, delay_main = 0;
	pthread_t th[2];
	cpu_set_t set;
	int cpu = -1;

	/* Its waits since its fork, as it starts: what stat's count of its whole life may or may not hold. */
	schedstat(&sum_main, &delay_main);
	/* The last CPU allowed: the whole process on it, as taskset -c CPU would. */
	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set))
			cpu = i;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return 1;
	/* The spans an instrumented application would write itself (annotate --spans). */
	if (file && !(f = fopen(file, "w")))
		return 1;
	/* WORKLOAD_WAIT: start on a line from stdin, once the recorders have attached to this pid. */
	if (getenv("WORKLOAD_WAIT")) {
		char line[8];

		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	schedstat(&sum0, &delay0);
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, queue_spinner, NULL);
	for (long i = 0; i < atol(n); i++) {
		queued_work(&c);
		printf("{\"pid\":%d,\"tid\":%d,\"cpu\":%d,\"call\":%ld,\"ok\":%d,\"start_ns\":%llu,\"end_ns\":%llu,"
		       "\"sum_exec_ns\":%llu,\"run_delay_ns\":%llu,\"slept_ns\":%llu,\"stolen_ns\":%lld}\n",
		       getpid(), (int)syscall(SYS_gettid), cpu, i, c.ok, (unsigned long long)c.start,
		       (unsigned long long)c.end, (unsigned long long)c.sum, (unsigned long long)c.delay,
		       (unsigned long long)c.slept_ns, (long long)(c.stolen_ns > 0 ? c.stolen_ns : 0));
		if (f)
			fprintf(f, "{\"name\":\"queued_work\",\"pid\":%d,\"tid\":%d,\"start_ns\":%llu,\"end_ns\":%llu}\n",
				getpid(), (int)syscall(SYS_gettid), (unsigned long long)c.start, (unsigned long long)c.end);
	}
	if (f)
		fclose(f);
	spinners_stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	schedstat(&sum1, &delay1);
	/*
	 * The thread's whole wait for the CPU, from before the spinners to after
	 * them; since main began (main_run_delay_ns), and since its fork
	 * (life_run_delay_ns): a busy host adds a hundred ms of waits to its
	 * start, which a count of its whole life holds in part.
	 */
	printf("{\"role\":\"total\",\"pid\":%d,\"tid\":%d,\"sum_exec_ns\":%llu,\"run_delay_ns\":%llu,"
	       "\"main_run_delay_ns\":%llu,\"life_run_delay_ns\":%llu}\n", getpid(), (int)syscall(SYS_gettid),
	       (unsigned long long)(sum1 - sum0), (unsigned long long)(delay1 - delay0),
	       (unsigned long long)(delay1 - delay_main), (unsigned long long)delay1);
	return 0;
}

struct wakes {
	long n;
	uint64_t ms;
	int fd[2];
	pid_t tom;
};

/* The writer the test looks for on the waker's stack: the syscall inline, as in pipe_wait(). */
NOINLINE void tom_writes(int fd)
{
	if (raw_syscall3(SYS_write, fd, (long)"t", 1) != 1)
		sink++;
	sink++;
}

static void *waker_tom(void *arg)
{
	struct wakes *w = arg;

	pthread_setname_np(pthread_self(), "waker_tom");
	w->tom = syscall(SYS_gettid);
	for (long i = 0; i < w->n; i++) {
		struct timespec ts = { 0, w->ms * 1000000 };

		nanosleep(&ts, NULL);
		tom_writes(w->fd[1]);
	}
	return NULL;
}

static int mode_wakes(const char *n, const char *ms)
{
	struct wakes w = { .n = atol(n), .ms = strtoull(ms, NULL, 10) };
	uint64_t t0, off = 0, c0;
	pthread_t th;

	if (pipe(w.fd))
		return 1;
	/* WORKLOAD_WAIT: start on a line from stdin, once a recorder has attached to this pid. */
	if (getenv("WORKLOAD_WAIT")) {
		char line[8];

		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	pthread_create(&th, NULL, waker_tom, &w);
	for (long i = 0; i < w.n; i++) {
		t0 = mono_ns();
		c0 = thread_cpu_ns();
		pipe_wait(w.fd[0]);
		off += mono_ns() - t0 - (thread_cpu_ns() - c0);
	}
	pthread_join(th, NULL);
	printf("{\"pid\":%d,\"tid\":%d,\"waker_tid\":%d,\"calls\":%ld,\"off_ns\":%llu}\n", getpid(),
	       (int)syscall(SYS_gettid), w.tom, w.n, (unsigned long long)off);
	return 0;
}

/* Each burns CPU in its own body, so that each is the leaf of its samples. */
NOINLINE void ws_common(uint64_t ns)
{
	uint64_t end = thread_cpu_ns() + ns;

	while (thread_cpu_ns() < end)
		for (int i = 0; i < 2000; i++)
			sink += (uint64_t)i * i;
}

NOINLINE void ws_extra(uint64_t ns)
{
	uint64_t end = thread_cpu_ns() + ns;

	while (thread_cpu_ns() < end)
		for (int i = 0; i < 2000; i++)
			sink += (uint64_t)i * 3;
}

struct whyslow {
	uint64_t extra_ns, wait_ns;
	int ask[2], data[2];
	pid_t filler;
};

NOINLINE void req_compute(const struct whyslow *w, long i)
{
	ws_common(2000000);
	if (i % 10 == 9)
		ws_extra(w->extra_ns);
	sink++;
}

NOINLINE void req_pipe(const struct whyslow *w, long i)
{
	ws_common(1000000);
	if (i % 10 == 9) {
		if (write(w->ask[1], "a", 1) != 1)
			sink++;
		pipe_wait(w->data[0]);
	}
	sink++;
}

NOINLINE void filler_writes(int fd)
{
	if (raw_syscall3(SYS_write, fd, (long)"f", 1) != 1)
		sink++;
	sink++;
}

/* Asked for a byte, it fills the pipe wait_ns later; a closed ask pipe ends it. */
static void *filler(void *arg)
{
	struct whyslow *w = arg;
	char c;

	pthread_setname_np(pthread_self(), "filler");
	w->filler = syscall(SYS_gettid);
	while (read(w->ask[0], &c, 1) == 1) {
		struct timespec ts = { w->wait_ns / 1000000000, w->wait_ns % 1000000000 };

		nanosleep(&ts, NULL);
		filler_writes(w->data[1]);
	}
	return NULL;
}

static int mode_whyslow(const char *n, const char *extra_ms, const char *wait_ms, const char *file)
{
	FILE *f = file ? fopen(file, "w") : NULL;
	struct whyslow w = { .extra_ns = strtoull(extra_ms, NULL, 10) * 1000000,
			     .wait_ns = strtoull(wait_ms, NULL, 10) * 1000000 };
	void (*const kind[2])(const struct whyslow *, long) = { req_compute, req_pipe };
	const char *const name[2] = { "req_compute", "req_pipe" };
	pthread_t th;

	if (pipe(w.ask) || pipe(w.data))
		return 1;
	pthread_create(&th, NULL, filler, &w);
	for (long i = 0; i < atol(n); i++)
		for (int k = 0; k < 2; k++) {
			uint64_t t0 = mono_ns(), c0 = thread_cpu_ns(), t1, c1;

			kind[k](&w, i);
			t1 = mono_ns();
			c1 = thread_cpu_ns();
			printf("{\"kind\":\"%s\",\"i\":%ld,\"tid\":%d,\"wall_ns\":%llu,\"cpu_ns\":%llu}\n", name[k], i,
			       (int)syscall(SYS_gettid), (unsigned long long)(t1 - t0), (unsigned long long)(c1 - c0));
			if (f)
				fprintf(f, "{\"name\":\"%s\",\"pid\":%d,\"tid\":%d,\"start_ns\":%llu,\"end_ns\":%llu}\n",
					name[k], getpid(), (int)syscall(SYS_gettid), (unsigned long long)t0,
					(unsigned long long)t1);
		}
	if (f)
		fclose(f);
	close(w.ask[1]);
	pthread_join(th, NULL);
	printf("{\"role\":\"filler\",\"tid\":%d}\n", w.filler);
	return 0;
}

NOINLINE void outsider_writes(int fd)
{
	if (raw_syscall3(SYS_write, fd, (long)"o", 1) != 1)
		sink++;
	sink++;
}

static int mode_outsider(const char *n, const char *ms, const char *fifo)
{
	struct timespec ts = { 0, strtoull(ms, NULL, 10) * 1000000 };
	int fd;

	prctl(PR_SET_NAME, "outsider");
	printf("{\"pid\":%d,\"tid\":%d}\n", getpid(), (int)syscall(SYS_gettid));
	fd = open(fifo, O_WRONLY);
	if (fd < 0)
		return 1;
	for (long i = 0; i < atol(n); i++) {
		nanosleep(&ts, NULL);
		outsider_writes(fd);
	}
	close(fd);
	return 0;
}

/*
 * vfork's parent waits for the child's exec or exit in an uninterruptible
 * (killable) sleep: a D-state wait as long as the child takes to exec.
 */
NOINLINE pid_t vfork_wait(uint64_t ms)
{
	static char *const args[] = { "true", NULL };
	pid_t pid = vfork();

	if (pid == 0) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

		syscall(SYS_nanosleep, &ts, NULL);
		execv("/bin/true", args);
		_exit(127);
	}
	sink++;
	return pid;
}

static int mode_dwait(const char *n, const char *ms)
{
	uint64_t d = strtoull(ms, NULL, 10), wall = 0, wait = 0;

	for (long i = 0; i < atol(n); i++) {
		uint64_t t0 = mono_ns(), t1;
		pid_t pid = vfork_wait(d);

		t1 = mono_ns();
		wall += t1 - t0;
		/* An S sleep until /bin/true has run to its exit: as long as a busy host makes that. */
		if (pid < 0 || waitpid(pid, NULL, 0) != pid)
			return 1;
		wait += mono_ns() - t1;
	}
	printf("{\"pid\":%d,\"tid\":%d,\"calls\":%ld,\"wall_ns\":%llu,\"wait_ns\":%llu}\n", getpid(),
	       (int)syscall(SYS_gettid), atol(n), (unsigned long long)wall, (unsigned long long)wait);
	return 0;
}

struct pong {
	int a[2], b[2];
	volatile int stop;
};

static void *ponger(void *arg)
{
	struct pong *p = arg;
	char c;

	while (read(p->a[0], &c, 1) == 1 && c)
		if (write(p->b[1], &c, 1) != 1)
			break;
	return NULL;
}

/* A wakeup-heavy load: every byte wakes the other thread. */
static int mode_pingpong(const char *secs)
{
	struct pong p = {};
	uint64_t end, t0, n = 0;
	pthread_t th;
	char c = 1;

	if (pipe(p.a) || pipe(p.b))
		return 1;
	pthread_create(&th, NULL, ponger, &p);
	t0 = mono_ns();
	end = t0 + (uint64_t)(atof(secs) * 1e9);
	while (mono_ns() < end) {
		if (write(p.a[1], &c, 1) != 1 || read(p.b[0], &c, 1) != 1)
			return 1;
		n++;
	}
	c = 0;
	if (write(p.a[1], &c, 1) != 1)
		return 1;
	pthread_join(th, NULL);
	printf("{\"pid\":%d,\"round_trips\":%llu,\"per_s\":%.0f}\n", getpid(), (unsigned long long)n,
	       n / ((mono_ns() - t0) / 1e9));
	return 0;
}

NOINLINE void migr_sleep(uint64_t ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	raw_syscall3(SYS_nanosleep, (long)&ts, 0, 0);
	sink++;
}

struct migr {
	long n;
	uint64_t ms;
	volatile pid_t tid;
	volatile long call; /* the call in progress, -1 before the first */
	volatile int cpu;   /* where it went to sleep */
};

static void *migr_thread(void *arg)
{
	struct migr *m = arg;

	m->tid = syscall(SYS_gettid);
	for (long i = 0; i < m->n; i++) {
		int cpu0 = sched_getcpu();
		uint64_t t0 = mono_ns(), c0 = thread_cpu_ns();

		m->cpu = cpu0;
		m->call = i;
		migr_sleep(m->ms);
		printf("{\"tid\":%d,\"call\":%ld,\"wall_ns\":%llu,\"cpu_ns\":%llu,\"cpu_before\":%d,\"cpu_after\":%d}\n",
		       m->tid, i, (unsigned long long)(mono_ns() - t0), (unsigned long long)(thread_cpu_ns() - c0), cpu0,
		       sched_getcpu());
	}
	m->call = m->n;
	return NULL;
}

/* A thread that blocks on one CPU and wakes on another: its times must not double. */
static int mode_migrate(const char *n, const char *ms)
{
	struct migr m = { .n = atol(n), .ms = strtoull(ms, NULL, 10), .call = -1 };
	struct timespec half, poll = { 0, 100000 };
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN), seen = -1;
	pthread_t th;

	if (ncpu < 2)
		return 3;
	half = (struct timespec){ m.ms / 2000, (m.ms % 2000) * 500000 };
	pthread_create(&th, NULL, migr_thread, &m);
	while (m.call < m.n) {
		if (m.call != seen && m.call >= 0) {
			cpu_set_t set;

			seen = m.call;
			nanosleep(&half, NULL);
			/* Another CPU than the one it went to sleep on: it wakes there. */
			CPU_ZERO(&set);
			CPU_SET((m.cpu + 1) % ncpu, &set);
			sched_setaffinity(m.tid, sizeof(set), &set);
		}
		nanosleep(&poll, NULL);
	}
	pthread_join(th, NULL);
	return 0;
}

/* page N MS A B: the page's ground truth, two named threads with uprobe-able spans. */
NOINLINE void page_work(uint64_t ns)
{
	burn_ns(ns);
	sink++;
}

/* Half of its time on CPU, then asleep as long: a span that sleeps inside. */
NOINLINE void page_nap(uint64_t ns)
{
	struct timespec ts = { 0, ns };

	burn_ns(ns / 2);
	nanosleep(&ts, NULL);
	sink++;
}

static int mode_page(char **argv)
{
	uint64_t ns = strtoull(argv[3], NULL, 10) * 1000000ull;
	struct pager pg[2] = { { .n = atol(argv[2]), .ns = ns, .name = argv[4], .fn = page_work },
			       { .n = atol(argv[2]), .ns = ns, .name = argv[5], .fn = page_nap } };
	pthread_t th[2];

	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, pager_thread, &pg[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 2; i++)
		printf("{\"role\":\"%s\",\"pid\":%d,\"tid\":%d,\"calls\":%ld,\"cpu_ns\":%llu}\n", i ? "napper" : "worker",
		       getpid(), pg[i].tid, pg[i].n, (unsigned long long)pg[i].cpu_ns);
	return 0;
}

int main(int argc, char **argv)
{
	int r = 2;

	if (argc < 3 && !(argc == 2 && !strcmp(argv[1], "exit-inside"))) {
		fprintf(stderr, "usage: workload spin MS[,MS..] | syscalls MS | fork N | forkspin N MS | work THREADS ITERS | threads N SECS | sleeps N US | pages N | calls N MS [FILE] | nest N | exit-inside | reads N | getppid N | tiny N | readloop N | jit MS | churn SECS | gaps SECS | direct DEV N | page N MS NAME NAME\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[1], "spin"))
		r = mode_spin(argv[2]);
	else if (!strcmp(argv[1], "syscalls"))
		r = mode_syscalls(argv[2]);
	else if (!strcmp(argv[1], "forkspin") && argc > 3)
		return mode_forkspin(argv[2], argv[3]);
	else if (!strcmp(argv[1], "fork"))
		r = mode_fork(argv[2]);
	else if (!strcmp(argv[1], "threads") && argc > 3)
		r = mode_threads(argv[2], argv[3]);
	else if (!strcmp(argv[1], "sleeps") && argc > 3)
		r = mode_counted(sleeper_n, "sleeps", argv[2], argv[3]);
	else if (!strcmp(argv[1], "pages"))
		r = mode_counted(toucher, "pages", argv[2], NULL);
	else if (!strcmp(argv[1], "calls") && argc > 3)
		r = mode_calls(argv[2], argv[3], argc > 4 ? argv[4] : NULL);
	else if (!strncmp(argv[1], "otel", 4) && argc > 3)
		r = mode_otel(argv[1], argv[2], argv[3], argc > 4 ? argv[4] : NULL);
	else if (!strcmp(argv[1], "nest"))
		r = mode_nest(argv[2]);
	else if (!strcmp(argv[1], "exit-inside"))
		r = mode_exit_inside();
	else if (!strcmp(argv[1], "offcpu") && argc > 6)
		r = mode_offcpu(argv, argc);
	else if (!strcmp(argv[1], "runq") && argc > 3)
		r = mode_runq(argv[2], argv[3], argc > 4 ? argv[4] : NULL, argc > 5 ? argv[5] : NULL);
	else if (!strcmp(argv[1], "whyslow") && argc > 4)
		r = mode_whyslow(argv[2], argv[3], argv[4], argc > 5 ? argv[5] : NULL);
	else if (!strcmp(argv[1], "wakes") && argc > 3)
		r = mode_wakes(argv[2], argv[3]);
	else if (!strcmp(argv[1], "outsider") && argc > 4)
		r = mode_outsider(argv[2], argv[3], argv[4]);
	else if (!strcmp(argv[1], "dwait") && argc > 3)
		r = mode_dwait(argv[2], argv[3]);
	else if (!strcmp(argv[1], "pingpong"))
		r = mode_pingpong(argv[2]);
	else if (!strcmp(argv[1], "migrate") && argc > 3)
		r = mode_migrate(argv[2], argv[3]);
	else if (!strcmp(argv[1], "page") && argc > 5)
		r = mode_page(argv);
	else if (!strcmp(argv[1], "direct") && argc > 3)
		r = mode_direct(argv[2], argv[3]);
	else if (!strcmp(argv[1], "reads"))
		r = mode_counted(reader, "reads", argv[2], NULL);
	else if (!strcmp(argv[1], "jit"))
		r = mode_jit(argv[2]);
	else if (!strcmp(argv[1], "churn"))
		r = mode_churn(argv[2]);
	else if (!strcmp(argv[1], "gaps"))
		r = mode_gaps(argv[2]);
	else if (!strcmp(argv[1], "getppid") || !strcmp(argv[1], "tiny") || !strcmp(argv[1], "readloop"))
		r = mode_loop(argv[1], argv[2]);
	else
		fprintf(stderr, "workload: unknown mode '%s'\n", argv[1]);
	return r;
}
