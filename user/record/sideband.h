/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Side-band records for what was running before the recording started:
 * COMM per thread and MMAP2 per executable mapping, read from /proc, plus
 * the kernel's and its modules' MMAPs.  Processes that start later get theirs from the
 * kernel (mmap2/comm/task bits on the sampling events).
 */
#ifndef SP_SIDEBAND_H
#define SP_SIDEBAND_H

#include <limits.h>
#include <stdio.h>
#include <linux/types.h>

#include "buildid.h"
#include "parse.h"
#include "perf_data.h"
#include "procmaps.h"

/*
 * A process's mm->start_stack (field 28 of /proc/PID/stat, after the comm,
 * which may hold anything): what BPF compares to tell an image from the
 * one after an exec, or from a reused pid's.  0, or -1.
 */
int proc_start_stack(__u32 pid, __u64 *out);
/* The same, and the task's flags (field 9: PF_KTHREAD is a kernel thread's) into *flags if it is not NULL. */
int proc_start_stack_flags(__u32 pid, __u64 *out, __u64 *flags);

struct sideband {
	struct pd_writer *w;
	const struct perf_event_attr *attr; /* the tracking event: its trailer layout */
	__u64 id;			    /* an id of that event */
	__u64 time;			    /* stamp of every synthesized record */
	struct dso_set *dsos;		    /* collects mapped files for BUILD_ID */
	struct buildid_cache *bcache;	    /* containers' files: build ids and copies; or NULL */
	struct jit_maps *jits;		    /* containers' JITs, whose perf maps are kept; or NULL */
	__u64 ktext_start, ktext_end;	    /* from host_kernel_text(), read beforehand */
	bool data_maps;			    /* also file-backed data maps, as with mmap_data */
	unsigned long nr_comm, nr_mmap, nr_procs, nr_modules;
	unsigned long nr_cut; /* maps lines without their newline (cut short), dropped */
};

/* The kernel MMAP from ktext_start/end; -ENOENT if they are unknown. */
int sideband_kernel_mmap(struct sideband *sb);

struct kmodule {
	char name[64];
	__u64 start, size;
};

/* Parses one /proc/modules line ("brd 16384 0 - Live 0xffffffffc0a00000"); -EINVAL if none. */
int kmodule_parse_line(const char *line, struct kmodule *m);
/*
 * One MMAP per loaded module, named "[brd]" as perf names them, so that
 * perf report puts module frames in their module and finds their symbols
 * in kallsyms.  Modules whose address is hidden (kptr_restrict) are skipped.
 */
int sideband_module_mmaps(struct sideband *sb);
/* All processes, or only those in pids (thread group ids). */
int sideband_synthesize(struct sideband *sb, const struct int_list *pids);
/*
 * fn(ctx, pid) for each pid in pids, or, where pids is NULL, for every
 * process in /proc now: the processes a recording of pids (or of the whole
 * host) starts with.  A non-zero return of fn ends the walk and is
 * returned; else 0, or -errno when /proc cannot be read.
 */
int sideband_each_pid(const struct int_list *pids, int (*fn)(void *ctx, __u32 pid), void *ctx);
/* Only the threads in tids (with the maps of their processes). */
int sideband_synthesize_tids(struct sideband *sb, const struct int_list *tids);

#endif
