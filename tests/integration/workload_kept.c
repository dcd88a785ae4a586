// SPDX-License-Identifier: GPL-2.0
/*
 * Ground truth for the ehframe walk where a cache of chains (a thread's
 * outer frames taken from its last chain) would go wrong.  Built without
 * frame pointers, so every step is the tables'.  Two ways down to one
 * shared chain (way1 and way2, the same code, so the shared frames lie at
 * the same stack addresses with the same return addresses into them) end in
 * leaf1 or leaf2, called through one pointer from one call site: a sample in
 * leaf1 is right only under way1, in leaf2 only under way2.  A tail taken
 * from the other way's chain without its words checked would show leaf1
 * under way2.
 *
 *   workload_kept alternate MS   the two ways by turns, a few hundred us each
 *   workload_kept longjmp MS     the same, each way left by longjmp from its leaf
 *   workload_kept signal MS      alternate, with a SIGPROF handler that spins 2 ms in
 *                                hleaf (below the shared chain) every 10 ms of CPU
 *   workload_kept exec MS        alternate for MS/2, then exec'd into alternate MS/2
 *   workload_kept way1|way2 MS   one way only (two processes given one pid in turn)
 *   workload_kept deep N MS      a chain N frames deep spinning at its leaf
 *   workload_kept blocks N US    after a line on stdin, N rounds of four blocks (a US us
 *                                nanosleep each) by turns: bway1 and bway2 (the same
 *                                code) down the shared chain to bleaf1 or bleaf2, so the
 *                                blocking thread's sp, ip and innermost return address
 *                                repeat under another caller further up, and two
 *                                blocking sites alternate at the same depth
 *   workload_kept kblocks N US SITES
 *                                after a line on stdin, N rounds of blocks of about US us
 *                                down the shared chain, one a site of SITES by turns: s
 *                                nanosleep (kleaf_sleep), p a pipe's read (kleaf_pipe, fed
 *                                by a child), o ppoll (kleaf_poll), e select (kleaf_select):
 *                                kernel chains of the same depth, by turns, from the same
 *                                user depth; S clock_nanosleep and O ppoll by syscall(2) from
 *                                one call site (kleaf_sys): two kernel chains under one user
 *                                chain; prints its pid and tid
 */
#define _GNU_SOURCE /* ppoll */
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))
#define ROUND 200000 /* spins per turn: a few hundred us */

static volatile unsigned long sink;
static jmp_buf env;
static int jump;

/*
 * The process's CPU time, not the wall clock: each mode runs for MS of CPU,
 * so a recording at F Hz gets about MS * F / 1000 samples of it however
 * loaded the host is (a test's sample counts are then not a matter of luck).
 */
static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

NOINLINE static void spin(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i;
}

NOINLINE void leaf1(void)
{
	spin(ROUND);
	if (jump)
		longjmp(env, 1);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void leaf2(void)
{
	spin(ROUND);
	if (jump)
		longjmp(env, 2);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void shared3(void (*fn)(void))
{
	fn();
	__asm__ volatile("" ::: "memory");
}

NOINLINE void shared2(void (*fn)(void))
{
	shared3(fn);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void shared1(void (*fn)(void))
{
	shared2(fn);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void way1(void)
{
	shared1(leaf1);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void way2(void)
{
	shared1(leaf2);
	__asm__ volatile("" ::: "memory");
}

NOINLINE static void alternate(double ms)
{
	double end = now_ms() + ms;

	while (now_ms() < end) {
		way1();
		way2();
	}
}

NOINLINE static void one_way(void (*way)(void), double ms)
{
	double end = now_ms() + ms;

	while (now_ms() < end)
		way();
}

NOINLINE static void by_longjmp(double ms)
{
	double end = now_ms() + ms;
	volatile int turn = 0;

	jump = 1;
	while (now_ms() < end) {
		if (!setjmp(env)) {
			if (turn++ & 1)
				way2();
			else
				way1();
		}
	}
}

/*
 * 2 ms of CPU a signal, two sampling periods at 999 Hz: a window this long holds samples whatever
 * the sampler's phase.  A few hundred us, against ITIMER_PROF's delivery on the 4 ms tick (HZ=250)
 * and a sampler of about 1 ms, phase-locked: 9 to 16 samples in a run, or hundreds, by luck.
 */
NOINLINE void hleaf(void)
{
	double end = now_ms() + 2;

	while (now_ms() < end)
		spin(ROUND / 20);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void handler(int sig)
{
	(void)sig;
	shared1(hleaf);
	__asm__ volatile("" ::: "memory");
}

NOINLINE static void with_signals(double ms)
{
	/* every 10 ms of CPU: the handler's 2 ms must not run into the next expiry, or main starves */
	struct itimerval it = { { 0, 10000 }, { 0, 10000 } };

	signal(SIGPROF, handler);
	setitimer(ITIMER_PROF, &it, NULL);
	alternate(ms);
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_PROF, &it, NULL);
}

static struct timespec block_ts;

NOINLINE void bleaf1(void)
{
	nanosleep(&block_ts, NULL);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void bleaf2(void)
{
	nanosleep(&block_ts, NULL);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void bway1(void (*fn)(void))
{
	shared1(fn);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void bway2(void (*fn)(void))
{
	shared1(fn);
	__asm__ volatile("" ::: "memory");
}

/* The count in memory, not in a callee-saved register: each block's user registers are then the same. */
static volatile long rounds_left;

NOINLINE static void blocks(void)
{
	while (rounds_left-- > 0) {
		bway1(bleaf1);
		bway2(bleaf1);
		bway1(bleaf2);
		bway2(bleaf2);
	}
}

/* kblocks: the child's pipes, asked for a byte (req) that it writes US us later (data). */
static int req[2], data[2];

NOINLINE void kleaf_sleep(void)
{
	nanosleep(&block_ts, NULL);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void kleaf_pipe(void)
{
	char c = 0;

	if (write(req[1], &c, 1) != 1 || read(data[0], &c, 1) != 1)
		exit(1);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void kleaf_poll(void)
{
	ppoll(NULL, 0, &block_ts, NULL);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void kleaf_select(void)
{
	struct timeval tv = { 0, block_ts.tv_nsec / 1000 };

	select(0, NULL, NULL, NULL, &tv);
	__asm__ volatile("" ::: "memory");
}

/* kleaf_sys's call: SYS_clock_nanosleep or SYS_ppoll. */
static long sys_nr;

/* One call site for both, so that both blocks have the same user chain. */
NOINLINE void kleaf_sys(void)
{
	struct timespec ts = block_ts;

	syscall(sys_nr, sys_nr == SYS_ppoll ? 0 : CLOCK_MONOTONIC, 0, &ts, NULL, 8);
	__asm__ volatile("" ::: "memory");
}

/* Whether process pid sleeps (its state in /proc/PID/stat is S). */
static int sleeping(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

/*
 * The pipe's far end: a byte US us after each asked, and not before the
 * asker sleeps in its read (on a busy host it may still be waiting for a
 * CPU then, and its read would not block), until the asking end closes.
 */
static int feeder(void)
{
	struct timespec tick = { 0, 20000 };
	pid_t parent = getppid();
	char c;

	close(req[1]);
	close(data[0]);
	while (read(req[0], &c, 1) == 1) {
		nanosleep(&block_ts, NULL);
		for (int i = 0; i < 50000 && !sleeping(parent); i++)
			nanosleep(&tick, NULL);
		if (write(data[1], &c, 1) != 1)
			return 1;
	}
	return 0;
}

NOINLINE static int kblocks(const char *sites)
{
	pid_t child = -1;

	if (strchr(sites, 'p')) {
		if (pipe(req) || pipe(data))
			return 1;
		child = fork();
		if (child < 0)
			return 1;
		if (!child)
			_exit(feeder());
		close(req[0]);
		close(data[1]);
	}
	while (rounds_left-- > 0) {
		for (const char *c = sites; *c; c++) {
			sys_nr = *c == 'O' ? SYS_ppoll : SYS_clock_nanosleep;
			bway1(*c == 's'	  ? kleaf_sleep
			      : *c == 'p' ? kleaf_pipe
			      : *c == 'o' ? kleaf_poll
			      : *c == 'e' ? kleaf_select
					  : kleaf_sys);
		}
	}
	if (child > 0) {
		close(req[1]);
		waitpid(child, NULL, 0);
	}
	return 0;
}

NOINLINE unsigned long deep(int n, double end)
{
	unsigned long r;

	if (n > 1) {
		r = deep(n - 1, end);
	} else {
		while (now_ms() < end)
			spin(ROUND / 10);
		r = sink;
	}
	/* Opaque to the compiler: the recursion stays calls, not a loop. */
	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

int main(int argc, char **argv)
{
	double ms = argc > 2 ? atof(argv[argc - 1]) : 1000;

	if (argc < 3) {
		fprintf(stderr, "usage: workload_kept alternate|way1|way2|longjmp|signal|exec MS | deep N MS\n");
		return 2;
	}
	if (!strcmp(argv[1], "alternate")) {
		alternate(ms);
	} else if (!strcmp(argv[1], "way1") || !strcmp(argv[1], "way2")) {
		one_way(argv[1][3] == '1' ? way1 : way2, ms);
	} else if (!strcmp(argv[1], "longjmp")) {
		by_longjmp(ms);
	} else if (!strcmp(argv[1], "signal")) {
		with_signals(ms);
	} else if (!strcmp(argv[1], "exec")) {
		char half[32], self[4096];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

		if (n <= 0) {
			perror("readlink");
			return 1;
		}
		self[n] = 0;
		alternate(ms / 2);
		snprintf(half, sizeof(half), "%.0f", ms / 2);
		/* By its own name, so that the comm stays (/proc/self/exe would make it "exe"). */
		execl(self, argv[0], "alternate", half, (char *)NULL);
		perror("exec");
		return 1;
	} else if (!strcmp(argv[1], "blocks") && argc > 3) {
		char line[16];

		block_ts.tv_nsec = atol(argv[3]) * 1000;
		/* Started before the recording, so that its tables are there from the first block. */
		if (!fgets(line, sizeof(line), stdin))
			return 1;
		rounds_left = atol(argv[2]);
		blocks();
	} else if (!strcmp(argv[1], "kblocks") && argc > 4) {
		char line[16];

		block_ts.tv_nsec = atol(argv[3]) * 1000;
		printf("{\"pid\":%d,\"tid\":%ld}\n", getpid(), (long)syscall(SYS_gettid));
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 1;
		rounds_left = atol(argv[2]);
		if (kblocks(argv[4]))
			return 1;
		return 0;
	} else if (!strcmp(argv[1], "deep") && argc > 3) {
		deep(atoi(argv[2]), now_ms() + ms);
	} else {
		fprintf(stderr, "workload_kept: unknown mode %s\n", argv[1]);
		return 2;
	}
	printf("{\"pid\":%d,\"sink\":%lu}\n", getpid(), (unsigned long)(sink & 1));
	return 0;
}
