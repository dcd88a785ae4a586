// SPDX-License-Identifier: GPL-2.0
/* Flag parsing: defaults, every flag, and one-sentence errors naming the input. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "cmd_opts.h"

#define ARGV(...) ((char *[]){ "record", __VA_ARGS__, NULL })

/* argc is counted from the NULL-terminated argv; the argument is ignored. */
static int parse(char **argv, int unused, struct record_opts *o, char *err)
{
	int argc = 0;

	(void)unused;
	while (argv[argc])
		argc++;
	err[0] = 0;
	return record_parse_args(argc, argv, o, err, 256);
}

static void test_defaults(void **state)
{
	char *argv[] = { "record", NULL };
	struct record_opts o;
	char err[256];

	(void)state;
	assert_int_equal(parse(argv, 1, &o, err), 0);
	assert_int_equal(o.freq, 999);
	assert_int_equal(o.period, 0);
	assert_string_equal(o.output, "perf.data");
	assert_false(o.callgraph);
	assert_null(o.events);
	assert_null(o.cmd);
	assert_int_equal(o.duration, 0);
	assert_int_equal(o.mmap_pages, 256);
	record_opts_free(&o);
}

static void test_all_flags(void **state)
{
	char **argv = ARGV("-a", "-p", "30,10,20,10", "-C", "0-2,5", "-F", "4999", "-e", "cpu-clock",
			   "-g", "-d", "2.5", "-o", "out.data", "-m", "64", "--max-threads", "100",
			   "--span", "syscall:read", "--span", "uprobe:/bin/x:f", "--span-min-us", "5",
			   "-v", "--", "sleep", "1");
	struct record_opts o;
	char err[256];

	(void)state;
	assert_int_equal(parse(argv, 29, &o, err), 0);
	assert_int_equal(o.pids.n, 3); /* sorted, de-duplicated */
	assert_int_equal(o.pids.v[0], 10);
	assert_int_equal(o.pids.v[2], 30);
	assert_int_equal(o.cpus.n, 4);
	assert_int_equal(o.cpus.v[3], 5);
	assert_int_equal(o.freq, 4999);
	assert_string_equal(o.events, "cpu-clock");
	assert_true(o.callgraph);
	assert_true(o.duration > 2.49 && o.duration < 2.51);
	assert_string_equal(o.output, "out.data");
	assert_int_equal(o.mmap_pages, 64);
	assert_int_equal(o.max_threads, 100);
	assert_int_equal(o.nr_spans, 2);
	assert_string_equal(o.spans[1], "uprobe:/bin/x:f");
	assert_int_equal(o.span_min_us, 5);
	assert_int_equal(o.verbose, 1);
	assert_non_null(o.cmd);
	assert_string_equal(o.cmd[0], "sleep");
	assert_string_equal(o.cmd[1], "1");
	record_opts_free(&o);
}

static void test_period_and_cmd_without_dashes(void **state)
{
	char **argv = ARGV("-c", "10000", "-t", "7", "make", "-j8");
	struct record_opts o;
	char err[256];

	(void)state;
	/* As perf: options stop at the command, whose own flags are left alone. */
	assert_int_equal(parse(argv, 6, &o, err), 0);
	assert_int_equal(o.freq, 0);
	assert_int_equal(o.period, 10000);
	assert_int_equal(o.tids.v[0], 7);
	assert_string_equal(o.cmd[1], "-j8");
	record_opts_free(&o);
}

static void bad(char **argv, int argc, const char *needle)
{
	struct record_opts o;
	char err[256];

	assert_int_equal(parse(argv, argc, &o, err), -EINVAL);
	if (!strstr(err, needle))
		fail_msg("error '%s' does not mention '%s'", err, needle);
	/* One sentence: no newline inside, ends without a trailing dot-space mess. */
	assert_null(strchr(err, '\n'));
	record_opts_free(&o);
}

static void test_errors(void **state)
{
	(void)state;
	bad(ARGV("-F", "abc"), 2, "-F 'abc'");
	bad(ARGV("-F", "0"), 2, "-F '0'");
	bad(ARGV("-F", "-5"), 2, "-F '-5'");
	bad(ARGV("-F", "99999999999999999999999"), 2, "-F");
	bad(ARGV("-c", "0"), 2, "-c '0'");
	bad(ARGV("-F", "99", "-c", "10"), 4, "-F and -c");
	bad(ARGV("-p", "1,x"), 2, "-p '1,x'");
	bad(ARGV("-p", "1", "-t", "2"), 4, "-p and -t");
	bad(ARGV("-C", "3-1"), 2, "-C '3-1'");
	bad(ARGV("-d", "0"), 2, "-d '0'");
	bad(ARGV("-d", "nan"), 2, "-d 'nan'");
	bad(ARGV("-d", "1e400"), 2, "-d '1e400'");
	bad(ARGV("-m", "3"), 2, "-m '3'");
	bad(ARGV("-o", ""), 2, "-o");
	bad(ARGV("-e", ""), 2, "-e");
	bad(ARGV("--max-threads", "0"), 2, "--max-threads '0'");
	bad(ARGV("--bogus"), 1, "--bogus");
	bad(ARGV("-Z"), 1, "-Z");
	bad(ARGV("-F"), 1, "-F");
	bad(ARGV(""), 1, "empty");
	bad(ARGV("--call-graph", "lbr"), 2, "--call-graph 'lbr'");
	bad(ARGV("--call-graph", "dwarfx"), 2, "--call-graph 'dwarfx'");
	bad(ARGV("--call-graph", "dwarf,0"), 2, "--call-graph 'dwarf,0'");
	bad(ARGV("--call-graph", "dwarf,65536"), 2, "--call-graph 'dwarf,65536'");
	bad(ARGV("--call-graph", "dwarf,"), 2, "--call-graph 'dwarf,'");
}

/* perf's spelling: fp is -g; dwarf copies 8192 bytes unless told, rounded up to words. */
static void test_call_graph(void **state)
{
	struct record_opts o;
	char err[256];

	(void)state;
	assert_int_equal(parse(ARGV("--call-graph", "fp"), 2, &o, err), 0);
	assert_true(o.callgraph);
	assert_int_equal(o.dwarf_stack, 0);
	assert_int_equal(o.mmap_pages, 256);
	record_opts_free(&o);
	assert_int_equal(parse(ARGV("--call-graph", "dwarf"), 2, &o, err), 0);
	assert_true(o.callgraph);
	assert_int_equal(o.dwarf_stack, 8192);
	assert_int_equal(o.mmap_pages, 1024); /* room for 999 Hz of stack copies */
	record_opts_free(&o);
	assert_int_equal(parse(ARGV("--call-graph=dwarf,1001", "-m", "64"), 3, &o, err), 0);
	assert_int_equal(o.dwarf_stack, 1008);
	assert_int_equal(o.mmap_pages, 64);
	record_opts_free(&o);
	/* The last one wins, as in perf. */
	assert_int_equal(parse(ARGV("--call-graph", "dwarf", "-g"), 3, &o, err), 0);
	assert_int_equal(o.dwarf_stack, 0);
	record_opts_free(&o);
}

/* perf's names; the threshold is unset (-1) until given, so that --span can pick 0. */
static void test_off_cpu(void **state)
{
	struct record_opts o;
	char err[256];

	(void)state;
	assert_int_equal(parse(ARGV("--off-cpu"), 1, &o, err), 0);
	assert_true(o.offcpu);
	assert_int_equal(o.offcpu_thresh_ms, -1);
	assert_int_equal(o.offcpu_entries, 16384);
	record_opts_free(&o);
	assert_int_equal(parse(ARGV("--off-cpu", "--off-cpu-thresh", "0", "--off-cpu-entries", "1024"), 5, &o, err), 0);
	assert_int_equal(o.offcpu_thresh_ms, 0);
	assert_int_equal(o.offcpu_entries, 1024);
	record_opts_free(&o);
	bad(ARGV("--off-cpu-thresh", "5"), 2, "need --off-cpu");
	bad(ARGV("--off-cpu", "--off-cpu-thresh", "-1"), 3, "--off-cpu-thresh '-1'");
	bad(ARGV("--off-cpu", "--off-cpu-entries", "8"), 3, "--off-cpu-entries '8'");
	/* --sched alone: switch stamps, its ring sized by --off-cpu-entries. */
	assert_int_equal(parse(ARGV("--sched", "--off-cpu-entries", "1024"), 3, &o, err), 0);
	assert_true(o.sched && !o.offcpu);
	record_opts_free(&o);
	bad(ARGV("--off-cpu-entries", "1024"), 2, "needs --off-cpu or --sched");
	bad(ARGV("--sched", "--no-wakers"), 2, "need --off-cpu");
	/* The switch records go alone for the blocks summed: any threshold does with --sched. */
	assert_int_equal(parse(ARGV("--sched", "--off-cpu", "--off-cpu-thresh", "5"), 4, &o, err), 0);
	record_opts_free(&o);
}

static void test_reparse(void **state)
{
	char **a1 = ARGV("-F", "10"), **a2 = ARGV("-g");
	struct record_opts o;
	char err[256];

	(void)state;
	/* getopt keeps global state; the parser must reset it. */
	assert_int_equal(parse(a1, 2, &o, err), 0);
	assert_int_equal(o.freq, 10);
	record_opts_free(&o);
	assert_int_equal(parse(a2, 1, &o, err), 0);
	assert_int_equal(o.freq, 999);
	assert_true(o.callgraph);
	record_opts_free(&o);
}

/* --switch-output's spellings, as perf's: none (signal), signal, SIZE and TIME with their units. */
static void test_switch_output(void **state)
{
	static const struct { const char *arg; uint64_t size, ns; } ok[] = {
		{ "--switch-output", 0, 0 },
		{ "--switch-output=signal", 0, 0 },
		{ "--switch-output=100M", 100ull << 20, 0 },
		{ "--switch-output=4K", 4096, 0 },
		{ "--switch-output=512B", 512, 0 },
		{ "--switch-output=1G", 1ull << 30, 0 },
		{ "--switch-output=30s", 0, 30000000000ull },
		{ "--switch-output=2m", 0, 120000000000ull },
		{ "--switch-output=1h", 0, 3600000000000ull },
		{ "--switch-output=1d", 0, 86400000000000ull },
	};
	static const char *bad[] = { "--switch-output=10", "--switch-output=x", "--switch-output=0s",
				     "--switch-output=", "--switch-output=5q", "--switch-output=-1s" };
	struct record_opts o;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(parse(ARGV((char *)ok[i].arg, "--switch-max-files", "3"), 0, &o, err), 0);
		assert_true(o.switch_output);
		assert_int_equal(o.switch_size, ok[i].size);
		assert_int_equal(o.switch_ns, ok[i].ns);
		assert_int_equal(o.switch_max_files, 3);
		record_opts_free(&o);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(ARGV((char *)bad[i]), 0, &o, err), -EINVAL);
		assert_non_null(strstr(err, "--switch-output '"));
		record_opts_free(&o);
	}
	assert_int_equal(parse(ARGV("--switch-max-files", "2"), 0, &o, err), -EINVAL);
	assert_string_equal(err, "--switch-max-files needs --switch-output");
	record_opts_free(&o);
	/* Not a value of its own: the next word is CMD, as in perf. */
	assert_int_equal(parse(ARGV("--switch-output", "sleep", "1"), 0, &o, err), 0);
	assert_true(o.switch_output);
	assert_string_equal(o.cmd[0], "sleep");
	record_opts_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_all_flags),
		cmocka_unit_test(test_period_and_cmd_without_dashes),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_call_graph),
		cmocka_unit_test(test_off_cpu),
		cmocka_unit_test(test_reparse),
		cmocka_unit_test(test_switch_output),
	};

	return cmocka_run_group_tests_name("options", tests, NULL, NULL);
}
