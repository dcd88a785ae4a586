/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --call-graph ehframe as a source of samples: the sampling program
 * (on_sample_eh) builds each sample whole, its user chain unwound from the
 * unwind tables (ehtables.h), and sends it through a BPF ring in
 * perf.data's own layout; perf's rings then carry only the side-band, which
 * this source reads to keep the tables current (MMAP2, exec, fork, exit).
 */
#ifndef SP_EHSOURCE_H
#define SP_EHSOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/perf_event.h>

#include "parse.h"

struct sample_bpf;
struct pe_set;
struct eh_source;
struct pd_meta;

/*
 * Whether this kernel has what the walk needs: bpf_loop and bpf_find_vma
 * (5.17+), attach cookies and bpf_task_pt_regs (5.15+); 0, or -EOPNOTSUPP
 * with why (which helper is missing) written for the caller to say.
 */
int eh_source_check(char *why, size_t n);
/*
 * Between open and load: the maps sized (to nothing when off; the sample ring
 * by freq, samples a second per CPU, 0 when unknown) and on_sample_eh loaded
 * only when on.
 */
void eh_source_size(struct sample_bpf *skel, bool on, bool timing, __u64 freq);
/* Called with each sample as the file will hold it; a negative return aborts the drain. */
typedef int (*eh_sample_fn)(void *ctx, const struct perf_event_header *h);
/*
 * After load: the tables of every process in pids (NULL: all) built, then the
 * ring opened.  freq: samples a second per CPU (0: unknown), which sets how
 * often the loop passes while processes start (eh_source__poll_ms).
 */
int eh_source__new(struct eh_source **out, struct sample_bpf *skel, const struct int_list *pids, __u64 freq,
		   eh_sample_fn fn, void *ctx);
/* on_sample_eh on each event of s, with the event's id as its cookie (the samples' IDENTIFIER). */
int eh_source_attach(struct pe_set *s, struct sample_bpf *skel);
/* Once the events are enabled: the processes that changed since the scan, read again now. */
void eh_source__started(struct eh_source *s);
struct pd_sideband;
/* A side-band record from perf's rings, decoded: what changes a process's mappings. */
void eh_source__sideband(struct eh_source *s, const struct pd_sideband *r);
/* The tables of processes that changed, then the samples in the ring; samples or -errno. */
long eh_source__drain(struct eh_source *s);
int eh_source__fd(const struct eh_source *s);
/*
 * A process that starts while recording unwinds by frame pointer until its
 * mappings are read: drain this often while processes start.  Not a wake at
 * each side-band record instead: on a host that runs a thousand short
 * processes a second, that cost the recorder a quarter of a CPU
 * (tools/newproc.py, and 1.2 s of CPU in 5 s under a /bin/true loop,
 * against 0.45 s this way).
 */
#define EH_SOURCE_POLL_MS 2
/*
 * But never more often than a quarter of the sampling period: what a pass
 * that soon saves is the chains of the samples a new process takes before
 * its tables, and at 19 Hz (the agent's) one 13 ms after its mappings
 * costs it a quarter of a sample on average, where record's default 999 Hz
 * at 2 ms costs two.  On a build host (a process start every few ms) the
 * agent passed 2 ms apart 97% of the time: 176 wakeups a second.
 */
#define EH_SOURCE_POLL_SHARE 4
/*
 * How soon the loop should pass again, given its own period: the busy period
 * (EH_SOURCE_POLL_MS, or the sampling period's share) within EH_SOURCE_BUSY_NS of the last exec or change of mappings, else the
 * loop's own, with the first exec armed to wake it (or EH_SOURCE_POLL_MS
 * always where the exec tracepoint could not be attached).
 */
int eh_source__poll_ms(struct eh_source *s, int idle_ms);
#define EH_SOURCE_BUSY_NS 100000000ull
/* What the tables hold and why chains ended: warnings always, the counts with -v. */
void eh_source__report(struct eh_source *s, int verbose);
/* Why chains ended since the last call, into the header's SP_UNWIND feature; 0 or -ENOMEM. */
int eh_source__meta(struct eh_source *s, struct pd_meta *m);
void eh_source__free(struct eh_source *s);
struct py_procs;
/* The Python processes the walk follows (pyprocs.h), NULL when it reads no Python frames. */
struct py_procs *eh_source__py(const struct eh_source *s);

#endif
