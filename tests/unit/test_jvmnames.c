// SPDX-License-Identifier: GPL-2.0
/*
 * jvm_pc_scopes against an nmethod's debug information that lies, laid out
 * in this process's own memory as HotSpot lays it out (PcDescs sorted by
 * pc offset, the scopes' UNSIGNED5 stream, the metadata table): a chain
 * as HotSpot writes it is read innermost first; a sender that does not go
 * back, an index or an offset out of range, too many scopes, a chain that
 * does not end at the nmethod's own method are refused, never a frame.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/uio.h>
#include <cmocka.h>

#include "jvmnames.h"

static int read_self(void *ctx, __u64 addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(unsigned long)addr, len };

	(void)ctx;
	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

struct pcdesc {
	__s32 pc, scope, obj, flags;
};

#define OUTER 0x10000ull
#define MID 0x20000ull
#define LEAF 0x30000ull

static __u8 code[256], data[512];
static struct pcdesc pcs[8];
static __u64 meta[3] = { OUTER, MID, LEAF };
static struct jvm_facts f;
static struct jvm_blob b;
static size_t dlen;

/* One UNSIGNED5 number (below 191: one byte) appended to data. */
static void put(__u32 v)
{
	while (v >= 192u - f.u5_excess) {
		/* A byte of 192 or more, then the rest at << 6. */
		__u32 low = 192 + (v - 192 + f.u5_excess) % 64;

		data[dlen++] = low;
		v = (v - (low - f.u5_excess)) >> 6;
	}
	data[dlen++] = v + f.u5_excess;
}

/* A scope at the stream's end: its offset. */
static __s32 scope(__u32 sender, __u32 idx, __s32 bci)
{
	__s32 at = dlen;

	put(sender);
	put(idx);
	put(bci + 1);
	return at;
}

static void setup(__u8 excess)
{
	memset(&f, 0, sizeof(f));
	f.o.pcdesc_size = sizeof(struct pcdesc);
	f.o.pcdesc_pc = offsetof(struct pcdesc, pc);
	f.o.pcdesc_scope = offsetof(struct pcdesc, scope);
	f.u5_excess = excess;
	memset(data, 0, sizeof(data));
	dlen = 1; /* offset 0 is serialized_null */
	b = (struct jvm_blob){ .nmethod = true, .method = OUTER, .code_begin = (__u64)(unsigned long)code,
			       .code_end = (__u64)(unsigned long)code + sizeof(code) };
	b.data_lo = (__u64)(unsigned long)data, b.data_hi = b.data_lo + sizeof(data);
	b.meta_lo = (__u64)(unsigned long)meta, b.meta_hi = b.meta_lo + sizeof(meta);
	b.pcs_lo = (__u64)(unsigned long)pcs;
}

static void set_pcs(int n, ...)
{
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < n; i++) {
		pcs[i].pc = va_arg(ap, int);
		pcs[i].scope = va_arg(ap, int);
	}
	va_end(ap);
	b.pcs_hi = b.pcs_lo + n * sizeof(struct pcdesc);
}

static int at(int off, struct jvm_scope *out)
{
	return jvm_pc_scopes(&f, read_self, NULL, &b, b.code_begin + off, out, JVM_MAX_SCOPES);
}

static void test_u5(void **state)
{
	const __u8 old[] = { 192, 1, 5 }, new[] = { 193, 2, 6, 0 };
	size_t pos = 0;
	__u32 v;

	(void)state;
	assert_int_equal(jvm_u5(old, sizeof(old), &pos, 0, &v), 0);
	assert_int_equal(v, 192 + 64);
	assert_int_equal(jvm_u5(old, sizeof(old), &pos, 0, &v), 0);
	assert_int_equal(v, 5);
	pos = 0;
	assert_int_equal(jvm_u5(new, sizeof(new), &pos, 1, &v), 0);
	assert_int_equal(v, 192 + 64);
	assert_int_equal(jvm_u5(new, sizeof(new), &pos, 1, &v), 0);
	assert_int_equal(v, 5);
	/* JDK 20+ excludes 0; and a number may not run past the buffer. */
	assert_int_equal(jvm_u5(new, sizeof(new), &pos, 1, &v), -EBADMSG);
	pos = 1;
	assert_int_equal(jvm_u5(old, 1, &pos, 0, &v), -EBADMSG);
	for (__u8 x = 0; x < 2; x++) {
		__u32 vals[] = { 0, 1, 190, 191, 192, 255, 4096, 70000, 1u << 24 };

		setup(x);
		for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
			put(vals[i]);
		pos = 1;
		for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
			assert_int_equal(jvm_u5(data, dlen, &pos, x, &v), 0);
			assert_int_equal(v, vals[i]);
		}
		assert_int_equal(pos, dlen);
	}
}

static void test_chain(void **state)
{
	struct jvm_scope s[JVM_MAX_SCOPES];

	(void)state;
	for (__u8 x = 0; x < 2; x++) {
		__s32 o, m, l;

		setup(x);
		o = scope(0, 1, 5);
		m = scope(o, 2, 2);
		l = scope(m, 3, 300);
		set_pcs(5, -1, 0, 10, m, 20, l, 30, 0, 40, o);
		/* The first PcDesc at or after the pc: mid inlined at outer's bci 5, at its own bci 2. */
		assert_int_equal(at(5, s), 2);
		assert_true(s[0].method == MID && s[0].bci == 2 && s[1].method == OUTER && s[1].bci == 5);
		assert_int_equal(at(10, s), 2);
		assert_int_equal(at(11, s), 3);
		assert_true(s[0].method == LEAF && s[0].bci == 300 && s[2].method == OUTER);
		/* No scope recorded: the method, where in it unknown. */
		assert_int_equal(at(25, s), 1);
		assert_true(s[0].method == OUTER && s[0].bci == JVM_BCI_NONE);
		assert_int_equal(at(40, s), 1);
		assert_true(s[0].method == OUTER && s[0].bci == 5);
		/* Past the last PcDesc, or outside the code. */
		assert_int_equal(at(41, s), -ENOENT);
		assert_int_equal(at(-1, s), -ENOENT);
		assert_int_equal(at(sizeof(code), s), -ENOENT);
		/* Fewer frames wanted than the chain has: refused, not cut. */
		assert_int_equal(jvm_pc_scopes(&f, read_self, NULL, &b, b.code_begin + 11, s, 2), -EBADMSG);
	}
}

static void test_lies(void **state)
{
	struct jvm_scope s[JVM_MAX_SCOPES];
	__s32 o, bad;

	(void)state;
	setup(1);
	o = scope(0, 1, 5);
	/* A sender at itself, ahead of itself; index 0, past the metadata; a chain not ending at outer. */
	bad = dlen;
	scope(bad, 2, 1);
	set_pcs(2, -1, 0, 10, bad);
	assert_int_equal(at(10, s), -EBADMSG);
	bad = scope(dlen + 3, 2, 1);
	set_pcs(2, -1, 0, 10, bad);
	assert_int_equal(at(10, s), -EBADMSG);
	bad = scope(o, 0, 1);
	set_pcs(2, -1, 0, 10, bad);
	assert_int_equal(at(10, s), -EBADMSG);
	bad = scope(o, 4, 1);
	set_pcs(2, -1, 0, 10, bad);
	assert_int_equal(at(10, s), -EBADMSG);
	bad = scope(0, 2, 1);
	set_pcs(2, -1, 0, 10, bad);
	assert_int_equal(at(10, s), -EBADMSG);
	/* A bci past any method's (a u2 count of bytecodes). */
	bad = scope(o, 2, 70000);
	set_pcs(2, -1, 0, 10, bad);
	assert_int_equal(at(10, s), -EBADMSG);
	/* A scope offset outside the stream, either way. */
	set_pcs(2, -1, 0, 10, (int)sizeof(data));
	assert_int_equal(at(10, s), -EBADMSG);
	set_pcs(2, -1, 0, 10, -5);
	assert_int_equal(at(10, s), -EBADMSG);
	/* More scopes than HotSpot inlines: each sender goes back, but the chain is too long. */
	bad = o;
	for (int i = 0; i < JVM_MAX_SCOPES + 5; i++)
		bad = scope(bad, 2, i);
	set_pcs(2, -1, 0, 10, bad);
	assert_int_equal(at(10, s), -EBADMSG);
	/* Garbage: 0xff everywhere reads as numbers past every index. */
	memset(data + 1, 0xff, sizeof(data) - 1);
	set_pcs(2, -1, 0, 10, 7);
	assert_int_equal(at(10, s), -EBADMSG);
	/* A table of more PcDescs than any nmethod, and an unreadable one. */
	set_pcs(2, -1, 0, 10, o);
	b.pcs_hi = b.pcs_lo + (2u << 20) * sizeof(struct pcdesc);
	assert_int_equal(at(10, s), -EBADMSG);
	b.pcs_lo = 8, b.pcs_hi = 8 + 4 * sizeof(struct pcdesc);
	assert_int_equal(at(10, s), -EFAULT);
	/* Metadata that cannot be read. */
	setup(1);
	o = scope(0, 1, 5);
	set_pcs(2, -1, 0, 10, o);
	b.meta_lo = 16, b.meta_hi = 16 + 24;
	assert_int_equal(at(10, s), -EFAULT);
	/* No debug information read for the blob (a layout not known, a stub). */
	setup(1);
	set_pcs(2, -1, 0, 10, 0);
	b.pcs_lo = b.pcs_hi = 0;
	assert_int_equal(at(10, s), -ENOENT);
	setup(1);
	set_pcs(2, -1, 0, 10, 0);
	b.nmethod = false;
	assert_int_equal(at(10, s), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_u5),
		cmocka_unit_test(test_chain),
		cmocka_unit_test(test_lies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
