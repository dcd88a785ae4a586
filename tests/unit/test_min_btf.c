// SPDX-License-Identifier: GPL-2.0
/*
 * The cut of a kernel's BTF (min_btf.h) for the sampling object: a made-up
 * kernel whose task_struct the object's CO-RE relocations name is kept
 * whole, what it embeds whole, what it points to as an empty struct of the
 * same size, and nothing the relocations do not reach; what is not an ELF
 * object with .BTF and .BTF.ext is refused.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <bpf/btf.h>

#include "min_btf.h"
#include "sample.skel.h"

/* int; struct task_struct { int pid, tgid; struct zz_pointee *zz; struct zz_embedded em; }: its em holds a pointer too; and one unrelated. */
static struct btf *made_up_kernel(void)
{
	struct btf *k = btf__new_empty();
	int i, pointee, ptr, emb;

	assert_non_null(k);
	i = btf__add_int(k, "int", 4, BTF_INT_SIGNED);
	pointee = btf__add_struct(k, "zz_pointee", 48);
	assert_true(pointee > 0);
	assert_int_equal(btf__add_field(k, "secret", i, 0, 0), 0);
	ptr = btf__add_ptr(k, pointee);
	emb = btf__add_struct(k, "zz_embedded", 16);
	assert_int_equal(btf__add_field(k, "a", i, 0, 0), 0);
	/* A pointer inside what is embedded: its pointee still an empty struct. */
	assert_int_equal(btf__add_field(k, "b", ptr, 64, 0), 0);
	assert_true(btf__add_struct(k, "task_struct", 64) > 0);
	assert_int_equal(btf__add_field(k, "pid", i, 0, 0), 0);
	assert_int_equal(btf__add_field(k, "tgid", i, 32, 0), 0);
	assert_int_equal(btf__add_field(k, "zz", ptr, 64, 0), 0);
	assert_int_equal(btf__add_field(k, "em", emb, 128, 0), 0);
	assert_true(btf__add_struct(k, "zz_unrelated", 4) > 0);
	assert_int_equal(btf__add_field(k, "x", i, 0, 0), 0);
	return k;
}

static const struct btf_type *named(const struct btf *b, const char *name)
{
	int id = btf__find_by_name(b, name);

	return id > 0 ? btf__type_by_id(b, id) : NULL;
}

static void test_cut_keeps_what_relocations_reach(void **state)
{
	struct btf *k = made_up_kernel(), *cut = NULL;
	const struct btf_type *t;
	const void *obj;
	size_t sz;

	(void)state;
	obj = sample_bpf__elf_bytes(&sz);
	assert_int_equal(min_btf__cut(k, obj, sz, &cut), 0);
	assert_non_null(cut);
	t = named(cut, "task_struct");
	assert_non_null(t);
	assert_int_equal(btf_vlen(t), 4);
	assert_int_equal(t->size, 64);
	assert_string_equal(btf__name_by_offset(cut, btf_members(t)[3].name_off), "em");
	assert_int_equal(btf_members(t)[1].offset, 32);
	/* Embedded: whole, since a field access may go through it. */
	t = named(cut, "zz_embedded");
	assert_non_null(t);
	assert_int_equal(btf_vlen(t), 2);
	/* Behind a pointer: its name and size, no members. */
	t = named(cut, "zz_pointee");
	assert_non_null(t);
	assert_int_equal(btf_vlen(t), 0);
	assert_int_equal(t->size, 48);
	assert_null(named(cut, "zz_unrelated"));
	assert_null(named(cut, "secret"));
	btf__free(cut);
	btf__free(k);
}

static void test_not_an_object_is_refused(void **state)
{
	struct btf *k = made_up_kernel(), *cut = (void *)1;
	static const char junk[256] = "\x7f" "ELF junk";
	const void *obj;
	size_t sz;
	char *cut_short;

	(void)state;
	assert_int_equal(min_btf__cut(k, junk, sizeof(junk), &cut), -EINVAL);
	assert_null(cut);
	assert_int_equal(min_btf__cut(k, junk, 4, &cut), -EINVAL);
	/* The object's section headers lie past a short copy's end. */
	obj = sample_bpf__elf_bytes(&sz);
	cut_short = malloc(sz / 2);
	assert_non_null(cut_short);
	memcpy(cut_short, obj, sz / 2);
	assert_int_equal(min_btf__cut(k, cut_short, sz / 2, &cut), -EINVAL);
	free(cut_short);
	btf__free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cut_keeps_what_relocations_reach),
		cmocka_unit_test(test_not_an_object_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
