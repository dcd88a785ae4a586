// SPDX-License-Identifier: GPL-2.0
#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "libbpf_setup.h"
#include "log.h"

static bool quiet;

static int print_fn(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (quiet || sp_verbose < 1 || (level == LIBBPF_DEBUG && sp_verbose < 2))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void libbpf_setup_init(void)
{
	libbpf_set_print(print_fn);
}

void libbpf_setup_quiet(bool q)
{
	quiet = q;
}

const char *libbpf_explain(int err)
{
	switch (err < 0 ? -err : err) {
	case EPERM:
		return "permission denied: run as root, or with CAP_BPF and CAP_PERFMON";
	case EACCES:
		/*
		 * The verifier's refusal (a program too complex for this kernel:
		 * 6.1's 512-byte combined stack, its instruction budget) as often
		 * as a permission: say both, and where the verifier's log is.
		 */
		return "refused by this kernel's verifier (its log is under -v), or permission denied (run as root, or with CAP_BPF and CAP_PERFMON)";
	case ENOENT:
		return "the kernel lacks the function, tracepoint or feature asked for";
	case EOPNOTSUPP:
		return "the kernel does not support this kind of program or attach";
	case E2BIG:
		return "a map or program is larger than the kernel allows";
	case ENOMEM:
		return "out of memory (a map too large for the memlock or memcg limit?)";
	case EINVAL:
		return "the kernel rejected an argument (too old a kernel?)";
	default:
		return "see -v for libbpf's own messages";
	}
}

uint64_t bpf_percpu_sum(int map_fd, uint32_t key)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t sum = 0, *vals;

	if (ncpu <= 0)
		return 0;
	vals = calloc(ncpu, sizeof(*vals));
	if (vals && !bpf_map_lookup_elem(map_fd, &key, vals))
		for (int c = 0; c < ncpu; c++)
			sum += vals[c];
	free(vals);
	return sum;
}

int bpf_map_mark(int map_fd, const int *keys, int n, uint32_t below)
{
	for (int i = 0; i < n; i++) {
		__u32 key = keys[i];
		__u8 one = 1;

		if ((!below || key < below) && bpf_map_update_elem(map_fd, &key, &one, BPF_ANY))
			return -errno;
	}
	return 0;
}

int bpf_ring_open(struct ring_buffer **out, int map_fd, ring_buffer_sample_fn fn, void *ctx, const char *what,
		  char *err, size_t errlen)
{
	*out = ring_buffer__new(map_fd, fn, ctx, NULL);
	if (!*out)
		return set_errorf(err, errlen, -errno, "cannot read the %s: %s", what, strerror(errno));
	return 0;
}
