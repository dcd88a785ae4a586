/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * spanperf.h: libspanperf, counters and spans inside the application.
 *
 *	cc app.c $(pkg-config --cflags --libs spanperf)
 *
 * A thread counts its own work with perf events (every name `spanperf stat -e`
 * accepts: task-clock, page-faults, cycles, L1-dcache-load-misses, cpu/...,
 * r01c2, ...), and marks spans that every other part of spanperf sees: each
 * span publishes the OpenTelemetry thread context (OTEP 4947,
 * otel_thread_ctx_v1), so a whole-host `spanperf record --otel` finds it with
 * no probe, and the spans can be written as OTLP JSON lines for
 * `spanperf annotate --spans FILE`.  No root and no libbpf: user-only counting
 * works at perf_event_paranoid 2.
 *
 * Errors: constructors return NULL, other calls 0 or a negative errno; after
 * either, spanperf_strerror() gives one sentence naming the event (or the
 * input) and why.  It is per thread and stays until the next failure.
 *
 * COST PATHS.  A read is one group read per call.  Per event, the path is the
 * fastest the kernel offers (spanperf_counters_path() names it):
 *	"rdpmc"	 hardware events where the event's mmap page has
 *		 cap_user_rdpmc: RDPMC and the TSC under the page's seqlock, no
 *		 system call;
 *	"mmap"	 task-clock and cpu-clock where the page has cap_user_time: the
 *		 thread's time from the page and the TSC, no system call;
 *	"read"	 one read(2) of the whole group (PERF_FORMAT_GROUP) otherwise, or
 *		 when any event of the group needs it;
 *	"rusage" context-switches where the kernel refuses a counter that
 *		 includes kernel mode (perf_event_paranoid 2, no CAP_PERFMON):
 *		 getrusage(RUSAGE_THREAD)'s nvcsw + nivcsw, the same switches.
 * Virtual machines often show neither cap_user_rdpmc (no PMU) nor
 * cap_user_time (a paravirtual sched_clock): there every read is "read".
 * With SPANPERF_INHERIT a read is one read(2) per event: group reads of
 * inherited events left the children out on older kernels, a single event's
 * read sums them on all.
 * Multiplexed events (time_running < time_enabled) are scaled by
 * enabled / running; an event that never ran since open makes the read fail
 * (-ENODATA) rather than report 0.
 *
 * ENVIRONMENT.
 *	SPANPERF_EVENTS		the events of spans (default
 *				"task-clock,context-switches,page-faults")
 *	SPANPERF_SPANS=path	export spans as spanperf_spans_export(path) does
 *	OTEL_SERVICE_NAME	service.name of exported spans and of the process
 *				context (default: the program's name)
 *	SPANPERF_PROCESS_CTX=0	publish no OTEP 4719 process context (for a
 *				program that publishes its own)
 *	SPANPERF_NO_USER_READS=1 take the read path even where the kernel
 *				offers user-space reads (for comparisons)
 *
 * THREAD RULES.  A counter handle counts the thread that opened it (perf's
 * pid = 0, cpu = -1), and with SPANPERF_INHERIT also the threads that thread
 * creates afterwards.  Any thread may read a handle, but only one at a time
 * (a handle is not locked) and only the owner takes the no-syscall paths.  In
 * a child made by fork() a handle would count the parent's thread: reads
 * there fail with -ECHILD.  Spans are per thread: begin and end on the same
 * thread, ends in reverse order of begins.
 */
#ifndef SPANPERF_H
#define SPANPERF_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPANPERF_VERSION_MAJOR 0
#define SPANPERF_VERSION_MINOR 1

/* spanperf_counters_open() flags */
#define SPANPERF_KERNEL  (1u << 0) /* count kernel mode too (needs paranoid <= 1 or CAP_PERFMON) */
#define SPANPERF_INHERIT (1u << 1) /* add the threads this thread creates after the open */

#define SPANPERF_MAX_COUNTERS 16
#define SPANPERF_NAME_MAX 128

struct spanperf_counters;

/*
 * spanperf_counters_open - counters of this thread, one perf group
 *	events: comma-separated event names, as `spanperf stat -e` takes them.
 *		Modifiers (:u, :k) win over the flags.  At most 16 events.
 *	flags:	SPANPERF_KERNEL, SPANPERF_INHERIT.
 * Without SPANPERF_KERNEL, what happens in kernel mode on the thread's
 * behalf is left out: page faults the kernel takes on user memory (inside
 * read(2), say) are not counted; task-clock counts all the thread's time.
 * Returns NULL with errno set when any event cannot be counted here (cycles
 * on a machine with no PMU: ENOENT): never a handle that reads zeros.  Events
 * that happen only in the kernel (context-switches, cpu-migrations,
 * tracepoints) are counted kernel-side whatever the flags, since user-only
 * they always read 0.
 * Cost: one perf_event_open(2) and one mmap(2) per event.  Thread: the
 * calling thread is the one counted.
 */
struct spanperf_counters *spanperf_counters_open(const char *events, unsigned flags);

/*
 * spanperf_counters_read - the counts since open, into values[count]
 * Clocks (task-clock, cpu-clock) in nanoseconds.  Scaled when multiplexed.
 * Returns 0 or -errno: -EINVAL (NULL handle or values), -ECHILD (a forked
 * child's copy), -ENODATA (an event never ran), or read(2)'s error.
 * Cost: see COST PATHS; no allocation, no lock.
 */
int spanperf_counters_read(struct spanperf_counters *c, uint64_t *values);

/* Number of events (0 for NULL); no system call. */
int spanperf_counters_count(const struct spanperf_counters *c);

/* The i-th event's name as given ("task-clock", "cycles:u"); NULL out of range. */
const char *spanperf_counters_name(const struct spanperf_counters *c, int i);

/* The i-th event's read path: "rdpmc", "mmap", "read" or "rusage"; NULL out of range. */
const char *spanperf_counters_path(const struct spanperf_counters *c, int i);

/* The i-th event's unit as `spanperf stat` prints it ("msec" for clocks) or "". */
const char *spanperf_counters_unit(const struct spanperf_counters *c, int i);

/* Closes the events and unmaps their pages; NULL is fine.  Any thread. */
void spanperf_counters_close(struct spanperf_counters *c);

/*
 * spanperf_measure - values[] = what fn(arg) cost this thread, in events
 * Opens, reads, runs fn, reads, closes: for one-off measurements (the cost of
 * the open dominates; keep a handle for repeated ones).  0 or -errno.
 */
int spanperf_measure(const char *events, void (*fn)(void *), void *arg, uint64_t *values);

/* One sentence on this thread's last failure ("" if none).  Valid until the next call that fails. */
const char *spanperf_strerror(void);

/* ---- spans ---- */

/* What a span measured, filled by spanperf_span_end(). */
struct spanperf_span {
	char name[SPANPERF_NAME_MAX];
	uint8_t trace_id[16];		/* W3C bytes */
	uint8_t span_id[8];
	uint8_t parent_span_id[8];	/* all zero: a root span */
	uint64_t start_ns, end_ns;	/* CLOCK_MONOTONIC, as spanperf records */
	uint64_t wall_ns;		/* end_ns - start_ns */
	int nr_counters;
	const char *counter_names[SPANPERF_MAX_COUNTERS]; /* valid while the thread lives */
	uint64_t deltas[SPANPERF_MAX_COUNTERS];		  /* counter deltas over the span */
};

/*
 * spanperf_span_begin - begin a span on this thread
 * Publishes it as the thread's OTEP 4947 context: a new random span id, the
 * trace id of the enclosing span (the library's, or one the application
 * published with otel_thread_ctx.h), else a new random one; the name goes
 * into the context as the attribute span.name.  Spans nest (up to 64 deep).
 * The thread's counters are opened at its first span: SPANPERF_EVENTS
 * (default "task-clock,context-switches,page-faults"); if they cannot be
 * opened the span still runs, with no counters, and spanperf_strerror() says
 * why.  Returns 0 or -errno (-EINVAL name NULL, -E2BIG nested too deep).
 * Cost: one counters read and one clock_gettime (vDSO).
 */
int spanperf_span_begin(const char *name);

/*
 * spanperf_span_begin_ids - the same, with the caller's ids (from its tracer)
 * trace_id NULL: inherited as spanperf_span_begin does; span_id NULL: random.
 */
int spanperf_span_begin_ids(const char *name, const uint8_t trace_id[16], const uint8_t span_id[8],
			    uint8_t trace_flags);

/*
 * spanperf_span_end - end this thread's innermost span
 * Restores the context that was published before its begin, fills *out (may
 * be NULL) and, when exporting, appends the span to the file.  Returns 0 or
 * -errno (-ENOENT: no span open on this thread).
 * Cost: one counters read, one clock_gettime, and one write(2) when exporting.
 */
int spanperf_span_end(struct spanperf_span *out);

/*
 * spanperf_span_end_id - the same, only if the innermost span is span_id
 * -ESRCH, and nothing changes, when it is another: for tracers whose spans
 * may end on another thread than they began (the Go SpanProcessor).
 */
int spanperf_span_end_id(const uint8_t span_id[8], struct spanperf_span *out);

/*
 * spanperf_spans_export - write every span as it ends to path
 * One OTLP JSON ExportTraceServiceRequest per line (what the Collector's file
 * exporter writes), appended with one write(2) per span so that threads and
 * processes can share the file.  Counter deltas are attributes named as
 * `spanperf report --format otlp-json` names them: perf.task_clock_ms,
 * perf.context_switches, perf.page_faults, ... (perf. + the event name with
 * '-' as '_', clocks in ms); thread.id, process.pid and service.name
 * (OTEL_SERVICE_NAME, else the program's name) locate them for annotate.
 * path NULL stops exporting.  SPANPERF_SPANS=path in the environment does the
 * same at the first span.  Returns 0 or -errno.
 */
int spanperf_spans_export(const char *path);

#ifdef __cplusplus
}
#endif

#endif /* SPANPERF_H */
