/* SPDX-License-Identifier: GPL-2.0 */
/*
 * /tmp/perf-PID.map of JITs in containers.  A JIT names its code in a file
 * of its own /tmp under its own pid; a containerised one writes it in the
 * container's /tmp under the pid its pid namespace gave it, which the host
 * neither sees at report time nor knows the name of.  So while the process
 * lives the file is read through its root (proc_file.h: never steered out
 * of it, never a FIFO or a symlink), by perf's owner rule in host terms
 * (the process's euid or root), and its text goes into the recording
 * (PD_FEAT_SP_JIT_MAPS) under the host pid, where the report finds it after
 * the container is gone.
 */
#ifndef SP_JIT_MAPS_H
#define SP_JIT_MAPS_H

#include <stdbool.h>
#include <linux/types.h>

#include "perf_data.h"

struct jit_maps;

struct jit_maps *jit_maps__new(void);
void jit_maps__free(struct jit_maps *j);
/*
 * pid maps anonymous executable memory (a JIT's code).  Only a process in
 * another mount namespace is followed: the host's own perf maps are read
 * at report time, as perf reads them.
 */
void jit_maps__note(struct jit_maps *j, __u32 pid);
/* A mapping's name that perf 6.1 takes for anonymous memory (map.c's is_anon_memory): a JIT's code. */
bool jit_maps__anon(const char *path);
/*
 * pid exited (its EXIT went by): its map read a last time, through the
 * /tmp held since it was first read (its root is gone by then), so that
 * what it wrote in its last second is kept too.  Accepts NULL.
 */
void jit_maps__exit(struct jit_maps *j, __u32 pid);
/* Each followed process's map read again if it changed, at most once a second each: now in ns. */
void jit_maps__poll(struct jit_maps *j, __u64 now);
/* A last read of every live one, then the texts into m->jit_maps; 0 or -ENOMEM. */
int jit_maps__put(struct jit_maps *j, struct pd_meta *m);
/* With -v: what was kept and what was refused. */
void jit_maps__report(const struct jit_maps *j);

#endif
