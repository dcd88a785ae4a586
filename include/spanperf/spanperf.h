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
/*
 * Open what this machine can count and leave the rest out (read as 0, named by
 * spanperf_counters_counted/why), instead of failing the whole handle.
 * Spans always open their events this way.
 */
#define SPANPERF_SKIP_UNCOUNTABLE (1u << 2)

#define SPANPERF_MAX_COUNTERS 16
#define SPANPERF_NAME_MAX 128

struct spanperf_counters;

/*
 * spanperf_counters_open - counters of this thread, one perf group
 *	events: comma-separated event names, as `spanperf stat -e` takes them.
 *		Modifiers (:u, :k) win over the flags.  At most 16 events.
 *	flags:	SPANPERF_KERNEL, SPANPERF_INHERIT, SPANPERF_SKIP_UNCOUNTABLE.
 * Without SPANPERF_KERNEL, what happens in kernel mode on the thread's
 * behalf is left out: page faults the kernel takes on user memory (inside
 * read(2), say) are not counted; task-clock counts all the thread's time.
 * Returns NULL with errno set when any event cannot be counted here (cycles
 * on a machine with no PMU: ENOENT): never a handle that reads zeros, unless
 * SPANPERF_SKIP_UNCOUNTABLE asks to keep what can be counted.  Events
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

/*
 * spanperf_counters_open_target - the same, counting another target
 *	pid, cpu: as perf_event_open(2) takes them.  pid 0 is the calling thread,
 *	pid > 0 another thread (its tid) or process, pid -1 with cpu >= 0 every
 *	thread on that CPU; cpu -1 any CPU.
 * perf's permission rules apply: another process needs the right to ptrace it
 * (same user, or CAP_PERFMON / CAP_SYS_PTRACE) and perf_event_paranoid <= 2;
 * a whole CPU needs CAP_PERFMON or paranoid <= 0.  A refusal is an error even
 * with SPANPERF_SKIP_UNCOUNTABLE (it would refuse every event).  A target's
 * reads are always read(2); getrusage cannot stand in for context-switches.
 */
struct spanperf_counters *spanperf_counters_open_target(const char *events, unsigned flags, int pid, int cpu);

/*
 * One event's reading with its times (perf's read_format TOTAL_TIME_ENABLED
 * and _RUNNING): value is raw scaled by time_enabled / time_running when the
 * event was multiplexed.  Times are 0 for context-switches read from getrusage
 * and for events left out.
 */
struct spanperf_value {
	uint64_t value;
	uint64_t raw;
	uint64_t time_enabled;
	uint64_t time_running;
};

/* spanperf_counters_read with the times: out[count].  Same errors and cost. */
int spanperf_counters_read_values(struct spanperf_counters *c, struct spanperf_value *out);

/*
 * spanperf_counters_enable / disable / reset - the whole group at once
 * (PERF_EVENT_IOC_* with PERF_IOC_FLAG_GROUP).  Handles open enabled.  A
 * disabled handle's counts stand still; reset sets the counts (not the times)
 * to 0.  0 or -errno.  Cost: one ioctl(2) (one per event with INHERIT).
 */
int spanperf_counters_enable(struct spanperf_counters *c);
int spanperf_counters_disable(struct spanperf_counters *c);
int spanperf_counters_reset(struct spanperf_counters *c);

/* 1 if the i-th event is counted, 0 if SPANPERF_SKIP_UNCOUNTABLE left it out, -1 out of range. */
int spanperf_counters_counted(const struct spanperf_counters *c, int i);

/* Why the i-th event is left out, one sentence ("" when counted; NULL out of range). */
const char *spanperf_counters_why(const struct spanperf_counters *c, int i);

/* Number of events (0 for NULL); no system call. */
int spanperf_counters_count(const struct spanperf_counters *c);

/* The i-th event's name as given ("task-clock", "cycles:u"); NULL out of range. */
const char *spanperf_counters_name(const struct spanperf_counters *c, int i);

/* The i-th event's read path: "rdpmc", "mmap", "read", "rusage" or "none" (left out); NULL out of range. */
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

/*
 * One sentence on this thread's last failure ("" if none).  It stays until the
 * next call that fails (or falls back: spanperf_probe_cycles returning 1, an
 * event left out by SPANPERF_SKIP_UNCOUNTABLE); calls that succeed leave it.
 */
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
	/* Events of the span's list this machine cannot count (no PMU, refused), left out of the above. */
	int nr_unavailable;
	const char *unavailable[SPANPERF_MAX_COUNTERS];	    /* their names, valid while the thread lives */
	const char *unavailable_why[SPANPERF_MAX_COUNTERS]; /* one sentence each, likewise */
};

/*
 * spanperf_span_begin - begin a span on this thread
 * Publishes it as the thread's OTEP 4947 context: a new random span id, the
 * trace id of the enclosing span (the library's, or one the application
 * published with otel_thread_ctx.h), else a new random one; the name goes
 * into the context as the attribute span.name, and the enclosing span's id
 * (hex) as span.parent_id, so a recording shows the nesting.  Spans nest (up
 * to 64 deep).
 * The thread's counters are opened at its first span: SPANPERF_EVENTS
 * (default "task-clock,context-switches,page-faults"), with
 * SPANPERF_SKIP_UNCOUNTABLE: an event this machine cannot count is left out
 * and named in the span's unavailable[], the others are counted.  If none can
 * be opened the span still runs, with no counters, and spanperf_strerror()
 * says why.  Returns 0 or -errno (-EINVAL name NULL, -E2BIG nested too deep).
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
 * spanperf_span_begin_events - the same, counting events instead of SPANPERF_EVENTS
 * (perfevents' per-span tag: "cpu-cycles,cache-misses").  NULL or "": the
 * default.  Each thread keeps a handle per event list (8 lists; the least
 * recently used one no open span holds makes room), opened at first use.
 */
int spanperf_span_begin_events(const char *name, const char *events);

/* Both: the caller's ids and its own events. */
int spanperf_span_begin_events_ids(const char *name, const char *events, const uint8_t trace_id[16],
				   const uint8_t span_id[8], uint8_t trace_flags);

/*
 * spanperf_span_end - end this thread's innermost span
 * Writes the span's counter deltas into its published context as the
 * attribute spanperf.counters ("task-clock=1234,context-switches=2"; in the
 * records of its children that ended inside it too, "@<span id>:..."), where
 * `spanperf record --otel` reads them as it sees the context end, then
 * restores the context that was published before its begin, fills *out (may
 * be NULL) and, when exporting, appends the span to the file.  Returns 0 or
 * -errno (-ENOENT: no span open on this thread).
 * Cost: one counters read, one clock_gettime, the deltas formatted once per
 * record written, and one write(2) when exporting.
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

/* ---- samplers: one sampling event per CPU, the caller's BPF program on each ---- */

/*
 * What a sampler samples.  Fill it with spanperf_probe_cycles() or
 * spanperf_sampler_spec_event(), or by hand; cpus NULL means every online CPU.
 */
struct spanperf_sampler_spec {
	char name[SPANPERF_NAME_MAX];	/* "cycles", "cpu-clock", "sched:sched_switch" */
	uint32_t type;			/* PERF_TYPE_* */
	uint64_t config, config1, config2;
	uint64_t sample_period;		/* a frequency in Hz when freq is 1 */
	int freq;
	int exclude_user, exclude_kernel;
	const int *cpus;		/* NULL: the CPUs online at open */
	int nr_cpus;
};

/* spanperf_sampler_open() flags */
#define SPANPERF_DEFERRED_ENABLE (1u << 0) /* leave the events disabled until spanperf_sampler_enable() */

/*
 * spanperf_probe_cycles - a spec for hardware cycles at hz, or cpu-clock where the PMU is missing
 * Returns 0 (cycles), 1 when it fell back to cpu-clock because opening cycles
 * failed with EOPNOTSUPP, ENOENT, ENODEV, EINVAL or EACCES (spanperf_strerror()
 * says why), or -errno for any other error: that is broken kernel state, not
 * a VM, and not papered over.  Cost: one perf_event_open(2) and close(2).
 */
int spanperf_probe_cycles(unsigned hz, struct spanperf_sampler_spec *spec);

/*
 * spanperf_sampler_spec_event - a spec for any event `spanperf record -e` takes
 * (a tracepoint too: "sched:sched_switch", perf-utils' ProfileTracepoint),
 * sampled every period events, or at period Hz when freq.  0 or -errno.
 */
int spanperf_sampler_spec_event(const char *event, uint64_t period, int freq, struct spanperf_sampler_spec *spec);

/*
 * spanperf_sampler_spec_attr - the perf_event_attr spanperf_sampler_open opens,
 * which is also the attr for the perf.data attr section, as `record` writes it
 * (IDENTIFIER, IP, TID, TIME, CPU, PERIOD; CLOCK_MONOTONIC; sample_id_all).
 * attr is a struct perf_event_attr (<linux/perf_event.h>).  0 or -EINVAL.
 */
struct perf_event_attr;
int spanperf_sampler_spec_attr(const struct spanperf_sampler_spec *spec, struct perf_event_attr *attr);

struct spanperf_sampler;

/*
 * spanperf_sampler_open - one event per CPU, bpf_prog_fd attached to each
 *	bpf_prog_fd: a BPF_PROG_TYPE_PERF_EVENT program (or a tracepoint program
 *		for a tracepoint spec), attached with PERF_EVENT_IOC_SET_BPF; -1
 *		for none.
 *	flags:	SPANPERF_DEFERRED_ENABLE.
 * Events open disabled and are enabled only once every program is attached
 * (with SPANPERF_DEFERRED_ENABLE, at spanperf_sampler_enable()).  CPUs that
 * are offline (ESRCH, ENODEV) are skipped; none opened is -ENODEV.  On any
 * failure everything opened so far is closed: NULL leaves no descriptor.
 * Sampling a CPU needs CAP_PERFMON (or perf_event_paranoid <= 0).
 * Cost: one perf_event_open(2) and one ioctl(2) per CPU.
 */
struct spanperf_sampler *spanperf_sampler_open(const struct spanperf_sampler_spec *spec, int bpf_prog_fd,
					       unsigned flags);
int spanperf_sampler_enable(struct spanperf_sampler *s);
int spanperf_sampler_disable(struct spanperf_sampler *s);
/* The events opened, their CPUs and fds (the fds stay the sampler's). */
int spanperf_sampler_count(const struct spanperf_sampler *s);
int spanperf_sampler_cpu(const struct spanperf_sampler *s, int i);
int spanperf_sampler_fd(const struct spanperf_sampler *s, int i);
/* Disables every event, then closes them (which detaches the program); NULL is fine. */
void spanperf_sampler_close(struct spanperf_sampler *s);

#ifdef __cplusplus
}
#endif

#endif /* SPANPERF_H */
