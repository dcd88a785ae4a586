// SPDX-License-Identifier: GPL-2.0
/*
 * libspanperf's read and span costs against raw read(2) of the same perf
 * group and PAPI_read of the same events, round-robin in one process so that
 * a noisy machine moves every side of a ratio together.  Prints one JSON
 * object: ns per call for each case and round, the path each event took, and
 * PAPI's word where it cannot count.
 *
 * Many short rounds (default 101 of 2000 calls per case), the cases in a new
 * order each round: a burst of someone else's load lands on every case alike.
 *
 *	bench_lib [ROUNDS [CALLS]]
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#ifdef HAVE_PAPI
#include <papi.h>
#endif

#include "spanperf/spanperf.h"

#define GROUP "task-clock,context-switches,page-faults"
#define NCASES 11
#define MAX_CALLS 100000

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The group as a careful caller of perf_event_open would make it: what spanperf_counters_read costs against. */
static int raw_group(const uint64_t *configs, int n, int *fds)
{
	for (int i = 0; i < n; i++) {
		struct perf_event_attr a = { .size = sizeof(a), .type = PERF_TYPE_SOFTWARE, .config = configs[i] };

		a.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
		/* The same attrs the library chose for this user: what may count kernel-side does. */
		a.exclude_kernel = configs[i] != PERF_COUNT_SW_CONTEXT_SWITCHES || geteuid() != 0;
		a.exclude_hv = a.exclude_kernel;
		fds[i] = (int)syscall(SYS_perf_event_open, &a, 0, -1, i ? fds[0] : -1, PERF_FLAG_FD_CLOEXEC);
		if (fds[i] < 0) {
			if (configs[i] == PERF_COUNT_SW_CONTEXT_SWITCHES) {
				/* paranoid 2: like the library, count it user-only would read 0; leave it out */
				fds[i] = -1;
				continue;
			}
			return -errno;
		}
	}
	return 0;
}

struct bench {
	struct spanperf_counters *grp, *tc;
	int raw_fds[3], raw_tc;
	uint64_t buf[16];
#ifdef HAVE_PAPI
	int papi_set;
	long long papi_vals[3];
#endif
	bool papi_ok;
	struct spanperf_sampler_spec spec; /* cycles, else cpu-clock: a sampler on every CPU (root) */
	bool sampler_ok;
	struct spanperf_value vals[16];
	double diff[MAX_CALLS];
	char papi_why[1400];
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double run_case(struct bench *b, int k, long calls)
{
	uint64_t v[16], t0 = now_ns();
	long i;

	switch (k) {
	case 0: /* spanperf_counters_read, three events */
		for (i = 0; i < calls; i++)
			spanperf_counters_read(b->grp, v);
		break;
	case 1: /* read(2) of the same group */
		for (i = 0; i < calls; i++)
			if (read(b->raw_fds[0], b->buf, sizeof(b->buf)) < 0)
				abort();
		break;
	case 2: /* PAPI_read of the same events */
#ifdef HAVE_PAPI
		if (!b->papi_ok)
			return -1;
		for (i = 0; i < calls; i++)
			PAPI_read(b->papi_set, b->papi_vals);
		break;
#else
		return -1;
#endif
	case 3: /* task-clock alone through the library */
		for (i = 0; i < calls; i++)
			spanperf_counters_read(b->tc, v);
		break;
	case 4: /* task-clock alone, read(2) */
		for (i = 0; i < calls; i++)
			if (read(b->raw_tc, b->buf, sizeof(b->buf)) < 0)
				abort();
		break;
	case 5: /* a span: begin + end with the three counters, not exported */
		for (i = 0; i < calls; i++) {
			spanperf_span_begin("bench");
			spanperf_span_end(NULL);
		}
		break;
	case 6: /* clock_gettime: the vDSO floor */
		for (i = 0; i < calls; i++)
			now_ns();
		break;
	case 7: /* getppid: the syscall floor */
		for (i = 0; i < calls; i++)
			syscall(SYS_getppid);
		break;
	case 8: /*
		 * A span beyond two reads, call by call: two reads, then a span, timed
		 * back to back, so that a burst of load lands on both; the median of the
		 * per-call differences.
		 */
		for (i = 0; i < calls && i < MAX_CALLS; i++) {
			uint64_t t1, t2;

			t0 = now_ns();
			spanperf_counters_read(b->grp, v);
			spanperf_counters_read(b->grp, v);
			t1 = now_ns();
			spanperf_span_begin("bench");
			spanperf_span_end(NULL);
			t2 = now_ns();
			b->diff[i] = (double)(t2 - t1) - (double)(t1 - t0);
		}
		qsort(b->diff, (size_t)i, sizeof(double), cmp_double);
		return b->diff[i / 2];
	case 9: /* a sampler on every CPU opened and closed, no program (perfevent's OpenAll + Close) */
		if (!b->sampler_ok)
			return -1;
		calls = calls / 20 ? calls / 20 : 1;
		for (i = 0; i < calls; i++)
			spanperf_sampler_close(spanperf_sampler_open(&b->spec, -1, SPANPERF_DEFERRED_ENABLE));
		break;
	case 10: /* the group read with its times (perf-utils' profiles) */
		for (i = 0; i < calls; i++)
			spanperf_counters_read_values(b->grp, b->vals);
		break;
	}
	return (double)(now_ns() - t0) / (double)calls;
}

static const char *const case_names[NCASES] = {
	"spanperf_read_3", "raw_read_3", "papi_read_3", "spanperf_read_task_clock",
	"raw_read_task_clock", "span_begin_end_3", "clock_gettime", "getppid", "span_beyond_two_reads",
	"sampler_open_close", "read_values_3",
};

static void setup_papi(struct bench *b)
{
#ifdef HAVE_PAPI
	static const char *const names[] = { "perf::TASK-CLOCK", "perf::CONTEXT-SWITCHES", "perf::PAGE-FAULTS" };
	int r = PAPI_library_init(PAPI_VER_CURRENT), cid;
	const PAPI_component_info_t *ci;

	if (r != PAPI_VER_CURRENT) {
		snprintf(b->papi_why, sizeof(b->papi_why), "PAPI_library_init: %s", PAPI_strerror(r));
		return;
	}
	cid = PAPI_get_component_index("perf_event");
	ci = cid >= 0 ? PAPI_get_component_info(cid) : NULL;
	if (!ci || ci->disabled) {
		snprintf(b->papi_why, sizeof(b->papi_why), "PAPI's perf_event component is disabled: %s",
			 ci ? ci->disabled_reason : "not compiled in");
		return;
	}
	b->papi_set = PAPI_NULL;
	if ((r = PAPI_create_eventset(&b->papi_set)) != PAPI_OK) {
		snprintf(b->papi_why, sizeof(b->papi_why), "PAPI_create_eventset: %s", PAPI_strerror(r));
		return;
	}
	for (int i = 0; i < 3; i++)
		if ((r = PAPI_add_named_event(b->papi_set, names[i])) != PAPI_OK) {
			snprintf(b->papi_why, sizeof(b->papi_why), "PAPI_add_named_event(%s): %s", names[i],
				 PAPI_strerror(r));
			return;
		}
	if ((r = PAPI_start(b->papi_set)) != PAPI_OK) {
		snprintf(b->papi_why, sizeof(b->papi_why), "PAPI_start: %s", PAPI_strerror(r));
		return;
	}
	b->papi_ok = true;
#else
	snprintf(b->papi_why, sizeof(b->papi_why), "built without papi.h (libpapi-dev)");
#endif
}

int main(int argc, char **argv)
{
	static const uint64_t cfg3[] = { PERF_COUNT_SW_TASK_CLOCK, PERF_COUNT_SW_CONTEXT_SWITCHES,
					 PERF_COUNT_SW_PAGE_FAULTS };
	int rounds = argc > 1 ? atoi(argv[1]) : 101;
	long calls = argc > 2 ? atol(argv[2]) : 2000;
	static double ns[NCASES][1000];
	static struct bench b;
	uint64_t tc_cfg = PERF_COUNT_SW_TASK_CLOCK;

	if (rounds < 1 || rounds > 1000 || calls < 1) {
		fprintf(stderr, "usage: bench_lib [ROUNDS (1-1000) [CALLS]]\n");
		return 1;
	}
	setenv("SPANPERF_EVENTS", GROUP, 1);
	b.grp = spanperf_counters_open(GROUP, 0);
	b.tc = spanperf_counters_open("task-clock", 0);
	if (!b.grp || !b.tc) {
		fprintf(stderr, "bench_lib: %s\n", spanperf_strerror());
		return 1;
	}
	if (raw_group(cfg3, 3, b.raw_fds) || raw_group(&tc_cfg, 1, &b.raw_tc)) {
		fprintf(stderr, "bench_lib: perf_event_open: %s\n", strerror(errno));
		return 1;
	}
	setup_papi(&b);
	if (spanperf_probe_cycles(99, &b.spec) >= 0) {
		struct spanperf_sampler *s = spanperf_sampler_open(&b.spec, -1, SPANPERF_DEFERRED_ENABLE);

		b.sampler_ok = s != NULL;
		spanperf_sampler_close(s);
	}
	/* Warm up: the first span opens the thread's counters. */
	for (int k = 0; k < NCASES; k++)
		run_case(&b, k, 1000);
	for (int r = 0; r < rounds; r++) {
		int order[NCASES];

		/* A new order each round: load that comes and goes in step with the loop hits no case more. */
		for (int k = 0; k < NCASES; k++)
			order[k] = k;
		for (int k = NCASES - 1; k > 0; k--) {
			int j = rand() % (k + 1), t = order[k];

			order[k] = order[j];
			order[j] = t;
		}
		for (int k = 0; k < NCASES; k++)
			ns[order[k]][r] = run_case(&b, order[k], calls);
	}

	printf("{\"calls\":%ld,\"rounds\":%d,\"paths\":{", calls, rounds);
	for (int i = 0; i < spanperf_counters_count(b.grp); i++)
		printf("%s\"%s\":\"%s\"", i ? "," : "", spanperf_counters_name(b.grp, i), spanperf_counters_path(b.grp, i));
	printf("},\"task_clock_path\":\"%s\",\"papi\":", spanperf_counters_path(b.tc, 0));
	if (b.papi_ok)
		printf("null");
	else {
		printf("\"");
		for (const char *p = b.papi_why; *p; p++)
			printf(*p == '"' || *p == '\\' ? "\\%c" : "%c", *p);
		printf("\"");
	}
	printf(",\"ns\":{");
	for (int k = 0; k < NCASES; k++) {
		printf("%s\"%s\":[", k ? "," : "", case_names[k]);
		for (int r = 0; r < rounds; r++)
			printf("%s%.1f", r ? "," : "", ns[k][r]);
		printf("]");
	}
	printf("}}\n");
	return 0;
}
