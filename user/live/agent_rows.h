/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One window of the agent as ClickHouse rows (ch_schema.h): its stacks
 * symbolized on this host and each sent once per window, its samples
 * summed by (process, thread, comm, stack), its spans with their split,
 * wakers, counters and ids, each row with the host's labels (the process's
 * cgroup path, and the container id and Kubernetes pod uid the path names).
 */
#ifndef SP_AGENT_ROWS_H
#define SP_AGENT_ROWS_H

#include <stdint.h>

#include "ch_schema.h"
#include "sbuf.h"

struct buildid_memo;
struct profile;
struct session;
struct spans_view;

struct agent_window_meta {
	const char *token, *host;
	uint64_t start_ns, end_ns; /* unix ns */
	int64_t mono_to_unix;	   /* CLOCK_MONOTONIC + this = unix ns */
	uint64_t hz;
	struct buildid_memo *bids; /* files' build ids, kept across windows (NULL: read in each) */
};

/* A cgroup path's container id (64 hex digits) and pod uid, into buffers of 65 and 37 bytes ("" if none). */
void agent_cgroup_labels(const char *path, char *container, char *pod);

/*
 * The window's rows, one RowBinary body per table appended to body[]; *rows: how many.  sess names
 * the spans' threads.  0 or -ENOMEM.
 */
int agent_rows(const struct agent_window_meta *m, struct session *sess, const struct profile *p,
	       const struct spans_view *v, struct sbuf body[CH_NR_TABLES], uint64_t *rows);

#endif
