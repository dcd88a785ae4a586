/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which event a report output shows (--event): the on-CPU samples, the
 * off-CPU time (offcpu-time samples), or both as wall time.  A view is a
 * profile of its own whose stacks are the chosen ones, so that every output
 * (table, folded, flame graph) reads it unchanged.
 *
 * In a wall view every stack weighs its nanoseconds: on-CPU ones their
 * cpu-clock period (or their count at the sampling rate), off-CPU ones their
 * time blocked; an off-CPU stack gets a leaf frame named "[off-cpu]", so
 * that blocked time is marked where it sits in the graph.
 */
#ifndef SP_OFFCPU_VIEW_H
#define SP_OFFCPU_VIEW_H

#include <stdbool.h>

#include "profile.h"

enum pview { PV_ON_CPU, PV_OFF_CPU, PV_WALL };

#define OFFCPU_MARK "[off-cpu]"

/* "on-cpu", "off-cpu" or "wall"; -EINVAL otherwise. */
int pview_parse(const char *s, enum pview *out);

/*
 * v becomes a view of p (which must outlive it).  ns_weights: each stack's
 * count becomes its nanoseconds, for the outputs that weigh by count.
 */
int profile_view(const struct profile *p, enum pview which, bool ns_weights, struct profile *v);
void profile_view_free(struct profile *v);

#endif
