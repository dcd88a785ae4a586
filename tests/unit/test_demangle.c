// SPDX-License-Identifier: GPL-2.0
/*
 * C++ and Rust names as perf shows them.  The expected names are what
 * `c++filt -p` (libiberty without parameters, perf's demangler) prints.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "demangle.h"

static void expect(const char *mangled, const char *want)
{
	char *got = demangle(mangled);

	if (!want) {
		assert_null(got);
		return;
	}
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

static void test_functions(void **state)
{
	(void)state;
	expect("_ZN2ns3Foo3getEv", "ns::Foo::get");
	expect("_ZNK2ns3Foo3getEv", "ns::Foo::get");		/* const method */
	expect("_ZL6helperv", "helper");			/* internal linkage */
	expect("_ZN12_GLOBAL__N_14anonEv", "(anonymous namespace)::anon");
	expect("_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector<int, std::allocator<int> >::push_back");
	expect("_ZN3FooD2Ev", "Foo::~Foo");
	expect("_ZN3FooC1Ei", "Foo::Foo");
}

static void test_templates_and_operators(void **state)
{
	(void)state;
	expect("_Z3maxIiET_S0_S0_", "max<int>");		/* return type dropped */
	expect("_ZN3FooclEi", "Foo::operator()");
	expect("_ZZ4mainENKUlvE_clEv", "main::{lambda()#1}::operator()");
	expect("_ZN3FooltERKS_", "Foo::operator<");
	expect("_ZN3FoocviEv", "Foo::operator int");
	expect("_ZnwmRKSt9nothrow_t", "operator new");
	expect("_ZltIiEbRK3FooS2_", "operator< <int>");	/* bool return type dropped */
}

static void test_suffixes_and_special_names(void **state)
{
	(void)state;
	expect("_Z3foov.cold", "foo");
	expect("_Z3foov.constprop.0.isra.0", "foo");
	expect("_ZTV3Foo", "vtable for Foo");
	expect("_ZTI3Foo", "typeinfo for Foo");
}

static void test_rust_legacy(void **state)
{
	(void)state;
	expect("_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write");
	expect("_ZN60_$LT$alloc..string..String$u20$as$u20$core..fmt..Display$GT$3fmt17h0123456789abcdefE",
	       "<alloc::string::String as core::fmt::Display>::fmt");
}

static void test_not_mangled(void **state)
{
	(void)state;
	expect("main", NULL);
	expect("do_syscall_64", NULL);
	expect("_Zxyz", NULL);
	expect("_Z", NULL);
	expect("", NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_functions),
		cmocka_unit_test(test_templates_and_operators),
		cmocka_unit_test(test_suffixes_and_special_names),
		cmocka_unit_test(test_rust_legacy),
		cmocka_unit_test(test_not_mangled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
