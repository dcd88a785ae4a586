// SPDX-License-Identifier: GPL-2.0
#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

uint64_t bpf_percpu_sum_slot(int map_fd, uint32_t slot, uint32_t nslots)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t sum = 0, *vals;
	uint32_t key = 0;

	if (ncpu <= 0 || slot >= nslots)
		return 0;
	/* Per CPU one value of nslots u64s, a multiple of 8 bytes as the kernel lays them out. */
	vals = calloc((size_t)ncpu * nslots, sizeof(*vals));
	if (vals && !bpf_map_lookup_elem(map_fd, &key, vals))
		for (int c = 0; c < ncpu; c++)
			sum += vals[(size_t)c * nslots + slot];
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

/* Room for the verifier's BPF_LOG_STATS lines: a few hundred bytes, with margin for its error lines. */
#define STATS_LOG 65536

/* A figure from the verifier's stats log: the number after key, or -1. */
static long stats_figure(const char *log, const char *key)
{
	const char *p = log ? strstr(log, key) : NULL;

	return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int libbpf_load_skel(struct bpf_object_skeleton *s, const char *what)
{
	struct bpf_program *p;
	char **logs = NULL;
	double t0;
	int e, i = 0, n = 0;

	if (sp_verbose < 2)
		return bpf_object__load_skeleton(s);
	bpf_object__for_each_program(p, *s->obj)
		n++;
	logs = calloc(n ? n : 1, sizeof(*logs));
	/* BPF_LOG_STATS (4) alone: the figures, not the instruction trace, which would cost more than the load. */
	bpf_object__for_each_program(p, *s->obj) {
		if (logs && bpf_program__autoload(p) && (logs[i] = calloc(1, STATS_LOG))) {
			bpf_program__set_log_buf(p, logs[i], STATS_LOG);
			bpf_program__set_log_level(p, 4);
		}
		i++;
	}
	t0 = mono_ms();
	e = bpf_object__load_skeleton(s);
	pr_debug("%s: BPF load %.1f ms%s", what, mono_ms() - t0, e ? " (failed)" : "");
	i = 0;
	bpf_object__for_each_program(p, *s->obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		const char *log = logs ? logs[i++] : NULL, *depth;
		size_t dlen;

		if (!bpf_program__autoload(p) || !log)
			continue;
		/* libbpf prints no log it does not own: the verifier's reason, its last lines, here. */
		if (e && bpf_program__fd(p) < 0 && *log) {
			size_t len = strlen(log);

			pr_debug("%s: program %s: the verifier's log ends:\n%s", what, bpf_program__name(p),
				 log + (len > 2048 ? len - 2048 : 0));
		}
		if (bpf_program__fd(p) < 0 || bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len))
			info.xlated_prog_len = 0;
		/* The frames' bytes, program first then each function: what 6.1 holds to 512 along a chain of calls. */
		depth = log ? strstr(log, "stack depth ") : NULL;
		dlen = depth ? strcspn(depth + 12, "\n") : 0;
		pr_debug("%s: program %s: %ld insns verified, %ld states (peak %ld), %.1f ms in the verifier, %u bytes xlated, stack %.*s",
			 what, bpf_program__name(p), stats_figure(log, "processed "), stats_figure(log, "total_states "),
			 stats_figure(log, "peak_states "), stats_figure(log, "verification time ") / 1e3,
			 info.xlated_prog_len, depth ? (int)dlen : 1, depth ? depth + 12 : "?");
	}
	/* libbpf keeps the pointers only until the load is over. */
	for (i = 0; logs && i < n; i++)
		free(logs[i]);
	free(logs);
	return e;
}
