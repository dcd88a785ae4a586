// SPDX-License-Identifier: GPL-2.0
/* Flag parsing: defaults, every flag, and one-sentence errors naming the input, for every command. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
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
	assert_false(o.all_cpus);
	record_opts_free(&o);
	/* -a with a command: the whole host while it runs, not its tree alone. */
	argv = ARGV("-a", "--", "make");
	assert_int_equal(parse(argv, 3, &o, err), 0);
	assert_true(o.all_cpus);
	assert_string_equal(o.cmd[0], "make");
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

/* argc from a NULL-terminated argv. */
static int count(char **argv)
{
	int n = 0;

	while (argv[n])
		n++;
	return n;
}

/* The table parser's own kinds: a choice, any string, a value given to a flag, clusters. */
struct kinds {
	int choice;
	const char *any;
	bool flag;
	int verbose;
};

static void kinds_usage(FILE *out)
{
	(void)out;
}

static const struct opt_def kinds_defs[] = {
	{ .name = "one", .type = OPT_T_SET, .off = offsetof(struct kinds, choice), .lo = 1 },
	{ .name = "two", .type = OPT_T_SET, .off = offsetof(struct kinds, choice), .lo = 2 },
	{ .name = "any", .letter = 'a', .type = OPT_T_ANY_STR, .off = offsetof(struct kinds, any) },
	{ .name = "flag", .letter = 'f', .type = OPT_T_FLAG, .off = offsetof(struct kinds, flag) },
	{ .letter = 'v', .type = OPT_T_VERBOSE, .off = offsetof(struct kinds, verbose) },
	{}
};

static int kinds_parse(char **argv, struct kinds *k, char *err)
{
	uint64_t seen;

	memset(k, 0, sizeof(*k));
	err[0] = 0;
	return opts_parse(kinds_defs, 0, count(argv), argv, k, &seen, kinds_usage, err, 256);
}

static void test_table_kinds(void **state)
{
	struct kinds k;
	char err[256];

	(void)state;
	assert_int_equal(kinds_parse(ARGV("--one", "--two", "--one"), &k, err), 0);
	assert_int_equal(k.choice, 1); /* the last one wins */
	assert_int_equal(kinds_parse(ARGV("--two", "--any", ""), &k, err), 0);
	assert_int_equal(k.choice, 2);
	assert_non_null(k.any);
	assert_string_equal(k.any, ""); /* empty is a value here (--debuginfod '': no servers) */
	assert_int_equal(kinds_parse(ARGV("-fvv", "-a", "x"), &k, err), 0);
	assert_true(k.flag);
	assert_int_equal(k.verbose, 2);
	assert_string_equal(k.any, "x");
	/* A flag given a value is named as written, whether it has a letter or not. */
	assert_int_equal(kinds_parse(ARGV("--one=3"), &k, err), -EINVAL);
	assert_string_equal(err, "unknown option '--one=3'; see --help");
	assert_int_equal(kinds_parse(ARGV("--flag=1"), &k, err), -EINVAL);
	assert_string_equal(err, "unknown option '--flag=1'; see --help");
	/* An unknown letter alone, even inside a cluster that follows a long option. */
	assert_int_equal(kinds_parse(ARGV("--flag", "-fx"), &k, err), -EINVAL);
	assert_string_equal(err, "unknown option '-x'; see --help");
	assert_int_equal(kinds_parse(ARGV("--flag", "-xf"), &k, err), -EINVAL);
	assert_string_equal(err, "unknown option '-x'; see --help");
	assert_int_equal(kinds_parse(ARGV("--nope"), &k, err), -EINVAL);
	assert_string_equal(err, "unknown option '--nope'; see --help");
	assert_int_equal(kinds_parse(ARGV("--any"), &k, err), -EINVAL);
	assert_string_equal(err, "option '--any' needs a value");
}

/* --help prints the usage to stdout, here to /dev/null, and the parser says OPT_HELP. */
static int quietly(int (*fn)(char **argv, char *err), char **argv, char *err)
{
	int null = open("/dev/null", O_WRONLY), out = dup(1), r;

	fflush(stdout);
	dup2(null, 1);
	r = fn(argv, err);
	fflush(stdout);
	dup2(out, 1);
	close(out);
	close(null);
	return r;
}

static struct stat_opts so;
static int stat_parse(char **argv, char *err)
{
	err[0] = 0;
	return stat_parse_args(count(argv), argv, &so, err, 256);
}

static void stat_bad(char **argv, const char *want)
{
	char err[256];

	assert_int_equal(stat_parse(argv, err) < 0, true);
	assert_string_equal(err, want);
	stat_opts_free(&so);
}

static void test_stat(void **state)
{
	char err[256];

	(void)state;
	assert_int_equal(stat_parse(ARGV("-d", "1"), err), 0);
	assert_null(so.events);
	assert_int_equal(so.max_threads, 32768);
	assert_int_equal(so.serve_top, 50);
	assert_false(so.json || so.per_thread);
	stat_opts_free(&so);
	assert_int_equal(stat_parse(ARGV("-p", "3,1", "-e", "task-clock", "--per-thread", "-I", "100", "-j", "-o",
					 "x.json", "--max-threads", "10", "--raw-tp", "-v", "--", "sleep", "1"), err), 0);
	assert_int_equal(so.pids.n, 2);
	assert_string_equal(so.events, "task-clock");
	assert_true(so.per_thread && so.json && so.raw_tp);
	assert_int_equal(so.interval_ms, 100);
	assert_string_equal(so.output, "x.json");
	assert_int_equal(so.max_threads, 10);
	assert_int_equal(so.verbose, 1);
	assert_string_equal(so.cmd[0], "sleep");
	assert_false(so.all_cpus);
	stat_opts_free(&so);
	assert_int_equal(stat_parse(ARGV("-a", "--", "sleep", "1"), err), 0);
	assert_true(so.all_cpus);
	stat_opts_free(&so);
	assert_int_equal(stat_parse(ARGV("--serve", "[::1]:9464", "--serve-top", "5", "--span", "syscall:read",
					 "--span", "syscall:write"), err), 0);
	assert_string_equal(so.serve, "[::1]:9464");
	assert_int_equal(so.serve_top, 5);
	assert_int_equal(so.nr_spans, 2);
	assert_string_equal(so.spans[1], "syscall:write");
	stat_opts_free(&so);
	assert_int_equal(quietly(stat_parse, ARGV("-h"), err), OPT_HELP);
	stat_opts_free(&so);
	stat_bad(ARGV("-I", "5"), "-I '5' is not an interval in milliseconds from 10 to 3600000");
	stat_bad(ARGV("-e", ""), "-e needs an event name; see 'spanperf list'");
	stat_bad(ARGV("--serve-top", "0", "--serve", "1"), "--serve-top '0' is not a number of series from 1 to 100000");
	stat_bad(ARGV("--serve", "1", "-I", "100"), "--serve and -I both report as the run goes; give one of them");
	stat_bad(ARGV("--serve-top", "5"), "--serve-top needs --serve");
	stat_bad(ARGV("--span", "syscall:read"), "--span needs --serve: stat shows spans as histograms there");
	stat_bad(ARGV("--serve", "x:y"), "--serve 'x:y' is not PORT, ADDR:PORT or [ADDR6]:PORT");
	stat_bad(ARGV("-p", "1", "-t", "2"), "-p and -t both filter; give one of them");
	stat_bad(ARGV("--bogus"), "unknown option '--bogus'; see --help");
}

static struct report_args ra;
static int report_parse(char **argv, char *err)
{
	err[0] = 0;
	return report_parse_args(count(argv), argv, &ra, err, 256);
}

static void report_bad(char **argv, const char *want)
{
	char err[256];

	assert_int_equal(report_parse(argv, err), -EINVAL);
	assert_string_equal(err, want);
}

static void test_report(void **state)
{
	const struct report_opts *o = &ra.o;
	char err[256];

	(void)state;
	assert_int_equal(report_parse(ARGV("--stdio"), err), 0);
	assert_string_equal(o->input, "perf.data");
	assert_int_equal(o->table.nr_keys, 3); /* comm,dso,sym */
	assert_int_equal(o->max_samples, 2000000);
	assert_int_equal(o->max_spans, 200000);
	assert_int_equal(o->inline_frames, INLINE_DWARF);
	assert_true(o->debuginfod.progress);
	assert_false(o->table.json || o->table.callgraph || o->folded || o->spans);
	assert_int_equal(ra.verbose, 0);
	assert_int_equal(report_parse(ARGV("-i", "x.data", "-s", "tid,sym", "-g", "--percent-limit", "2.5", "--format",
					   "json", "--flamegraph", "a.svg", "--pprof", "a.pb.gz", "--max-samples", "0",
					   "--max-spans", "7", "--no-inline", "--full-source-path", "--debuginfod", "",
					   "--offline", "--unknown-offsets", "--header-only", "-v", "-v"), err), 0);
	assert_string_equal(o->input, "x.data");
	assert_int_equal(o->table.nr_keys, 2);
	assert_true(o->table.callgraph && o->table.json);
	assert_true(o->table.min_pct == 2.5);
	assert_string_equal(o->flame, "a.svg");
	assert_string_equal(o->pprof, "a.pb.gz");
	assert_int_equal(o->max_samples, 0);
	assert_int_equal(o->max_spans, 7);
	assert_int_equal(o->inline_frames, INLINE_NONE);
	assert_true(o->full_srcline && o->debuginfod.offline && o->unknown_offsets && o->header_only);
	assert_string_equal(o->debuginfod.urls, "");
	assert_int_equal(ra.verbose, 2);
	assert_int_equal(report_parse(ARGV("--no-inline", "--inline", "--folded", "--event", "wall", "--waker", "-q"),
				      err), 0);
	assert_int_equal(o->inline_frames, INLINE_ALL);
	assert_true(o->folded && o->wakers && o->ev_set && o->ev == PV_WALL);
	assert_int_equal(ra.verbose, -1);
	assert_int_equal(report_parse(ARGV("--spans", "--format", "otlp-json", "--bpf-samples"), err), 0);
	assert_true(o->spans && o->spans_format == SPANS_OTLP && o->bpf_samples && !o->table.json);
	assert_int_equal(report_parse(ARGV("--format", "speedscope"), err), 0);
	assert_string_equal(o->speedscope, "-");
	assert_int_equal(report_parse(ARGV("--html", "p.html", "--max-samples", "10"), err), 0);
	assert_string_equal(o->html, "p.html");
	assert_false(report_filter_active(&o->filter));
	/* perf's filters, its short and long spellings, lists added up; --time checked for form only. */
	assert_int_equal(report_parse(ARGV("--comms", "a,b", "-c", "c", "--pids", "1,2", "--tid", "3", "-d",
					   "libc.so.6", "-S", "main", "--symbols", "f", "--time", "10%/2"), err), 0);
	assert_true(name_set_has(&o->filter.comms, "a") && name_set_has(&o->filter.comms, "c"));
	assert_true(name_set_has(&o->filter.dsos, "libc.so.6"));
	assert_true(name_set_has(&o->filter.syms, "main") && name_set_has(&o->filter.syms, "f"));
	assert_int_equal(o->filter.pids.n, 2);
	assert_int_equal(o->filter.tids.v[0], 3);
	assert_string_equal(o->filter.time, "10%/2");
	report_filter_free(&ra.o.filter);
	assert_int_equal(quietly(report_parse, ARGV("--help"), err), OPT_HELP);
	report_bad(ARGV("-s", "bogus"),
		   "--sort 'bogus' is not a list of comm, pid, tid, dso, sym, srcline, trace, span, waker and attr:NAME");
	report_bad(ARGV("--format", "yaml"), "--format 'yaml' is neither text, json, otlp-json nor speedscope");
	report_bad(ARGV("--percent-limit", "101"), "--percent-limit '101' is not a percentage");
	report_bad(ARGV("--percent-limit", "x"), "--percent-limit 'x' is not a percentage");
	report_bad(ARGV("--pids", "x"), "--pids 'x' is not a comma-separated list of process ids");
	report_bad(ARGV("--time", "5"), "--time '5' is not START,END (seconds, as perf script prints them; several "
		   "separated by spaces), P%, P%/N or A%-B% (several separated by commas)");
	report_bad(ARGV("--max-samples", "many"), "--max-samples 'many' is not a count");
	report_bad(ARGV("--max-spans", "-3"), "--max-spans '-3' is not a count");
	report_bad(ARGV("--event", "cpu"), "--event 'cpu' is not on-cpu, off-cpu or wall");
	report_bad(ARGV("-i", "a", "b"), "unexpected argument 'b'; the input file goes after -i");
	report_bad(ARGV("-i"), "option '-i' needs a value");
	report_bad(ARGV("--stdio=1"), "unknown option '--stdio=1'; see --help");
	report_bad(ARGV("-x"), "unknown option '-x'; see --help");
	report_bad(ARGV("--format", "otlp-json"), "--format otlp-json writes spans: use it with --spans");
	report_bad(ARGV("--span-prefix"), "--span-prefix prefixes the stacks of --folded: use it with --folded");
	report_bad(ARGV("--folded", "--span-prefix", "--spans"),
		   "--span-prefix prefixes the stacks of --folded: use it with --folded, not --spans");
	report_bad(ARGV("--folded", "--waker", "--event", "on-cpu"),
		   "--waker appends the waker to off-CPU stacks of --folded: use it with --folded and --event off-cpu or wall");
	report_bad(ARGV("--html", "x", "--spans"), "--html and --speedscope show everything the file holds: use them "
		   "without --spans, --folded, --flamegraph, --pprof and --event");
	report_bad(ARGV("--folded", "--span-prefix", "--event", "off-cpu"),
		   "--span-prefix prefixes on-CPU samples only: leave out --event off-cpu");
}

static struct annotate_args aa;
static int annotate_parse(char **argv, char *err)
{
	err[0] = 0;
	return annotate_parse_args(count(argv), argv, &aa, err, 256);
}

static void test_annotate(void **state)
{
	static const struct { const char *fmt; bool json, otlp, folded; } fmts[] = {
		{ "text", false, false, false }, { "json", true, false, false },
		{ "otlp-json", false, true, false }, { "folded", false, false, true },
	};
	char err[256];

	(void)state;
	assert_int_equal(annotate_parse(ARGV("-s", "s.jsonl"), err), 0);
	assert_string_equal(aa.o.external, "s.jsonl");
	assert_string_equal(aa.o.input, "perf.data");
	assert_null(aa.html);
	assert_int_equal(annotate_parse(ARGV("--spans", "s.jsonl", "-i", "a.data", "--html", "p.html"), err), 0);
	assert_string_equal(aa.o.input, "a.data");
	assert_string_equal(aa.html, "p.html");
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		assert_int_equal(annotate_parse(ARGV("-s", "x", "--format", (char *)fmts[i].fmt), err), 0);
		assert_true((aa.o.format == SPANS_JSON) == fmts[i].json && (aa.o.format == SPANS_OTLP) == fmts[i].otlp &&
			    aa.folded == fmts[i].folded);
	}
	assert_int_equal(quietly(annotate_parse, ARGV("-h"), err), OPT_HELP);
	assert_int_equal(annotate_parse(ARGV("-i", "a.data"), err), -EINVAL);
	assert_string_equal(err, "--spans FILE is required: the spans to annotate, as JSON lines");
	assert_int_equal(annotate_parse(ARGV("-s", "x", "--format", "yaml"), err), -EINVAL);
	assert_string_equal(err, "--format 'yaml' is neither text, json, otlp-json nor folded");
	assert_int_equal(annotate_parse(ARGV("-s", "x", "extra"), err), -EINVAL);
	assert_string_equal(err, "unexpected argument 'extra'");
	assert_int_equal(annotate_parse(ARGV("-f", "json"), err), -EINVAL);
	assert_string_equal(err, "unknown option '-f'; see --help");
	assert_int_equal(annotate_parse(ARGV("--spans"), err), -EINVAL);
	assert_string_equal(err, "option '--spans' needs a value");
}

static struct list_args la;
static int list_parse(char **argv, char *err)
{
	err[0] = 0;
	return list_parse_args(count(argv), argv, &la, err, 256);
}

static struct probe_args pa;
static int probe_parse(char **argv, char *err)
{
	err[0] = 0;
	return probe_parse_args(count(argv), argv, &pa, err, 256);
}

static void test_list_and_probe(void **state)
{
	char err[256];

	(void)state;
	assert_int_equal(list_parse(ARGV("--all"), err), 0);
	assert_true(la.all);
	assert_int_equal(list_parse((char *[]){ "list", NULL }, err), 0);
	assert_false(la.all);
	assert_int_equal(quietly(list_parse, ARGV("--help"), err), OPT_HELP);
	assert_int_equal(list_parse(ARGV("foo", "--all"), err), -EINVAL);
	assert_string_equal(err, "unknown option 'foo'; see --help");
	assert_int_equal(list_parse(ARGV("--all=1"), err), -EINVAL);
	assert_string_equal(err, "unknown option '--all=1'; see --help");
	assert_int_equal(list_parse(ARGV("-a"), err), -EINVAL);
	assert_string_equal(err, "unknown option '-a'; see --help");

	assert_int_equal(probe_parse(ARGV("-v"), err), 0);
	assert_int_equal(pa.verbose, 1);
	assert_int_equal(probe_parse(ARGV("-v", "-v"), err), 0);
	assert_int_equal(pa.verbose, 2);
	assert_int_equal(quietly(probe_parse, ARGV("-h"), err), OPT_HELP);
	assert_int_equal(probe_parse(ARGV("--verbose"), err), -EINVAL);
	assert_string_equal(err, "unknown option '--verbose'; see --help");
	assert_int_equal(probe_parse(ARGV("foo"), err), -EINVAL);
	assert_string_equal(err, "unknown option 'foo'; see --help");
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
		cmocka_unit_test(test_table_kinds),
		cmocka_unit_test(test_stat),
		cmocka_unit_test(test_report),
		cmocka_unit_test(test_annotate),
		cmocka_unit_test(test_list_and_probe),
	};

	return cmocka_run_group_tests_name("options", tests, NULL, NULL);
}
