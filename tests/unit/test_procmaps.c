// SPDX-License-Identifier: GPL-2.0
/*
 * A process's mappings by PROCMAP_QUERY and by the maps text: the same
 * code mappings of this process either way (where the kernel has the
 * ioctl, 6.11+), and a file that refuses the ioctl (as every maps file
 * before 6.11 does, with ENOTTY) read as text from its start, the
 * mappings without exec left out when only code is asked for.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <cmocka.h>

#include "procmaps.h"
#include "sideband.h"

#define MAX_MAPS 512

static int read_all(struct procmaps *pm, struct procmap *out, int max)
{
	int n = 0;

	while (n < max && procmaps_read(pm, &out[n]) > 0)
		n++;
	return n;
}

static bool kernel_has_query(void)
{
	struct utsname u;
	int major = 0, minor = 0;

	return !uname(&u) && sscanf(u.release, "%d.%d", &major, &minor) == 2 &&
	       (major > 6 || (major == 6 && minor >= 11));
}

/* What procmaps_read gives for want, against the text of the same moment filtered alike. */
static void same_as_text(unsigned int want)
{
	struct procmap *q = calloc(MAX_MAPS, sizeof(*q)), *x = calloc(MAX_MAPS, sizeof(*x));
	struct procmaps pm;
	int nq, nx = 0;
	char *line = NULL;
	size_t cap = 0;
	bool vdso = false;
	FILE *f;

	assert_true(q && x);
	assert_int_equal(procmaps_open(&pm, getpid(), want), 0);
	nq = read_all(&pm, q, MAX_MAPS);
	if (kernel_has_query())
		assert_true(procmaps_by_query(&pm));
	procmaps_close(&pm);
	f = fopen("/proc/self/maps", "re");
	assert_non_null(f);
	while (nx < MAX_MAPS && procmaps_next(f, &line, &cap, &x[nx], NULL))
		/* The text ends with the gate page, [vsyscall], which is no VMA of the process: the ioctl has none. */
		if ((!(want & PROCMAPS_CODE) || (x[nx].prot & PROT_EXEC)) && (!(want & PROCMAPS_FILES) || x[nx].ino) &&
		    strcmp(x[nx].path, "[vsyscall]"))
			nx++;
	fclose(f);
	free(line);
	assert_true(nq > 2);
	assert_int_equal(nq, nx);
	for (int i = 0; i < nq; i++) {
		assert_int_equal(q[i].start, x[i].start);
		assert_int_equal(q[i].end, x[i].end);
		assert_int_equal(q[i].pgoff, x[i].pgoff);
		assert_int_equal(q[i].ino, x[i].ino);
		assert_int_equal(q[i].maj, x[i].maj);
		assert_int_equal(q[i].min, x[i].min);
		assert_int_equal(q[i].prot, x[i].prot);
		assert_int_equal(q[i].flags, x[i].flags);
		assert_string_equal(q[i].path, x[i].path);
		vdso |= !strcmp(q[i].path, "[vdso]");
	}
	/* The vDSO is code of no file. */
	assert_true(vdso == !(want & PROCMAPS_FILES));
	free(q);
	free(x);
}

static void test_query_gives_what_the_text_gives(void **state)
{
	(void)state;
	same_as_text(PROCMAPS_CODE);
	same_as_text(PROCMAPS_FILES);
	same_as_text(PROCMAPS_CODE | PROCMAPS_FILES);
}

static void test_all_mappings_when_asked(void **state)
{
	struct procmap *q = calloc(MAX_MAPS, sizeof(*q));
	struct procmaps pm;
	bool data = false, code = false;
	int n;

	(void)state;
	assert_non_null(q);
	assert_int_equal(procmaps_open(&pm, getpid(), 0), 0);
	n = read_all(&pm, q, MAX_MAPS);
	procmaps_close(&pm);
	for (int i = 0; i < n; i++) {
		data |= (q[i].prot & (PROT_WRITE | PROT_EXEC)) == PROT_WRITE;
		code |= !!(q[i].prot & PROT_EXEC);
		if (i)
			assert_true(q[i].start >= q[i - 1].end);
	}
	assert_true(data && code);
	free(q);
}

/* A plain file refuses the ioctl (ENOTTY) as a maps file before 6.11 does: read as text. */
static void test_refused_query_reads_the_text(void **state)
{
	static const char text[] =
		"00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/dbus-daemon\n"
		"00651000-00652000 r--p 00051000 08:02 173521 /usr/bin/dbus-daemon\n"
		"00e03000-00e24000 rw-p 00000000 00:00 0 [heap]\n"
		"7f0000000000-7f0000001000 rwxp 00000000 00:00 0 \n"
		"7f0000002000-7f0000003000 r-xs 00002000 fd:01 42 /tmp/a name with\\012a newline (deleted)\n"
		"7ffc00000000-7ffc00002000 r-xp 00000000 00:00 0 [vdso]\n"
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n"
		"7ffd00000000-7ffd00001000 r-xp 00000000 00:00 0 /cut/without/its/newline";
	char path[] = "/tmp/sp-procmaps-XXXXXX";
	struct procmap m[16];
	struct procmaps pm;
	int fd = mkstemp(path), n;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(procmaps_open_fd(&pm, fd, PROCMAPS_CODE), 0);
	n = read_all(&pm, m, 16);
	assert_false(procmaps_by_query(&pm));
	assert_int_equal(pm.cut, 1);
	procmaps_close(&pm);
	assert_int_equal(n, 5);
	assert_int_equal(m[0].start, 0x400000);
	assert_int_equal(m[0].ino, 173521);
	assert_string_equal(m[0].path, "/usr/bin/dbus-daemon");
	assert_string_equal(m[1].path, "//anon");
	assert_int_equal(m[1].prot, PROT_READ | PROT_WRITE | PROT_EXEC);
	assert_int_equal(m[2].pgoff, 0x2000);
	assert_int_equal(m[2].flags, MAP_SHARED);
	assert_int_equal(m[2].maj, 0xfd);
	assert_string_equal(m[2].path, "/tmp/a name with\\012a newline (deleted)");
	assert_string_equal(m[3].path, "[vdso]");
	assert_string_equal(m[4].path, "[vsyscall]");

	/* Every mapping when not only code is asked for. */
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(procmaps_open_fd(&pm, fd, 0), 0);
	assert_int_equal(read_all(&pm, m, 16), 7);
	procmaps_close(&pm);

	/* Mappings of files: the two of dbus-daemon and the deleted one. */
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(procmaps_open_fd(&pm, fd, PROCMAPS_FILES), 0);
	assert_int_equal(read_all(&pm, m, 16), 3);
	assert_int_equal(m[1].pgoff, 0x51000);
	assert_int_equal(m[2].ino, 42);
	procmaps_close(&pm);
	unlink(path);
}

/*
 * /proc/PID/stat's start_stack, and its flags with it: ours is a user
 * process with a stack; kthreadd (pid 2) a kernel thread (PF_KTHREAD)
 * without one, which the table scan notes and the catch-ups skip.
 */
static void test_start_stack_and_kernel_thread_flag(void **state)
{
	__u64 ss = 0, ss2 = 1, flags = ~0ull;
	char name[32];
	bool is_kthreadd;
	FILE *comm;

	(void)state;
	assert_int_equal(proc_start_stack_flags(getpid(), &ss, &flags), 0);
	assert_true(ss != 0);
	assert_false(flags & 0x00200000);
	assert_int_equal(proc_start_stack(getpid(), &ss2), 0);
	assert_int_equal(ss2, ss);
	flags = 0;
	comm = fopen("/proc/2/comm", "r");
	is_kthreadd = comm && fgets(name, sizeof(name), comm) && !strcmp(name, "kthreadd\n");
	if (comm)
		fclose(comm);
	if (!is_kthreadd || proc_start_stack_flags(2, &ss, &flags))
		skip(); /* pid 2 is not kthreadd here (a pid namespace) */
	assert_int_equal(ss, 0);
	assert_true(flags & 0x00200000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_query_gives_what_the_text_gives),
		cmocka_unit_test(test_all_mappings_when_asked),
		cmocka_unit_test(test_refused_query_reads_the_text),
		cmocka_unit_test(test_start_stack_and_kernel_thread_flag),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
