/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The names and ids spanperf writes into a perf.data, in one place: the
 * recorder writes them and the reader matches them, so neither side may
 * spell them on its own.
 *
 * Sample ids: the kernel hands out ids counting up from 1, so spanperf's own
 * attrs take ids from 2^62 up, where no kernel id reaches.  Each span source
 * has SPAN_ID_BASE + its index (SP_MAX_SPANS of them); the fixed attrs
 * follow.
 */
#ifndef SP_NAMES_H
#define SP_NAMES_H

#include <linux/types.h>

#include "spanperf.h"

/* Span sources: "spanperf:NAME", one attr each, so perf script lists them. */
#define SPAN_ATTR_PREFIX "spanperf:"
/* The span counters' records: counter deltas of a span, by name. */
#define SPAN_COUNTERS_PREFIX "spanperf-counters:"

#define SPAN_ID_BASE (1ull << 62)
#define SPAN_COUNTERS_ID (SPAN_ID_BASE + SP_MAX_SPANS)
/* record --off-cpu's samples, named as perf 6.1 names its own off-CPU event. */
#define OFFCPU_ID (SPAN_ID_BASE + SP_MAX_SPANS + 1)
#define OFFCPU_EVENT_NAME "offcpu-time"
/* OTEP 4719 process context records (record --otel): see otel_pctx.h. */
#define OTEL_PCTX_ID (SPAN_ID_BASE + SP_MAX_SPANS + 2)
#define OTEL_PCTX_ATTR_NAME "spanperf-otel-process"
/*
 * record --off-cpu's wakers (waker_codec.h): who ended each block.  Named as
 * a span source would be, as the issue asked; the id tells them apart from a
 * span source called "waker".
 */
#define OFFCPU_WAKER_ID (SPAN_ID_BASE + SP_MAX_SPANS + 3)
#define OFFCPU_WAKER_EVENT_NAME "spanperf:waker"
/*
 * The OTEP 4947 attribute (keyed through the process context) that names a
 * thread context's span: libspanperf writes it, `report --spans` shows the
 * span under that name.
 */
#define OTEL_SPAN_NAME_KEY "span.name"
/*
 * record --sched (sched_codec.h): every time a thread was off CPU, how it
 * left, and its run-queue account then.  "spanperf-" rather than
 * "spanperf:", so that no reader takes it for a span source.
 */
#define SCHED_ID (SPAN_ID_BASE + SP_MAX_SPANS + 4)
#define SCHED_EVENT_NAME "spanperf-sched"

/*
 * In the reserved half of the sample's CPU field, which perf ignores: this
 * off-CPU sample sums several blocks, so its [time - period, time] is no
 * interval a span can be joined with.
 */
#define OFFCPU_RES_SUM 1

#endif
