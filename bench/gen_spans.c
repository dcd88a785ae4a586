// SPDX-License-Identifier: GPL-2.0
/*
 * bench/gen_spans FILE SAMPLES SPANS THREADS: a perf.data with that many
 * samples and spans spread over that many threads, for timing the join of
 * `spanperf report --spans` at sizes no recording here would reach.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_data.h"
#include "span_codec.h"
#include "spanperf_abi.h"

int main(int argc, char **argv)
{
	struct perf_event_attr sa = { .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_CPU_CLOCK,
				      .size = sizeof(sa), .sample_id_all = 1, .freq = 1, .sample_freq = 999,
				      .sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
						     PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD };
	struct perf_event_attr pa;
	__u64 sid = 1, pid_ = SPAN_ID_BASE, cid = SPAN_COUNTERS_ID;
	unsigned long ns, nsp, nt;
	struct pd_writer *w;
	char buf[512];

	if (argc != 5)
		return fprintf(stderr, "usage: gen_spans FILE SAMPLES SPANS THREADS\n"), 2;
	ns = strtoul(argv[2], NULL, 10);
	nsp = strtoul(argv[3], NULL, 10);
	nt = strtoul(argv[4], NULL, 10);
	span_codec_attr(&pa);
	if (pd_writer__open(&w, argv[1]) || pd_writer__add_attr(w, &sa, "cpu-clock", &sid, 1) ||
	    pd_writer__add_attr(w, &pa, "spanperf:request", &pid_, 1) ||
	    pd_writer__add_attr(w, &pa, "spanperf-counters:task-clock,context-switches", &cid, 1) ||
	    pd_writer__begin(w))
		return perror("gen_spans"), 1;
	for (unsigned long t = 0; t < nt; t++) {
		struct pd_sideband comm = { .type = PERF_RECORD_COMM, .comm = { 1000 + t, 1000 + t, "worker" },
					    .sample_id = { .id = sid } };
		long n = pd_sideband_write(buf, sizeof(buf), &sa, &comm);

		pd_writer__write(w, buf, n);
	}
	/* Time advances in steps; each thread's samples and spans interleave. */
	for (unsigned long i = 0, j = 0; i < ns || j < nsp;) {
		if (i < ns && (j >= nsp || i * nsp <= j * ns)) {
			struct pd_sample s = { .id = sid, .ip = 0x400000 + (i * 2654435761ul) % 0x10000,
					       .pid = 1000 + i % nt, .tid = 1000 + i % nt, .time = 1000000 + i * 1000,
					       .period = 1001001 };
			long n = pd_sample_write(buf, sizeof(buf), &sa, PERF_RECORD_MISC_USER, &s);

			pd_writer__write(w, buf, n);
			i++;
		} else {
			struct sp_span sp = { .start_ns = 1000000 + j * (ns * 1000 / (nsp ? nsp : 1)),
					      .tid = 1000 + j % nt, .pid = 1000 + j % nt, .source = SP_SRC_UPROBE };
			struct span_rec rec;
			long n;

			sp.end_ns = sp.start_ns + 50000 * nt;
			span_rec_from_bpf(&rec, &sp);
			n = span_codec_write(buf, sizeof(buf), &pa, &rec);
			pd_writer__write(w, buf, n);
			j++;
		}
	}
	if (pd_writer__finish(w, NULL))
		return perror("gen_spans"), 1;
	pd_writer__free(w);
	return 0;
}
