// SPDX-License-Identifier: GPL-2.0
/* stat --serve's pure parts: the address, and names and labels as the text format wants them. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "sbuf.h"
#include "stat_serve.h"

static void test_addr(void **state)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	static const char *bad[] = { "", "x", "localhost:80", "1.2.3:80", "[::1:80", "[::1]", "65536", "1.2.3.4:",
				     "::1:80" };
	char err[256], buf[64];
	socklen_t len;

	(void)state;
	/* No address: loopback, never every interface by default. */
	assert_int_equal(serve_addr_parse("9464", &ss, &len, err, sizeof(err)), 0);
	assert_int_equal(in4->sin_family, AF_INET);
	assert_int_equal(ntohs(in4->sin_port), 9464);
	assert_string_equal(inet_ntop(AF_INET, &in4->sin_addr, buf, sizeof(buf)), "127.0.0.1");
	assert_int_equal(serve_addr_parse(":80", &ss, &len, err, sizeof(err)), 0);
	assert_string_equal(inet_ntop(AF_INET, &in4->sin_addr, buf, sizeof(buf)), "127.0.0.1");
	assert_int_equal(serve_addr_parse("0.0.0.0:9100", &ss, &len, err, sizeof(err)), 0);
	assert_string_equal(inet_ntop(AF_INET, &in4->sin_addr, buf, sizeof(buf)), "0.0.0.0");
	assert_int_equal(len, sizeof(*in4));
	assert_int_equal(serve_addr_parse("[::1]:9100", &ss, &len, err, sizeof(err)), 0);
	assert_int_equal(in6->sin6_family, AF_INET6);
	assert_int_equal(ntohs(in6->sin6_port), 9100);
	assert_int_equal(len, sizeof(*in6));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(serve_addr_parse(bad[i], &ss, &len, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "--serve '"));
	}
}

static void test_label(void **state)
{
	struct sbuf b = {};

	(void)state;
	/* A comm is whatever bytes a process chose: quoted, escaped, and ASCII only. */
	serve_label(&b, "a\"b\\c\nd\x01\xff" "e");
	sbuf_zero(&b, 1);
	assert_string_equal(b.p, "a\\\"b\\\\c\\nd??e");
	sbuf_free(&b);
}

static void test_metric_name(void **state)
{
	char n[32];

	(void)state;
	serve_metric_name(n, sizeof(n), "sched:sched_switch");
	assert_string_equal(n, "sched_sched_switch");
	serve_metric_name(n, sizeof(n), "context-switches");
	assert_string_equal(n, "context_switches");
	serve_metric_name(n, 5, "page-faults");
	assert_string_equal(n, "page");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addr),
		cmocka_unit_test(test_label),
		cmocka_unit_test(test_metric_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
