// SPDX-License-Identifier: GPL-2.0
/*
 * The DWARF unwinder on this process: registers and a stack copy taken
 * here, as the kernel takes them for a sample, unwound back to main; then
 * the same sample cut short (a truncated copy, registers of another ABI).
 */
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
#include <linux/perf_event.h>

#include "perf_sample.h"
#include "sideband.h"
#include "symbols.h"
#include "unwind.h"

#define STACK 8192

struct capture {
	__u64 regs[20]; /* perf's x86-64 DWARF order: AX BX CX DX SI DI BP SP IP FLAGS CS SS R8..R15 */
	unsigned char stack[STACK];
	size_t size;
	__u64 top; /* the end of the stack mapping: the kernel copies no further */
};

/*
 * The user registers and the stack above SP, as perf_output_sample_ustack
 * copies them: raw words, the redzones of sanitized frames included, which
 * ASan must not take for a bug (make check).
 */
__attribute__((no_sanitize_address, noinline)) static void capture_here(struct capture *c)
{
	__u64 *r = c->regs;

	__asm__ volatile("movq %%rax, 0(%0)\n\t"
			 "movq %%rbx, 8(%0)\n\t"
			 "movq %%rcx, 16(%0)\n\t"
			 "movq %%rdx, 24(%0)\n\t"
			 "movq %%rsi, 32(%0)\n\t"
			 "movq %%rdi, 40(%0)\n\t"
			 "movq %%rbp, 48(%0)\n\t"
			 "movq %%rsp, 56(%0)\n\t"
			 "leaq 0(%%rip), %%rax\n\t"
			 "movq %%rax, 64(%0)\n\t"
			 "movq %%r8, 96(%0)\n\t"
			 "movq %%r9, 104(%0)\n\t"
			 "movq %%r10, 112(%0)\n\t"
			 "movq %%r11, 120(%0)\n\t"
			 "movq %%r12, 128(%0)\n\t"
			 "movq %%r13, 136(%0)\n\t"
			 "movq %%r14, 144(%0)\n\t"
			 "movq %%r15, 152(%0)\n\t"
			 :
			 : "r"(r)
			 : "rax", "memory");
	/* Word by word: memcpy's own frame lies below SP, not in what is copied. */
	c->size = c->top - r[7] < STACK ? c->top - r[7] : STACK;
	for (size_t i = 0; i < c->size / 8; i++)
		((volatile __u64 *)c->stack)[i] = ((volatile const __u64 *)(uintptr_t)r[7])[i];
}

__attribute__((noinline)) static void unwind_level2(struct capture *c)
{
	capture_here(c);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

static __u64 stack_top(void)
{
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[stack]"))
			sscanf(line, "%lx-%lx", &lo, &hi);
	fclose(f);
	assert_true(hi != 0);
	return hi;
}

__attribute__((noinline)) static void unwind_level1(struct capture *c)
{
	c->top = stack_top();
	unwind_level2(c);
	__asm__ volatile("" ::: "memory");
}

struct self {
	struct symbolizer *sym;
};

static int self_map(void *ctx, __u64 ip, struct sym_map *out)
{
	return symbolizer__map(((struct self *)ctx)->sym, 4321, ip, 0, out);
}

static struct symbolizer *self_symbolizer(void)
{
	struct symbolizer *s = symbolizer__new(NULL, NULL);
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "r");
	struct procmap m;

	assert_non_null(s);
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (!procmaps_parse_line(line, &m) && (m.prot & 4 /* PROT_EXEC */) && m.path[0] == '/')
			assert_int_equal(symbolizer__add_map(s, 4321, m.start, m.end - m.start, m.pgoff, m.path, 0, false, NULL), 0);
	fclose(f);
	return s;
}

static int unwind_names(struct unwinder *u, struct symbolizer *sym, const struct capture *c, __u64 abi,
			__u64 size, const char **names, int max)
{
	struct unwind_sample s = {
		.pid = 4321,
		.abi = abi,
		.regs_mask = PD_X86_64_DWARF_REGS,
		.regs = c->regs,
		.stack = c->stack,
		.stack_size = size,
	};
	struct self ctx = { sym };
	__u64 ips[UNWIND_MAX_FRAMES];
	int n = unwinder__unwind(u, &s, self_map, &ctx, ips, UNWIND_MAX_FRAMES);

	for (int i = 0; i < n && i < max; i++) {
		struct sym out;

		symbolizer__resolve(sym, 4321, ips[i], 0, false, &out);
		names[i] = out.name;
	}
	return n;
}

static int find(const char **names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return i;
	return -1;
}

static void test_unwinds_to_main(void **state)
{
	static struct capture c;
	struct symbolizer *sym = self_symbolizer();
	struct unwinder *u = unwinder__new("");
	const char *names[UNWIND_MAX_FRAMES];
	struct unwind_stats st;
	int n, a, b, d, m;

	(void)state;
	assert_non_null(u);
	unwind_level1(&c);
	n = unwind_names(u, sym, &c, PERF_SAMPLE_REGS_ABI_64, c.size, names, UNWIND_MAX_FRAMES);
	a = find(names, n, "capture_here");
	b = find(names, n, "unwind_level2");
	d = find(names, n, "unwind_level1");
	m = find(names, n, "main");
	if (!(a == 0 && b == 1 && d == 2 && m > d)) {
		for (int i = 0; i < n; i++)
			print_message("frame %d: %s\n", i, names[i]);
		fail_msg("the chain is not capture_here, unwind_level2, unwind_level1 ... main");
	}
	/* The same sample again: the process and its modules are cached, the chain the same. */
	assert_int_equal(unwind_names(u, sym, &c, PERF_SAMPLE_REGS_ABI_64, c.size, names, UNWIND_MAX_FRAMES), n);
	unwinder__stats(u, &st);
	assert_int_equal(st.samples, 2);
	assert_int_equal(st.complete, 2);
	assert_int_equal(st.cut, 0);
	unwinder__free(u);
	symbolizer__free(sym);
}

static void test_bad_inputs_end_the_chain(void **state)
{
	static struct capture c;
	struct symbolizer *sym = self_symbolizer();
	struct unwinder *u = unwinder__new("");
	const char *names[UNWIND_MAX_FRAMES];
	struct unwind_stats st;
	int n;

	(void)state;
	assert_non_null(u);
	unwind_level1(&c);
	/* 16 bytes of stack: the leaf is known, its caller's return address is not. */
	n = unwind_names(u, sym, &c, PERF_SAMPLE_REGS_ABI_64, 16, names, UNWIND_MAX_FRAMES);
	assert_true(n >= 1 && n < 3);
	assert_string_equal(names[0], "capture_here");
	/* 32-bit registers: nothing is unwound, nothing is guessed. */
	assert_int_equal(unwind_names(u, sym, &c, PERF_SAMPLE_REGS_ABI_32, c.size, names, 8), 0);
	/* No stack at all. */
	n = unwind_names(u, sym, &c, PERF_SAMPLE_REGS_ABI_64, 0, names, UNWIND_MAX_FRAMES);
	assert_true(n <= 1);
	unwinder__stats(u, &st);
	assert_int_equal(st.samples, 3);
	assert_int_equal(st.cut, 3);
	assert_true(st.nr_cuts >= 1);
	unwinder__free(u);
	symbolizer__free(sym);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unwinds_to_main),
		cmocka_unit_test(test_bad_inputs_end_the_chain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
