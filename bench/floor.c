// SPDX-License-Identifier: GPL-2.0
/*
 * bench/floor: cpu-clock on every CPU at -F HZ with an empty BPF program,
 * for -d SECONDS or until SIGINT/SIGTERM.  The sample_type carries no call
 * chain, so the kernel walks no stack: this is the cost every BPF sampler
 * pays before it does any work of its own.
 *
 * With -r the program instead reads one word of the interrupted thread's
 * TLS: the floor of any reader of thread context (record --otel).
 *
 * With -t CAT:BEGIN,CAT:END or -u PATH:OFFSET it instead puts empty
 * programs on a tracepoint pair or a uprobe/uretprobe pair: the bare cost
 * that a span's programs add to.
 */
#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "events.h"
#include "host.h"
#include "perf_events.h"
#include "run.h"
#include "util.h"
#include <bpf/libbpf.h>
#include "floor.skel.h"

int main(int argc, char **argv)
{
	struct event_spec ev;
	struct perf_event_attr a;
	struct int_list cpus = {};
	struct floor_bpf *skel = NULL;
	struct pe_set *set = NULL;
	double secs = 5;
	int hz = 999, c, ret = 1;
	char *tp = NULL, *up = NULL;
	bool tls = false;
	struct bpf_link *links[2] = {};

	while ((c = getopt(argc, argv, "F:d:rt:u:")) != -1) {
		if (c == 'F')
			hz = atoi(optarg);
		else if (c == 'd')
			secs = atof(optarg);
		else if (c == 'r')
			tls = true;
		else if (c == 't')
			tp = optarg;
		else if (c == 'u')
			up = optarg;
		else
			return 1;
	}
	if (tp || up) {
		char a[64] = "", b[64] = "", d[64] = "", e[64] = "", path[4096] = "";
		unsigned long off = 0;

		runctl_init();
		skel = floor_bpf__open_and_load();
		if (!skel)
			return 1;
		if (tp && sscanf(tp, "%63[^:]:%63[^,],%63[^:]:%63s", a, b, d, e) == 4) {
			links[0] = bpf_program__attach_tracepoint(skel->progs.floor_tp, a, b);
			links[1] = bpf_program__attach_tracepoint(skel->progs.floor_tp, d, e);
		} else if (up && sscanf(up, "%4095[^:]:%lx", path, &off) == 2) {
			links[0] = bpf_program__attach_uprobe(skel->progs.floor_uprobe, false, -1, path, off);
			links[1] = bpf_program__attach_uprobe(skel->progs.floor_uprobe, true, -1, path, off);
		}
		if (!links[0] || !links[1]) {
			fprintf(stderr, "floor: cannot attach: %s\n", strerror(errno));
			goto cleanup;
		}
		for (__u64 end = now_ns(CLOCK_MONOTONIC) + secs * 1e9;
		     !runctl_stop_requested() && now_ns(CLOCK_MONOTONIC) < end;)
			runctl_wait(NULL, 0, 100);
		ret = 0;
		goto cleanup;
	}
	runctl_init();
	event_cpu_clock(&ev);
	a = ev.attr;
	a.freq = 1;
	a.sample_freq = hz;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	skel = floor_bpf__open_and_load();
	if (!skel || host_online_cpus(&cpus) || pe_set__open(&set, &a, &cpus) ||
	    pe_set__attach(set, tls ? skel->progs.floor_tls : skel->progs.floor_prog) || pe_set__enable(set)) {
		fprintf(stderr, "floor: cannot set up: %s\n", strerror(errno));
		goto cleanup;
	}
	for (__u64 end = now_ns(CLOCK_MONOTONIC) + secs * 1e9;
	     !runctl_stop_requested() && now_ns(CLOCK_MONOTONIC) < end;)
		runctl_wait(NULL, 0, 100);
	ret = 0;
cleanup:
	bpf_link__destroy(links[0]);
	bpf_link__destroy(links[1]);
	pe_set__free(set);
	floor_bpf__destroy(skel);
	int_list_free(&cpus);
	return ret;
}
