/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a recording or a count watches, kept in BPF: -p's processes, -t's
 * threads, or CMD's process tree (-- CMD without -a, -p, -t or -C, as
 * perf's inherited events record a command and its children).
 *
 * One filter map per run: the first BPF object loaded with it owns it
 * (record's sampling program, stat's counters program), every other reuses
 * it by fd, so that the samples, counters, spans and off-CPU blocks keep the
 * same threads.  For CMD's tree the owner's target programs
 * (bpf/helpers.bpf.h) add each process the tree forks, before it runs;
 * CMD itself, forked and held by sys/run.c, is added by target__follow
 * before it is let go.  Gone processes are deleted in BPF at once (stat), or
 * by record once it has read their records (target__exited, target__pass).
 */
#ifndef SP_TARGET_H
#define SP_TARGET_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>

#include "parse.h"
#include "spanperf_abi.h"

struct bpf_object;
struct bpf_map;
struct bpf_link;

struct target {
	enum sp_filter_mode mode;
	const struct int_list *ids; /* -p's pids or -t's tids */
	__u64 max_procs;	    /* SP_FILTER_TREE: the processes the map holds at once */
	bool raw_tp;		    /* the raw_tp twins of the target programs */
	bool drop_at_exit;	    /* delete gone processes in BPF (no records to read after them) */
	int fd;			    /* the filter map, once its owner is loaded; -1 before */
	struct bpf_object *owner;
	struct bpf_link *links[2];
	/* Processes whose exit was read: in the last pass (deleted at the end of this one), in this one. */
	__u32 *exited[2];
	size_t nr_exited[2], cap_exited[2];
	__u64 pruned;
};

/*
 * The filter the options ask for: -p's, -t's, CMD's tree (cmd given
 * without -a, -p, -t or -C: follow_cmd), or none.  The ids list must
 * outlive the target.
 */
void target__init(struct target *t, const struct int_list *pids, const struct int_list *tids, bool follow_cmd,
		  __u64 max_procs, bool raw_tp);
/* Whether record and stat follow CMD: a command, and none of -a, -p, -t or -C. */
bool target_follows_cmd(char **cmd, bool all_cpus, const struct int_list *pids, const struct int_list *tids,
			const struct int_list *cpus);
/*
 * Between open and load of an object with the filter map (filter): the
 * first one sizes it and loads its target programs, the others reuse the
 * owner's map.  t NULL: no filter (a map of one entry).  The object's
 * rodata filter_mode (and, for the owner, target_drop_at_exit) is the
 * caller's to set.  0, or -errno.
 */
int target__prepare(struct target *t, struct bpf_object *obj, struct bpf_map *filter);
/* After that object's load: the owner's map becomes the run's, filled with -p's or -t's ids.  0, or -errno. */
int target__loaded(struct target *t, struct bpf_object *obj, struct bpf_map *filter);
/*
 * CMD's tree: CMD (forked, not yet run) is in, and the target programs
 * attached, so that what it forks follows.  Before CMD runs.  0, or -errno
 * said once (pr_err).
 */
int target__follow(struct target *t, pid_t cmd);
/* Whether process pid (thread, with -t) is watched, or was until its records were read; true without a filter. */
bool target__has(const struct target *t, __u32 pid);
/* SP_FILTER_TREE: the processes in the map now (sorted), for the side-band of a new file.  0, or -ENOMEM. */
int target__pids(const struct target *t, struct int_list *out);
/* record: a process's exit was read (PERF_RECORD_EXIT); it is deleted at the end of the next pass. */
void target__exited(struct target *t, __u32 pid);
/*
 * record: the end of a pass over every ring.  A process whose exit was read
 * in the pass before has had all its records read since (each ring was read
 * to its end after the exit was), so its entry goes if it is still gone.
 */
void target__pass(struct target *t);
/* Processes the map was too full to follow (from the owner's stats map), for the summary. */
__u64 target__full(const struct target *t, int stats_fd);
/* Detaches the target programs; accepts a zeroed target. */
void target__free(struct target *t);

#endif
