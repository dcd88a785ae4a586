// SPDX-License-Identifier: GPL-2.0
/*
 * stat --serve's pure parts: the address, names and labels as the text
 * format wants them, and --web-config's file (web_config.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "sbuf.h"
#include "stat_serve.h"
#include "web_config.h"
#include "unit.h"

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

static int load(const char *dir, const char *text, struct web_config **c, char *err, size_t errlen)
{
	char path[256];

	unit_write_file(dir, "web.yml", text);
	snprintf(path, sizeof(path), "%s/web.yml", dir);
	err[0] = 0;
	return web_config__load(c, path, err, errlen);
}

/*
 * node_exporter's file: TLS files relative to it, bcrypt users checked
 * with crypt(3) ($2y$ as htpasswd -B writes, cost 4 to keep this quick);
 * anything else refused by name, never ignored.
 */
static void test_web_config(void **state)
{
	/* "s3cret" and "other", bcrypt at cost 4. */
	static const char users[] =
		"basic_auth_users:\n"
		"  prom: $2y$04$CpipnBjBEDdfD0aCwC9duemmjsTGASQS5OtcQEVTDreJtiwuq0K26\n"
		"  'we ird': \"$2b$04$ZlqYRkRSaiXdh8fLuANRC.WmGZBob8TRCa712DsDk9B.ii.W3kKiS\"\n";
	static const struct {
		const char *text, *says;
	} bad[] = {
		{ "foo: [1\n", "is not YAML" },
		{ "- a\n", "its top is not a mapping" },
		{ "http_server_config:\n  http2: false\n", "http_server_config is not supported" },
		{ "tls_server_config:\n  client_auth_type: RequireAndVerifyClientCert\n", "client_auth_type is not supported" },
		{ "tls_server_config:\n  cert_file: cert.pem\n", "needs key_file too" },
		{ "tls_server_config:\n  cert_file: cert.pem\n  key_file: nope.pem\n", "cannot read key_file" },
		{ "tls_server_config:\n  cert_file: web.yml\n  key_file: key.pem\n", "is not PEM" },
		{ "tls_server_config:\n  min_version: TLS10\n", "not TLS12 or TLS13" },
		{ "basic_auth_users:\n  u: plain\n", "basic_auth_users.u is not a bcrypt hash" },
		{ "basic_auth_users:\n  u: $1$abc$defghijklmnopqrstuvwx\n", "is not a bcrypt hash" },
		{ "basic_auth_users:\n  'a:b': $2y$04$CpipnBjBEDdfD0aCwC9duemmjsTGASQS5OtcQEVTDreJtiwuq0K26\n", "holds ':'" },
		{ "basic_auth_users: [x]\n", "is not a mapping" },
	};
	char dir[] = "/tmp/spanperf-webcfg-XXXXXX", err[512], path[300];
	struct web_config *c;

	(void)state;
	assert_non_null(mkdtemp(dir));
	unit_write_file(dir, "cert.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
	unit_write_file(dir, "key.pem", "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_not_equal(load(dir, bad[i].text, &c, err, sizeof(err)), 0);
		assert_null(c);
		if (!strstr(err, bad[i].says) || !strstr(err, "web.yml"))
			fail_msg("%s: said '%s'", bad[i].text, err);
	}
	/* Empty: neither TLS nor auth. */
	assert_int_equal(load(dir, "", &c, err, sizeof(err)), 0);
	assert_null(c->cert_pem);
	assert_int_equal(c->nr_users, 0);
	web_config__free(c);
	assert_int_equal(load(dir, "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
				   "  min_version: TLS13\n  client_auth_type: NoClientCert\n",
			      &c, err, sizeof(err)), 0);
	assert_non_null(strstr(c->cert_pem, "BEGIN CERTIFICATE"));
	assert_non_null(strstr(c->key_pem, "BEGIN PRIVATE KEY"));
	assert_true(c->tls13);
	web_config__free(c);
	assert_int_equal(load(dir, users, &c, err, sizeof(err)), 0);
	assert_int_equal(c->nr_users, 2);
	assert_true(web_config__check(c, "prom", "s3cret"));
	assert_false(web_config__check(c, "prom", "s3cre"));
	assert_false(web_config__check(c, "prom", "s3cret "));
	assert_false(web_config__check(c, "prom", ""));
	assert_true(web_config__check(c, "we ird", "other"));
	assert_false(web_config__check(c, "we ird", "s3cret"));
	assert_false(web_config__check(c, "nobody", "s3cret"));
	web_config__free(c);
	web_config__free(NULL);
	snprintf(path, sizeof(path), "%s/web.yml", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/cert.pem", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/key.pem", dir);
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addr),
		cmocka_unit_test(test_label),
		cmocka_unit_test(test_metric_name),
		cmocka_unit_test(test_web_config),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
