// SPDX-License-Identifier: GPL-2.0
/*
 * Ground truth for --call-graph dwarf: built with -O2 -fomit-frame-pointer,
 * so that frame-pointer chains break, and its hot code is reached through
 * code that is not ours: libc's qsort and bsearch call cmp_ints(), and
 * libdwarfcb.so (also without frame pointers) calls cb_work().
 *
 *   workload_dwarf MS    sorts and searches for MS of CPU, then calls
 *                        through the library for MS/4; prints the counts
 *   workload_dwarf block N MS
 *                        off-CPU ground truth: a thread blocks N times in
 *                        read() of a pipe inside inbox_wait() and N times
 *                        in nanosleep() inside nap(), MS each; prints the
 *                        ns it measured blocked in each and its tid
 *   workload_dwarf jit MS
 *                        JIT-like: for MS of CPU, jit_round() calls code
 *                        in an anonymous executable mapping (with a frame
 *                        pointer, as V8's) that calls back jit_leaf()
 *   workload_dwarf maps N MS
 *                        maps its own file N times more, executable (as a
 *                        process with thousands of mappings), then runs as
 *                        workload_dwarf MS; prints how many it mapped
 *   workload_dwarf clock MS
 *                        for MS of CPU, clock_round() reads the process's
 *                        CPU clock, which the vDSO takes to the kernel:
 *                        main -> clock_round -> clock_gettime (libc) ->
 *                        __vdso_clock_gettime -> syscall
 *   workload_dwarf signal MS
 *                        for MS of CPU, signal_round() raises SIGUSR1,
 *                        whose handler sig_work() sorts: the chain goes
 *                        through the kernel's signal frame (__restore_rt,
 *                        a CIE marked S) back into raise() in libc:
 *                        main -> signal_round -> raise ... __restore_rt ->
 *                        sig_work -> qsort -> ... -> cmp_ints
 *   workload_dwarf signap MS
 *                        as workload_dwarf MS, and SIGUSR2 (a tracer's, at a
 *                        pc of its choosing) naps 20 ms in sig_nap(): its
 *                        off-CPU chain crosses the signal frame to that pc
 *
 * Each named function is noinline so that it is one frame in every chain:
 * main -> worker -> sort_round -> qsort -> ... -> cmp_ints
 *              \-> search_round -> bsearch -> cmp_ints
 *              \-> lib_round -> dwarfcb_each (lib) -> cb_work
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>

int dwarfcb_each(int *v, int n, int (*fn)(int *, int));

#define N 4096

static volatile long compares;

__attribute__((noinline)) int cmp_ints(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	compares++;
	return (x > y) - (x < y);
}

__attribute__((noinline)) int cb_work(int *v, int i)
{
	unsigned h = v[i];

	for (int k = 0; k < 64; k++)
		h = h * 2654435761u + k;
	return h & 1;
}

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((noinline)) void sort_round(int *v, unsigned *seed)
{
	for (int i = 0; i < N; i++)
		v[i] = rand_r(seed);
	qsort(v, N, sizeof(*v), cmp_ints);
}

__attribute__((noinline)) long search_round(int *v, unsigned *seed)
{
	long found = 0;

	for (int i = 0; i < N; i++) {
		int key = rand_r(seed);

		found += bsearch(&key, v, N, sizeof(*v), cmp_ints) != NULL;
	}
	return found;
}

__attribute__((noinline)) long lib_round(int *v)
{
	return dwarfcb_each(v, N, cb_work);
}

__attribute__((noinline)) long worker(double ms)
{
	static int v[N];
	unsigned seed = 1;
	long rounds = 0, sink = 0;
	double t0 = cpu_ms();

	while (cpu_ms() - t0 < ms) {
		sort_round(v, &seed);
		sink += search_round(v, &seed);
		rounds++;
	}
	t0 = cpu_ms();
	while (cpu_ms() - t0 < ms / 4)
		sink += lib_round(v);
	return rounds + (sink & 1);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

struct block_args {
	int fd, n;
	long ms;
	uint64_t read_ns, sleep_ns;
	long tid;
};

/* Blocked in read() until the main thread writes: libc's read() keeps no frame of its own. */
__attribute__((noinline)) int inbox_wait(int fd)
{
	char c;

	return read(fd, &c, 1) == 1 ? c : -1;
}

__attribute__((noinline)) void nap(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static void *blocker(void *p)
{
	struct block_args *a = p;

	a->tid = syscall(SYS_gettid);
	for (int i = 0; i < a->n; i++) {
		uint64_t t0 = mono_ns();

		if (inbox_wait(a->fd) < 0)
			break;
		a->read_ns += mono_ns() - t0;
		t0 = mono_ns();
		nap(a->ms);
		a->sleep_ns += mono_ns() - t0;
	}
	return NULL;
}

__attribute__((noinline)) long jit_leaf(long x)
{
	for (int k = 0; k < 256; k++)
		x = x * 2654435761u + k;
	return x;
}

/* stub(fn, x): a frame with a frame pointer, then fn(x), as JIT code that calls back into C. */
static const unsigned char jit_code[] = {
	0x55,		  /* push %rbp */
	0x48, 0x89, 0xe5, /* mov %rsp,%rbp */
	0x48, 0x89, 0xf8, /* mov %rdi,%rax */
	0x48, 0x89, 0xf7, /* mov %rsi,%rdi */
	0xff, 0xd0,	  /* call *%rax */
	0x5d,		  /* pop %rbp */
	0xc3,		  /* ret */
};

__attribute__((noinline)) long jit_round(long (*stub)(long (*)(long), long), long x)
{
	for (int i = 0; i < 1024; i++)
		x = stub(jit_leaf, x);
	return x;
}

static int jit_main(double ms)
{
	void *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long (*stub)(long (*)(long), long);
	long x = 1, rounds = 0;
	double t0;

	if (code == MAP_FAILED)
		return 1;
	memcpy(code, jit_code, sizeof(jit_code));
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC))
		return 1;
	stub = (long (*)(long (*)(long), long))code;
	t0 = cpu_ms();
	while (cpu_ms() - t0 < ms) {
		x = jit_round(stub, x);
		rounds++;
	}
	printf("{\"rounds\": %ld, \"jit\": \"%p\", \"sink\": %ld}\n", rounds, code, x & 1);
	return 0;
}

__attribute__((noinline)) static double clock_round(void)
{
	double s = 0;

	for (int i = 0; i < 100; i++)
		s += cpu_ms();
	return s;
}

static int clock_main(double ms)
{
	double t0 = cpu_ms(), s = 0;
	long rounds = 0;

	while (cpu_ms() - t0 < ms) {
		s += clock_round();
		rounds++;
	}
	printf("{\"rounds\": %ld, \"sink\": %d}\n", rounds, s > 0);
	return 0;
}

static int sig_v[N];
static unsigned sig_seed = 1;

/* The empty asm after each call keeps it a call, not a tail jump that leaves no frame. */
__attribute__((noinline)) void sig_work(int sig)
{
	(void)sig;
	for (int i = 0; i < N; i++)
		sig_v[i] = rand_r(&sig_seed);
	qsort(sig_v, N, sizeof(*sig_v), cmp_ints);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void signal_round(void)
{
	raise(SIGUSR1);
	__asm__ volatile("" ::: "memory");
}

static int signal_main(double ms)
{
	struct sigaction sa = { .sa_handler = sig_work };
	double t0 = cpu_ms();
	long rounds = 0;

	if (sigaction(SIGUSR1, &sa, NULL))
		return 1;
	while (cpu_ms() - t0 < ms) {
		signal_round();
		rounds++;
	}
	printf("{\"rounds\": %ld}\n", rounds);
	return 0;
}

__attribute__((noinline)) void sig_nap(int sig)
{
	(void)sig;
	nap(20);
	__asm__ volatile("" ::: "memory");
}

static int signap_main(double ms)
{
	struct sigaction sa = { .sa_handler = sig_nap };
	long rounds;

	if (sigaction(SIGUSR2, &sa, NULL))
		return 1;
	rounds = worker(ms);
	printf("{\"rounds\": %ld}\n", rounds);
	return 0;
}

static int maps_main(int n, double ms)
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), got = 0;
	long rounds;

	if (fd < 0)
		return 1;
	/* Each at an address of the kernel's choosing, all at offset 0: none merge. */
	for (int i = 0; i < n; i++)
		got += mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) != MAP_FAILED;
	close(fd);
	rounds = worker(ms);
	printf("{\"mapped\": %d, \"rounds\": %ld}\n", got, rounds);
	return 0;
}

static int block_main(int n, long ms)
{
	struct block_args a = { .n = n, .ms = ms };
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	pthread_t th;
	int fds[2];

	if (pipe(fds))
		return 1;
	a.fd = fds[0];
	if (pthread_create(&th, NULL, blocker, &a))
		return 1;
	for (int i = 0; i < n; i++) {
		nanosleep(&ts, NULL);
		/* After the thread's nap too: it is in read() for about MS each time. */
		nanosleep(&ts, NULL);
		if (write(fds[1], "x", 1) != 1)
			return 1;
	}
	pthread_join(th, NULL);
	printf("{\"tid\": %ld, \"read_ns\": %llu, \"sleep_ns\": %llu}\n", a.tid, (unsigned long long)a.read_ns,
	       (unsigned long long)a.sleep_ns);
	return 0;
}

int main(int argc, char **argv)
{
	double ms;

	if (argc > 3 && !strcmp(argv[1], "block"))
		return block_main(atoi(argv[2]), atol(argv[3]));
	if (argc > 2 && !strcmp(argv[1], "jit"))
		return jit_main(atof(argv[2]));
	if (argc > 3 && !strcmp(argv[1], "maps"))
		return maps_main(atoi(argv[2]), atof(argv[3]));
	if (argc > 2 && !strcmp(argv[1], "clock"))
		return clock_main(atof(argv[2]));
	if (argc > 2 && !strcmp(argv[1], "signal"))
		return signal_main(atof(argv[2]));
	if (argc > 2 && !strcmp(argv[1], "signap"))
		return signap_main(atof(argv[2]));
	ms = argc > 1 ? atof(argv[1]) : 1000;
	long rounds = worker(ms);

	printf("{\"rounds\": %ld, \"compares\": %ld}\n", rounds, compares);
	return 0;
}
