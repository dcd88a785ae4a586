/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ABI shared by the BPF programs and user space: map value
 * layouts and limits.  Only __u32/__u64 types, so that both sides agree on
 * the layout without including each other's headers.
 */
#ifndef SPANPERF_H
#define SPANPERF_H

#define SP_COMM_LEN 16

/* -p and -t filters, applied in BPF before a sample reaches perf's ring. */
enum sp_filter_mode {
	SP_FILTER_NONE = 0,
	SP_FILTER_PID = 1, /* match the thread group id (process) */
	SP_FILTER_TID = 2, /* match the thread id */
};

/* Counters per run; the per-thread entries hold this many slots. */
#define SP_MAX_COUNTERS 8
/* Syscall numbers the raw_syscalls fallback of syscall spans can mark. */
#define SP_MAX_SYSCALLS 1024

/*
 * Per-thread counter totals, the value of the `counts` map keyed by TID:
 * the sum of the counters' deltas over the thread's time slices, with the
 * enabled and running times perf uses to scale multiplexed counters.
 */
struct sp_counts {
	__u64 value[SP_MAX_COUNTERS];
	__u64 enabled[SP_MAX_COUNTERS];	/* only for counters read with times */
	__u64 running[SP_MAX_COUNTERS];
	__u64 oncpu_ns;			/* the thread's time on CPU, from switch stamps */
	__u64 switches;			/* time slices ended (switched out) */
	__u64 sum_seen;			/* its se.sum_exec_runtime when oncpu_ns was last added to */
	__u64 cgroup_id;		/* the v2 cgroup it last ran in (stat --serve's label) */
	__u32 pid;
	__u32 pad; /* no hole, as in sp_thread */
	char comm[SP_COMM_LEN];
};

/*
 * How far the scheduler's account of a thread may run past its switch
 * stamps before a run is taken to have gone unclosed (a switch the
 * tracepoint hid): the two differ by a few us a slice anyway.  Used by the
 * counters and spans programs and by counters__read alike.
 */
#define SP_UNCLOSED_NS 50000

/* Per CPU: the counters as they were when the running thread came in. */
struct sp_snap {
	__u64 value[SP_MAX_COUNTERS];
	__u64 enabled[SP_MAX_COUNTERS];
	__u64 running[SP_MAX_COUNTERS];
	__u64 ts;   /* bpf_ktime_get_ns() at the switch */
	__u64 nsw;  /* the thread's nvcsw + nivcsw then: one less than at its next switch-out */
	__u64 sum;  /* the thread's se.sum_exec_runtime then */
	__u32 tid;  /* the thread on this CPU since the snapshot */
	__u32 valid;
};

/* ---- spans ---- */

#define SP_MAX_SPANS 8	 /* --span specs per recording */
#define SP_SPAN_DEPTH 16 /* nested spans kept per thread; deeper ones are counted */

/* How a span reads counter k at its boundaries. */
enum sp_span_ctr {
	SP_CTR_NONE = 0,
	SP_CTR_ONCPU,	 /* task-clock: oncpu_ns plus the open slice */
	SP_CTR_SWITCHES, /* context switches: the switches count */
	SP_CTR_COUNTER,	 /* counts.value[slot] plus the open slice's counter delta */
	SP_CTR_CLOCK,	 /* the same, for a counter of ns: the delta no more than the slice */
};

enum sp_span_source {
	SP_SRC_KPROBE = 1,
	SP_SRC_FENTRY,
	SP_SRC_UPROBE,
	SP_SRC_SYSCALL,
	SP_SRC_TRACEPOINT,
	SP_SRC_EXTERNAL,
	SP_SRC_OTEL, /* OTEP 4947 thread context, read at each sample */
};

#define SP_SPAN_UNFINISHED 1 /* the thread exited inside the span */

struct sp_frame {
	__u64 start;
	__u64 ip;
	__u64 samples;
	__u64 counters[SP_MAX_COUNTERS];
	__u32 idx;
	__u32 pad;
};

/* Per thread (task-local storage): the open spans, innermost last. */
struct sp_stack {
	__u32 depth;   /* may exceed SP_SPAN_DEPTH: the deeper frames are not kept */
	__u32 syscall; /* raw_syscalls spans: the marked syscall in progress, nr + 1 (0: none) */
	struct sp_frame f[SP_SPAN_DEPTH];
};

/* One finished span, from BPF to user space; also the RAW payload in perf.data. */
struct sp_span {
	__u64 start_ns, end_ns; /* CLOCK_MONOTONIC */
	__u64 ip;		/* the probed function, 0 for tracepoints */
	__u64 samples;		/* the thread's samples inside, counted in BPF */
	__u64 counters[SP_MAX_COUNTERS];
	__u32 pid, tid;
	__u32 cpu;
	__u16 idx;		/* which --span */
	__u8 depth;
	__u8 flags;
	__u8 source;		/* enum sp_span_source */
	__u8 pad[7];
};

/* ---- OTEP 4947 thread context ---- */

/*
 * How the sampling program finds a process's otel_thread_ctx_v1 from the
 * interrupted thread's fsbase (x86-64 TLS variant II), the value of the
 * `otel_recipes` map keyed by pid.  User space works it out from the ELF
 * and the process's relocated GOT (user/record/otel_tls.c).
 */
enum sp_otel_kind {
	SP_OTEL_TP = 1,	 /* the variable is at fsbase + off (off < 0: static TLS) */
	SP_OTEL_DTV = 2, /* at dtv[modid].val + off, dtv at fsbase + 8 (glibc's tcbhead_t) */
};

struct sp_otel_recipe {
	__u64 off; /* signed for SP_OTEL_TP */
	__u64 modid;
	__u32 kind;
	__u32 pad;
};

#define SP_OTEL_HEADER 28 /* trace-id 16, span-id 8, valid, flags, attrs size u16 */

/* A thread's published context; all zero: none. */
struct sp_otel_ctx {
	__u64 trace_id[2]; /* the W3C bytes, as published */
	__u64 span_id;
	__u8 flags;
	__u8 pad[7];
};

/* A thread's context as its samples saw it last, since when, and how many samples saw it. */
struct sp_otel_state {
	struct sp_otel_ctx ctx;
	__u64 start_ns, last_ns, samples;
	__u32 pid;
	__u32 pad;
};

/*
 * A thread's otel bookkeeping, inside its `threads` entry: the sampling
 * program looks that entry up for every sample anyway, so a publisher's
 * recipe and context cost no lookup of their own.  The recipe is the
 * otel_recipes entry of `pid` as of `gen` (the program's otel_gen, which
 * user space bumps whenever it changes otel_recipes); kind 0: none.
 */
struct sp_otel_thread {
	struct sp_otel_recipe recipe;
	__u32 gen, pid;
	struct sp_otel_state st;
};

#define SP_OTEL_ATTRS_MAX (640 - SP_OTEL_HEADER) /* a record is at most 640 bytes */

/*
 * A thread's context changed at `time` (bpf_ktime_get_ns), from the
 * `otel_events` ring: the context that ended (`prev`, all zero if none),
 * which user space makes a span, and the one that began with its
 * attribute bytes as published (read here, since the record may be gone
 * by the time it ends).
 */
struct sp_otel_event {
	__u64 time;
	struct sp_otel_state prev;
	struct sp_otel_ctx ctx;
	__u32 tid, cpu, pid;
	__u16 attrs_size;
	__u16 pad;
	__u8 attrs[SP_OTEL_ATTRS_MAX];
};

/*
 * Per-thread totals, the value of the `threads` map keyed by TID.  The
 * sampling program counts samples; the span program reads the count at span
 * boundaries, and record -v lists it.  With --otel it also holds the
 * thread's otel state.
 */
struct sp_thread {
	__u64 samples;
	__u32 pid;
	__u32 pad; /* no hole: BPF copies these from its stack, which must be all written */
	char comm[SP_COMM_LEN];
	struct sp_otel_thread otel;
};

/* Indexes into the per-CPU `stats` array: events user space must report. */
enum sp_stat {
	SP_STAT_FILTERED = 0,	  /* samples dropped by -p/-t */
	SP_STAT_THREADS_FULL,	  /* a new thread found the threads map full */
	SP_STAT_COUNTS_FULL,	  /* a time slice lost: the counts map was full */
	SP_STAT_READ_ERR,	  /* bpf_perf_event_read_value failed */
	SP_STAT_SWITCH_GAP,	  /* switches never traced: the snapshot names another thread, or its switch count moved */
	SP_STAT_SPANS_LOST,	  /* the span ring buffer was full */
	SP_STAT_SPANS_TOO_DEEP,	  /* nested deeper than SP_SPAN_DEPTH */
	SP_STAT_SPANS_UNMATCHED,  /* an end without its begin (or a lost return) */
	SP_STAT_SPANS_SHORT,	  /* dropped by --span-min-us */
	SP_STAT_SPANS_NOSTACK,	  /* task storage busy or full */
	SP_STAT_SPANS_UNFINISHED, /* threads exited inside a span */
	SP_STAT_OTEL_FAULT,	  /* otel: the TLS pointer or the record could not be read */
	SP_STAT_OTEL_INVALID,	  /* otel: the record's valid byte was not 1 (being written) */
	SP_STAT_OTEL_LOST,	  /* otel: the event ring was full */
	SP_STAT_OTEL_ATTRS_BAD,	  /* otel: attrs-data-size past 612 bytes, or attrs unreadable: dropped */
	SP_STAT_OFFCPU_LOST,	  /* an off-CPU block lost: its ring buffer was full */
	SP_STAT_OFFCPU_NOSLOT,	  /* a block not timed: the per-thread start map was full */
	SP_STAT_OFFCPU_AGG_FULL,  /* a short block written alone: the aggregation map was full */
	SP_STAT_OFFCPU_KSTACK,	  /* a block whose kernel stack could not be taken */
	SP_STAT_OFFCPU_USTACK,	  /* a block whose user stack could not be taken */
	SP_STAT_OFFCPU_STALE,	  /* a start that was not this thread's (pid changed): dropped */
	SP_STAT_OFFCPU_UNSEEN,	  /* a thread left again with no switch-in seen, and no run time to end it by: dropped */
	SP_STAT_OFFCPU_HIDDEN,	  /* a thread left again with no switch-in seen: ended by its run time */
	SP_STAT_MAX,
};

/* ---- off-CPU time (record --off-cpu) ---- */

#define SP_OFFCPU_STACK_DEPTH 127 /* PERF_MAX_STACK_DEPTH: the stack map's value is this many u64 */

/* Per thread (keyed by TID, never by CPU: a thread may wake elsewhere): how it left. */
struct sp_offcpu_start {
	__u64 ts;	     /* bpf_ktime_get_ns() at the switch-out */
	__s32 kstack, ustack; /* stack map ids, negative errno when not taken */
	__u32 pid;
	__u32 state;	     /* prev_state: 1 interruptible (S), 2 uninterruptible (D) */
	__u32 cpu;	     /* where it blocked: -C filters on it, and samples carry it */
	__u32 pad;
};

/* Short blocks are summed in BPF per this key, as perf does. */
struct sp_offcpu_key {
	__u32 pid, tid;
	__s32 kstack, ustack;
	__u32 state;
	__u32 pad;
};

struct sp_offcpu_val {
	__u64 ns;
	__u64 count;
};

/* One block at or above the threshold, from BPF to user space at the switch-in. */
struct sp_offcpu_event {
	__u64 end_ns;	/* the switch-in, CLOCK_MONOTONIC */
	__u64 dur_ns;	/* end_ns minus the switch-out */
	__u32 pid, tid;
	__u32 cpu;	/* where it blocked */
	__u32 state;
	__s32 kstack, ustack;
};

#endif /* SPANPERF_H */
