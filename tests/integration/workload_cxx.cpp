// SPDX-License-Identifier: GPL-2.0
/*
 * C++ names for the report tests: a method, a const method, an operator(),
 * function templates (whose names carry a return type), an anonymous
 * namespace, overloads and a lambda.  Each spins for about the same time.
 */
#include <cstdlib>

static volatile unsigned long sink;
static long loops = 20000000;

/* Inlined, so that each sample's leaf is the function that called it. */
static inline __attribute__((always_inline)) void spin(long n)
{
	for (long i = 0; i < n; i++)
		sink += i;
}

namespace ns {
struct Foo {
	int v;
	__attribute__((noinline)) int get() const { spin(loops); return v; }
	__attribute__((noinline)) int operator()(int x) { spin(loops); return x; }
};
}

template <typename T> __attribute__((noinline)) T maxof(T a, T b)
{
	spin(loops);
	return a > b ? a : b;
}

namespace {
__attribute__((noinline)) void hidden() { spin(loops); }
}

__attribute__((noinline)) void over(int) { spin(loops); }
__attribute__((noinline)) void over(double) { spin(loops); }

int main(int argc, char **argv)
{
	ns::Foo f{3};
	auto lambda = [](int x) { spin(loops); return x; };

	if (argc > 1)
		loops = atol(argv[1]);
	f.get();
	f(2);
	maxof<int>(1, 2);
	maxof<double>(1, 2);
	hidden();
	over(1);
	over(1.0);
	lambda(1);
	return 0;
}
