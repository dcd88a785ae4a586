/* SPDX-License-Identifier: GPL-2.0 */
/*
 * spanperf agent: the whole host, always on, at a low rate, cut in windows
 * of --window seconds read live (live_record.h: never through a file); each
 * window's profile (and span join, with --span) made into rows on the host
 * (agent_rows.h) and shipped to ClickHouse from a thread of its own
 * (ch_ship.h), spooled on disk while the server cannot take them.
 */
#ifndef SP_AGENT_H
#define SP_AGENT_H

struct agent_opts;

/* Runs until -d, INT or TERM; the exit status (0, or 1 after saying why). */
int agent_run(struct agent_opts *o);

#endif
