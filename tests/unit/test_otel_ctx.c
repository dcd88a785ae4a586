// SPDX-License-Identifier: GPL-2.0
/*
 * The writer (include/otel_thread_ctx.h) and the reader's record parser
 * agree on the OTEP 4947 layout, and the parser refuses records that lie.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#define OTEL_THREAD_CTX_DEFINE
#include "../../include/otel_thread_ctx.h"
#include "otel_ctx.h"

static const uint8_t trace[16] = { 0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
				   0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36 };
static const uint8_t span[8] = { 0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7 };

static void test_writer_reader_round_trip(void **state)
{
	struct otel_thread_ctx_record r;
	struct otel_ctx c;
	struct otel_ctx_attr a;
	size_t pos = 0;

	(void)state;
	otel_thread_ctx_record_init(&r, trace, span, 1);
	assert_int_equal(otel_thread_ctx_record_add_attr(&r, 3, "GET /", 5), 0);
	assert_int_equal(otel_thread_ctx_record_add_attr(&r, 0, "", 0), 0);
	assert_int_equal(otel_ctx_parse(&r, sizeof(r), &c), 0);
	assert_memory_equal(c.trace_id, trace, 16);
	assert_memory_equal(c.span_id, span, 8);
	assert_int_equal(c.trace_flags, 1);
	assert_int_equal(c.attrs_size, 2 + 5 + 2);
	assert_int_equal(otel_ctx_next_attr(&c, &pos, &a), 1);
	assert_int_equal(a.key_index, 3);
	assert_int_equal(a.len, 5);
	assert_memory_equal(a.val, "GET /", 5);
	assert_int_equal(otel_ctx_next_attr(&c, &pos, &a), 1);
	assert_int_equal(a.len, 0);
	assert_int_equal(otel_ctx_next_attr(&c, &pos, &a), 0);
}

static void test_writer_full_record_and_swap(void **state)
{
	struct otel_thread_ctx_record r, *prev;
	char big[255] = { 0 };
	int n = 0;

	(void)state;
	otel_thread_ctx_record_init(&r, trace, span, 0);
	while (!otel_thread_ctx_record_add_attr(&r, 1, big, sizeof(big)))
		n++;
	/* 612 bytes of attributes hold two of 257; the record stays valid and whole. */
	assert_int_equal(n, 2);
	assert_int_equal(r.valid, 1);
	assert_int_equal(otel_thread_ctx_record_add_attr(&r, 1, big, 256), -1);
	assert_null(otel_thread_ctx_v1);
	prev = otel_thread_ctx_swap(&r);
	assert_null(prev);
	assert_ptr_equal(otel_thread_ctx_v1, &r);
	otel_thread_ctx_enter(trace, span, 1);
	assert_ptr_not_equal(otel_thread_ctx_v1, &r);
	assert_int_equal(otel_thread_ctx_v1->valid, 1);
	otel_thread_ctx_leave();
	assert_null(otel_thread_ctx_v1);
}

static void test_parser_refuses_lies(void **state)
{
	struct otel_thread_ctx_record r;
	struct otel_ctx c;

	(void)state;
	otel_thread_ctx_record_init(&r, trace, span, 1);
	assert_int_equal(otel_ctx_parse(&r, 27, &c), -EINVAL);
	/* The size field claims more than was copied, or than the OTEP allows. */
	r.attrs_data_size = 100;
	assert_int_equal(otel_ctx_parse(&r, 28 + 50, &c), -EINVAL);
	r.attrs_data_size = 700;
	assert_int_equal(otel_ctx_parse(&r, sizeof(r), &c), -EINVAL);
	/* An attribute running past the declared size. */
	r.attrs_data_size = 4;
	r.attrs[0] = 1;
	r.attrs[1] = 3;
	assert_int_equal(otel_ctx_parse(&r, sizeof(r), &c), -EINVAL);
	/* Mid-update. */
	r.attrs_data_size = 0;
	r.valid = 0;
	assert_int_equal(otel_ctx_parse(&r, sizeof(r), &c), -EAGAIN);
	r.valid = 2;
	assert_int_equal(otel_ctx_parse(&r, sizeof(r), &c), -EAGAIN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writer_reader_round_trip),
		cmocka_unit_test(test_writer_full_record_and_swap),
		cmocka_unit_test(test_parser_refuses_lies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
