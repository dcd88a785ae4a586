/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The agent's windows to ClickHouse, from a thread of their own, so that a
 * slow or absent server never holds up the recorder's loop.  A window is
 * posted table by table, its row in `windows` last (the mark that it is
 * whole); one that fails goes to the spool, and the spool is sent, oldest
 * first, before any newer window once the server answers again.  Before a
 * spooled window is sent again, `windows` is asked for its token: a window
 * the server took but whose answer was lost is not sent twice.
 */
#ifndef SP_CH_SHIP_H
#define SP_CH_SHIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ch_schema.h"
#include "ch_spool.h"

struct ch_http;
struct ch_ship;

/* What the agent's --serve shows: counts since the start. */
struct ch_ship_stats {
	uint64_t windows_sent, windows_spooled, windows_dropped, rows_sent, bytes_sent, server_errors;
	uint64_t spool_windows, spool_bytes;
	uint64_t partitions_dropped; /* --retention's */
};

struct ch_ship_opts {
	struct ch_http *http; /* the ship's from now on */
	struct ch_place place;
	const char *spool_dir; /* NULL: a window not taken is dropped, counted */
	uint64_t spool_max;
};

/* Starts the thread (tables created at its first send); 0 or -errno (said). */
int ch_ship__start(struct ch_ship **out, const struct ch_ship_opts *o);
/* A window, its bodies owned by the ship from now on (freed with free()); rows: its rows, all tables. */
void ch_ship__send(struct ch_ship *s, char token[64], struct sbuf body[CH_NR_TABLES], uint64_t rows);
/* What was sent, spooled and dropped so far. */
void ch_ship__stats(struct ch_ship *s, struct ch_ship_stats *st);
/*
 * The windows still queued sent (within about deadline_ms) or spooled,
 * then the thread ends; accepts NULL.
 */
void ch_ship__stop(struct ch_ship *s, long deadline_ms);

#endif
