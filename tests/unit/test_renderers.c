// SPDX-License-Identifier: GPL-2.0
/*
 * The renderer contract (report_out.h) over a hand-built profile: what the
 * table, folded stacks, flame graph and pprof say of known stacks, without
 * a recording.  Three threads of two commands:
 *   app 10:  main;work           x3 (3 ms of cpu-clock)
 *   app 10:  main;work;[k] tick  x1 (1 ms)
 *   app 11:  main;work           x1 (1 ms: folds with tid 10's in --folded)
 *   db  20:  [unknown] at 0x1234 x1 (1 ms)
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
#include <zlib.h>

#include "profile_diff.h"
#include "report_out.h"
#include "symbols.h"

enum { F_MAIN, F_WORK, F_TICK, F_UNK };

static struct pfunc funcs[] = {
	[F_MAIN] = { "main", "app", "/usr/bin/app", "", 1, false, 0, 0x1000, 0x1100, false, NULL },
	[F_WORK] = { "work", "app", "/usr/bin/app", "", 1, false, 0, 0x1100, 0x1200, false, NULL },
	[F_TICK] = { "tick", "[kernel.kallsyms]", "[kernel.kallsyms]", "", 0, true, 0, 0xffff0000, 0xffff0100, false, NULL },
	[F_UNK] = { "[unknown]", "[unknown]", "", "", -1, false, 0x1234, 0, 0, false, NULL },
};

/* Leaf first, as the profile keeps them. */
static struct pframe s_work[] = { { F_WORK, 0x1150, NULL }, { F_MAIN, 0x1050, NULL } };
static struct pframe s_tick[] = { { F_TICK, 0xffff0010, NULL }, { F_WORK, 0x1160, NULL }, { F_MAIN, 0x1050, NULL } };
static struct pframe s_unk[] = { { F_UNK, 0x1234, NULL } };

static struct pstack stacks[] = {
	{ 10, 10, "app", 2, s_work, 3, 3000000, {}, NULL },
	{ 10, 10, "app", 3, s_tick, 1, 1000000, {}, NULL },
	{ 10, 11, "app", 2, s_work, 1, 1000000, {}, NULL },
	{ 20, 20, "db", 1, s_unk, 1, 1000000, {}, NULL },
};

static struct profile prof = {
	.funcs = funcs, .nr_funcs = 4, .stacks = stacks, .nr_stacks = 4, .samples = 6, .period = 6000000,
	.callchains = true, .event = "cpu-clock", .event_is_clock = true, .sample_freq = 1000,
	.first_ns = 1000000000, .last_ns = 3000000000,
};

/* What fn wrote to a FILE, as one string the caller frees. */
static char *render(int (*fn)(FILE *, const void *), const void *arg, size_t *len)
{
	struct { char *buf; size_t n; } *m = calloc(1, sizeof(*m));
	FILE *f;
	char *out;

	assert_non_null(m);
	f = open_memstream(&m->buf, &m->n);
	assert_non_null(f);
	assert_int_equal(fn(f, arg), 0);
	assert_int_equal(fclose(f), 0);
	if (len)
		*len = m->n;
	out = m->buf;
	free(m);
	return out;
}

static int do_folded(FILE *f, const void *arg)
{
	(void)arg;
	return report_folded(&prof, f, false);
}

static int do_table(FILE *f, const void *arg)
{
	return report_table(&prof, arg, f);
}

static int do_flame(FILE *f, const void *arg)
{
	return report_flamegraph(&prof, arg, f);
}

static int do_pprof(FILE *f, const void *arg)
{
	(void)arg;
	return report_pprof(&prof, f);
}

/* One line per distinct (comm, stack): threads of one command fold together. */
static void test_folded(void **state)
{
	char *out = render(do_folded, NULL, NULL);

	(void)state;
	assert_string_equal(out, "app;main;work 4\n"
				 "app;main;work;tick 1\n"
				 "db;[unknown] 1\n");
	free(out);
}

/* perf report --stdio's table (rows by period, kernel [k], unknown addresses as perf prints them), and as JSON. */
static void test_table(void **state)
{
	struct table_opts o = {};
	char *out;

	(void)state;
	assert_int_equal(parse_sort_keys("comm,dso,sym", &o), 0);
	out = render(do_table, &o, NULL);
	assert_non_null(strstr(out, "# Samples: 6 of event 'cpu-clock'\n"));
	assert_non_null(strstr(out, "# Event count (approx.): 6000000\n"));
	assert_non_null(strstr(out, "    66.67%          4  app               app                   [.] work\n"
				    "    16.67%          1  app               [kernel.kallsyms]     [k] tick\n"
				    "    16.67%          1  db                [unknown]             [.] 0x0000000000001234\n"));
	free(out);
	o.json = true;
	out = render(do_table, &o, NULL);
	assert_string_equal(out,
		"{\"overhead\":66.6667,\"samples\":4,\"period\":4000000,\"comm\":\"app\",\"dso\":\"app\",\"sym\":\"work\",\"kernel\":false}\n"
		"{\"overhead\":16.6667,\"samples\":1,\"period\":1000000,\"comm\":\"app\",\"dso\":\"[kernel.kallsyms]\",\"sym\":\"tick\",\"kernel\":true}\n"
		"{\"overhead\":16.6667,\"samples\":1,\"period\":1000000,\"comm\":\"db\",\"dso\":\"[unknown]\",\"sym\":\"0x0000000000001234\",\"kernel\":false}\n");
	free(out);
	/* --percent-limit leaves the small rows out of the text. */
	o.json = false;
	o.min_pct = 20;
	out = render(do_table, &o, NULL);
	assert_non_null(strstr(out, "[.] work\n"));
	assert_null(strstr(out, "tick"));
	free(out);
}

/*
 * A second recording for diff, its own copies of the names (pairing is by
 * text): app's main;work x2 (2 ms), and main;idle x2, new; tick and db gone.
 */
static struct pfunc funcs2[] = {
	{ "main", "app", "/usr/bin/app", "", 1, false, 0, 0x2000, 0x2100, false, NULL },
	{ "work", "app", "/usr/bin/app", "", 1, false, 0, 0x2100, 0x2200, false, NULL },
	{ "idle", "app", "/usr/bin/app", "", 1, false, 0, 0x2200, 0x2300, false, NULL },
};
static struct pframe s2_work[] = { { 1, 0x2150, NULL }, { 0, 0x2050, NULL } };
static struct pframe s2_idle[] = { { 2, 0x2250, NULL }, { 0, 0x2050, NULL } };
static struct pstack stacks2[] = {
	{ .pid = 30, .tid = 30, .comm = "app", .nr = 2, .frames = s2_work, .count = 2, .period = 2000000 },
	{ .pid = 30, .tid = 30, .comm = "app", .nr = 2, .frames = s2_idle, .count = 2, .period = 2000000 },
};
static struct profile prof2 = {
	.funcs = funcs2, .nr_funcs = 3, .stacks = stacks2, .nr_stacks = 2, .samples = 4, .period = 4000000,
	.callchains = true, .event = "cpu-clock", .event_is_clock = true, .sample_freq = 1000,
};

static int do_folded_diff(FILE *f, const void *arg)
{
	(void)arg;
	return report_folded_diff(&prof, &prof2, f);
}

static int do_diff(FILE *f, const void *arg)
{
	struct profile_diff d;
	int e = profile_diff__build(&d, &prof, &prof2, arg);

	e = e ?: profile_diff__print(&d, f);
	profile_diff__free(&d);
	return e;
}

/* Both files' stacks with both counts; perf diff's table and its JSON rows, by shares. */
static void test_diff(void **state)
{
	struct table_opts o = {};
	char *out = render(do_folded_diff, NULL, NULL);

	(void)state;
	assert_string_equal(out, "app;main;idle 0 2\n"
				 "app;main;work 4 2\n"
				 "app;main;work;tick 1 0\n"
				 "db;[unknown] 1 0\n");
	free(out);
	assert_int_equal(parse_sort_keys("dso,sym", &o), 0);
	out = render(do_diff, &o, NULL);
	/* idle grew most (only in NEW), work's share fell; tick and the unknown address are gone, last. */
	assert_string_equal(out, "# Event 'cpu-clock'\n#\n"
				 "# Baseline  Delta Abs  Shared Object      Symbol                \n"
				 "# ........  .........  .................  ......................\n#\n"
				 "              +50.00%  app                [.] idle\n"
				 "    66.67%    -16.67%  app                [.] work\n"
				 "    16.67%             [kernel.kallsyms]  [k] tick\n"
				 "    16.67%             [unknown]          [.] 0x0000000000001234\n");
	free(out);
	o.json = true;
	o.min_pct = 20;
	out = render(do_diff, &o, NULL);
	assert_string_equal(out,
		"{\"baseline\":null,\"new\":50.0000,\"delta\":50.0000,\"baseline_samples\":0,\"new_samples\":2,"
		"\"baseline_period\":0,\"new_period\":2000000,\"dso\":\"app\",\"sym\":\"idle\",\"kernel\":false}\n"
		"{\"baseline\":66.6667,\"new\":50.0000,\"delta\":-16.6667,\"baseline_samples\":4,\"new_samples\":2,"
		"\"baseline_period\":4000000,\"new_period\":2000000,\"dso\":\"app\",\"sym\":\"work\",\"kernel\":false}\n");
	free(out);
}

static int count_of(const char *s, const char *what)
{
	int n = 0;

	for (; (s = strstr(s, what)); s += strlen(what))
		n++;
	return n;
}

/* One box per (frame, path from the root), each titled with its samples and share; the title escaped. */
static void test_flamegraph(void **state)
{
	char *out = render(do_flame, "a <b> & c", NULL);

	(void)state;
	assert_memory_equal(out, "<?xml", 5);
	assert_non_null(strstr(out, "a &lt;b&gt; &amp; c"));
	assert_null(strstr(out, "<b>"));
	assert_int_equal(count_of(out, "<g class=\"f\""), 6);
	assert_non_null(strstr(out, "<title>app &#8212; 5 samples, 83.33%</title>"));
	assert_non_null(strstr(out, "<title>main (app) &#8212; 5 samples, 83.33%</title>"));
	assert_non_null(strstr(out, "<title>work (app) &#8212; 5 samples, 83.33%</title>"));
	assert_non_null(strstr(out, "<title>tick [kernel] &#8212; 1 samples, 16.67%</title>"));
	assert_non_null(strstr(out, "<title>db &#8212; 1 samples, 16.67%</title>"));
	assert_non_null(strstr(out, "<title>[unknown] ([unknown]) &#8212; 1 samples, 16.67%</title>"));
	assert_non_null(strstr(out, "</svg>\n"));
	free(out);
}

/*
 * A comm is any bytes: what is not UTF-8, and U+FFFE (no XML character),
 * is U+FFFD in the SVG, or a browser shows a parse error instead of it.
 */
static void test_flamegraph_not_utf8(void **state)
{
	const char *comm = stacks[3].comm;
	char *out;

	(void)state;
	stacks[3].comm = "db\xff\xc0\xaf\xed\xa0\x80\xef\xbf\xbe\xc3\xa9<";
	out = render(do_flame, "t\xfe", NULL);
	stacks[3].comm = comm;
	assert_non_null(strstr(out, "<title>db\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
				    "\xef\xbf\xbd\xc3\xa9&lt; &#8212; 1 samples"));
	assert_non_null(strstr(out, ">t\xef\xbf\xbd</text>"));
	assert_null(strchr(out, 0xff));
	assert_null(strchr(out, 0xfe));
	free(out);
}

/* The protobuf's top-level fields, as far as the test needs them. */
struct pb {
	int samples, mappings, locations, functions;
	__u64 count_sum, ns_sum;
	char strings[64][64];
	int nr_strings;
};

static __u64 get_varint(const unsigned char **p, const unsigned char *end)
{
	__u64 v = 0;
	int shift = 0;

	while (*p < end) {
		unsigned char c = *(*p)++;

		v |= (__u64)(c & 0x7f) << shift;
		if (!(c & 0x80))
			break;
		shift += 7;
	}
	return v;
}

/* A Sample's values (field 2, packed): samples count, cpu ns. */
static void sample_values(struct pb *pb, const unsigned char *p, const unsigned char *end)
{
	while (p < end) {
		__u64 key = get_varint(&p, end), len;

		if ((key & 7) == 0) {
			get_varint(&p, end);
			continue;
		}
		len = get_varint(&p, end);
		if (key >> 3 == 2) {
			const unsigned char *v = p;

			pb->count_sum += get_varint(&v, p + len);
			pb->ns_sum += get_varint(&v, p + len);
		}
		p += len;
	}
}

static void decode(struct pb *pb, const unsigned char *p, const unsigned char *end)
{
	while (p < end) {
		__u64 key = get_varint(&p, end), len;

		if ((key & 7) == 0) {
			get_varint(&p, end);
			continue;
		}
		assert_int_equal(key & 7, 2);
		len = get_varint(&p, end);
		assert_true(len <= (__u64)(end - p));
		switch (key >> 3) {
		case 2:
			pb->samples++;
			sample_values(pb, p, p + len);
			break;
		case 3:
			pb->mappings++;
			break;
		case 4:
			pb->locations++;
			break;
		case 5:
			pb->functions++;
			break;
		case 6:
			assert_true(pb->nr_strings < 64 && len < 64);
			memcpy(pb->strings[pb->nr_strings++], p, len);
			break;
		}
		p += len;
	}
}

static bool has_string(const struct pb *pb, const char *s)
{
	for (int i = 0; i < pb->nr_strings; i++)
		if (!strcmp(pb->strings[i], s))
			return true;
	return false;
}

/* Gzipped, one Sample per stack with its count and nanoseconds, one Location and Function per function. */
static void test_pprof(void **state)
{
	static const char *const names[] = { "samples", "count", "cpu", "nanoseconds", "thread", "tid", "pid", "app",
					     "db", "main", "work", "tick", "/usr/bin/app", "cpu-clock" };
	static unsigned char raw[1 << 16];
	struct pb pb = {};
	z_stream z = {};
	size_t n;
	char *out = render(do_pprof, NULL, &n);

	(void)state;
	assert_true(n > 2 && (unsigned char)out[0] == 0x1f && (unsigned char)out[1] == 0x8b);
	assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
	z.next_in = (unsigned char *)out;
	z.avail_in = n;
	z.next_out = raw;
	z.avail_out = sizeof(raw);
	assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
	decode(&pb, raw, raw + z.total_out);
	inflateEnd(&z);
	assert_int_equal(pb.samples, 4);
	assert_int_equal(pb.locations, 4);
	assert_int_equal(pb.functions, 4);
	assert_int_equal(pb.mappings, 1); /* the symbolizer's one dso, the kernel */
	assert_int_equal(pb.count_sum, 6);
	assert_int_equal(pb.ns_sum, 6000000);
	assert_string_equal(pb.strings[0], "");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_true(has_string(&pb, names[i]));
	free(out);
}

/*
 * Inlined frames (profile_opts.inline_frames): "mix" inlined into work at
 * 0x1150 is a frame of its own before work, with its source line.
 */
enum { I_MAIN, I_WORK, I_MIX };

static struct pfunc ifuncs[] = {
	[I_MAIN] = { "main", "app", "/usr/bin/app", "", 1, false, 0, 0x1000, 0x1100, false, NULL },
	[I_WORK] = { "work", "app", "/usr/bin/app", "", 1, false, 0, 0x1100, 0x1200, false, NULL },
	[I_MIX] = { "mix", "app", "/usr/bin/app", "", 1, false, 0, 0x1100, 0x1200, true, "mix (inlined)" },
};
static struct pframe i_frames[] = { { I_MIX, 0x1150, "app.c:3" }, { I_WORK, 0x1150, "app.c:9" },
				     { I_MAIN, 0x1050, "app.c:20" } };
static struct pstack i_stacks[] = { { 10, 10, "app", 3, i_frames, 2, 2000000, {}, NULL, NULL, 0, NULL } };
static struct profile iprof = {
	.funcs = ifuncs, .nr_funcs = 3, .stacks = i_stacks, .nr_stacks = 1, .samples = 2, .period = 2000000,
	.callchains = true, .event = "cpu-clock", .event_is_clock = true, .sample_freq = 1000,
};

static int do_ifolded(FILE *f, const void *arg)
{
	(void)arg;
	return report_folded(&iprof, f, false);
}

static int do_itable(FILE *f, const void *arg)
{
	return report_table(&iprof, arg, f);
}

/* Folded stacks name it as perf script does; the sym column is the real function, srcline the address's line. */
static void test_inlined(void **state)
{
	struct table_opts o = {};
	char *out = render(do_ifolded, NULL, NULL);

	(void)state;
	assert_string_equal(out, "app;main;work;mix (inlined) 2\n");
	free(out);
	assert_int_equal(parse_sort_keys("sym,srcline", &o), 0);
	o.callgraph = true;
	out = render(do_itable, &o, NULL);
	assert_non_null(strstr(out, "[.] work  app.c:3"));
	assert_non_null(strstr(out, "--100.00%--mix (inlined)\n"));
	assert_non_null(strstr(out, "work\n"));
	free(out);
	o.json = true;
	o.callgraph = false;
	out = render(do_itable, &o, NULL);
	assert_string_equal(out, "{\"overhead\":100.0000,\"samples\":2,\"period\":2000000,\"sym\":\"work\","
				 "\"kernel\":false,\"srcline\":\"app.c:3\"}\n");
	free(out);
}

static int setup(void **state)
{
	(void)state;
	prof.sym = symbolizer__new(NULL, &(struct symbolizer_opts){ .root = "/nonexistent" });
	return prof.sym ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	symbolizer__free(prof.sym);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_folded),
		cmocka_unit_test(test_diff),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_flamegraph),
		cmocka_unit_test(test_flamegraph_not_utf8),
		cmocka_unit_test(test_pprof),
		cmocka_unit_test(test_inlined),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
