// SPDX-License-Identifier: GPL-2.0
/*
 * Ground truth for the walk's per-CPU rule cache across a library unmapped
 * and another mapped at the same address (test_ehframe's remap test):
 * libremap_a.so (a 200-byte frame) spun in under phase_a for MS/2 of CPU,
 * closed, libremap_b.so (1,000 bytes, its loop at the same offsets) opened
 * in its place, and after a pause (the recorder's slice made again) spun in
 * under phase_b.  A sample in remap_leaf is right only with its phase, then
 * main, below it.
 *
 *   workload_remap MS [LIB...]     prints "same" or "moved" (b's base against a's)
 *
 * Each LIB is opened first, then a pause (the recorder builds their tables
 * before libremap_a.so's): large ones push both libraries' rows past
 * eh_rows' first chunk (test_remap's chunk test).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void (*leaf_fn)(double);

static volatile int sink;

__attribute__((noinline)) void phase_a(leaf_fn leaf, double ms)
{
	leaf(ms);
	sink++; /* not a tail call: phase_a stays on the stack */
}

__attribute__((noinline)) void phase_b(leaf_fn leaf, double ms)
{
	leaf(ms);
	sink++;
}

/* The library beside this program, opened: its handle, its leaf and its base. */
static void *open_lib(const char *name, leaf_fn *leaf, uintptr_t *base)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	struct link_map *lm = NULL;
	void *h;

	if (n <= 0)
		return NULL;
	dir[n] = 0;
	*strrchr(dir, '/') = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm) || !(*leaf = (leaf_fn)dlsym(h, "remap_leaf"))) {
		fprintf(stderr, "workload_remap: %s: %s\n", path, dlerror());
		return NULL;
	}
	*base = lm->l_addr;
	return h;
}

int main(int argc, char **argv)
{
	uintptr_t base_a, base_b;
	leaf_fn leaf;
	double ms;
	void *h;

	if (argc < 2 || (ms = atof(argv[1])) <= 0) {
		fprintf(stderr, "usage: workload_remap MS [LIB...]\n");
		return 1;
	}
	for (int i = 2; i < argc; i++)
		if (!dlopen(argv[i], RTLD_LAZY | RTLD_LOCAL)) {
			fprintf(stderr, "workload_remap: %s\n", dlerror());
			return 1;
		}
	if (argc > 2)
		usleep(500000);
	h = open_lib("libremap_a.so", &leaf, &base_a);
	if (!h)
		return 1;
	phase_a(leaf, ms / 2);
	dlclose(h);
	h = open_lib("libremap_b.so", &leaf, &base_b);
	if (!h)
		return 1;
	/* The recorder reads the new mapping from the side-band and makes the slice again. */
	usleep(500000);
	phase_b(leaf, ms / 2);
	printf("%s\n", base_a == base_b ? "same" : "moved");
	dlclose(h);
	return 0;
}
