// SPDX-License-Identifier: GPL-2.0
/*
 * The span outputs from a view made by hand, with no recording, session or
 * join: what each format prints is a function of the view alone.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sbuf.h"
#include "spans_view.h"

static const char *const ctr_names[] = { "task-clock", "context-switches" };
static const char *const names[] = { "GET", "idle" };
static const struct spans_func get_top[] = { { "parse", 3 }, { "read", 1 } };
static const struct spans_func get2_top[] = { { "read", 2 } };
static const struct spans_attr get2_attr[] = { { "http.route", "/a" }, { "user.id", "u1" } };
static const char *const block[] = { "schedule", "do_read", "main" };
static const struct spans_stack get_off[] = { { .frame = block, .nr = 3, .ns = 2000000 } };
static const struct spans_waker get_wakers[] = {
	{ .comm = "writer", .tid = 12, .stack = { .frame = block + 1, .nr = 2, .ns = 2000000 }, .has_ids = true,
	  .trace_id = "0123456789abcdef0123456789abcdef", .span_id = "00000000000000aa" },
};

/* Two GET spans of pid 10 (one with an OTel context), an idle one of pid 20. */
static struct spans_row rows[] = {
	{ .name = "GET", .source = "uprobe", .kind = 0, .pid = 10, .tid = 11, .start = 1000000, .end = 5000000,
	  .samples = 4, .bpf_samples = 4, .has_counters = true, .counters = { 3000000, 1 },
	  .trace_id = "9e3779b97f4a7c15f39cc0605cedc834", .span_id = "1b873593cc9e2d51", .service = "shop",
	  .top = get_top, .nr_top = 2,
	  .on_cpu_ns = 2000000, .has_split = true, .split = { .on = 2000000, .runq = 0, .off = 2000000, .sleep = 2000000 },
	  .split_how = "sched_info", .off_ns = 2000000, .blocked_in = "do_read", .off_top = get_off, .nr_off_top = 1,
	  .woken_by = get_wakers, .nr_woken_by = 1 },
	{ .name = "GET", .source = "otel", .kind = 0, .pid = 10, .tid = 11, .start = 6000000, .end = 8000000,
	  .samples = 2, .has_counters = true, .counters = { 1000000, 0 }, .has_ctx = true,
	  .trace_id = "000102030405060708090a0b0c0d0e0f", .span_id = "1011121314151617", .attr = get2_attr,
	  .nr_attr = 2, .service = "shop", .top = get2_top, .nr_top = 1, .on_cpu_ns = 1000000,
	  .edges = SPAN_EDGES_SAMPLED },
	{ .name = "idle", .source = "syscall", .kind = 1, .pid = 20, .tid = 21, .start = 7000000, .end = 7500000,
	  .has_counters = true, .trace_id = "fedcba9876543210fedcba9876543210", .span_id = "0000000000000001",
	  .on_cpu_ns = -1, .unfinished = true },
};

static struct spans_table table;

static struct spans_view view = {
	.input = "hand.data", .row = rows, .nr_rows = 3, .nr_samples = 9, .ctr_names = ctr_names, .nr_ctr = 2,
	.ctr_clock = { true, false }, .table_ctr = 2, .offcpu = true, .wakers = true, .any_split = true,
	.has_clock = true, .unix_off = 1000000000000000000ll, .table = &table,
};

static int setup(void **state)
{
	(void)state;
	return spans_table_build(&table, rows, 3, names, 2, 0);
}

static int teardown(void **state)
{
	(void)state;
	spans_table_free(&table);
	return 0;
}

/* What fn prints of the view, in a string the caller frees. */
static char *print(int (*fn)(const struct spans_view *, FILE *), const struct spans_view *v)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(fn(v, f), 0);
	fclose(f);
	return text;
}

static int otlp(const struct spans_view *v, FILE *f)
{
	char err[256] = "";

	return spans_print_otlp(v, f, err, sizeof(err));
}

/* The table's sums: by name, in order of first arrival; the leaves of all a name's spans together. */
static void test_table_sums(void **state)
{
	const struct spans_kind *get = &table.kind[0];

	(void)state;
	assert_int_equal(table.nr_kinds, 2);
	assert_int_equal(get->count, 2);
	assert_int_equal(get->samples, 6);
	assert_int_equal(get->p50, 4000000); /* nearest rank of 2 and 4 ms */
	assert_int_equal(get->max, 4000000);
	assert_int_equal(get->ctr_sum[0], 4000000);
	assert_string_equal(get->blocked_in, "do_read");
	assert_int_equal(get->nr_top, 2);
	assert_string_equal(get->top[1].name, "read"); /* 1 + 2 of its two spans: parse's 3 comes first by name */
	assert_int_equal(get->top[1].n, 3);
	assert_int_equal(get->split.sleep, 2000000);
	/* otel attributes: one group per value, keys in order. */
	assert_int_equal(table.nr_groups, 2);
	assert_int_equal(table.group[0].key_len, 10);
	assert_memory_equal(table.group[0].key, "http.route", 10);
	assert_string_equal(table.group[0].value, "/a");
	assert_string_equal(table.group[1].value, "u1");
}

static void test_text(void **state)
{
	char *out = print(spans_print_table, &view);
	struct spans_view v = view;
	struct spans_table rated;

	(void)state;
	assert_non_null(strstr(out, "# 3 spans of 2 kinds, 9 samples\n"));
	assert_non_null(strstr(out, "task-clock context-switches   off-CPU ms  blocked in"));
	assert_non_null(strstr(out, "  GET                  otel              2      4.000      4.000      4.000        6"
				    "       2.000 ms            0.5     1.000 ms  do_read                   "
				    "[##########..........]  parse 50% read 50%\n"));
	assert_non_null(strstr(out, "  http.route               /a                              1"
				    "      2.000      2.000        2\n"));
	free(out);
	/* annotate's spans: no counter columns; top --spans: rates over its window. */
	v.table_ctr = 0;
	v.window_s = 2;
	v.table = &rated;
	assert_int_equal(spans_table_build(&rated, rows, 3, names, 2, v.window_s), 0);
	out = print(spans_print_table, &v);
	assert_null(strstr(out, "context-switches"));
	assert_non_null(strstr(out, "rate/s"));
	assert_non_null(strstr(out, "  idle                 syscall           1       0.5 "));
	free(out);
	spans_table_free(&rated);
}

static void test_json(void **state)
{
	char *out = print(spans_print_json, &view);
	const char *l2;

	(void)state;
	assert_non_null(out);
	l2 = strchr(out, '\n');
	assert_non_null(l2);
	assert_memory_equal(out,
		"{\"name\":\"GET\",\"source\":\"uprobe\",\"pid\":10,\"tid\":11,\"start_ns\":1000000,\"end_ns\":5000000,"
		"\"duration_ns\":4000000,\"samples\":4,\"counters\":{\"task-clock\":3.000000,\"context-switches\":1},"
		"\"top\":[{\"sym\":\"parse\",\"samples\":3},{\"sym\":\"read\",\"samples\":1}],"
		"\"trace_id\":\"9e3779b97f4a7c15f39cc0605cedc834\",\"span_id\":\"1b873593cc9e2d51\","
		"\"on_cpu_ns\":2000000,\"off_cpu_ns\":2000000,\"runq_ns\":0,\"sleep_ns\":2000000,\"blocked_ns\":0,"
		"\"split\":\"sched_info\",\"off_cpu_top\":[{\"stack\":[\"schedule\",\"do_read\",\"main\"],\"ns\":2000000}],"
		"\"woken_by\":[{\"comm\":\"writer\",\"tid\":12,\"stack\":[\"do_read\",\"main\"],"
		"\"span_id\":\"00000000000000aa\",\"trace_id\":\"0123456789abcdef0123456789abcdef\",\"ns\":2000000}]}\n",
		l2 - out + 1);
	/* The OTel span: its context's ids and attributes; sampled edges. */
	assert_non_null(strstr(l2, "\"trace_id\":\"000102030405060708090a0b0c0d0e0f\",\"span_id\":\"1011121314151617\","
				   "\"attributes\":{\"http.route\":\"/a\",\"user.id\":\"u1\"},\"on_cpu_ns\":1000000,"
				   "\"off_cpu_ns\":0,\"runq_ns\":null"));
	assert_non_null(strstr(l2, "\"edges\":\"sampled\"}\n"));
	assert_non_null(strstr(l2, "\"on_cpu_ns\":null,"));
	assert_non_null(strstr(l2, "\"unfinished\":true}\n"));
	free(out);
}

static void test_otlp(void **state)
{
	char *out = print(otlp, &view);
	struct spans_view v = view;
	char err[256] = "";

	(void)state;
	/* A resource per process, pid 10's with the service it named; times in unix ns. */
	assert_non_null(strstr(out, "{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":\"process.pid\","
				    "\"value\":{\"intValue\":\"10\"}},{\"key\":\"service.name\",\"value\":{\"stringValue\":\"shop\"}}]}"));
	assert_non_null(strstr(out, "{\"traceId\":\"9e3779b97f4a7c15f39cc0605cedc834\",\"spanId\":\"1b873593cc9e2d51\","
				    "\"name\":\"GET\",\"kind\":1,\"startTimeUnixNano\":\"1000000000001000000\""));
	assert_non_null(strstr(out, "{\"key\":\"perf.task_clock_ms\",\"value\":{\"doubleValue\":3.000000}}"));
	assert_non_null(strstr(out, "{\"key\":\"user.id\",\"value\":{\"stringValue\":\"u1\"}}"));
	assert_non_null(strstr(out, "\"process.pid\",\"value\":{\"intValue\":\"20\"}}]}"));
	free(out);
	/* No CLOCK_DATA: one sentence naming the file. */
	v.has_clock = false;
	assert_int_equal(spans_print_otlp(&v, stdout, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "hand.data has no CLOCK_DATA"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_sums),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_otlp),
	};

	return cmocka_run_group_tests_name("spans_view", tests, setup, teardown);
}
