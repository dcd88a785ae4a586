// SPDX-License-Identifier: GPL-2.0
/*
 * Python frames in a perf.data: the slot addresses both sides compute, the
 * spanperf-python record (written into a 0xff-filled buffer that must hold
 * exactly its size, parsed back), the names as CPython's perf map writes
 * them, and the line runs report reads.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "perf_sample.h"
#include "py_names.h"
#include "sbuf.h"

static void test_addresses(void **state)
{
	__u64 slot = 0x600000001000;

	(void)state;
	/* Two bytes a code unit, one unit for "not started", one for an index the walk could not place. */
	assert_int_equal(py_slot_size(0), 16);
	assert_int_equal(py_slot_size(6), 16);
	assert_int_equal(py_slot_size(7), 32);
	assert_int_equal(py_slot_size(100), 208);
	for (__s64 idx = -1; idx < 100; idx++) {
		__u64 a = py_frame_addr(slot, 100, idx);

		assert_true(a & 1);
		assert_true(a > slot && a < slot + py_slot_size(100));
		assert_int_equal(py_frame_index(slot, a), idx);
		assert_int_equal(py_frame_index(slot, a - 1), idx); /* an unwinder's return address - 1 */
	}
	/* Out of range: the last unit, whose line is unknown. */
	assert_int_equal(py_frame_addr(slot, 100, 100), py_frame_addr(slot, 100, 5000));
	assert_int_equal(py_frame_addr(slot, 100, -7), slot + 2 * 101 + 1);
	assert_true(py_frame_addr(slot, 100, -7) < slot + py_slot_size(100));
}

static void test_runs(void **state)
{
	struct sbuf b = {};
	struct py_runs r;

	(void)state;
	py_runs_init(&r, &b, 10, 1000);
	py_runs_add(&r, 2, 10, false);
	py_runs_add(&r, 3, 10, false); /* merged */
	py_runs_add(&r, 1, -1, true);
	py_runs_add(&r, 4, 7, false); /* back up */
	py_runs_add(&r, 1, 300000, false);
	assert_int_equal(py_runs_end(&r), 0);
	assert_int_equal(py_runs_line((__u8 *)b.p, b.len, 10, -1), 10);
	for (int i = 0; i < 5; i++)
		assert_int_equal(py_runs_line((__u8 *)b.p, b.len, 10, i), 10);
	assert_int_equal(py_runs_line((__u8 *)b.p, b.len, 10, 5), -1);
	for (int i = 6; i < 10; i++)
		assert_int_equal(py_runs_line((__u8 *)b.p, b.len, 10, i), 7);
	assert_int_equal(py_runs_line((__u8 *)b.p, b.len, 10, 10), 300000);
	assert_int_equal(py_runs_line((__u8 *)b.p, b.len, 10, 11), -1);
	assert_int_equal(py_runs_line((__u8 *)b.p, b.len, 10, -2), -1);
	/* Runs that ran out of room: the first ones stay right, the rest has no line. */
	sbuf_free(&b);
	py_runs_init(&r, &b, 1, 4);
	for (int i = 0; i < 10; i++)
		py_runs_add(&r, 1, 1 + i * 100, false);
	assert_int_equal(py_runs_end(&r), 0);
	assert_true(r.cut);
	assert_true(b.len <= 4);
	assert_int_equal(py_runs_line((__u8 *)b.p, b.len, 1, 0), 1);
	assert_int_equal(py_runs_line((__u8 *)b.p, b.len, 1, 9), -1);
	sbuf_free(&b);
	/* Malformed: a varint cut short, a run of no units. */
	{
		const __u8 cut[] = { 0x84 };
		const __u8 zero[] = { 0x00, 0x02, 0x02, 0x02 };

		assert_int_equal(py_runs_line(cut, sizeof(cut), 1, 0), -1);
		assert_int_equal(py_runs_line(zero, sizeof(zero), 1, 0), -1);
		assert_int_equal(py_runs_line(NULL, 0, 1, 0), -1);
	}
}

static void test_name(void **state)
{
	char buf[PY_NAME_BUF], small[12];

	(void)state;
	assert_string_equal(py_names_name("Service.handle", 14, "/srv/app.py", 11, buf, sizeof(buf)),
			    "py::Service.handle:/srv/app.py");
	assert_string_equal(py_names_name("<module>", 8, "<frozen importlib._bootstrap>", 29, buf, sizeof(buf)),
			    "py::<module>:<frozen importlib._bootstrap>");
	/* A NUL inside would end the symbol: U+FFFD. */
	assert_string_equal(py_names_name("a\0b", 3, "f", 1, buf, sizeof(buf)), "py::a\xef\xbf\xbd" "b:f");
	/* Cut to fit, never inside a UTF-8 sequence: 11 bytes and the NUL fill small; in 9, the second é is split. */
	assert_string_equal(py_names_name("m\xc3\xa9\xc3\xa9\xc3\xa9", 7, "x", 1, small, sizeof(small)),
			    "py::m\xc3\xa9\xc3\xa9\xc3\xa9");
	assert_string_equal(py_names_name("m\xc3\xa9\xc3\xa9\xc3\xa9", 7, "x", 1, small, 9), "py::m\xc3\xa9");
}

static struct py_names_rec sample_rec(void)
{
	static const __u8 lines[] = { 0x0a, 0x02, 0x03 };

	return (struct py_names_rec){
		.pid = 4242, .flags = 0, .slot = 0x600000002000, .code = 0x7f0012345678, .size = 208,
		.ncodeunits = 100, .firstlineno = 12, .qualname = "gen.<locals>.keyfn", .qualname_len = 18,
		.filename = "/tmp/\xc3\xbcn\xc3\xaf.py", .filename_len = 11, .lines = lines, .lines_len = sizeof(lines),
	};
}

static void test_record(void **state)
{
	struct py_names_rec r = sample_rec(), back;
	struct perf_event_attr attr;
	struct pd_sample s;
	struct sbuf b = {};
	__u8 *buf;

	(void)state;
	py_names_attr(&attr);
	assert_int_equal(py_names_rec_write(&b, &attr, PY_NAMES_ID, 777, &r), 0);
	/* The record is exactly its computed size: parse it from a copy in a 0xff-filled buffer. */
	buf = malloc(b.len + 64);
	memset(buf, 0xff, b.len + 64);
	memcpy(buf, b.p, b.len);
	assert_int_equal(((struct perf_event_header *)buf)->size, b.len);
	assert_int_equal(b.len % 8, 0);
	assert_int_equal(pd_sample_parse(&attr, buf, b.len, &s), 0);
	assert_int_equal(s.id, PY_NAMES_ID);
	assert_int_equal(s.pid, 4242);
	assert_int_equal(s.tid, 4242);
	assert_int_equal(s.time, 777);
	assert_int_equal(s.ip, r.slot);
	assert_int_equal(py_names_rec_decode(s.raw, s.raw_size, &back), 0);
	assert_int_equal(back.pid, r.pid);
	assert_int_equal(back.slot, r.slot);
	assert_int_equal(back.code, r.code);
	assert_int_equal(back.size, r.size);
	assert_int_equal(back.ncodeunits, r.ncodeunits);
	assert_int_equal(back.firstlineno, r.firstlineno);
	assert_int_equal(back.flags, 0);
	assert_int_equal(back.qualname_len, r.qualname_len);
	assert_memory_equal(back.qualname, r.qualname, r.qualname_len);
	assert_int_equal(back.filename_len, r.filename_len);
	assert_memory_equal(back.filename, r.filename, r.filename_len);
	assert_int_equal(back.lines_len, r.lines_len);
	assert_memory_equal(back.lines, r.lines, r.lines_len);
	/* Every shorter RAW is refused, never read past. */
	for (__u32 n = 0; n < 56 + 18 + 11 + 3; n++)
		assert_int_equal(py_names_rec_decode(s.raw, n, &back), -EINVAL);
	free(buf);
	sbuf_free(&b);
}

/* Strings past the cap and runs past a record's room are cut, and the flags say so. */
static void test_record_cut(void **state)
{
	struct py_names_rec r = sample_rec(), back;
	struct perf_event_attr attr;
	struct pd_sample s;
	struct sbuf b = {}, runs = {};
	struct py_runs pr;
	char *q = malloc(3000);

	(void)state;
	memset(q, 'q', 3000);
	q[PY_NAMES_STR_MAX - 1] = '\xc3'; /* a sequence the cap would split goes whole */
	q[PY_NAMES_STR_MAX] = '\xa9';
	py_runs_init(&pr, &runs, 1, 1 << 20);
	for (int i = 0; i < 40000; i++)
		py_runs_add(&pr, 1, 1 + (i % 2) * 1000, false);
	assert_int_equal(py_runs_end(&pr), 0);
	assert_true(runs.len > 65536);
	r.qualname = q;
	r.qualname_len = 3000;
	r.lines = (__u8 *)runs.p;
	r.lines_len = runs.len;
	r.ncodeunits = 40000;
	py_names_attr(&attr);
	assert_int_equal(py_names_rec_write(&b, &attr, PY_NAMES_ID, 1, &r), 0);
	assert_true(b.len <= 65535);
	assert_int_equal(pd_sample_parse(&attr, b.p, b.len, &s), 0);
	assert_int_equal(py_names_rec_decode(s.raw, s.raw_size, &back), 0);
	assert_int_equal(back.flags, PY_NAMES_NAME_CUT | PY_NAMES_LINES_CUT);
	assert_int_equal(back.qualname_len, PY_NAMES_STR_MAX - 1);
	/* The runs kept are whole and right; the later units have no line. */
	assert_int_equal(py_runs_line(back.lines, back.lines_len, 1, 0), 1);
	assert_int_equal(py_runs_line(back.lines, back.lines_len, 1, 1), 1001);
	assert_int_equal(py_runs_line(back.lines, back.lines_len, 1, 39999), -1);
	free(q);
	sbuf_free(&b);
	sbuf_free(&runs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addresses),
		cmocka_unit_test(test_runs),
		cmocka_unit_test(test_name),
		cmocka_unit_test(test_record),
		cmocka_unit_test(test_record_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
