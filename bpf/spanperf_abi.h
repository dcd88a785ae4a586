/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ABI shared by the BPF programs and user space: map value
 * layouts and limits.  Only __u32/__u64 types, so that both sides agree on
 * the layout without including each other's headers.
 *
 * Named apart from include/spanperf/spanperf.h, the library's public
 * header, which lib/ includes beside this one: when the two shared a name
 * they shared their include guard too, and lib/spans.c, which includes the
 * public header first, got this one (through names.h) empty.
 */
#ifndef SPANPERF_ABI_H
#define SPANPERF_ABI_H

#define SP_COMM_LEN 16

/* -p and -t filters, applied in BPF before a sample reaches perf's ring. */
enum sp_filter_mode {
	SP_FILTER_NONE = 0,
	SP_FILTER_PID = 1, /* match the thread group id (process) */
	SP_FILTER_TID = 2, /* match the thread id */
	/*
	 * record/stat -- CMD: the processes of CMD's tree, by thread group id,
	 * grown at each fork by the target programs of helpers.bpf.h.
	 */
	SP_FILTER_TREE = 3,
};

/* SP_FILTER_TREE: the filter map's values. */
#define SP_TARGET_LIVE 1
/* Its last thread exited: user space deletes it once its records are read (record/target.h). */
#define SP_TARGET_GONE 2

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
	/*
	 * The scheduler split (counters program, with sched_split set): time
	 * asleep (S) and blocked (D) up to the thread's last switch-in, and
	 * the block it is in or last left, settled at its next switch-out
	 * (struct sp_block; out_ts 0: none pending).  run_delay0 is its
	 * sched_info.run_delay when first seen, for stat's run-delay.
	 */
	__u64 slept_ns, blocked_ns;
	__u64 out_ts;	   /* bpf_ktime_get_ns() at the switch-out to S or D */
	__u64 out_rd;	   /* its sched_info.run_delay then */
	__u64 out_sum;	   /* its se.sum_exec_runtime then */
	__u64 run_delay;   /* its sched_info.run_delay at its last switch-out */
	__u64 run_delay0;  /* the same, when first seen */
	__u32 out_state;   /* SP_BLOCK_SLEEP or SP_BLOCK_D */
	__u32 in_span;	   /* spans open on the thread (spans program): only then are its blocks kept */
	/*
	 * The stamp method (split_stamps: a kernel without sched_info, or
	 * forced): the run queue timed from the thread's wakeup, or its
	 * preemption, to its switch-in.  out_ts is then settled at the
	 * wakeup, not at the next switch-out.
	 */
	__u64 runq_ns;	   /* time runnable, waiting for a CPU, up to its last switch-in */
	__u64 wait_ts;	   /* bpf_ktime_get_ns() when it became runnable (0: running or blocked) */
};

/* How a thread left the CPU, for the scheduler split. */
enum sp_block_state {
	SP_BLOCK_SLEEP = 1, /* S, or D with TASK_NOLOAD (idle waits, not blocked work) */
	SP_BLOCK_D = 2,	    /* D: uninterruptible, I/O included */
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
	/*
	 * ts less the incoming thread's se.exec_start, which the pick set to
	 * the runqueue's task clock: what to subtract from bpf_ktime_get_ns()
	 * for this CPU's task clock now (to a few us), as the scheduler's
	 * accounts are kept in it (spans.bpf.c, read_sched).
	 */
	__u64 xoff;
	/*
	 * ts less the runqueue's clock (sched_clock, brought up to date by
	 * the switch), where the runqueue is reachable (0: not): with the
	 * runqueue's own task clock, which every tick and scheduler event on
	 * this CPU brings up to date, the task clock now without the steal
	 * time since the switch that xoff carries (spans.bpf.c, read_sched).
	 * Both clocks run at one rate but for NTP's slew of the first (500
	 * ppm at most: 50 us in 100 ms, and far less as a rule), so it is
	 * taken again only every SP_KOFF_EVERY_NS, at koff_ts: taken at every
	 * switch, it made the switch program 148 ns slower (234 to 382 ns).
	 */
	__u64 koff, koff_ts;
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

/*
 * How a span's wall time was split between on CPU, the run queue and off
 * CPU (struct sp_sched_split.how).
 */
enum sp_sched_how {
	SP_SCHED_NONE = 0,     /* not recorded */
	SP_SCHED_ACCOUNTS = 1, /* se.sum_exec_runtime and sched_info.run_delay (CONFIG_SCHED_INFO) */
	SP_SCHED_STAMPS = 2,   /* old files only: on CPU from switch stamps, run queue unknown */
	/*
	 * Stamps at sched_switch and sched_wakeup (a kernel without sched_info,
	 * or SPANPERF_SCHED_SPLIT=stamps): on CPU from switch-in to switch-out,
	 * the run queue from the wakeup (or a preemption) to the switch-in,
	 * asleep or in D from the switch-out to the wakeup by the state then.
	 */
	SP_SCHED_WAKE_STAMPS = 3,
};

/* A thread's running scheduler totals at a span edge; a span carries their deltas. */
struct sp_sched_split {
	__u64 on_ns;	  /* se.sum_exec_runtime, brought up to the edge */
	__u64 runq_ns;	  /* sched_info.run_delay */
	__u64 blocked_ns; /* time in D, from switch stamps (counters program) */
	__u32 how;	  /* enum sp_sched_how */
	__u32 pad;
};

struct sp_frame {
	__u64 start;
	__u64 ip;
	__u64 samples;
	__u64 counters[SP_MAX_COUNTERS];
	struct sp_sched_split sched;
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

/*
 * What the span ring carries: the span, and the split of its wall time
 * (deltas of struct sp_sched_split).  struct sp_span alone stays the
 * layout of the oldest files.
 */
struct sp_span_ev {
	struct sp_span span;
	struct sp_sched_split sched;
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
	__u32 flags; /* SP_OTEL_* below */
	__u64 rec;   /* the record's address when the context began: read again at its end */
};

/*
 * flags of sp_otel_state.  OFF: the thread left the CPU in this context
 * (read at its switch-out): it runs nothing of its own until it is back, so
 * the context holds up to its switch-in.  SWITCH_END: last_ns is a switch's
 * stamp (out, or in after one), not a sample's.
 */
#define SP_OTEL_OFF 1
#define SP_OTEL_SWITCH_END 2

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
 * by the time it ends).  prev_attrs: the ended context's attributes as its
 * record holds them now, where that record still names it (valid, same
 * span id): its final state, such as the counter deltas libspanperf
 * writes there just before it gives the context up.  Hostile bytes, as
 * the others.
 */
struct sp_otel_event {
	__u64 time;
	struct sp_otel_state prev;
	struct sp_otel_ctx ctx;
	__u32 tid, cpu, pid;
	__u16 attrs_size;
	__u16 prev_attrs_size;
	__u8 attrs[SP_OTEL_ATTRS_MAX];
	__u8 prev_attrs[SP_OTEL_ATTRS_MAX];
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
	SP_STAT_SPLIT_HIDDEN,	  /* a block's end estimated: switches between went untraced */
	SP_STAT_SPLIT_NOWAKE,	  /* stamps: a switch-out to S or D that no wakeup ended (a signal was pending): run queue */
	SP_STAT_WAKER_KSTACK,	  /* a waker whose kernel stack could not be taken */
	SP_STAT_WAKER_USTACK,	  /* a waker whose user stack could not be taken */
	SP_STAT_TARGET_FULL,	  /* -- CMD: a process of CMD's tree not followed: the filter map was full */
	SP_STAT_OTEL_SWITCH_UNREAD, /* otel: a switch-out in a span whose context could not be read: not held through the block */
	SP_STAT_OTEL_HIDDEN_IN,	    /* otel: a thread seen running with its switch-out's mark still set: its switch-in was hidden */
	SP_STAT_MAX,
};

/* ---- off-CPU time (record --off-cpu) ---- */

#define SP_OFFCPU_STACK_DEPTH 127 /* PERF_MAX_STACK_DEPTH: the stack map's value is this many u64 */

/* The off-CPU program's kernel chains (offkstack.bpf.h), counted per CPU in offk_stats. */
enum sp_offk_stat {
	SP_OFFK_HIT,  /* reused: proven the chain the kernel would give */
	SP_OFFK_MISS, /* taken by the kernel, then derived by the rules to be kept */
	SP_OFFK_KEPT, /* of those, derived the same and kept */
	SP_OFFK_MAX,
};

/* Where a wakeup came from (struct sp_waker.ctx). */
enum sp_waker_ctx {
	SP_WAKER_NONE = 0, /* no sched_waking seen for the block */
	SP_WAKER_TASK,	   /* BPF: seen, with the current task's ids and stacks; user space: a thread's */
	SP_WAKER_HARDIRQ,  /* user space, from the kernel stack: an interrupt handler, no thread */
	SP_WAKER_SOFTIRQ,  /* a softirq (ksoftirqd's too): the same */
	SP_WAKER_NMI,
};

/* Who woke a blocked thread, taken at sched_waking in the waker's context. */
struct sp_waker {
	__u64 ts;	      /* bpf_ktime_get_ns() at the waking */
	__s32 kstack, ustack; /* ids in the off-CPU stack map, negative errno when not taken */
	__u32 pid, tid;	      /* 0 for interrupts */
	__u32 ctx;	      /* enum sp_waker_ctx */
	__u32 pad;
	char comm[SP_COMM_LEN];
};

/* Per thread (keyed by TID, never by CPU: a thread may wake elsewhere): how it left. */
struct sp_offcpu_start {
	__u64 ts;	     /* bpf_ktime_get_ns() at the switch-out */
	__s32 kstack, ustack; /* stack map ids, negative errno when not taken */
	__u32 pid;
	__u32 state;	     /* prev_state: 1 interruptible (S), 2 uninterruptible (D) */
	__u32 cpu;	     /* where it blocked: -C filters on it, and samples carry it */
	__u32 pad;
	__u64 run_delay;     /* sched_info.run_delay at the switch-out (--sched), 0 without the account */
	struct sp_waker waker; /* filled by the first sched_waking of the block (--off-cpu's waker program) */
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
	__u64 run_delay; /* as in sp_offcpu_start */
	struct sp_waker waker;
	__u32 flags;	 /* SP_OFFCPU_EV_* */
	__u32 pad;
};

/*
 * sp_offcpu_event.flags: the switch-out's record alone (its spanperf-sched
 * sample), for a block that is summed in BPF (short) or a wait for the CPU.
 */
#define SP_OFFCPU_EV_SCHED_ONLY 1


/* ---- user stacks unwound in BPF from .eh_frame (--call-graph ehframe) ---- */

/* What a pc's row says about its frame. */
enum sp_eh_kind {
	SP_EH_GAP = 0,	/* no CFI covers the pc: frame pointers, if rbp looks like one */
	SP_EH_RSP,	/* CFA = rsp + cfa_off */
	SP_EH_RBP,	/* CFA = rbp + cfa_off */
	SP_EH_PLT,	/* a PLT entry: CFA = rsp + 8, + 8 when (pc & 15) >= cfa_off (its CFA expression) */
	SP_EH_END,	/* the return address is undefined: the outermost frame (_start, clone3) */
	SP_EH_SIGNAL,	/* a signal trampoline (__restore_rt): registers from the ucontext at rsp */
	SP_EH_CANNOT,	/* CFI a row cannot express (a CFA expression, the RA elsewhere): the chain stops */
	SP_EH_TRAMP,	/* BPF only: a -X perf trampoline, CFA = rsp + 16, rbp unchanged, no chain entry */
	SP_EH_RBX,	/* CFA = rbx + cfa_off: ld.so's lazy-binding trampoline (_dl_runtime_resolve_*) */
	SP_EH_RA_RDI,	/* CFA = rsp + cfa_off, the return address in rdi: vfork's, first frame only */
};

/*
 * A row's kind byte: the kind in the low four bits, and in the high four
 * where the frame saved rbx, which SP_EH_RBX frames above it need: 0 where
 * rbx is unchanged, n in 1..14 at CFA - 8 * n, SP_EH_RBX_LOST unknown.
 */
#define SP_EH_KIND(k) ((k) & 15)
#define SP_EH_RBX_SLOT(k) ((__u8)(k) >> 4)
#define SP_EH_RBX_LOST 15

#define SP_EH_RBP_LOST (-128) /* rbp's caller value cannot be found from this frame */

/*
 * One row: from file offset pc up to the next row's.  The return address is
 * at CFA - 8 in every row that has one (others are SP_EH_CANNOT).  rbp was
 * saved at CFA + 8 * rbp (0: rbp is unchanged, SP_EH_RBP_LOST: unknown).
 */
struct sp_eh_row {
	__u32 pc;
	__u8 kind;
	__s8 rbp;
	__u16 cfa_off;
};

/* The `eh_files` key: the file as the kernel knows it (vm_file's inode). */
struct sp_eh_file_key {
	__u64 dev;	/* the kernel's dev_t (MKDEV: major << 20 | minor), as in /proc/PID/maps */
	__u64 ino;
};

enum sp_eh_file_state {
	SP_EH_FILE_OK = 0,	 /* rows [first, first + nr) of eh_rows (SP_EH_CHUNK_SHIFT) */
	SP_EH_FILE_NOCFI,	 /* no CFI in the file (or none readable): frame pointers */
	SP_EH_FILE_TOO_LARGE,	 /* more rows than the table may hold: frame pointers */
};

/*
 * A file's rows, and its page index: eh_pages[pages + p - page0] holds the
 * number of the file's rows below page p (file offset p << 12) and below
 * page p + 1, for p in [page0, page0 + npages), so that a search looks at
 * one page's rows.
 */
struct sp_eh_page {
	__u32 lo, hi;
};

struct sp_eh_file {
	__u32 first, nr;
	__u32 state;
	__u32 pages, page0, npages;
};

/* What a mapping's code has for unwinding. */
enum sp_eh_table {
	SP_EH_T_ANON = 0,	/* anonymous (JIT): frame pointers */
	SP_EH_T_ROWS,		/* rows [first, first + nr) of eh_rows */
	SP_EH_T_MISSING,	/* a file whose table could not be built (unreadable): frame pointers */
	SP_EH_T_TOO_LARGE,	/* a file with more rows than the table may hold: frame pointers */
	SP_EH_T_NOCFI,		/* a file without CFI: frame pointers */
};

/*
 * One executable mapping of a process.  A process's mappings are a slice of
 * the eh_maps array sorted by start, which user space writes whole and
 * never changes: a new slice replaces it, so BPF never reads one half made.
 */
struct sp_eh_map {
	__u64 start, end;
	__u64 pgoff;	/* the file offset at start, in bytes */
	__u32 first, nr; /* the file's rows */
	__u32 table;	/* enum sp_eh_table */
	__u32 pages, page0, npages; /* its page index (struct sp_eh_file) */
};

/* The `eh_procs` value, keyed by process id. */
struct sp_eh_proc {
	__u64 start_stack; /* mm->start_stack when the slice was made: another after exec or pid reuse */
	__u32 first, nr;   /* its slice of eh_maps */
	__u32 gen;	   /* which slice: never the same twice, where first may be (eh_maps is reused) */
	__u32 pad;
};

#define SP_EH_MAX_FRAMES 127 /* PERF_MAX_STACK_DEPTH */

/*
 * An off-CPU user chain unwound by the tables (record --off-cpu with
 * --call-graph ehframe), the value of `offustacks`: keyed by 31 bits of its
 * 64-bit hash (the next id on a collision), which it keeps to tell.
 */
struct sp_eh_chain {
	__u64 hash;
	__u32 nr;
	__u32 pad;
	__u64 ips[SP_EH_MAX_FRAMES];
};
/*
 * A chain with Python frames stored in offustacks for the first time, from
 * the `offpy_rb` ring: the recorder names its code objects while the process
 * lives, where the block may be written only after it exited.
 */
struct sp_offcpu_pychain {
	__u32 pid, tid;
	__s32 id;
	__u32 pad;
};
#define SP_EH_KEEP_SLOTS 4 /* threads whose last user chain each CPU keeps (bpf/ehkeep.bpf.h) */
#define SP_EH_SEARCH_STEPS 24 /* binary search steps: up to 16M rows in one page or process */
#define SP_EH_PAGE_SHIFT 12
/*
 * eh_rows' chunks (bpf/ehframe.bpf.h): a row's index is its chunk's number
 * << SP_EH_CHUNK_SHIFT | its place there, and a file's rows lie in one chunk.
 * 2M rows (16 MiB) each: the largest files seen are 1.0-1.4M rows (libLLVM,
 * libclang-cpp, rustc's libLLVM); three hold 6M, more than the one 5M array
 * they replace.
 */
#define SP_EH_CHUNK_SHIFT 21
#define SP_EH_CHUNK_ROWS (1u << SP_EH_CHUNK_SHIFT)
#define SP_EH_CHUNKS 3

/* Why a user chain ended, or fell back to frame pointers (the per-CPU `eh_stats` array). */
enum sp_eh_stat {
	SP_EH_CHAINS = 0,	/* user chains walked */
	SP_EH_STOP_END,		/* reached a frame whose return address is undefined: complete */
	SP_EH_STOP_FP_END,	/* a frame-pointer step found rbp 0 or a return address 0 */
	SP_EH_STOP_NOT_EXEC,	/* a return address outside every executable mapping: not kept */
	SP_EH_STOP_READ,	/* the stack could not be read (not resident, or garbage) */
	SP_EH_STOP_DEPTH,	/* SP_EH_MAX_FRAMES reached */
	SP_EH_STOP_CANNOT,	/* a row marked SP_EH_CANNOT */
	SP_EH_STOP_NOT_UP,	/* the CFA did not move up the stack */
	SP_EH_STOP_RBP,		/* the CFA is at rbp, whose value an inner frame lost */
	SP_EH_STOP_STALE,	/* the process's mappings are another image's (exec, pid reuse) and no frame pointer */
	SP_EH_STOP_NO_FP,	/* frame pointers wanted, rbp is not one */
	SP_EH_STOP_UNCHECKED,	/* a return address by frame pointer, its mapping not to be looked up, not after a call */
	SP_EH_FP_ANON,		/* steps by frame pointer: anonymous code (JIT) */
	SP_EH_FP_NO_TABLE,	/* steps by frame pointer: the file's table is not loaded */
	SP_EH_FP_NO_PROC,	/* steps by frame pointer: the process's mappings are not known (yet) */
	SP_EH_FP_TOO_LARGE,	/* steps by frame pointer: the file's table was too large */
	SP_EH_FP_NO_ROW,	/* steps by frame pointer: no row covers the pc */
	SP_EH_FRAMES,		/* user frames written */
	SP_EH_KTHREAD,		/* samples of kernel threads: no user chain */
	SP_EH_COMPAT,		/* samples of 32-bit tasks: no user chain */
	SP_EH_LOST,		/* samples lost: the ring buffer was full */
	SP_EH_VMA_LOOKUP,	/* mappings looked up in the kernel (bpf_find_vma): the process's not known yet */
	SP_EH_USER_NS,		/* with -v: ns spent taking user chains (either way) */
	SP_EH_USER_RUNS,	/* with -v: user chains timed */
	SP_EH_STOP_JAVA,	/* stopped in Java frames (hs_stats says why) */
	SP_EH_FRESH,		/* mappings found among those noted at a new process's exec and mmaps */
	SP_EH_KEPT,		/* chains whose tail was a kept chain's, proven the same (ehkeep.bpf.h) */
	SP_EH_KEPT_FRAMES,	/* frames taken from kept chains (counted in SP_EH_FRAMES too) */
	SP_EH_STAT_MAX,
};

/* ---- CPython frames in user chains (--call-graph ehframe) ---- */

/*
 * A Python frame as BPF writes it into a user chain: a value no address
 * can be (bit 62 set, bit 63 clear: neither a canonical user or kernel
 * address nor one of perf's context markers) that holds the code object
 * (8-byte aligned, below 2^47: 44 bits) and the instruction index plus one
 * (0: before the first instruction).  The recorder turns each into an
 * address of the recording's Python symbol file before the sample is
 * written (user/record/pyframes.c), so no file ever holds these.
 */
#define SP_PY_TAG (1ull << 62)
#define SP_PY_TAG_MASK (3ull << 62)
#define SP_PY_CODE_BITS 44
#define SP_PY_IDX_SHIFT 44
#define SP_PY_IDX_BITS 18
#define SP_PY_IDX_UNKNOWN ((1u << SP_PY_IDX_BITS) - 1) /* an instruction pointer outside its code */

/* How a version's frames are laid out and grouped (struct sp_py_proc.style). */
enum sp_py_style {
	SP_PY_FRAMEOBJ = 1, /* 3.8-3.10: PyFrameObject, each run by a C call of the eval loop of its own */
	SP_PY_IFRAME_ENTRY, /* 3.11: _PyInterpreterFrame; is_entry marks the first frame of a C call */
	SP_PY_IFRAME_SHIM,  /* 3.12+: _PyInterpreterFrame; a shim frame (owner CSTACK) lies below each C call's */
};

/* What the frame's instruction field holds (struct sp_py_proc.instr). */
enum sp_py_instr {
	SP_PY_LASTI_BYTES = 1, /* 3.8/3.9 f_lasti: an int, the offset in bytes (-1: not started) */
	SP_PY_LASTI_UNITS,     /* 3.10 f_lasti: an int, in 2-byte code units */
	SP_PY_INSTR_PTR,       /* 3.11+ prev_instr / instr_ptr: a pointer into the code object's units */
};

/* How the interrupted thread's PyThreadState is found (struct sp_py_proc.tstate). */
enum sp_py_tstate {
	SP_PY_TS_TSD = 1, /* the runtime's pthread key's value in glibc's struct pthread: fsbase + tsd_off */
	SP_PY_TS_TSD2,	  /* a key >= 32: the block pointer at fsbase + tsd_off, the value at block + tsd_off2 */
	SP_PY_TS_LIST,	  /* the interpreter's thread list: the state whose thread_id is the thread pointer */
};

#define SP_PY_EVAL_RANGES 4   /* _PyEval_EvalFrameDefault and its .cold parts */
#define SP_PY_TRAMP_MAX 16    /* the -X perf trampoline's bytes (11 in 3.12 and 3.13) */
#define SP_PY_NONE 0xffffffffu /* an offset the version does not have */

/*
 * Everything the walk needs of one process's CPython, the `py_procs` value
 * keyed by process id; user space reads it from the binary and the process
 * (user/sys/pyfacts.c, user/record/pyprocs.c).  Offsets in bytes.
 */
struct sp_py_proc {
	__u64 start_stack;	/* mm->start_stack when read: another image after exec or pid reuse */
	__u64 eval[SP_PY_EVAL_RANGES][2]; /* the eval loop's code, [start, end) each; end 0: unused */
	__u64 runtime;		/* &_PyRuntime (the thread list's start) */
	__u8 tramp[SP_PY_TRAMP_MAX]; /* -X perf's trampoline template, tramp_len bytes */
	__u32 tramp_len;	/* 0: no trampolines (before 3.12) */
	__u32 style;		/* enum sp_py_style */
	__u32 instr;		/* enum sp_py_instr */
	__u32 tstate;		/* enum sp_py_tstate */
	__u32 tsd_off, tsd_off2;
	/* the thread list */
	__u32 rt_interp_head, is_threads_head, ts_next;
	__u32 ts_match;		/* the field matched: thread_id (== fsbase), or native_thread_id (== tid) */
	__u32 ts_match_tid;	/* 1: ts_match holds the thread id, 0: pthread_self() */
	/* the thread's innermost frame: *(tstate + ts_frame), then *(that + cf_frame) unless SP_PY_NONE */
	__u32 ts_frame, cf_frame;
	__u32 ts_chunk;		/* tstate->datastack_chunk (3.11+), SP_PY_NONE: frames read one by one */
	/* a frame */
	__u32 f_size;		/* bytes read per frame: past every field below */
	__u32 f_prev, f_code, f_instr;
	__u32 f_owner;		/* 3.11+: the owner byte */
	__u32 f_entry;		/* 3.11: is_entry */
	__u32 owner_max;	/* owners above are no frame's */
	__u32 owner_cstack;	/* 3.12+: the shim's owner, SP_PY_NONE before */
	__u32 code_units;	/* 3.11+: where a code object's code units start (PyCode_Type's tp_basicsize) */
	__u32 pad;
};

#define SP_PY_MAX_FRAMES SP_EH_MAX_FRAMES /* Python frames read per chain: the chain holds no more */

/* Why Python walks ended, and what they cost (the per-CPU `py_stats` array). */
enum sp_py_stat {
	SP_PY_CHAINS = 0,	/* user chains of a Python thread (a thread state found) */
	SP_PY_COMPLETE,		/* every frame to the thread's first placed, each eval-loop frame given its own */
	SP_PY_NO_TSTATE,	/* chains of a Python process's thread that has no thread state */
	SP_PY_STOP_TSTATE,	/* the thread state or its first frame could not be read */
	SP_PY_STOP_READ,	/* a frame could not be read */
	SP_PY_STOP_CYCLE,	/* a frame came round again: the chain stops before it */
	SP_PY_STOP_BAD,		/* a frame no interpreter makes (a pointer misaligned or out of range, an owner unknown) */
	SP_PY_STOP_DEPTH,	/* 127 frames in the chain: the rest not read */
	SP_PY_EVAL_ALONE,	/* eval-loop frames for which no Python frames were left: kept as they are */
	SP_PY_LEFT,		/* chains whose native part ended with Python frames not placed at their eval loops */
	SP_PY_FRAMES,		/* Python frames written */
	SP_PY_READS,		/* reads of user memory by the walk */
	SP_PY_WINDOW,		/* frames found in a window read earlier (3.11+ data stacks) */
	SP_PY_TRAMPOLINES,	/* -X perf trampolines crossed */
	SP_PY_STALE,		/* the process's layout was another image's (exec, pid reuse): not walked */
	SP_PY_BY_LIST,		/* thread states found in the interpreter's thread list */
	SP_PY_LIST_MISS,	/* the thread list had no state for the thread (or was too long to search) */
	SP_PY_AFTER,		/* of those, chains whose Python frames left went after a native chain cut short */
	SP_PY_NS,		/* with -v: ns spent reading Python frames */
	SP_PY_STAT_MAX,
};

/*
 * py_stats' one entry per CPU: a count per enum sp_py_stat, so that a
 * walk's end adds all its counts through one map lookup (each inlined
 * lookup is a patch the kernel makes at load, recopying per-insn data).
 */
struct sp_py_counts {
	__u64 n[SP_PY_STAT_MAX];
};

/*
 * ---- HotSpot JVM frames (bpf/hotspot.bpf.h) ----
 *
 * A Java frame in a user chain is one tagged word, rewritten by the
 * recorder into an address of the process's synthetic region (as Python's,
 * user/record/pyframes.c) while the process lives:
 * - compiled code or a stub: bits 60..32 the blob's compile id (low 29
 *   bits; garbage for a stub, which user space tells by the blob), bits
 *   31..0 the pc less the code cache's start; for a return address the pc
 *   less 1, so that "the first PcDesc above it" names both kinds of frame;
 * - interpreted (SP_HS_INTERP): bits 60..44 the bci + 1 (0: unknown),
 *   bits 43..0 the Method* >> 3.
 * Bits 63..62 are 10: no user address (below 2^47), no kernel address
 * and no PERF_CONTEXT marker (11) and no Python entry (01) has them.
 */
#define SP_HS_TAG (2ull << 62)
#define SP_HS_INTERP (1ull << 61)
#define SP_HS_ID_SHIFT 32
#define SP_HS_ID_BITS 29
#define SP_HS_BCI_SHIFT 44
#define SP_HS_BCI_BITS 17
#define SP_HS_METHOD_BITS 44
#define SP_HS_HEAPS 4
#define SP_HS_HDR_MAX 384	/* bytes of a blob's header the walk reads, at most */

struct sp_hs_heap {
	__u64 lo, hi;		/* committed: a blob lies in [lo, hi) */
	__u64 segmap;		/* one byte per segment from lo */
	__u32 log2, pad;
};

/*
 * Everything the walk needs of one JVM, the `hs_procs` value keyed by
 * process id; user space reads it from the process's own tables
 * (user/sys/jvmfacts.c, user/record/pyprocs.c).  Offsets in bytes.
 */
struct sp_hs_proc {
	__u64 start_stack;	/* mm->start_stack when read: another image after exec or pid reuse */
	__u64 cc_lo, cc_hi;	/* the code cache's reservation */
	__u64 interp_lo, interp_hi; /* the template interpreter */
	__u64 ret_lo, ret_hi;	/* its return entries: a frame whose callee returned, its bcp in its slot */
	__u64 call_stub_ret;	/* the one return address into the call stub */
	__u64 lib_lo, lib_hi;	/* libjvm: a blob's name points there */
	struct sp_hs_heap heap[SP_HS_HEAPS];
	__u32 nr_heaps;
	__u32 hb_size;		/* sizeof(HeapBlock): a blob starts this far into its block */
	__u32 hdr_len;		/* bytes of a blob's header read: past every field below */
	__u32 cb_name, cb_size, cb_frame_size, cb_frame_complete;
	__u32 cb_code_begin;	/* a pointer (JDK <= 22), or with code_off an int offset from the blob */
	__u32 cb_code_end;	/* likewise: the end of the instructions */
	__u32 code_off;		/* 1: cb_code_begin/end are int offsets (JDK 23+) */
	__u32 frame_complete_i16; /* CodeBlob::_frame_complete_offset is an int16 (JDK 23+) */
	__u32 nm_compile_id;
	__u32 m_constmethod;	/* Method::_constMethod */
	__u32 cm_size;		/* sizeof(ConstMethod): the bytecodes follow it */
	__u32 cm_code_size;	/* ConstMethod::_code_size (u16) */
	__u32 nm_vep;		/* nmethod's verified entry: a pointer, or with vep_off a u16 from code begin; 0: none */
	__u32 vep_off;		/* 1: nm_vep is an offset from the code's begin (JDK 23+) */
};

/* Why Java frames ended a chain, and what the walk met (the per-CPU `hs_stats` array). */
enum sp_hs_stat {
	SP_HS_CHAINS = 0,	/* user chains of a JVM's threads that met the code cache */
	SP_HS_COMPILED,		/* compiled frames (and stubs with a frame) written */
	SP_HS_INTERPRETED,	/* interpreted frames written */
	SP_HS_CALL_STUB,	/* call stubs crossed back into libjvm */
	SP_HS_STOP_NO_BLOB,	/* stopped: a pc in a free segment, outside every heap, or past the hops */
	SP_HS_STOP_BAD_BLOB,	/* stopped: a header that is no blob's (name outside libjvm, pc outside it) */
	SP_HS_STOP_PROLOGUE,	/* stopped: the top frame in a prologue (its frame not whole) */
	SP_HS_STOP_STUB,	/* stopped: a stub without a frame other than the call stub */
	SP_HS_STOP_INTERP_TOP,	/* stopped: the top interpreted frame not sure (bcp register not in its method) */
	SP_HS_STOP_INTERP,	/* stopped: an interpreted frame that is no frame (slots out of range) */
	SP_HS_STOP_RA,		/* stopped: a Java frame's return address outside the code cache */
	SP_HS_STOP_READ,	/* stopped: memory of the walk unreadable */
	SP_HS_STALE,		/* the process's JVM entry was another image's: not walked */
	SP_HS_READS,		/* reads of user memory by the Java steps */
	SP_HS_INTERP_SLOT,	/* top frames in the interpreter's return entries, their bcp from their slot */
	SP_HS_PROLOGUE,		/* top frames in a compiled method's prologue, unwound by its decoded steps */
	SP_HS_STAT_MAX,
};

/* hs_stats' one entry per CPU, as sp_py_counts: a count per enum sp_hs_stat. */
struct sp_hs_counts {
	__u64 n[SP_HS_STAT_MAX];
};

/* Kernel chains of samples in kernel mode (bpf/kstack.bpf.h's ks_stats), per CPU. */
enum sp_ks_stat {
	SP_KS_HERE = 0,	 /* unwound in BPF by the kernel's ORC rules */
	SP_KS_WALKED,	 /* walked by the kernel (bpf_get_stack) */
	SP_KS_CHECK_BAD, /* tests (SPANPERF_KSTACK_CHECK): chains unwound in BPF unlike the kernel's: never expected */
	SP_KS_STAT_MAX,
};

#endif /* SPANPERF_ABI_H */
