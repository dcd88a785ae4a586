// SPDX-License-Identifier: GPL-2.0
/*
 * The symbol-only ELF that names Python frames for perf: its layout (read
 * back with libelf and spanperf's own symbol reader, and its build id),
 * where it goes and what it refuses, its pruning, and perf 6.1 itself
 * naming the synthetic addresses of a perf.data made here by hand (an
 * MMAP2 of each region, samples at slot addresses), with no option.
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
#include <sys/stat.h>
#include <cmocka.h>

#include "buildid.h"
#include "elf_syms.h"
#include "perf_data.h"
#include "perf_sample.h"
#include "py_elf.h"
#include "py_names.h"
#include "sbuf.h"
#include "unit.h"

static char dir[64], output[128];

UNIT_SCRATCH_EACH(dir, output, "/tmp/sp-pyelf-XXXXXX", "PY_ELF_KEEP") /* a folder per test; PY_ELF_KEEP=1 keeps it */

/* Names as the recorder makes them: ASCII, a space, <locals>, UTF-8. */
static const char *const names[] = {
	"py::<module>:/tmp/app.py",	     "py::Service.handle:/tmp/app.py", "py::json_default:/srv/my app.py",
	"py::gen.<locals>.keyfn:/tmp/app.py", "py::Klass.m\xc3\xa9thode:/tmp/\xc3\xbcn\xc3\xaf.py",
};
#define NSYM (sizeof(names) / sizeof(names[0]))
static const char *const files[] = { "/tmp/app.py", "/tmp/app.py", "/srv/my app.py", "/tmp/app.py",
				     "/tmp/\xc3\xbcn\xc3\xaf.py" };
#define REGION_LEN (1ull << 20)
#define START_A 0x600000000000ull
#define START_B 0x600000100000ull

/* Two regions (two processes) of runtime rt's file, the names at slots of 100 code units each. */
static struct py_elf *make_as(enum py_elf_runtime rt, __u64 *pg_a, __u64 *pg_b)
{
	struct py_elf *w;
	char err[256];

	assert_int_equal(py_elf__new(&w, output, rt, err, sizeof(err)), 0);
	assert_int_equal(py_elf__add_region(w, REGION_LEN, pg_a), 0);
	assert_int_equal(py_elf__add_region(w, REGION_LEN, pg_b), 0);
	assert_int_equal(*pg_a, PY_ELF_FIRST_PGOFF);
	assert_true(*pg_b >= *pg_a + REGION_LEN && *pg_b % 4096 == 0);
	for (size_t i = 0; i < NSYM; i++) {
		struct sbuf runs = {};
		struct py_runs r;
		__u64 at = *pg_a + i * py_slot_size(100);

		assert_int_equal(py_elf__add_symbol(w, at, py_slot_size(100), names[i]), 0);
		/* Lines: units 0-4 at 10 * (i + 1), 5-6 none, 7-99 two further on. */
		py_runs_init(&r, &runs, 10 * (i + 1), 100);
		py_runs_add(&r, 5, 10 * (i + 1), false);
		py_runs_add(&r, 2, 0, true);
		py_runs_add(&r, 93, 10 * (i + 1) + 2, false);
		assert_int_equal(py_runs_end(&r), 0);
		assert_int_equal(py_elf__add_lines(w, at, files[i], 10 * (i + 1), (__u8 *)runs.p, runs.len), 0);
		sbuf_free(&runs);
	}
	assert_int_equal(py_elf__add_lines(w, *pg_a + 8, "/x", 1, NULL, 0), -EINVAL); /* no symbol starts there */
	/* The other process: one code object, another name at the same offset in its region. */
	assert_int_equal(py_elf__add_symbol(w, *pg_b, py_slot_size(100), "py::other:/tmp/b.py"), 0);
	/* A control byte (compile() takes any file name) is kept out of perf's lines. */
	assert_int_equal(py_elf__add_symbol(w, *pg_b + 0x1000, 16, "py::x:/tmp/a\nb.py"), 0);
	return w;
}

static struct py_elf *make(__u64 *pg_a, __u64 *pg_b)
{
	return make_as(PY_ELF_PYTHON, pg_a, pg_b);
}

static void test_layout(void **state)
{
	struct elf_syms t = {};
	struct py_elf *w;
	__u64 pa, pb;
	__u8 id[BUILD_ID_MAX], size;
	char err[256];
	struct stat st;

	(void)state;
	w = make(&pa, &pb);
	/* Outside every region, or of no size: refused; overlapping: dropped at commit. */
	assert_int_equal(py_elf__add_symbol(w, 0, 16, "x"), -EINVAL);
	assert_int_equal(py_elf__add_symbol(w, pa + REGION_LEN - 8, 16, "x"), -EINVAL);
	assert_int_equal(py_elf__add_symbol(w, pa, 0, "x"), -EINVAL);
	assert_int_equal(py_elf__add_symbol(w, pa + 16, 16, "py::overlap:x"), 0);
	assert_int_equal(strncmp(py_elf__path(w), dir, strlen(dir)), 0);
	assert_non_null(strstr(py_elf__path(w), "/perf.data.spanperf/python-"));
	assert_int_equal(py_elf__commit(w, err, sizeof(err)), 0);
	assert_int_equal(py_elf__dropped(w), 1);
	assert_int_equal(stat(py_elf__path(w), &st), 0);
	assert_true(S_ISREG(st.st_mode));
	/* The folder: ours alone. */
	snprintf(err, sizeof(err), "%s/perf.data.spanperf", dir);
	assert_int_equal(stat(err, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	/* Its build id is the one the writer gave, as perf reads it. */
	assert_int_equal(buildid_from_file(py_elf__path(w), id, &size), 0);
	assert_int_equal(size, PY_ELF_BUILD_ID_SIZE);
	assert_memory_equal(id, py_elf__build_id(w), size);
	/* Every symbol at its file offset, as spanperf's reader (perf's rules) sees them. */
	assert_int_equal(elf_syms__load_file(&t, py_elf__path(w), true, false), 0);
	for (size_t i = 0; i < NSYM; i++) {
		__u64 at = pa + i * py_slot_size(100);
		struct elf_sym *s = elf_syms__find(&t, elf_syms__to_vaddr(&t, at + 5));

		assert_non_null(s);
		assert_int_equal(s->start, at);
		assert_string_equal(s->name, names[i]);
	}
	assert_string_equal(elf_syms__find(&t, elf_syms__to_vaddr(&t, pb + 101))->name, "py::other:/tmp/b.py");
	assert_string_equal(elf_syms__find(&t, elf_syms__to_vaddr(&t, pb + 0x1001))->name, "py::x:/tmp/a?b.py");
	elf_syms__clear(&t);
	py_elf__free(w);
}

/* Nothing named, nothing written; a writer freed before commit leaves nothing either. */
static void test_nothing_left(void **state)
{
	struct py_elf *w;
	char err[256], folder[160];
	__u64 pg;

	(void)state;
	snprintf(folder, sizeof(folder), "%s/empty.data", dir);
	assert_int_equal(py_elf__new(&w, folder, PY_ELF_PYTHON, err, sizeof(err)), 0);
	assert_int_equal(py_elf__commit(w, err, sizeof(err)), 0);
	py_elf__free(w);
	assert_int_equal(py_elf__new(&w, folder, PY_ELF_PYTHON, err, sizeof(err)), 0);
	assert_int_equal(py_elf__add_region(w, 4096, &pg), 0);
	py_elf__free(w);
	strcat(folder, ".spanperf");
	assert_int_equal(access(folder, F_OK), -1);
}

/* A folder someone else could have made or written, or a symlink, is not used; nor is -o /dev/null. */
static void test_refused(void **state)
{
	struct py_elf *w;
	char err[256], out[160], folder[200];

	(void)state;
	assert_int_equal(py_elf__new(&w, "/dev/null", PY_ELF_PYTHON, err, sizeof(err)), -EOPNOTSUPP);
	assert_null(w);
	snprintf(out, sizeof(out), "%s/link.data", dir);
	snprintf(folder, sizeof(folder), "%s.spanperf", out);
	assert_int_equal(symlink("/tmp", folder), 0);
	assert_int_equal(py_elf__new(&w, out, PY_ELF_PYTHON, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, folder));
	snprintf(out, sizeof(out), "%s/open.data", dir);
	snprintf(folder, sizeof(folder), "%s.spanperf", out);
	assert_int_equal(mkdir(folder, 0777), 0);
	assert_int_equal(chmod(folder, 0777), 0);
	assert_int_equal(py_elf__new(&w, out, PY_ELF_PYTHON, err, sizeof(err)), -EPERM);
	assert_int_equal(chmod(folder, 0755), 0);
	assert_int_equal(py_elf__new(&w, out, PY_ELF_PYTHON, err, sizeof(err)), 0);
	py_elf__free(w);
}

/*
 * A perf.data with a COMM and an MMAP2 per region, and samples whose chains
 * hold frame addresses; its BUILD_ID feature names the ELF.
 */
static void write_perf_data(const char *path, const struct py_elf *w, __u64 pa, __u64 pb)
{
	struct perf_event_attr a = { .size = sizeof(a), .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_CPU_CLOCK,
				     .sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
						    PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN,
				     .sample_period = 1000000, .sample_id_all = 1, .exclude_kernel = 1 };
	static const __u64 ids[] = { 10 };
	struct pd_build_id bid = { .pid = -1, .misc = PERF_RECORD_MISC_USER, .size = PY_ELF_BUILD_ID_SIZE,
				   .filename = (char *)py_elf__path(w) };
	struct pd_meta meta = { .hostname = "h", .osrelease = "6.1", .version = "spanperf test", .arch = "x86_64",
				.nr_cpus_avail = 1, .nr_cpus_online = 1, .build_ids = &bid, .nr_build_ids = 1,
				.clockid = -1 };
	struct pd_writer *pw;
	unsigned char buf[1024];
	long n;

	memcpy(bid.id, py_elf__build_id(w), PY_ELF_BUILD_ID_SIZE);
	assert_int_equal(pd_writer__open(&pw, path), 0);
	assert_int_equal(pd_writer__add_attr(pw, &a, "cpu-clock", ids, 1), 0);
	assert_int_equal(pd_writer__begin(pw), 0);
	for (int p = 0; p < 2; p++) {
		__u32 pid = 4000 + p;
		struct pd_sample ts = { .pid = pid, .tid = pid, .time = 1, .id = 10 };
		struct pd_sideband comm = { .type = PERF_RECORD_COMM, .comm = { pid, pid, "python3" }, .sample_id = ts };
		struct pd_sideband mm = { .type = PERF_RECORD_MMAP2, .misc = PERF_RECORD_MISC_USER, .sample_id = ts,
					  .mmap = { .pid = pid, .tid = pid, .start = p ? START_B : START_A,
						    .len = REGION_LEN, .pgoff = p ? pb : pa, .prot = PROT_READ | PROT_EXEC,
						    .flags = MAP_PRIVATE, .filename = py_elf__path(w) } };

		n = pd_sideband_write(buf, sizeof(buf), &a, &comm);
		assert_int_equal(pd_writer__write(pw, buf, n), 0);
		n = pd_sideband_write(buf, sizeof(buf), &a, &mm);
		assert_int_equal(pd_writer__write(pw, buf, n), 0);
	}
	/* pid 4000: the leaf in keyfn at instruction 7, called from handle (3), from <module> (-1). */
	for (int i = 0; i < 3; i++) {
		__u64 chain[] = { PD_CONTEXT_USER, py_frame_addr(START_A + 3 * py_slot_size(100), 100, 7),
				  py_frame_addr(START_A + 1 * py_slot_size(100), 100, 3),
				  py_frame_addr(START_A, 100, -1) };
		struct pd_sample s = { .id = 10, .ip = chain[1], .pid = 4000, .tid = 4000, .time = 100 + i,
				       .period = 1000000, .callchain_nr = 4, .callchain = chain };

		n = pd_sample_write(buf, sizeof(buf), &a, PERF_RECORD_MISC_USER, &s);
		assert_true(n > 0);
		assert_int_equal(pd_writer__write(pw, buf, n), 0);
	}
	{
		__u64 chain[] = { PD_CONTEXT_USER, py_frame_addr(START_B, 100, 0) };
		struct pd_sample s = { .id = 10, .ip = chain[1], .pid = 4001, .tid = 4001, .time = 200,
				       .period = 1000000, .callchain_nr = 2, .callchain = chain };

		n = pd_sample_write(buf, sizeof(buf), &a, PERF_RECORD_MISC_USER, &s);
		assert_int_equal(pd_writer__write(pw, buf, n), 0);
	}
	assert_int_equal(pd_writer__finish(pw, &meta), 0);
	pd_writer__free(pw);
}

static bool have_perf(void)
{
	return !system("perf --version >/dev/null 2>&1");
}

static void test_perf_names_them(void **state)
{
	struct py_elf *w;
	__u64 pa, pb;
	char err[256], cmd[512], *out;

	(void)state;
	if (!have_perf()) {
		printf("SKIP: no perf here\n");
		skip();
		return;
	}
	w = make(&pa, &pb);
	assert_int_equal(py_elf__commit(w, err, sizeof(err)), 0);
	write_perf_data(output, w, pa, pb);
	/* No option: perf finds the ELF by the MMAP2's path, checks its build id, names every frame. */
	snprintf(cmd, sizeof(cmd), "HOME=%s perf script -i %s -F pid,ip,sym,dso 2>&1", dir, output);
	out = unit_run(cmd, 1 << 16);
	assert_non_null(strstr(out, "py::gen.<locals>.keyfn:/tmp/app.py"));
	assert_non_null(strstr(out, "py::Service.handle:/tmp/app.py"));
	assert_non_null(strstr(out, "py::<module>:/tmp/app.py"));
	assert_non_null(strstr(out, "py::other:/tmp/b.py"));
	assert_null(strstr(out, "[unknown]"));
	free(out);
	snprintf(cmd, sizeof(cmd), "HOME=%s perf report -i %s --stdio --no-children -g none --sort pid,sym 2>&1", dir,
		 output);
	out = unit_run(cmd, 1 << 16);
	/* 3 of 4 samples in keyfn, 1 in the other process's function. */
	assert_non_null(strstr(out, "75.00%"));
	assert_non_null(strstr(out, "py::gen.<locals>.keyfn:/tmp/app.py"));
	assert_non_null(strstr(out, "25.00%"));
	assert_non_null(strstr(out, "py::other:/tmp/b.py"));
	free(out);
	/* The lines, as perf's addr2line reads them: keyfn's instruction 7 is at 42, 2 at 40, 5 has none. */
	if (!system("command -v addr2line >/dev/null 2>&1")) {
		snprintf(cmd, sizeof(cmd), "addr2line -e %s 0x%llx 0x%llx 0x%llx 0x%llx", py_elf__path(w),
			 (unsigned long long)py_frame_addr(pa + 3 * py_slot_size(100), 100, 7),
			 (unsigned long long)py_frame_addr(pa + 3 * py_slot_size(100), 100, 2),
			 (unsigned long long)py_frame_addr(pa + 3 * py_slot_size(100), 100, -1),
			 (unsigned long long)py_frame_addr(pa + 3 * py_slot_size(100), 100, 5));
		out = unit_run(cmd, 1 << 16);
		assert_string_equal(out, "/tmp/app.py:42\n/tmp/app.py:40\n/tmp/app.py:40\n/tmp/app.py:?\n");
		free(out);
		snprintf(cmd, sizeof(cmd), "HOME=%s perf report -i %s --stdio --no-children -g none --sort srcline 2>&1",
			 dir, output);
		out = unit_run(cmd, 1 << 16);
		assert_non_null(strstr(out, "75.00%  app.py:42"));
		free(out);
	}
	/* Nothing went into perf's ~/.debug (HOME is the test's folder). */
	snprintf(cmd, sizeof(cmd), "%s/.debug", dir);
	assert_int_equal(access(cmd, F_OK), -1);
	py_elf__free(w);
}

/* Files no perf.data beside them names are removed, of either runtime; those the files name stay. */
static void test_prune(void **state)
{
	struct py_elf *w, *gone, *gone_java;
	__u64 pa, pb;
	char err[256], old[160];

	(void)state;
	w = make(&pa, &pb);
	assert_int_equal(py_elf__commit(w, err, sizeof(err)), 0);
	write_perf_data(output, w, pa, pb);
	/* A second recording: the first file became perf.data.old. */
	snprintf(old, sizeof(old), "%s.old", output);
	assert_int_equal(rename(output, old), 0);
	gone = make(&pa, &pb);
	assert_int_equal(py_elf__commit(gone, err, sizeof(err)), 0);
	gone_java = make_as(PY_ELF_JAVA, &pa, &pb);
	assert_int_equal(py_elf__commit(gone_java, err, sizeof(err)), 0);
	{
		/* A JVM's frames: perf shows the file's name as their dso. */
		struct py_elf *latest = make_as(PY_ELF_JAVA, &pa, &pb);

		assert_non_null(strstr(py_elf__path(latest), "/perf.data.spanperf/java-"));
		assert_int_equal(py_elf__commit(latest, err, sizeof(err)), 0);
		write_perf_data(output, latest, pa, pb);
		/* gone and gone_java are named by no file: removed; w by perf.data.old, latest by perf.data. */
		assert_int_equal(py_elf_prune(output), 2);
		assert_int_equal(access(py_elf__path(gone), F_OK), -1);
		assert_int_equal(access(py_elf__path(gone_java), F_OK), -1);
		assert_int_equal(access(py_elf__path(w), F_OK), 0);
		assert_int_equal(access(py_elf__path(latest), F_OK), 0);
		/* Both perf.data files gone: every file, and the folder. */
		unlink(output);
		unlink(old);
		assert_int_equal(py_elf_prune(output), 2);
		snprintf(old, sizeof(old), "%s.spanperf", output);
		assert_int_equal(access(old, F_OK), -1);
		py_elf__free(latest);
	}
	py_elf__free(gone);
	py_elf__free(gone_java);
	py_elf__free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_layout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nothing_left, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_perf_names_them, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prune, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
