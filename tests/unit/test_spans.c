// SPDX-License-Identifier: GPL-2.0
/* Span specs, the external-spans parser and the join, on their own. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "correlate.h"
#include "otel_join.h"
#include "span_sources.h"
#include "spans_jsonl.h"

static struct span_spec ok(const char *s)
{
	struct span_spec sp;
	char err[256] = "";

	if (span_spec_parse(s, &sp, err, sizeof(err)))
		fail_msg("'%s' did not parse: %s", s, err);
	return sp;
}

static void bad(const char *s, const char *needle)
{
	struct span_spec sp;
	char err[256] = "";

	assert_int_not_equal(span_spec_parse(s, &sp, err, sizeof(err)), 0);
	if (!strstr(err, needle) || !strstr(err, s))
		fail_msg("error for '%s' was '%s'", s, err);
}

static void test_specs(void **state)
{
	struct span_spec sp;

	(void)state;
	sp = ok("kprobe:vfs_read");
	assert_int_equal(sp.kind, SPAN_KPROBE);
	assert_int_equal(sp.kmode, KMODE_AUTO);
	assert_string_equal(sp.func, "vfs_read");
	assert_string_equal(sp.name, "vfs_read");
	assert_int_equal(ok("kprobe:vfs_read@fentry").kmode, KMODE_FENTRY);
	assert_int_equal(ok("kprobe:vfs_read@kprobe").kmode, KMODE_KPROBE);
	assert_int_equal(ok("kprobe:do_sys_open.isra.0@auto").kmode, KMODE_AUTO);
	sp = ok("uprobe:libc.so.6:malloc");
	assert_int_equal(sp.kind, SPAN_UPROBE);
	assert_string_equal(sp.path, "libc.so.6");
	assert_string_equal(sp.func, "malloc");
	sp = ok("uprobe:/opt/app/bin:ns::Class::method");
	assert_string_equal(sp.path, "/opt/app/bin");
	assert_string_equal(sp.func, "ns::Class::method");
	/* C++ names as report prints them. */
	assert_string_equal(ok("uprobe:/bin/x:maxof<int>").func, "maxof<int>");
	assert_string_equal(ok("uprobe:/bin/x:(anonymous namespace)::hidden").func, "(anonymous namespace)::hidden");
	assert_string_equal(ok("uprobe:/bin/x:main::$_0::operator()").name, "main::$_0::operator()");
	sp = ok("syscall:read");
	assert_int_equal(sp.kind, SPAN_SYSCALL);
	assert_string_equal(sp.ev[0], "sys_enter_read");
	assert_string_equal(sp.ev[1], "sys_exit_read");
	assert_string_equal(sp.cat[1], "syscalls");
	sp = ok("tracepoint:sched:sched_waking,sched:sched_switch");
	assert_int_equal(sp.kind, SPAN_TRACEPOINT);
	assert_string_equal(sp.cat[0], "sched");
	assert_string_equal(sp.ev[1], "sched_switch");
	assert_string_equal(sp.name, "sched_waking");
	bad("nope:x", "unknown source");
	bad("kprobe:", "kernel function");
	bad("kprobe:vfs_read@maybe", "@maybe");
	bad("kprobe:a b", "kernel function");
	bad("uprobe:/bin/x", "uprobe:PATH:FUNC");
	bad("uprobe::f", "uprobe:PATH:FUNC");
	bad("uprobe:/bin/x:", "uprobe:PATH:FUNC");
	bad("uprobe:/bin/x:a\tb", "not a function name");
	bad("uprobe:/bin/x: f", "not a function name");
	bad("syscall:", "syscall name");
	bad("syscall:../x", "syscall name");
	bad("tracepoint:a:b", "tracepoint:CAT:BEGIN,CAT:END");
	bad("tracepoint:a:b,c", "tracepoint:CAT:BEGIN,CAT:END");
	bad("tracepoint:a/..:b,c:d", "tracepoint:CAT:BEGIN,CAT:END");
}

static void test_jsonl(void **state)
{
	const char *good = "{\"tid\": 5, \"start_ns\": 100, \"end_ns\": 200, \"name\": \"req\\\"1\", "
			   "\"trace_id\": \"abc\", \"span_id\": 7, \"extra\": {\"a\": [1, 2, {\"b\": null}]}}\n"
			   "\n"
			   "{\"pid\":1,\"tid\":6,\"start_ns\":0,\"end_ns\":0}\n";
	struct ext_span *v;
	size_t n;
	char err[256];

	(void)state;
	assert_int_equal(ext_spans_parse(good, strlen(good), "f.jsonl", &v, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_int_equal(v[0].tid, 5);
	assert_int_equal(v[0].start, 100);
	assert_string_equal(v[0].name, "req\"1");
	assert_string_equal(v[0].trace_id, "\"abc\"");
	assert_string_equal(v[0].span_id, "7");
	assert_false(v[0].has_pid);
	assert_true(v[1].has_pid);
	assert_string_equal(v[1].name, "span");
	ext_spans_free(v, n);
	static const struct {
		const char *text, *needle;
	} cases[] = {
		{ "{\"tid\":1,\"start_ns\":5}\n", "f.jsonl:1: not a span: it lacks tid, start_ns or end_ns" },
		{ "\n\n[1]\n", "f.jsonl:3: not a span: it is not a JSON object" },
		{ "{\"tid\":-1,\"start_ns\":1,\"end_ns\":2}", "non-negative integers" },
		{ "{\"tid\":1,\"start_ns\":2,\"end_ns\":1}", "end_ns is before start_ns" },
		{ "{\"tid\":1,\"start_ns\":1.5,\"end_ns\":2}", "integers" },
		{ "{\"tid\":1,\"start_ns\":1,\"end_ns\":2", "not closed" },
		{ "{\"tid\":1,\"start_ns\":1,\"end_ns\":2} x", "text after the object" },
		{ "{\"tid\":1 \"start_ns\":1}", "not separated" },
		{ "{\"tid\":99999999999,\"start_ns\":1,\"end_ns\":2}", "out of range" },
		{ "{\"tid\":1,\"start_ns\":99999999999999999999999,\"end_ns\":2}", "integers" },
		{ "{\"name\":\"\\x\",\"tid\":1,\"start_ns\":1,\"end_ns\":2}", "name must be a string" },
		{ "", "holds no spans" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = 0;
		assert_int_equal(ext_spans_parse(cases[i].text, strlen(cases[i].text), "f.jsonl", &v, &n, err,
						 sizeof(err)), -EINVAL);
		if (!strstr(err, cases[i].needle))
			fail_msg("case %zu: '%s' lacks '%s'", i, err, cases[i].needle);
		assert_null(v);
	}
}

static void test_join(void **state)
{
	struct corr_sample s[] = {
		{ 2, 0, 150 }, { 1, 1, 100 }, { 1, 2, 200 }, { 1, 3, 300 }, { 2, 4, 100 }, { 1, 5, 250 },
	};
	struct corr_span sp[] = {
		{ .tid = 1, .start = 100, .end = 200 }, /* inclusive at both ends: 100, 200 */
		{ .tid = 1, .start = 150, .end = 260 }, /* nested/overlapping spans share samples: 200, 250 */
		{ .tid = 2, .start = 0, .end = 1000 },	/* other thread: 100, 150 */
		{ .tid = 3, .start = 0, .end = 1000 },	/* no samples */
		{ .tid = 1, .start = 301, .end = 400 }, /* after the last */
		{ .tid = 1, .start = 0, .end = 99 },	/* before the first */
	};

	(void)state;
	correlate(s, 6, sp, 6);
	assert_int_equal(sp[0].count, 2);
	assert_int_equal(s[sp[0].first].time, 100);
	assert_int_equal(s[sp[0].first + 1].time, 200);
	assert_int_equal(sp[1].count, 2);
	assert_int_equal(s[sp[1].first].time, 200);
	assert_int_equal(s[sp[1].first].idx, 2);
	assert_int_equal(sp[2].count, 2);
	assert_int_equal(s[sp[2].first].tid, 2);
	assert_int_equal(sp[3].count, 0);
	assert_int_equal(sp[4].count, 0);
	assert_int_equal(sp[5].count, 0);
}

static void test_join_scales(void **state)
{
	/* 200k samples and spans over 100 threads: the sweep stays sub-quadratic. */
	size_t n = 200000;
	struct corr_sample *s = malloc(n * sizeof(*s));
	struct corr_span *sp = malloc(n * sizeof(*sp));
	size_t total = 0;

	(void)state;
	for (size_t i = 0; i < n; i++) {
		s[i] = (struct corr_sample){ (__u32)(i % 100), (__u32)i, (__u64)(i / 100) * 10 };
		sp[i] = (struct corr_span){ .tid = (__u32)(i % 100), .start = (i / 100) * 10, .end = (i / 100) * 10 + 5 };
	}
	correlate(s, n, sp, n);
	for (size_t i = 0; i < n; i++)
		total += sp[i].count;
	assert_int_equal(total, n); /* each span holds exactly its own sample */
	free(s);
	free(sp);
}

/* --span-prefix: nested spans chain outermost first, a sample in none is [no span], ties fold. */
static void test_prefix_chain(void **state)
{
	struct otel_join *j = otel_join__new();
	struct otel_fold *f;
	size_t n;

	(void)state;
	assert_non_null(j);
	/* Given inner first, on purpose: the join orders them. */
	assert_int_equal(otel_join__add_prefix_span(j, 7, 20, 30, "span:inner:2"), 0);
	assert_int_equal(otel_join__add_prefix_span(j, 7, 10, 50, "span:outer:1"), 0);
	assert_int_equal(otel_join__add_prefix_span(j, 8, 10, 50, "span:other:3"), 0);
	assert_int_equal(otel_join__add_sample(j, 7, 5, 0, 1), 0);  /* before: none */
	assert_int_equal(otel_join__add_sample(j, 7, 15, 0, 1), 0); /* outer only */
	assert_int_equal(otel_join__add_sample(j, 7, 20, 0, 1), 0); /* both, start inclusive */
	assert_int_equal(otel_join__add_sample(j, 7, 30, 0, 1), 0); /* both, end inclusive */
	assert_int_equal(otel_join__add_sample(j, 7, 31, 1, 1), 0); /* outer only, another stack */
	assert_true(otel_join__has_prefixes(j));
	assert_false(otel_join__has_spans(j));
	assert_int_equal(otel_join__fold(j, &f, &n), 0);
	assert_int_equal(n, 4);
	for (size_t i = 0; i < n; i++) {
		const char *want = f[i].stack == 1 ? "span:outer:1"
				   : f[i].count == 2 ? "span:outer:1;span:inner:2"
				   : !strcmp(f[i].prefix, SPAN_PREFIX_NONE) ? SPAN_PREFIX_NONE : "span:outer:1";

		assert_string_equal(f[i].prefix, want);
		assert_null(f[i].ids.span_id);
	}
	free(f);
	otel_join__free(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_specs),
		cmocka_unit_test(test_jsonl),
		cmocka_unit_test(test_join),
		cmocka_unit_test(test_join_scales),
		cmocka_unit_test(test_prefix_chain),
	};

	return cmocka_run_group_tests_name("spans", tests, NULL, NULL);
}
