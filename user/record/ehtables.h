/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The unwind tables of --call-graph ehframe: each executable file mapped
 * by a recorded process, turned into rows (ehframe.h) once, however many
 * processes map it, and placed in the BPF maps the sampling program
 * searches.  Rows go into the mmapable array, mapped around each copy (no
 * syscall per row, and none of it resident in between); a file's
 * eh_files entry is written after its rows, so BPF never sees half a table.
 */
#ifndef SP_EHTABLES_H
#define SP_EHTABLES_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "ehcache.h"
#include "parse.h"

struct eh_tables;

struct eh_tables_stats {
	__u64 files, rows, nocfi, too_large, failed, unreadable;
	__u64 procs, procs_full, maps_full, half_switches, flush_builds;
	__u64 shared;	  /* files (inodes) that took the table of another with their build id */
	__u64 bid_other_rows; /* files with another's build id but other rows: built their own */
	__u64 from_debug; /* files that took rows from their separate debug file's .debug_frame */
	__u64 caught_up; /* processes that started or exec'd between the scan and the events */
	__u64 build_ns;
	struct eh_cache_stats cache; /* tables read from disk, kept there, refused */
	size_t max_rows, maps, max_maps, pages;
	size_t chunks; /* of eh_rows made (SP_EH_CHUNK_ROWS rows each) */
};

struct eh_tables_fds {
	int rows_fd;		/* eh_rows, the array of chunks */
	int chunk0_fd;		/* its first chunk (eh_tables_chunk_new), the tables' from eh_tables__new on */
	int maps_fd, pages_fd; /* the mmapable eh_maps and eh_pages arrays */
	size_t max_maps, max_pages;
	int files_fd, procs_fd;
};

/* One chunk of eh_rows (SP_EH_CHUNK_ROWS rows, mmapable, all alike): an fd, or -errno. */
int eh_tables_chunk_new(void);
int eh_tables__new(struct eh_tables **out, const struct eh_tables_fds *fds);
/*
 * A process's executable mappings, read now (procmaps.h: PROCMAP_QUERY, or /proc/PID/maps text), each
 * file's table built unless the file (device, inode) has one: opened
 * through /proc/PID/map_files (the very inode mapped, whatever the mount
 * namespace), else by path when its inode matches.  Failures are counted,
 * never fatal; the process then unwinds by frame pointer.
 */
void eh_tables__proc(struct eh_tables *t, __u32 pid);
/* A process mapped something new (MMAP2, exec): rebuilt at the next flush, once however many. */
void eh_tables__mark(struct eh_tables *t, __u32 pid);
/* The same for an exec: the builds of its first 100 ms (ld.so mapping the libraries) are spaced out less. */
void eh_tables__mark_exec(struct eh_tables *t, __u32 pid);
/* A file mapped (MMAP2's inode and name): its table built at the next flush, before any slice. */
void eh_tables__mmap(struct eh_tables *t, __u32 pid, __u64 start, __u64 len, __u32 maj, __u32 min, __u64 ino,
		     const char *path);
void eh_tables__flush(struct eh_tables *t);
/* Processes marked that a flush has not built yet (it stops at its budget, or waits its turn). */
bool eh_tables__pending(const struct eh_tables *t);
/*
 * A new process shares its parent's mappings until it maps its own; copied:
 * BPF's fork program is attached, and an entry the child has is that copy.
 */
void eh_tables__fork(struct eh_tables *t, __u32 ppid, __u32 pid, bool copied);
void eh_tables__exit(struct eh_tables *t, __u32 pid);
/*
 * Every process in pids (NULL: all of /proc); fn, if not NULL, told each
 * file the scan finds mapped for code and by which process (so that the
 * Python and Java scan need not walk every process's mappings again).
 */
typedef void (*eh_code_fn)(void *ctx, __u32 pid, const char *path);
void eh_tables__scan(struct eh_tables *t, const struct int_list *pids, eh_code_fn fn, void *ctx);
/*
 * Once the events are enabled, and so report every exec and mapping: each
 * process the scan missed (started since) or read before an exec, marked
 * for the next flush.  Without it such a process (a compiler started while
 * the tables were built) would unwind by frame pointer for all its life.
 */
void eh_tables__catch_up(struct eh_tables *t, const struct int_list *pids);
/* Whether the scan found pid a kernel thread (which cannot exec: one still); ctx is the tables, for py_procs__catch_up. */
bool eh_tables__kthread(void *t, __u32 pid);
void eh_tables__stats(const struct eh_tables *t, struct eh_tables_stats *st);
void eh_tables__free(struct eh_tables *t);

#endif
