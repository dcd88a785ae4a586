/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Python frames out of BPF (SP_PY_TAG entries: a code object and an
 * instruction) into ordinary call-chain addresses, as the recorder writes
 * each sample.  Each process gets a region of addresses where it maps
 * nothing, named by an MMAP2 record at the recording's symbol file
 * (py_elf.h), and each of its code objects a slot there (py_names.h),
 * named once: its symbol in the ELF (for perf) and a spanperf-python record
 * in the file (for report and live sessions).  The MMAP2 and the names go
 * to the file before the first sample that needs them.
 *
 * A code object is read from the process the first time a drain meets it
 * (it is alive then: a running frame holds it), and checked again once a
 * drain before its slot serves again, so that another object at a freed
 * one's address gets a slot of its own.  An entry that names no code
 * object (a process that lies, or one gone before the drain) is dropped
 * from the chain and counted: never a wrong name.
 */
#ifndef SP_PYFRAMES_H
#define SP_PYFRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/perf_event.h>
#include <linux/types.h>

struct py_frames;
struct py_procs;
struct dso_set;

/* Writes a whole record to the file (before the sample that needs it). */
typedef int (*py_write_fn)(void *ctx, const void *rec, size_t n);

struct py_frames_opts {
	struct py_procs *procs;			/* each process's layout */
	const char *output;			/* the perf.data's -o (NULL: no file, no ELF; names in records only) */
	const struct perf_event_attr *track_attr; /* the MMAP2 records' layout (sample_id_all) */
	__u64 track_id;
	__u64 names_id;				/* the spanperf-python attr's id */
	const struct perf_event_attr *names_attr;
	const __u64 *sorted_ns;			/* nothing may be stamped before this (rec_ctx's) */
	struct dso_set *dsos;			/* the ELF's build id goes to the BUILD_ID feature */
};

int py_frames__new(struct py_frames **out, const struct py_frames_opts *o);
void py_frames__free(struct py_frames *p);

/* Whether a chain of n entries holds a Python entry to rewrite. */
bool py_frames_any(const __u64 *ips, __u32 n);
/* The generation of pid's followed image (py_procs'), 0 if none: another after an exec or a pid's reuse. */
__u32 py_frames__gen(const struct py_frames *p, __u32 pid);
/*
 * The chain ips[0..*n) of a sample of pid at time t: each Python entry
 * rewritten in place, those that name nothing dropped (*n shrinks), a
 * compiled Java frame's inlined methods each a frame of its own (*n grows,
 * to cap entries of ips at most and perf's 127 in the user part: past
 * that a frame stays uninlined), the records the file needs first written
 * through fn.  0, or fn's error.
 */
int py_frames__rewrite(struct py_frames *p, __u32 pid, __u32 tid, __u64 t, __u64 *ips, __u32 *n, __u32 cap,
		       py_write_fn fn, void *ctx);
/*
 * pid mapped [start, start + len) at time t: where that lands on its
 * region, the region moves (or the mapping would take the Python frames'
 * addresses for its own), its code objects named again in the new one at
 * once, the records through fn.  0, or fn's error.
 */
int py_frames__mmap(struct py_frames *p, __u32 pid, __u64 start, __u64 len, __u64 t, py_write_fn fn, void *ctx);
/* A drain begins: slots are checked again before they serve in it. */
void py_frames__drain(struct py_frames *p);
/*
 * The file ends (its header is next): the ELF of its regions written; the
 * next file (--switch-output) gets a new ELF, and its regions and names
 * anew.  0, or -errno (the file is kept, its Python frames unnamed by perf).
 */
int py_frames__end_file(struct py_frames *p, bool next);
/* After the last file is renamed into place: ELFs no perf.data beside it names, removed. */
void py_frames__prune(struct py_frames *p);
/* With -v: what was named and what was dropped. */
void py_frames__report(const struct py_frames *p);

#endif
