// SPDX-License-Identifier: GPL-2.0
/*
 * Code objects read out of real CPython processes: each Python on this
 * machine (pyenv's 3.8-3.13, Debian's 3.11) runs tests/unit/data/py_target.py,
 * which says where its code objects are and what CPython itself makes of
 * them; the reader must find the same names, files, first lines, code
 * units and the line of every instruction, through /proc/PID/mem.  For
 * 3.8-3.10 the qualified names come from the interpreter walk.  Then the
 * lies: objects of another type, strings that claim 2^40 characters,
 * addresses nothing is mapped at, a spent budget.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "py_code.h"

static const char *const pythons[] = {
	"/root/.pyenv/versions/3.8.18/bin/python3.8",	"/root/.pyenv/versions/3.9.18/bin/python3.9",
	"/root/.pyenv/versions/3.10.13/bin/python3.10", "/root/.pyenv/versions/3.11.7/bin/python3.11",
	"/usr/bin/python3.11",				"/root/.pyenv/versions/3.12.1/bin/python3.12",
	"/root/.pyenv/versions/3.13.0/bin/python3.13",
};

struct target {
	pid_t pid;
	int in, memfd;
	FILE *out;
	char dir[64];
};

static bool start(const char *py, struct target *t)
{
	int to[2], from[2];

	snprintf(t->dir, sizeof(t->dir), "/tmp/sp-pycode-XXXXXX");
	if (!mkdtemp(t->dir) || pipe(to) || pipe(from))
		return false;
	t->pid = fork();
	if (!t->pid) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[1]);
		close(from[0]);
		execl(py, py, "-S", "tests/unit/data/py_target.py", t->dir, (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	t->in = to[1];
	t->out = fdopen(from[0], "r");
	t->memfd = -1;
	return t->pid > 0 && t->out;
}

static void stop(struct target *t)
{
	char cmd[128];

	close(t->in);
	if (t->out)
		fclose(t->out);
	if (t->memfd >= 0)
		close(t->memfd);
	waitpid(t->pid, NULL, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", t->dir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", t->dir);
}

static void unhex(const char *h, char *out, size_t max)
{
	size_t n = 0;

	for (; h[0] && h[1] && n + 1 < max; h += 2)
		sscanf(h, "%2hhx", (unsigned char *)&out[n++]);
	out[n] = 0;
}

/* The expected string as the reader keeps it: the first PY_STR_MAX bytes, whole UTF-8 sequences. */
static void capped(const char *s, char *out)
{
	size_t n = strlen(s);

	if (n > PY_STR_MAX) {
		n = PY_STR_MAX;
		while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(out, s, n);
	out[n] = 0;
}

struct code_row {
	__u64 addr;
	char want[8192], name[8192], file[8192];
	int first;
	__u32 units;
	int *lines;
};

static int check_python(const char *py)
{
	struct py_code_layout l;
	struct py_scan_layout sl;
	struct py_qualnames *q = NULL;
	struct target t;
	struct py_mem mem;
	struct code_row *rows = calloc(64, sizeof(*rows));
	char *line = NULL, path[64];
	size_t cap = 0;
	int nrows = 0, checked = 0, version = 0;
	__u64 notcode = 0, interp = 0, types[5] = {};
	__u32 basicsize = 0, co_lnotab = 0, co_linetable = 0, co_consts = 0, co_flags = 0;

	if (access(py, X_OK))
		return -1;
	assert_non_null(rows);
	assert_true(start(py, &t));
	memset(&l, 0, sizeof(l));
	while (getline(&line, &cap, t.out) > 0) {
		char a[64], b[8192], c[8192], d[8192], *lines;
		unsigned long long x;
		int first, n;
		__u32 units;

		if (!strncmp(line, "ready", 5))
			break;
		if (sscanf(line, "version %x", &version) == 1) {
			assert_int_equal(py_code_layout_init(&l, version), 0);
		} else if (sscanf(line, "code_type %llx", &x) == 1) {
			l.code_type = x;
		} else if (sscanf(line, "basicsize %u", &basicsize) == 1) {
		} else if (sscanf(line, "interp %llx", &x) == 1) {
			interp = x;
		} else if (!strncmp(line, "types ", 6)) {
			sscanf(line + 6, "%llx %llx %llx %llx %llx", (unsigned long long *)&types[0],
			       (unsigned long long *)&types[1], (unsigned long long *)&types[2],
			       (unsigned long long *)&types[3], (unsigned long long *)&types[4]);
		} else if (sscanf(line, "member %63s %llu", a, &x) == 2) {
			__u32 off = x;

			if (!strcmp(a, "co_name"))
				l.co_name = off;
			else if (!strcmp(a, "co_qualname"))
				l.co_qualname = off;
			else if (!strcmp(a, "co_filename"))
				l.co_filename = off;
			else if (!strcmp(a, "co_firstlineno"))
				l.co_firstlineno = off;
			else if (!strcmp(a, "co_lnotab"))
				co_lnotab = off;
			else if (!strcmp(a, "co_linetable"))
				co_linetable = off;
			else if (!strcmp(a, "co_code"))
				l.co_code = off;
			else if (!strcmp(a, "co_consts"))
				co_consts = off;
			else if (!strcmp(a, "co_flags"))
				co_flags = off;
		} else if (sscanf(line, "notcode %llx", &x) == 1) {
			notcode = x;
		} else if (sscanf(line, "code %llx %8191s %8191s %8191s %d %u %n", &x, b, c, d, &first, &units, &n) ==
			   6) {
			struct code_row *r = &rows[nrows++];

			assert_true(nrows < 64);
			r->addr = x;
			unhex(b, r->want, sizeof(r->want));
			unhex(c, r->name, sizeof(r->name));
			unhex(d, r->file, sizeof(r->file));
			r->first = first;
			r->units = units;
			r->lines = calloc(units + 1, sizeof(int));
			lines = line + n;
			for (__u32 i = 0; i <= units; i++) {
				r->lines[i] = strtol(lines, &lines, 10);
				lines += *lines == ',';
			}
		}
	}
	free(line);
	assert_true(version >= 0x0308 && nrows >= 10);
	/* The line table's member: co_lnotab before 3.10; 3.10 keeps co_lnotab as a getter. */
	l.co_linetable = version < 0x030a ? co_lnotab : co_linetable;
	l.co_code_adaptive = version >= 0x030b ? basicsize : 0;
	snprintf(path, sizeof(path), "/proc/%d/mem", t.pid);
	t.memfd = open(path, O_RDONLY);
	assert_true(t.memfd >= 0);
	/* 3.8-3.10: the qualified names from the interpreter, as the recorder would build them once. */
	if (version < 0x030b) {
		assert_int_equal(py_scan_layout_init(&sl, version), 0);
		sl.interp = interp;
		sl.function_type = types[0];
		sl.staticmethod_type = types[1];
		sl.classmethod_type = types[2];
		sl.property_type = types[3];
		sl.dict_type = types[4];
		sl.co_consts = co_consts;
		sl.co_flags = co_flags;
		py_mem_init_fd(&mem, t.memfd, 64 << 20);
		assert_int_equal(py_qualnames__build(&q, &mem, &l, &sl, 100000), 0);
		printf("%s: %zu qualified names from %lu reads, %lu bytes\n", py, py_qualnames__count(q), mem.reads,
		       mem.bytes);
	}
	for (int i = 0; i < nrows; i++) {
		struct code_row *r = &rows[i];
		struct py_code c;
		char want[PY_STR_MAX + 1];

		py_mem_init_fd(&mem, t.memfd, 1 << 20);
		assert_int_equal(py_code_read(&mem, &l, r->addr, 1 << 16, &c), 0);
		capped(r->name, want);
		assert_string_equal(c.name, want);
		capped(r->file, want);
		assert_string_equal(c.filename, want);
		assert_int_equal(c.firstlineno, r->first);
		assert_int_equal(c.ncodeunits, r->units);
		assert_int_equal(!!(c.flags & PY_NAMES_NAME_CUT), strlen(r->name) > PY_STR_MAX);
		assert_false(c.flags & PY_NAMES_NO_LINES);
		capped(r->want, want);
		if (version >= 0x030b) {
			assert_true(c.has_qualname);
			assert_string_equal(c.qualname, want);
		} else if (strcmp(r->want, r->name)) {
			/* The structure's names: every function, method, nested function and class body. */
			const char *got = py_qualnames__find(q, r->addr);

			assert_non_null(got);
			assert_string_equal(got, want);
		}
		for (int k = -1; k < (int)r->units; k++)
			assert_int_equal(py_runs_line(c.lines, c.lines_len, c.firstlineno, k), r->lines[k + 1]);
		/* The record the recorder writes of it: the best qualified name, flagged where it is co_name. */
		{
			struct py_names_rec rec;
			bool known = version >= 0x030b || py_qualnames__find(q, r->addr);

			py_code_rec(&c, q, t.pid, 0x600000000000ull, &rec);
			assert_int_equal(rec.size, py_slot_size(r->units));
			assert_int_equal(!!(rec.flags & PY_NAMES_QUALNAME_GUESSED), !known);
			if (known)
				assert_memory_equal(rec.qualname, want, strlen(want));
			assert_int_equal(rec.qualname_len, strlen(rec.qualname));
		}
		/* A few reads a code object: its head, three strs (two reads each), the table's size and bytes. */
		assert_true(mem.reads <= 12);
		py_code_clear(&c);
		checked++;
	}
	/* Lies: a str where a code object should be; an address nothing is at; a spent budget. */
	{
		struct py_code c;

		py_mem_init_fd(&mem, t.memfd, 1 << 20);
		assert_int_equal(py_code_read(&mem, &l, notcode, 1 << 16, &c), -EINVAL);
		assert_int_equal(py_code_read(&mem, &l, 0x4141414141410ull, 1 << 16, &c), -EFAULT);
		assert_int_equal(py_code_read(&mem, &l, 0, 1 << 16, &c), -EFAULT);
		py_mem_init_fd(&mem, t.memfd, 64);
		assert_int_equal(py_code_read(&mem, &l, rows[0].addr, 1 << 16, &c), -E2BIG);
	}
	py_qualnames__free(q);
	for (int i = 0; i < nrows; i++)
		free(rows[i].lines);
	free(rows);
	stop(&t);
	printf("%s: %d code objects read\n", py, checked);
	return checked;
}

static void test_real_processes(void **state)
{
	int ran = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(pythons) / sizeof(pythons[0]); i++)
		ran += check_python(pythons[i]) > 0;
	if (!ran) {
		printf("SKIP: no CPython 3.8-3.13 here\n");
		skip();
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_processes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
