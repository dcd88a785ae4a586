// SPDX-License-Identifier: GPL-2.0
/*
 * pyfacts and glibc_tsd against the real thing: each CPython 3.8-3.13 on
 * this machine (pyenv's builds, Debian's python3.11) read from its file and
 * from a live interpreter of it, checked against the per-version figures
 * read from each build's DWARF (python.md); this glibc's key data measured
 * and decoded, the two the same.  A version not installed is skipped.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "glibc_tsd.h"
#include "pyfacts.h"

#define N SP_PY_NONE

/* What each version's runtime must read as (x86-64, default build). */
static const struct want {
	int minor;
	const char *exe, *runtime; /* the interpreter, and the file that defines _PyRuntime */
	__u32 style, instr, ts_frame, cf_frame, f_prev, f_code, f_instr, f_size, owner_cstack, code_units;
	__u32 co_qualname, co_lnotab, co_code;
	__u32 tramp_len;
	bool debug_offsets;
} wants[] = {
	{ 8, "/root/.pyenv/versions/3.8.18/bin/python3.8", "/root/.pyenv/versions/3.8.18/lib/libpython3.8.so.1.0",
	  SP_PY_FRAMEOBJ, SP_PY_LASTI_BYTES, 24, N, 24, 32, 104, 108, N, N, N, 1, 1, 0, false },
	{ 9, "/root/.pyenv/versions/3.9.18/bin/python3.9", "/root/.pyenv/versions/3.9.18/lib/libpython3.9.so.1.0",
	  SP_PY_FRAMEOBJ, SP_PY_LASTI_BYTES, 24, N, 24, 32, 104, 108, N, N, N, 1, 1, 0, false },
	{ 10, "/root/.pyenv/versions/3.10.13/bin/python3.10", "/root/.pyenv/versions/3.10.13/lib/libpython3.10.so.1.0",
	  SP_PY_FRAMEOBJ, SP_PY_LASTI_UNITS, 24, N, 24, 32, 96, 100, N, N, N, N, 1, 0, false },
	{ 11, "/root/.pyenv/versions/3.11.7/bin/python3.11", "/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0",
	  SP_PY_IFRAME_ENTRY, SP_PY_INSTR_PTR, 56, 8, 48, 32, 56, 72, N, 184, 128, N, N, 0, false },
	{ 11, "/usr/bin/python3.11", "/usr/bin/python3.11", SP_PY_IFRAME_ENTRY, SP_PY_INSTR_PTR, 56, 8, 48, 32, 56, 72,
	  N, 184, 128, N, N, 0, false },
	{ 12, "/root/.pyenv/versions/3.12.1/bin/python3.12", "/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0",
	  SP_PY_IFRAME_SHIM, SP_PY_INSTR_PTR, 56, 0, 8, 0, 56, 72, 3, 192, 128, N, N, 11, false },
	{ 13, "/root/.pyenv/versions/3.13.0/bin/python3.13", "/root/.pyenv/versions/3.13.0/lib/libpython3.13.so.1.0",
	  SP_PY_IFRAME_SHIM, SP_PY_INSTR_PTR, 72, N, 8, 0, 56, 72, 3, 200, 128, N, N, 11, true },
};

static bool have(const struct want *w)
{
	if (access(w->exe, X_OK) || access(w->runtime, R_OK)) {
		printf("SKIP: %s is not installed here\n", w->exe);
		return false;
	}
	return true;
}

/* 1 for "set" in the table: any offset, but there must be one. */
static void check_off(__u32 got, __u32 want, const char *what, const struct want *w)
{
	if (want == 1 ? got == N : got != want) {
		print_error("3.%d (%s): %s is %u, want %u\n", w->minor, w->exe, what, got, want);
		fail();
	}
}

static void test_binaries(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(wants) / sizeof(wants[0]); i++) {
		const struct want *w = &wants[i];
		struct py_binary b;
		int fd;

		if (!have(w))
			continue;
		fd = open(w->runtime, O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(py_binary_read(fd, &b), 0);
		close(fd);
		assert_int_equal(b.version >> 24, 3);
		assert_int_equal((b.version >> 16) & 0xff, w->minor);
		assert_true(b.runtime && b.code_type && b.nr_eval >= 1 && b.eval[0][1] > b.eval[0][0]);
		assert_int_equal(b.tramp_len, w->tramp_len);
		assert_int_equal(b.e_type, strcmp(w->exe, w->runtime) ? 3 /* ET_DYN */ : 2 /* ET_EXEC */);
	}
}

static void test_not_python(void **state)
{
	struct py_binary b;
	int fd = open("/bin/true", O_RDONLY | O_CLOEXEC);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(py_binary_read(fd, &b), -ENOENT);
	close(fd);
	fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	assert_int_equal(py_binary_read(fd, &b), -EINVAL);
	close(fd);
}

/* The lowest mapping of path in pid: where its file offset 0 is. */
static int file_base(int pid, const char *path, unsigned long long *base)
{
	char maps[64], line[4096];
	FILE *f;
	int found = -ENOENT;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	f = fopen(maps, "r");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off;
		char *p = strchr(line, '/');

		if (!p || strncmp(p, path, strlen(path)) || p[strlen(path)] != '\n')
			continue;
		if (sscanf(line, "%llx-%llx %*s %llx", &start, &end, &off) == 3) {
			*base = start - off;
			found = 0;
			break;
		}
	}
	if (f)
		fclose(f);
	return found;
}

/* Each version's runtime read from a live interpreter, as the recorder reads it. */
static void test_live(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(wants) / sizeof(wants[0]); i++) {
		const struct want *w = &wants[i];
		int in[2], out[2], pid, fd;
		unsigned long long base = 0;
		struct py_binary b;
		struct py_facts f;
		char why[256] = "", buf[8];

		if (!have(w))
			continue;
		assert_int_equal(pipe(in), 0);
		assert_int_equal(pipe(out), 0);
		pid = fork();
		if (!pid) {
			dup2(in[0], 0);
			dup2(out[1], 1);
			close(in[1]);
			close(out[0]);
			execl(w->exe, w->exe, "-c", "import sys; print('up', flush=True); sys.stdin.read()", (char *)NULL);
			_exit(127);
		}
		close(in[0]);
		close(out[1]);
		/* Its runtime is set up once it prints (a write per piece, unbuffered: up to the newline). */
		do
			assert_int_equal(read(out[0], buf, 1), 1);
		while (buf[0] != '\n');
		fd = open(w->runtime, O_RDONLY | O_CLOEXEC);
		assert_int_equal(py_binary_read(fd, &b), 0);
		close(fd);
		assert_int_equal(file_base(pid, w->runtime, &base), 0);
		assert_int_equal(py_facts_read(&b, b.e_type == 2 ? 0 : base - b.load_base, py_read_pid,
					       (void *)(long)pid, &f, why, sizeof(why)), 0);
		check_off(f.bpf.style, w->style, "style", w);
		check_off(f.bpf.instr, w->instr, "instr", w);
		check_off(f.bpf.ts_frame, w->ts_frame, "ts_frame", w);
		check_off(f.bpf.cf_frame, w->cf_frame, "cf_frame", w);
		check_off(f.bpf.f_prev, w->f_prev, "f_prev", w);
		check_off(f.bpf.f_code, w->f_code, "f_code", w);
		check_off(f.bpf.f_instr, w->f_instr, "f_instr", w);
		check_off(f.bpf.f_size, w->f_size, "f_size", w);
		check_off(f.bpf.owner_cstack, w->owner_cstack, "owner_cstack", w);
		check_off(f.bpf.code_units, w->code_units, "code_units (tp_basicsize)", w);
		check_off(f.l.co_qualname, w->co_qualname, "co_qualname", w);
		check_off(f.l.co_lnotab, w->co_lnotab, "co_lnotab", w);
		check_off(f.l.co_code, w->co_code, "co_code", w);
		check_off(f.l.co_name, 1, "co_name", w);
		check_off(f.l.co_filename, 1, "co_filename", w);
		check_off(f.l.co_firstlineno, 1, "co_firstlineno", w);
		assert_true(f.debug_offsets == w->debug_offsets);
		assert_true(f.tss_key < 1024);
		assert_true(f.bpf.eval[0][0] > base && f.bpf.eval[0][1] > f.bpf.eval[0][0]);
		close(in[1]);
		close(out[0]);
		waitpid(pid, NULL, 0);
	}
}

/* This glibc's key data: measured, and read from pthread_getspecific's code, the same. */
static void test_tsd(void **state)
{
	struct glibc_tsd m, d;
	char line[4096], *p;
	__u32 off, off2;
	int two, fd = -1;
	FILE *f;

	(void)state;
	assert_int_equal(glibc_tsd_calibrate(&m), 0);
	assert_true(m.first > 0 && m.second > m.first);
	f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof(line), f) && fd < 0)
		if ((p = strchr(line, '/')) && strstr(p, "/libc.so.6\n")) {
			p[strlen(p) - 1] = 0;
			fd = open(p, O_RDONLY | O_CLOEXEC);
		}
	if (f)
		fclose(f);
	assert_true(fd >= 0);
	assert_int_equal(glibc_tsd_decode(fd, &d), 0);
	close(fd);
	assert_int_equal(d.first, m.first);
	assert_int_equal(d.second, m.second);
	/* A key below 32 in the inline block, the others through a block pointer. */
	assert_int_equal(glibc_tsd_offsets(&m, 1, &off, &off2, &two), 0);
	assert_true(off == m.first + 16 && !two);
	assert_int_equal(glibc_tsd_offsets(&m, 33, &off, &off2, &two), 0);
	assert_true(off == m.second + 8 && off2 == 16 + 8 && two);
	assert_int_equal(glibc_tsd_offsets(&m, 1024, &off, &off2, &two), -ERANGE);
	fd = open("/bin/true", O_RDONLY | O_CLOEXEC);
	assert_int_equal(glibc_tsd_decode(fd, &d), -ENOENT);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_binaries),
		cmocka_unit_test(test_not_python),
		cmocka_unit_test(test_live),
		cmocka_unit_test(test_tsd),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
