/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Python processes of a recording (--call-graph ehframe): found at the
 * start from /proc and, while recording, from the side-band that keeps the
 * unwind tables current (a mapping of a file named like python, an exec, a
 * fork, an exit); each one's CPython read (user/sys/pyfacts.h), its thread
 * states' place chosen (glibc's key data, else the thread list), and the
 * whole put in the `py_procs` map the walk in BPF reads (bpf/python.bpf.h).
 *
 * A process that maps libpython before its runtime is set up (every new
 * one, for some ms) is read again a few times; one that forks shares its
 * parent's entry until it execs.
 */
#ifndef SP_PYPROCS_H
#define SP_PYPROCS_H

#include <stdbool.h>
#include <linux/types.h>

#include "parse.h"
#include "pyfacts.h"

struct py_procs;

struct py_procs_stats {
	__u64 found;	     /* processes whose runtime the walk reads */
	__u64 jvms;	     /* of them, HotSpot JVMs */
	__u64 by_list;	     /* of them, with thread states from the thread list (not glibc's key data) */
	__u64 forks;	     /* children given their parent's entry */
	__u64 retries;	     /* reads again of a runtime not set up yet */
	__u64 refused;	     /* runtimes not read: a version not covered, or a process that lies */
	__u64 gave_up;	     /* runtimes never set up while retried */
	__u64 full;	     /* processes without room in the map */
	char last_refusal[160];
};

/*
 * procs_fd: the py_procs map, with room for max entries; hs_fd: the
 * hs_procs map of the JVMs (HotSpot's libjvm.so mapped), -1: none followed.  The thread
 * states' place in glibc is measured here, once (glibc_tsd.h).
 */
int py_procs__new(struct py_procs **out, int procs_fd, int hs_fd, __u32 max);
void py_procs__free(struct py_procs *p);
/* Every process in pids (NULL: all of /proc) that maps a file named like python, read now. */
void py_procs__scan(struct py_procs *p, const struct int_list *pids);
/*
 * The same scan from the code mappings another walk of /proc found
 * (eh_tables__scan's fn, ctx p): each process noted that maps a file
 * named like a runtime's, read at py_procs__scan_noted.
 */
void py_procs__note_code(void *p, __u32 pid, const char *path);
void py_procs__scan_noted(struct py_procs *p);
/* Whether a process is known to run no runtime (a kernel thread): not looked at. */
typedef bool (*py_skip_fn)(void *ctx, __u32 pid);
/*
 * Once the events are on (and so report every mapping): the processes
 * that started between the scan and then, read now; those skip names
 * (if not NULL) not even looked at.
 */
void py_procs__catch_up(struct py_procs *p, const struct int_list *pids, py_skip_fn skip, void *skip_ctx);
/* pid mapped code from path: read at the next flush if the name is python's. */
void py_procs__mmap(struct py_procs *p, __u32 pid, const char *path);
/* pid exec'd: its entry is another image's; the new one's mappings will say. */
void py_procs__exec(struct py_procs *p, __u32 pid);
void py_procs__fork(struct py_procs *p, __u32 ppid, __u32 pid);
void py_procs__exit(struct py_procs *p, __u32 pid);
/* The processes marked and due, read. */
void py_procs__flush(struct py_procs *p);
/* When the first process waiting for its runtime to be set up is read again (monotonic ns); 0: none. */
__u64 py_procs__next_due(const struct py_procs *p);
/*
 * pid's runtime, as the walk reads it, a number that changes whenever the
 * entry does (exec, a new read), and when the entry was made (no sample
 * walked by it is older): NULL if pid is not a Python process the walk
 * follows.
 */
const struct py_facts *py_procs__get(const struct py_procs *p, __u32 pid, __u32 *gen, __u64 *since_ns);
/* pid's JVM, as py_procs__get's runtime: NULL if pid is no JVM the walk follows. */
struct jvm_facts;
const struct jvm_facts *py_procs__jvm(const struct py_procs *p, __u32 pid, __u32 *gen, __u64 *since_ns);
void py_procs__stats(const struct py_procs *p, struct py_procs_stats *st);

#endif
