// SPDX-License-Identifier: GPL-2.0
/*
 * ClickHouse's wire forms: a literal of any bytes stays one literal (its
 * text has no quote, no backslash but its own \xHH, no control byte, and
 * reads back as the bytes given), RowBinary round-trips, a short answer
 * latches bad; the cgroup path labels.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agent_rows.h"
#include "ch_wire.h"
#include "sbuf.h"

/* A lowercase hex digit's value plus one, 0 for any other byte. */
static int hexval(char c)
{
	const char *d = c ? strchr("0123456789abcdef", c) : NULL;

	return d ? (int)(d - "0123456789abcdef") + 1 : 0;
}

/* The literal's text back to bytes, as ClickHouse reads it: -1 where it is not one well-formed literal. */
static int unquote(const char *lit, size_t n, unsigned char *out, size_t *len)
{
	size_t o = 0;

	if (n < 2 || lit[0] != '\'' || lit[n - 1] != '\'')
		return -1;
	for (size_t i = 1; i < n - 1; i++) {
		unsigned char c = lit[i];
		int hi, lo;

		if (c == '\'' || c < 0x20 || c >= 0x7f)
			return -1;
		if (c != '\\') {
			out[o++] = c;
			continue;
		}
		/* Digit by digit: the sbuf's text has no NUL after it for sscanf to stop at. */
		if (i + 3 >= n - 1 || lit[i + 1] != 'x' || !(hi = hexval(lit[i + 2])) || !(lo = hexval(lit[i + 3])))
			return -1;
		out[o++] = (hi - 1) << 4 | (lo - 1);
		i += 3;
	}
	*len = o;
	return 0;
}

static void test_literal_of_any_bytes(void **state)
{
	unsigned char in[64], back[64];
	unsigned seed = 37;

	(void)state;
	for (int round = 0; round < 20000; round++) {
		struct sbuf b = {};
		size_t n = rand_r(&seed) % sizeof(in), len = 0;

		for (size_t i = 0; i < n; i++)
			in[i] = round < 256 ? (unsigned char)round : rand_r(&seed);
		ch_literal(&b, in, n);
		assert_int_equal(b.err, 0);
		assert_int_equal(unquote(b.p, b.len, back, &len), 0);
		assert_int_equal(len, n);
		assert_memory_equal(back, in, n);
		sbuf_free(&b);
	}
}

static void test_ident(void **state)
{
	(void)state;
	assert_true(ch_ident_ok("spanperf"));
	assert_true(ch_ident_ok("fleet_2"));
	assert_false(ch_ident_ok(""));
	assert_false(ch_ident_ok("2x"));
	assert_false(ch_ident_ok("a.b"));
	assert_false(ch_ident_ok("a;DROP"));
	assert_false(ch_ident_ok("a`b"));
}

static void test_rowbinary_round_trip(void **state)
{
	struct sbuf b = {};
	struct rb_in in;
	const char *s;
	size_t n;
	char big[300];

	(void)state;
	memset(big, 'x', sizeof(big));
	big[sizeof(big) - 1] = 0;
	rb_u8(&b, 7);
	rb_u16(&b, 0xbeef);
	rb_u32(&b, 0xdeadbeef);
	rb_u64(&b, 0x0123456789abcdefull);
	rb_str(&b, "q'\"\\\n\xff");
	rb_str(&b, big);
	rb_str(&b, NULL);
	in = (struct rb_in){ (const uint8_t *)b.p, (const uint8_t *)b.p + b.len, false };
	assert_int_equal(rb_get_u8(&in), 7);
	assert_int_equal(rb_get_u16(&in), 0xbeef);
	assert_int_equal(rb_get_u32(&in), 0xdeadbeef);
	assert_true(rb_get_u64(&in) == 0x0123456789abcdefull);
	s = rb_get_str(&in, &n);
	assert_int_equal(n, 6);
	assert_memory_equal(s, "q'\"\\\n\xff", 6);
	s = rb_get_str(&in, &n);
	assert_int_equal(n, sizeof(big) - 1); /* a two-byte length */
	s = rb_get_str(&in, &n);
	assert_int_equal(n, 0);
	assert_false(rb_more(&in));
	assert_false(in.bad);
	/* cut anywhere: bad, never a read past the end */
	for (size_t cut = 0; cut < b.len; cut++) {
		in = (struct rb_in){ (const uint8_t *)b.p, (const uint8_t *)b.p + cut, false };
		rb_get_u8(&in), rb_get_u16(&in), rb_get_u32(&in), rb_get_u64(&in);
		rb_get_str(&in, &n), rb_get_str(&in, &n), rb_get_str(&in, &n);
		assert_true(in.bad);
	}
	sbuf_free(&b);
}

static void test_cgroup_labels(void **state)
{
	char c[65], p[37];
	const char *id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	char path[512];

	(void)state;
	snprintf(path, sizeof(path),
		 "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice/"
		 "cri-containerd-%s.scope", id);
	agent_cgroup_labels(path, c, p);
	assert_string_equal(c, id);
	assert_string_equal(p, "1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901");
	snprintf(path, sizeof(path), "/docker/%s", id);
	agent_cgroup_labels(path, c, p);
	assert_string_equal(c, id);
	assert_string_equal(p, "");
	agent_cgroup_labels("/user.slice/user-0.slice/session-1.scope", c, p);
	assert_string_equal(c, "");
	assert_string_equal(p, "");
	/* 65 hex digits are no container id; "pod" and 35 are no pod */
	snprintf(path, sizeof(path), "/x/%sa/podabc", id);
	agent_cgroup_labels(path, c, p);
	assert_string_equal(c, "");
	assert_string_equal(p, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_literal_of_any_bytes),
		cmocka_unit_test(test_ident),
		cmocka_unit_test(test_rowbinary_round_trip),
		cmocka_unit_test(test_cgroup_labels),
	};

	return cmocka_run_group_tests_name("ch_wire", tests, NULL, NULL);
}
