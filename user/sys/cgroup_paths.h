/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cgroup v2 ids named by their paths.  The id BPF reads
 * (bpf_get_current_cgroup_id) is the cgroup's kernfs inode, which
 * name_to_handle_at gives as an 8-byte handle; a walk of the hierarchy maps
 * each directory's to its path under the v2 root ("/" for the root).
 */
#ifndef SP_CGROUP_PATHS_H
#define SP_CGROUP_PATHS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hash.h"

struct cgroup_paths {
	const char *root;	/* the hierarchy walked; NULL: cgroup2_root() at each walk */
	size_t max;		/* paths kept: a walk adds none past this */
	struct u64_map by_id;	/* id -> index + 1 in names; 0: seen, not named */
	struct strpool names;
};

/* The v2 hierarchy: alone at /sys/fs/cgroup, or beside v1 at .../unified (hybrid hosts); NULL if none. */
const char *cgroup2_root(void);

/* An empty set: root as above, max paths at most. */
void cgroup_paths__init(struct cgroup_paths *c, const char *root, size_t max);
/*
 * One walk of the hierarchy: every directory not named yet gets its path,
 * until max are kept.  Links are not followed, nor mounts crossed.  0, or
 * -errno when there is no hierarchy to walk.
 */
int cgroup_paths__walk(struct cgroup_paths *c);
/* The path of id as a walk found it, or NULL.  The pointer lives until clear. */
const char *cgroup_paths__get(struct cgroup_paths *c, uint64_t id);
/* max paths are kept: the next walk adds none until cleared. */
bool cgroup_paths__full(const struct cgroup_paths *c);
/* Forgets every path (those handed out die); the set stays usable.  Accepts NULL. */
void cgroup_paths__clear(struct cgroup_paths *c);

#endif
