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

#include "spanperf_abi.h"

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
 * Python code objects named by the recorder (py_names.h): one sample per
 * code object, its qualified name, file and line runs in RAW, so that
 * report and live sessions name Python frames from the file alone.
 */
#define PY_NAMES_ID (SPAN_ID_BASE + SP_MAX_SPANS + 5)
#define PY_NAMES_EVENT_NAME "spanperf-python"

/*
 * In the reserved half of the sample's CPU field, which perf ignores: this
 * off-CPU sample sums several blocks, so its [time - period, time] is no
 * interval a span can be joined with.
 */
#define OFFCPU_RES_SUM 1
/*
 * Same half, bits 1-31, in offcpu-time, spanperf:waker and spanperf-sched
 * samples: how many whole microseconds after the block's end the sample is
 * stamped.  A block found rounds late is stamped where perf has not sorted
 * yet (record's offcpu.c); its end is the time less that.  0 for the rest.
 */
#define OFFCPU_RES_LATE_SHIFT 1
#define OFFCPU_RES_LATE_MAX_US (0xffffffffu >> OFFCPU_RES_LATE_SHIFT)
#define OFFCPU_RES_LATE_NS(res) ((__u64)((res) >> OFFCPU_RES_LATE_SHIFT) * 1000)

/*
 * --call-graph ehframe: why user chains ended (enum sp_eh_stat), as the
 * spanperf-private header feature PD_FEAT_SP_UNWIND stores them.  The key
 * is what the file holds, so that a reader of another version matches
 * by name, never by the enum's order; the label is what record -v,
 * report -v and --header-only print.  The two timing counters are not
 * stored: they are of one run of record -v, not of the file.
 */
#define SP_EH_STAT_NAMES(X)                                                                        \
	X(SP_EH_CHAINS, "chains", "user chains")                                                    \
	X(SP_EH_STOP_END, "complete", "complete (reached the outermost frame)")                     \
	X(SP_EH_STOP_FP_END, "fp_end", "ended at a zero frame pointer or return address")           \
	X(SP_EH_STOP_NOT_EXEC, "not_exec", "stopped: return address outside executable mappings")   \
	X(SP_EH_STOP_READ, "read_fault", "stopped: stack unreadable")                               \
	X(SP_EH_STOP_DEPTH, "depth", "stopped: 127 frames")                                         \
	X(SP_EH_STOP_CANNOT, "cannot", "stopped: CFI a row cannot express")                         \
	X(SP_EH_STOP_NOT_UP, "not_up", "stopped: the CFA did not move up")                          \
	X(SP_EH_STOP_RBP, "rbp_lost", "stopped: CFA at rbp, whose value was lost")                  \
	X(SP_EH_STOP_STALE, "stale", "frame pointers: the process's mappings are another image's")  \
	X(SP_EH_STOP_NO_FP, "no_fp", "stopped: no frame pointer where one was needed")              \
	X(SP_EH_STOP_UNCHECKED, "unchecked", "stopped: fp return address unchecked, not after a call")\
	X(SP_EH_FP_ANON, "fp_anon", "frame-pointer steps: anonymous code")                          \
	X(SP_EH_FP_NO_TABLE, "fp_no_table", "frame-pointer steps: file without a table")            \
	X(SP_EH_FP_NO_PROC, "fp_no_proc", "frame-pointer steps: process mappings not known yet")    \
	X(SP_EH_FP_TOO_LARGE, "fp_too_large", "frame-pointer steps: table too large")               \
	X(SP_EH_FP_NO_ROW, "fp_no_row", "frame-pointer steps: no row for the pc")                   \
	X(SP_EH_FRAMES, "frames", "user frames")                                                    \
	X(SP_EH_KTHREAD, "kthread", "kernel-thread samples (no user chain)")                        \
	X(SP_EH_COMPAT, "compat", "32-bit task samples (no user chain)")                            \
	X(SP_EH_LOST, "lost", "samples LOST (ring full)")                                           \
	X(SP_EH_VMA_LOOKUP, "vma_lookup", "mappings looked up in the kernel (process's not known yet)")\
	X(SP_EH_STOP_JAVA, "java_stop", "stopped: in Java frames (see the java_ counts)")          \
	X(SP_EH_FRESH, "fresh_maps", "mappings found among those noted at a new process's exec and mmaps")\
	X(SP_EH_KEPT, "kept", "chains whose tail was the thread's last chain's, proven the same")    \
	X(SP_EH_KEPT_FRAMES, "kept_frames", "frames taken from kept chains")

/*
 * Python frames in those chains (enum sp_py_stat), in the same feature:
 * keys of their own ("py_"), so that a reader that knows none of them
 * prints them as they are.  SP_PY_NS is of one run of record -v.
 */
#define SP_PY_STAT_NAMES(X)                                                                        \
	X(SP_PY_CHAINS, "py_chains", "Python: user chains of threads running Python")               \
	X(SP_PY_COMPLETE, "py_complete", "Python: complete (every frame placed at its eval loop)")  \
	X(SP_PY_NO_TSTATE, "py_no_tstate", "Python: threads with no thread state (not Python's)")   \
	X(SP_PY_STOP_TSTATE, "py_tstate", "Python: stopped: thread state unreadable")               \
	X(SP_PY_STOP_READ, "py_read_fault", "Python: stopped: a frame unreadable")                  \
	X(SP_PY_STOP_CYCLE, "py_cycle", "Python: stopped: a frame came round again")                \
	X(SP_PY_STOP_BAD, "py_bad", "Python: stopped: a frame no interpreter makes")                \
	X(SP_PY_STOP_DEPTH, "py_depth", "Python: stopped: 127 frames")                               \
	X(SP_PY_EVAL_ALONE, "py_eval_alone", "Python: eval-loop frames with no Python frames left") \
	X(SP_PY_LEFT, "py_left", "Python: frames left when the native chain ended")                 \
	X(SP_PY_FRAMES, "py_frames", "Python: frames")                                              \
	X(SP_PY_READS, "py_reads", "Python: reads of user memory")                                  \
	X(SP_PY_WINDOW, "py_window", "Python: frames found in a data-stack window already read")    \
	X(SP_PY_TRAMPOLINES, "py_trampolines", "Python: -X perf trampolines crossed")               \
	X(SP_PY_STALE, "py_stale", "Python: layout of another image (exec, pid reuse): not read")   \
	X(SP_PY_BY_LIST, "py_by_list", "Python: thread states found in the thread list")            \
	X(SP_PY_LIST_MISS, "py_list_miss", "Python: threads the thread list did not name")        \
	X(SP_PY_AFTER, "py_after", "Python: frames left placed after a native chain cut short")

/* HotSpot frames in those chains (enum sp_hs_stat), in the same feature, keys "java_". */
#define SP_HS_STAT_NAMES(X)                                                                        \
	X(SP_HS_CHAINS, "java_chains", "Java: user chains that met a JVM's code cache")             \
	X(SP_HS_COMPILED, "java_compiled", "Java: compiled frames (and stubs with a frame)")        \
	X(SP_HS_INTERPRETED, "java_interpreted", "Java: interpreted frames")                        \
	X(SP_HS_CALL_STUB, "java_call_stub", "Java: call stubs crossed back into the JVM")          \
	X(SP_HS_STOP_NO_BLOB, "java_no_blob", "Java: stopped: a pc in no code blob")                \
	X(SP_HS_STOP_BAD_BLOB, "java_bad_blob", "Java: stopped: a header that is no code blob's")   \
	X(SP_HS_STOP_PROLOGUE, "java_prologue", "Java: stopped: top frame in a prologue")           \
	X(SP_HS_STOP_STUB, "java_stub", "Java: stopped: a stub without a frame")                   \
	X(SP_HS_STOP_INTERP_TOP, "java_interp_top", "Java: stopped: top interpreted frame unsure") \
	X(SP_HS_STOP_INTERP, "java_interp_bad", "Java: stopped: an interpreted frame out of range") \
	X(SP_HS_STOP_RA, "java_ra", "Java: stopped: a return address outside the code cache")      \
	X(SP_HS_STOP_READ, "java_read_fault", "Java: stopped: memory unreadable")                   \
	X(SP_HS_STALE, "java_stale", "Java: entry of another image (exec, pid reuse): not walked")  \
	X(SP_HS_READS, "java_reads", "Java: reads of user memory")                                  \
	X(SP_HS_INTERP_SLOT, "java_interp_slot", "Java: top frames in the return entries, by their bcp slot")        \
	X(SP_HS_PROLOGUE, "java_prologue_walked", "Java: top frames in a prologue, unwound by its decoded steps")

#endif
