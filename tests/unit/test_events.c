// SPDX-License-Identifier: GPL-2.0
/* Event names to perf_event_attr, against fixture sysfs and tracefs trees. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "events.h"

static char root[] = "/tmp/spanperf-ev-XXXXXX";

static void put(const char *rel, const char *text)
{
	char path[512], cmd[600];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname %s/%s)\"", root, rel);
	assert_int_equal(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	static char pmu[600], tfs[600];

	(void)state;
	if (!mkdtemp(root))
		return -1;
	/* A PMU shaped like x86's "cpu": split umask bits test the format deposit. */
	put("pmu/cpu/type", "4\n");
	put("pmu/cpu/format/event", "config:0-7,32-35\n");
	put("pmu/cpu/format/umask", "config:8-15\n");
	put("pmu/cpu/format/edge", "config:18\n");
	put("pmu/cpu/format/ldlat", "config1:0-15\n");
	put("pmu/cpu/events/mem-loads", "event=0xcd,umask=0x1,ldlat=3\n");
	put("pmu/msr/type", "9\n");
	put("pmu/msr/format/event", "config:0-63\n");
	put("pmu/msr/events/tsc", "event=0x00\n");
	put("tracing/events/sched/sched_switch/id", "316\n");
	put("tracing/events/syscalls/sys_enter_read/id", "700\n");
	snprintf(pmu, sizeof(pmu), "%s/pmu", root);
	snprintf(tfs, sizeof(tfs), "%s/tracing", root);
	events_set_roots(pmu, tfs);
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd);
}

static struct event_spec parse_ok(const char *s)
{
	struct event_spec ev;
	char err[256] = "";

	if (event_parse(s, &ev, err, sizeof(err)))
		fail_msg("'%s' did not parse: %s", s, err);
	assert_string_equal(ev.name, s);
	return ev;
}

static void parse_bad(const char *s, const char *needle)
{
	struct event_spec ev;
	char err[256] = "";

	assert_int_not_equal(event_parse(s, &ev, err, sizeof(err)), 0);
	if (!strstr(err, needle))
		fail_msg("error for '%s' was '%s', expected it to mention '%s'", s, err, needle);
}

static void test_generic(void **state)
{
	struct event_spec ev;

	(void)state;
	ev = parse_ok("cycles");
	assert_int_equal(ev.attr.type, PERF_TYPE_HARDWARE);
	assert_int_equal(ev.attr.config, PERF_COUNT_HW_CPU_CYCLES);
	assert_int_equal(parse_ok("cpu-cycles").attr.config, PERF_COUNT_HW_CPU_CYCLES);
	assert_int_equal(parse_ok("instructions").attr.config, PERF_COUNT_HW_INSTRUCTIONS);
	assert_int_equal(parse_ok("cache-references").attr.config, PERF_COUNT_HW_CACHE_REFERENCES);
	assert_int_equal(parse_ok("cache-misses").attr.config, PERF_COUNT_HW_CACHE_MISSES);
	assert_int_equal(parse_ok("branches").attr.config, PERF_COUNT_HW_BRANCH_INSTRUCTIONS);
	assert_int_equal(parse_ok("branch-instructions").attr.config, PERF_COUNT_HW_BRANCH_INSTRUCTIONS);
	assert_int_equal(parse_ok("branch-misses").attr.config, PERF_COUNT_HW_BRANCH_MISSES);
	assert_int_equal(parse_ok("bus-cycles").attr.config, PERF_COUNT_HW_BUS_CYCLES);
	assert_int_equal(parse_ok("ref-cycles").attr.config, PERF_COUNT_HW_REF_CPU_CYCLES);
	assert_int_equal(parse_ok("stalled-cycles-frontend").attr.config, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND);
	assert_int_equal(parse_ok("stalled-cycles-backend").attr.config, PERF_COUNT_HW_STALLED_CYCLES_BACKEND);
	ev = parse_ok("task-clock");
	assert_int_equal(ev.attr.type, PERF_TYPE_SOFTWARE);
	assert_int_equal(ev.attr.config, PERF_COUNT_SW_TASK_CLOCK);
	assert_string_equal(ev.unit, "msec");
	assert_int_equal(parse_ok("cpu-clock").attr.config, PERF_COUNT_SW_CPU_CLOCK);
	assert_int_equal(parse_ok("page-faults").attr.config, PERF_COUNT_SW_PAGE_FAULTS);
	assert_int_equal(parse_ok("faults").attr.config, PERF_COUNT_SW_PAGE_FAULTS);
	assert_int_equal(parse_ok("minor-faults").attr.config, PERF_COUNT_SW_PAGE_FAULTS_MIN);
	assert_int_equal(parse_ok("major-faults").attr.config, PERF_COUNT_SW_PAGE_FAULTS_MAJ);
	assert_int_equal(parse_ok("context-switches").attr.config, PERF_COUNT_SW_CONTEXT_SWITCHES);
	assert_int_equal(parse_ok("cs").attr.config, PERF_COUNT_SW_CONTEXT_SWITCHES);
	assert_int_equal(parse_ok("cpu-migrations").attr.config, PERF_COUNT_SW_CPU_MIGRATIONS);
	assert_int_equal(parse_ok("migrations").attr.config, PERF_COUNT_SW_CPU_MIGRATIONS);
	assert_int_equal(parse_ok("alignment-faults").attr.config, PERF_COUNT_SW_ALIGNMENT_FAULTS);
	assert_int_equal(parse_ok("emulation-faults").attr.config, PERF_COUNT_SW_EMULATION_FAULTS);
	assert_null(parse_ok("context-switches").unit);
}

static void test_cache(void **state)
{
	struct event_spec ev;

	(void)state;
	ev = parse_ok("L1-dcache-load-misses");
	assert_int_equal(ev.attr.type, PERF_TYPE_HW_CACHE);
	assert_int_equal(ev.attr.config, PERF_COUNT_HW_CACHE_L1D | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
						 (PERF_COUNT_HW_CACHE_RESULT_MISS << 16));
	ev = parse_ok("LLC-load-misses");
	assert_int_equal(ev.attr.config, PERF_COUNT_HW_CACHE_LL | (PERF_COUNT_HW_CACHE_RESULT_MISS << 16));
	ev = parse_ok("dTLB-load-misses");
	assert_int_equal(ev.attr.config, PERF_COUNT_HW_CACHE_DTLB | (PERF_COUNT_HW_CACHE_RESULT_MISS << 16));
	ev = parse_ok("L1-icache-loads");
	assert_int_equal(ev.attr.config, PERF_COUNT_HW_CACHE_L1I);
	ev = parse_ok("LLC-stores");
	assert_int_equal(ev.attr.config, PERF_COUNT_HW_CACHE_LL | (PERF_COUNT_HW_CACHE_OP_WRITE << 8));
	ev = parse_ok("branch-load-misses");
	assert_int_equal(ev.attr.config, PERF_COUNT_HW_CACHE_BPU | (PERF_COUNT_HW_CACHE_RESULT_MISS << 16));
	ev = parse_ok("L1-dcache-prefetches");
	assert_int_equal(ev.attr.config, PERF_COUNT_HW_CACHE_L1D | (PERF_COUNT_HW_CACHE_OP_PREFETCH << 8));
	parse_bad("L1-dcache-jumps", "unknown");
}

static void test_modifiers(void **state)
{
	struct event_spec ev;

	(void)state;
	ev = parse_ok("cycles:u");
	assert_int_equal(ev.attr.config, PERF_COUNT_HW_CPU_CYCLES);
	assert_true(ev.attr.exclude_kernel);
	assert_false(ev.attr.exclude_user);
	ev = parse_ok("instructions:k");
	assert_true(ev.attr.exclude_user);
	assert_false(ev.attr.exclude_kernel);
	ev = parse_ok("cycles:uk");
	assert_false(ev.attr.exclude_user);
	assert_false(ev.attr.exclude_kernel);
	assert_true(ev.attr.exclude_hv);
	ev = parse_ok("task-clock:u");
	assert_true(ev.attr.exclude_kernel);
	assert_int_equal(parse_ok("cycles:ppp").attr.precise_ip, 3);
	parse_bad("cycles:pppp", "modifiers");
	ev = parse_ok("cpu/event=0x3c/:u");
	assert_true(ev.attr.exclude_kernel);
	ev = parse_ok("sched:sched_switch:k");
	assert_int_equal(ev.attr.type, PERF_TYPE_TRACEPOINT);
	assert_true(ev.attr.exclude_user);
}

static void test_raw_and_pmu(void **state)
{
	struct event_spec ev;

	(void)state;
	ev = parse_ok("r01c4");
	assert_int_equal(ev.attr.type, PERF_TYPE_RAW);
	assert_int_equal(ev.attr.config, 0x1c4);
	parse_bad("r12345678901234567", "64 bits");
	ev = parse_ok("cpu/event=0x3c,umask=0x00/");
	assert_int_equal(ev.attr.type, 4);
	assert_int_equal(ev.attr.config, 0x3c);
	/* event bits 8-11 go to config 32-35: the split range of the format file */
	ev = parse_ok("cpu/event=0x1cd,umask=0x2,edge/");
	assert_int_equal(ev.attr.config, 0xcd | (0x1ull << 32) | (0x2 << 8) | (1 << 18));
	ev = parse_ok("cpu/mem-loads/");
	assert_int_equal(ev.attr.config, 0xcd | (0x1 << 8));
	assert_int_equal(ev.attr.config1, 3);
	ev = parse_ok("cpu/config=0x1234,config1=5/");
	assert_int_equal(ev.attr.config, 0x1234);
	assert_int_equal(ev.attr.config1, 5);
	ev = parse_ok("msr/tsc/");
	assert_int_equal(ev.attr.type, 9);
	/* A bare name that exactly one PMU exports. */
	ev = parse_ok("tsc");
	assert_int_equal(ev.attr.type, 9);
	parse_bad("cpu/umask=0x1ff/", "format");
	parse_bad("cpu/bogus=1/", "bogus");
	parse_bad("nopmu/event=1/", "nopmu");
	parse_bad("cpu/event=zz/", "not a number");
	parse_bad("../etc/event=1/", "PMU");
}

static void test_tracepoints(void **state)
{
	struct event_spec ev;

	(void)state;
	ev = parse_ok("sched:sched_switch");
	assert_int_equal(ev.attr.type, PERF_TYPE_TRACEPOINT);
	assert_int_equal(ev.attr.config, 316);
	assert_int_equal(parse_ok("syscalls:sys_enter_read").attr.config, 700);
	parse_bad("sched:no_such", "sched:no_such");
	parse_bad("sched:../../x", "sched:../../x");
}

static void test_errors(void **state)
{
	struct event_spec ev;
	char err[256], longname[300];

	(void)state;
	parse_bad("nosuchevent", "'nosuchevent'");
	parse_bad("", "empty");
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	assert_int_equal(event_parse(longname, &ev, err, sizeof(err)), -ENAMETOOLONG);
}

static void test_lists(void **state)
{
	struct event_spec *evs;
	char err[256];
	int n;

	(void)state;
	assert_int_equal(event_list_parse("cycles,instructions,cpu/event=0x3c,umask=0x00/,cs", &evs, &n,
					  err, sizeof(err)), 0);
	assert_int_equal(n, 4);
	assert_string_equal(evs[2].name, "cpu/event=0x3c,umask=0x00/");
	assert_string_equal(evs[3].name, "cs");
	free(evs);
	assert_int_not_equal(event_list_parse("cycles,,cs", &evs, &n, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "empty entry"));
	assert_int_not_equal(event_list_parse("cycles,", &evs, &n, err, sizeof(err)), 0);
	assert_int_not_equal(event_list_parse("cycles,bogus", &evs, &n, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "bogus"));
	assert_null(evs);
}

static void test_fallback_errnos(void **state)
{
	(void)state;
	assert_true(event_errno_means_no_pmu(-EOPNOTSUPP));
	assert_true(event_errno_means_no_pmu(-ENOENT));
	assert_true(event_errno_means_no_pmu(-ENODEV));
	assert_true(event_errno_means_no_pmu(-EINVAL));
	assert_true(event_errno_means_no_pmu(-EACCES));
	assert_false(event_errno_means_no_pmu(-EMFILE));
	assert_false(event_errno_means_no_pmu(-EBUSY));
}

/*
 * What event_sampling_attr sets in either mode, over the caller's attr: the
 * cases add only the mode's own fields, so that both hold the same set.
 */
static struct perf_event_attr sampling_set(const struct perf_event_attr *a)
{
	struct perf_event_attr want = *a;

	want.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			   PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
	want.disabled = 1;
	want.sample_id_all = 1;
	want.use_clockid = 1;
	want.clockid = CLOCK_MONOTONIC;
	return want;
}

/*
 * The sampling part record and the library's samplers share: its fields
 * set, every other bit of the attr as the caller left it (the event's, and
 * in period mode the event's own freq bit, as record had it).
 */
static void test_sampling_attr(void **state)
{
	struct perf_event_attr a, want;

	(void)state;
	memset(&a, 0xa5, sizeof(a));
	a.freq = 0;
	want = sampling_set(&a);
	want.freq = 1;
	want.sample_freq = 999;
	event_sampling_attr(&a, true, 999);
	assert_memory_equal(&a, &want, sizeof(a));

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.exclude_kernel = 1;
	want = sampling_set(&a);
	want.sample_period = 10007;
	event_sampling_attr(&a, false, 10007);
	assert_memory_equal(&a, &want, sizeof(a));
	assert_false(a.freq);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generic),	      cmocka_unit_test(test_cache),
		cmocka_unit_test(test_modifiers),     cmocka_unit_test(test_raw_and_pmu),
		cmocka_unit_test(test_tracepoints),   cmocka_unit_test(test_errors),
		cmocka_unit_test(test_lists),	      cmocka_unit_test(test_fallback_errnos),
		cmocka_unit_test(test_sampling_attr),
	};

	return cmocka_run_group_tests_name("events", tests, setup, teardown);
}
