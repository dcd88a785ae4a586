// SPDX-License-Identifier: GPL-2.0
/*
 * The process-context writer (include/otel_process_ctx.h) and the reader's
 * decoder agree on OTEP 4719's header and ProcessContext payload; the
 * decoder also reads the bare Resource of the OTEP's first writers, and
 * refuses what lies.  The perf.data record keeps what report needs.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../include/otel_process_ctx.h"
#include "otel_pctx.h"
#include "otel_process.h"
#include "perf_sample.h"
#include "span_codec.h"

static const char *const resource[] = { "service.name", "checkout", "host.name", "h1", NULL };
static const char *const keys[] = { "http.route", "user.id", NULL };

static void encode(const char *const *res, const char *const *k, char **out, size_t *n)
{
	struct otel_pb c = { NULL, 0 }, w;

	otel_pb__process_context(&c, res, k);
	w.p = malloc(c.n + 1);
	w.n = 0;
	assert_non_null(w.p);
	otel_pb__process_context(&w, res, k);
	assert_int_equal(w.n, c.n);
	*out = w.p;
	*n = w.n;
}

static void test_payload_round_trip(void **state)
{
	struct otel_pctx p;
	char *pb;
	size_t n;

	(void)state;
	encode(resource, keys, &pb, &n);
	assert_int_equal(otel_pctx_decode(pb, n, &p), 0);
	assert_string_equal(p.service_name, "checkout");
	assert_int_equal(p.nkeys, 2);
	assert_string_equal(p.keys[0], "http.route");
	assert_string_equal(p.keys[1], "user.id");
	otel_pctx_clear(&p);
	/* Every cut of it is refused or read as far as it goes, never past its end. */
	for (size_t cut = 0; cut < n; cut++) {
		char *c = malloc(cut + 1);

		memcpy(c, pb, cut);
		if (!otel_pctx_decode(c, cut, &p))
			assert_true(p.nkeys <= 2);
		otel_pctx_clear(&p);
		free(c);
	}
	free(pb);
}

/* 256 keys (a u8 key_index) with long names: sizes past one-byte varints. */
static void test_payload_many_keys(void **state)
{
	static char names[300][200];
	const char *k[301];
	struct otel_pctx p;
	char *pb;
	size_t n;

	(void)state;
	for (int i = 0; i < 256; i++) {
		memset(names[i], 'a' + i % 26, 150);
		snprintf(names[i] + 150, 40, "-%d", i);
		k[i] = names[i];
	}
	k[256] = NULL;
	encode(NULL, k, &pb, &n);
	assert_int_equal(otel_pctx_decode(pb, n, &p), 0);
	assert_null(p.service_name);
	assert_int_equal(p.nkeys, 256);
	assert_string_equal(p.keys[255], names[255]);
	otel_pctx_clear(&p);
	free(pb);
}

/*
 * Keys and service.name as long as a payload allows: kept as the file
 * record keeps them, OTEL_PCTX_MAX_STR bytes, never whole.
 */
static void test_payload_long_strings_cut(void **state)
{
	static char key[1000], svc[5000];
	const char *k[] = { key, "short", NULL }, *res[] = { "service.name", svc, NULL };
	struct otel_pctx p;
	char *pb;
	size_t n;

	(void)state;
	memset(key, 'k', sizeof(key) - 1);
	memset(svc, 's', sizeof(svc) - 1);
	encode(res, k, &pb, &n);
	assert_int_equal(otel_pctx_decode(pb, n, &p), 0);
	assert_int_equal(p.nkeys, 2);
	assert_int_equal(strlen(p.keys[0]), OTEL_PCTX_MAX_STR);
	assert_int_equal(strncmp(p.keys[0], key, OTEL_PCTX_MAX_STR), 0);
	assert_string_equal(p.keys[1], "short");
	assert_int_equal(strlen(p.service_name), OTEL_PCTX_MAX_STR);
	otel_pctx_clear(&p);
	free(pb);
}

/* The OTEP's first writers published Resource { repeated KeyValue attributes = 1 } bare. */
static void test_bare_resource(void **state)
{
	/* attributes { key "service.name" value { string_value "svc" } } */
	static const char bare[] = "\x0a\x15\x0a\x0cservice.name\x12\x05\x0a\x03svc";
	/* ProcessContext { extra_attributes { key map ["a", <int 7>, "c"] } } */
	static const char extra[] =
		"\x12\x31\x0a\x1dthreadlocal.attribute_key_map\x12\x10\x2a\x0e\x0a\x03\x0a\x01" "a" "\x0a\x02\x18\x07"
		"\x0a\x03\x0a\x01" "c";
	struct otel_pctx p;
	char buf[16];

	(void)state;
	assert_int_equal(otel_pctx_decode(bare, sizeof(bare) - 1, &p), 0);
	assert_string_equal(p.service_name, "svc");
	otel_pctx_clear(&p);
	assert_int_equal(otel_pctx_decode(extra, sizeof(extra) - 1, &p), 0);
	assert_int_equal(p.nkeys, 3);
	assert_string_equal(otel_pctx_key(&p, 0, buf), "a");
	/* A non-string key keeps its place; it and keys past the map print as numbers. */
	assert_string_equal(otel_pctx_key(&p, 1, buf), "attr.1");
	assert_string_equal(otel_pctx_key(&p, 2, buf), "c");
	assert_string_equal(otel_pctx_key(&p, 9, buf), "attr.9");
	assert_string_equal(otel_pctx_key(NULL, 3, buf), "attr.3");
	otel_pctx_clear(&p);
}

static void test_malformed(void **state)
{
	static const struct { const char *pb; size_t n; } bad[] = {
		{ "\x0a\x05\x0a\x03", 4 },			 /* a length past the end */
		{ "\x0a", 1 },					 /* a tag with no length */
		{ "\x0b\x00", 2 },				 /* a group */
		{ "\x00\x01", 2 },				 /* field 0 */
		{ "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12 }, /* an 11-byte varint */
		{ "\x0a\x03\x0a\x05\x0a", 5 },		 /* an inner length past its message's end */
	};
	struct otel_pctx p;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(otel_pctx_decode(bad[i].pb, bad[i].n, &p), -EINVAL);
	/* Empty: a context with nothing in it. */
	assert_int_equal(otel_pctx_decode("", 0, &p), 0);
	assert_int_equal(p.nkeys, 0);
}

static void test_header(void **state)
{
	struct otel_process_ctx_header w = { .version = 2, .payload_size = 10, .published_at_ns = 5, .payload = 0x1000 };
	struct otel_pctx_header h;

	(void)state;
	memcpy(w.signature, "OTEL_CTX", 8);
	assert_int_equal(otel_pctx_header_parse(&w, sizeof(w), &h), 0);
	assert_true(h.version == 2 && h.payload_size == 10 && h.published_at == 5 && h.payload == 0x1000);
	assert_int_equal(otel_pctx_header_parse(&w, 31, &h), -EINVAL);
	w.published_at_ns = 0;
	assert_int_equal(otel_pctx_header_parse(&w, sizeof(w), &h), -EAGAIN);
	w.published_at_ns = 5;
	w.payload_size = OTEL_PCTX_MAX_PAYLOAD + 1;
	assert_int_equal(otel_pctx_header_parse(&w, sizeof(w), &h), -E2BIG);
	w.payload_size = 10;
	w.payload = 0;
	assert_int_equal(otel_pctx_header_parse(&w, sizeof(w), &h), -E2BIG);
	w.version = 1;
	assert_int_equal(otel_pctx_header_parse(&w, sizeof(w), &h), -EPROTONOSUPPORT);
	w.signature[0] = 'X';
	assert_int_equal(otel_pctx_header_parse(&w, sizeof(w), &h), -EINVAL);
}

/* The writer's real mapping, read back from this process as a reader would. */
static void test_publish_and_update(void **state)
{
	struct otel_process_ctx_header *h;
	struct otel_pctx_header ph;
	struct otel_pctx p;
	static const char *const more[] = { "http.route", "user.id", "tenant", NULL };
	uint64_t first;

	(void)state;
	assert_int_equal(otel_process_ctx_publish(resource, keys), 0);
	h = otel_process_ctx_header();
	assert_non_null(h);
	assert_int_equal(otel_pctx_header_parse(h, sizeof(*h), &ph), 0);
	assert_int_equal(otel_pctx_decode((void *)(uintptr_t)ph.payload, ph.payload_size, &p), 0);
	assert_int_equal(p.nkeys, 2);
	otel_pctx_clear(&p);
	first = ph.published_at;
	assert_int_equal(otel_process_ctx_publish(resource, more), 0);
	assert_ptr_equal(otel_process_ctx_header(), h);
	assert_int_equal(otel_pctx_header_parse(h, sizeof(*h), &ph), 0);
	assert_true(ph.published_at != first);
	assert_int_equal(otel_pctx_decode((void *)(uintptr_t)ph.payload, ph.payload_size, &p), 0);
	assert_int_equal(p.nkeys, 3);
	assert_string_equal(p.keys[2], "tenant");
	otel_pctx_clear(&p);
	assert_int_equal(otel_process_ctx_drop(), 0);
	assert_null(otel_process_ctx_header());
}

/*
 * The reader, on this process, as record reads any other: the writer's
 * memfd mapping (/memfd:OTEL_CTX), then an anonymous one named by prctl
 * ([anon:OTEL_CTX], Linux 5.17 with CONFIG_ANON_VMA_NAME), then a header
 * stuck mid-update and one whose pointer goes nowhere.
 */
/* Each read as a first look: published 0, so that an unchanged context reads again. */
static int read_live(__u64 *addr, __u64 *published, struct otel_pctx *p, struct otel_process_stats *st)
{
	*published = 0;
	return otel_process_read(getpid(), addr, published, p, st);
}

static void test_read_live(void **state)
{
	struct otel_process_stats st = { 0 };
	struct otel_process_ctx_header *h;
	struct otel_pctx p;
	__u64 published = 0, payload, addr = 0, saved;

	(void)state;
	assert_int_equal(read_live(&addr, &published, &p, &st), -ENOENT);
	assert_int_equal(otel_process_ctx_publish(resource, keys), 0);
	h = otel_process_ctx_header();
	assert_int_equal(read_live(&addr, &published, &p, &st), 0);
	assert_true(published == h->published_at_ns && st.read == 1);
	assert_string_equal(p.service_name, "checkout");
	assert_int_equal(p.nkeys, 2);
	otel_pctx_clear(&p);
	/* The same version again: one header read, nothing decoded. */
	assert_true(addr == (uintptr_t)h);
	assert_int_equal(otel_process_read(getpid(), &addr, &published, &p, &st), -EALREADY);
	assert_int_equal(p.nkeys, 0);
	/* A stale cached address is looked up again. */
	addr = 4096;
	assert_int_equal(read_live(&addr, &published, &p, &st), 0);
	assert_true(addr == (uintptr_t)h);
	otel_pctx_clear(&p);
	/* Each lie is one failed read, counted by kind. */
	saved = h->published_at_ns;
	h->published_at_ns = 0;
	assert_int_equal(read_live(&addr, &published, &p, &st), -EAGAIN);
	assert_int_equal(st.unstable, 1);
	h->published_at_ns = saved;
	payload = h->payload;
	h->payload = 4096; /* the first page is never mapped */
	assert_int_equal(read_live(&addr, &published, &p, &st), -EFAULT);
	assert_int_equal(st.unreadable, 1);
	h->payload = 0;
	assert_int_equal(read_live(&addr, &published, &p, &st), -E2BIG);
	assert_int_equal(st.bad_size, 1);
	h->payload = payload;
	h->version = 3;
	assert_int_equal(read_live(&addr, &published, &p, &st), -EPROTONOSUPPORT);
	assert_int_equal(st.bad_header, 1);
	h->version = 2;
	memset((void *)(uintptr_t)payload, 0xff, h->payload_size);
	assert_int_equal(read_live(&addr, &published, &p, &st), -EINVAL);
	assert_int_equal(st.malformed, 1);
	assert_int_equal(otel_process_ctx_drop(), 0);
}

/* An anonymous mapping named by prctl, where the kernel names them; skipped (and why) where not. */
static void test_read_anon_named(void **state)
{
	struct otel_process_stats st = { 0 };
	struct otel_process_ctx_header *h;
	struct otel_pctx p;
	__u64 published = 0, addr = 0;
	char *pb;
	size_t n;
	int named;

	(void)state;
	encode(resource, keys, &pb, &n);
	h = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(h != MAP_FAILED);
	*h = (struct otel_process_ctx_header){ .version = 2, .payload_size = (uint32_t)n, .published_at_ns = 42,
					       .payload = (uintptr_t)pb };
	memcpy(h->signature, "OTEL_CTX", 8);
	named = prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)h, 4096, (unsigned long)"OTEL_CTX") == 0;
	if (named) {
		assert_int_equal(read_live(&addr, &published, &p, &st), 0);
		assert_true(published == 42 && p.nkeys == 2);
		otel_pctx_clear(&p);
	}
	munmap(h, 4096);
	free(pb);
	if (!named) {
		print_message("SKIP: [anon:OTEL_CTX]: anonymous mappings cannot be named here "
			      "(Linux < 5.17 or no CONFIG_ANON_VMA_NAME)\n");
		skip();
	}
}

static void test_record(void **state)
{
	struct perf_event_attr a;
	struct otel_pctx in = { 0 }, out;
	struct sbuf b = { 0 };
	struct pd_sample s;
	__u32 pid;

	(void)state;
	in.service_name = strdup("checkout");
	in.keys[0] = strdup("http.route");
	in.keys[2] = strdup("user.id"); /* key 1 unnamed */
	in.nkeys = 3;
	span_codec_attr(&a);
	assert_int_equal(otel_pctx_rec_write(&b, &a, 77, 1234, 99, &in), 0);
	assert_true(b.len % 8 == 0);
	assert_int_equal(pd_sample_parse(&a, b.p, b.len, &s), 0);
	assert_true(s.id == 77 && s.pid == 1234 && s.time == 99);
	assert_int_equal(otel_pctx_rec_decode(s.raw, s.raw_size, &pid, &out), 0);
	assert_int_equal(pid, 1234);
	assert_string_equal(out.service_name, "checkout");
	assert_int_equal(out.nkeys, 3);
	assert_string_equal(out.keys[0], "http.route");
	assert_string_equal(out.keys[1], "");
	assert_string_equal(out.keys[2], "user.id");
	otel_pctx_clear(&out);
	/* Cut anywhere, it is refused, never read past. */
	for (size_t cut = 0; cut < s.raw_size - 8; cut++) {
		int r = otel_pctx_rec_decode(s.raw, cut, &pid, &out);

		assert_true(r == -EINVAL || (r == 0 && out.nkeys <= 3));
		otel_pctx_clear(&out);
	}
	otel_pctx_clear(&in);
	sbuf_free(&b);
}

static void test_value(void **state)
{
	char buf[OTEL_ATTR_VALUE_MAX];

	(void)state;
	assert_string_equal(otel_attr_value((const __u8 *)"a\0b", 3, buf), "a\xef\xbf\xbd" "b");
	assert_string_equal(otel_attr_value((const __u8 *)"", 0, buf), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_payload_round_trip),
		cmocka_unit_test(test_payload_many_keys),
		cmocka_unit_test(test_payload_long_strings_cut),
		cmocka_unit_test(test_bare_resource),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_header),
		cmocka_unit_test(test_publish_and_update),
		cmocka_unit_test(test_read_live), cmocka_unit_test(test_read_anon_named),
		cmocka_unit_test(test_record),
		cmocka_unit_test(test_value),
	};

	return cmocka_run_group_tests_name("otel_pctx", tests, NULL, NULL);
}
