/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Spans in a perf.data file.  Each span source is an attr named
 * "spanperf:NAME" with the id SPAN_ID_BASE + its index, so that perf script
 * lists spans beside the samples; one more attr, "spanperf-counters:A,B",
 * names what each span's counters[k] are and never has records.  A span is a
 * SAMPLE of its attr (time = end, period = duration) with the span in RAW.
 *
 * BPF's struct sp_span is the kernel ABI and may change with the programs;
 * the RAW payload is this module's own layout, versioned, so that files stay
 * readable.  Files from before the version field hold a bare struct sp_span.
 */
#ifndef SP_SPAN_CODEC_H
#define SP_SPAN_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/perf_event.h>
#include <linux/types.h>

#include "names.h"
#include "perf_data.h"
#include "spanperf_abi.h"


#define SPAN_REC_MAGIC 0x4e505353u /* "SSPN" in a little-endian file */
/*
 * 3: the split of the span's wall time (struct span_sched) after the attributes;
 * 2: otel spans carry their OTEP 4947 attributes (attrs_size, attrs); 1: up to span_id.
 */
#define SPAN_REC_VERSION 3
#define SPAN_ATTRS_MAX 612 /* OTEP 4947: a record of at most 640 bytes, 28 of them the header */

#define SPAN_HAS_CONTEXT 2 /* flags: trace_id and span_id are set (SP_SPAN_UNFINISHED is 1) */
/*
 * flags: the span's edges are where samples (or switches) saw its context
 * begin and end, not the moments it did: each is late by up to a sample
 * period, less where a switch stamped it (otel spans).
 */
#define SPAN_EDGES_SAMPLED 4
/* flags: its thread left the CPU in it, and its end is no earlier than its return (a switch's stamp). */
#define SPAN_END_AT_SWITCH 8
/*
 * flags: counters[] were not measured (an OTel context whose publisher left
 * no counter deltas at its end): the span shows none rather than zeros.
 */
#define SPAN_NO_COUNTERS 16

/*
 * Where the span's wall time went, from the thread's scheduler accounts
 * (bpf/spans.bpf.c): CPU time, run-queue wait, time in D.  The rest of the
 * wall time is asleep.  how 0: not recorded (otel and external spans, older
 * files).
 */
struct span_sched {
	__u64 on_ns, runq_ns, blocked_ns;
	__u32 how; /* enum sp_sched_how */
	__u32 pad;
};

/* The RAW payload, version 2, host byte order; `size` says how much of it a record holds. */
struct span_rec {
	__u32 magic;
	__u16 version;
	__u16 size; /* bytes written: a reader takes what it knows, zeroes the rest */
	__u64 start_ns, end_ns; /* CLOCK_MONOTONIC */
	__u64 ip;		/* the probed function, 0 for tracepoints */
	__u64 samples;		/* the thread's samples inside, counted in BPF */
	__u64 counters[SP_MAX_COUNTERS];
	__u32 pid, tid, cpu;
	__u16 idx;    /* which span source (attr) */
	__u8 depth;
	__u8 flags;   /* SP_SPAN_UNFINISHED, SPAN_HAS_CONTEXT, SPAN_EDGES_SAMPLED, SPAN_END_AT_SWITCH, SPAN_NO_COUNTERS */
	__u8 source;  /* enum sp_span_source */
	__u8 pad[7];
	__u8 trace_id[16], span_id[8]; /* W3C trace context, when SPAN_HAS_CONTEXT */
	/*
	 * Version 2: the attributes the process published with the context,
	 * { u8 key_index, u8 len, u8 val[len] }..., as it wrote them.  Records
	 * end after attrs[attrs_size], so spans without any stay small.
	 */
	__u16 attrs_size;
	__u8 attrs[SPAN_ATTRS_MAX];
	/*
	 * Version 3: in the file right after attrs[attrs_size], when how is
	 * set (size says), so that version 2 readers take the record as one
	 * with trailing bytes they do not know.
	 */
	struct span_sched sched;
};

/* The bytes of r up to its last attribute: what r->size should be. */
#define SPAN_REC_SIZE(attrs_size) (offsetof(struct span_rec, attrs) + (attrs_size))
#define SPAN_REC_V1_SIZE offsetof(struct span_rec, attrs_size)

/* The attr every span source shares. */
void span_codec_attr(struct perf_event_attr *a);
/* "spanperf:NAME" into buf; -ENAMETOOLONG if it does not fit. */
int span_codec_attr_name(char *buf, size_t len, const char *name);

/* How a span was marked, as the JSON rows' "source" names it: "uprobe", "syscall"... */
const char *span_source_name(int source);

void span_rec_from_bpf(struct span_rec *r, const struct sp_span *sp);
/* The split BPF measured (deltas of struct sp_sched_split). */
void span_rec_set_sched(struct span_rec *r, const struct sp_sched_split *sched);
/* The SAMPLE record of a span; its size, or -ENOSPC/-EINVAL. */
long span_codec_write(void *buf, size_t bufsz, const struct perf_event_attr *attr, const struct span_rec *r);
/*
 * The same, stamped `time` (not before the end) rather than at the end: for
 * spans known to have ended only later, which perf, sorting records in
 * rounds, would find out of order behind the rounds it has flushed.  The
 * span's own start and end stay exact in RAW.
 */
long span_codec_write_at(void *buf, size_t bufsz, const struct perf_event_attr *attr, const struct span_rec *r,
			 __u64 time);

/* The span source's name if a is a span attr, else NULL. */
const char *span_codec_name(const struct pd_attr *a);
bool span_codec_is_counters(const struct pd_attr *a);
/* The counter names a counters attr lists, strdup'd into names; how many, or -ENOMEM. */
int span_codec_counter_names(const struct pd_attr *a, char **names, int max);
/*
 * A span sample's RAW into out: 0, or -EINVAL when it holds no span this
 * reader knows (or one that ends before it starts).  Attributes that claim more bytes than the record holds are
 * dropped (attrs_size 0), the span kept.
 */
int span_codec_decode(const struct pd_sample *s, struct span_rec *out);

#endif
