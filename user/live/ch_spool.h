/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The agent's windows that ClickHouse did not take, on disk: one file per
 * window (its bodies, as they would be posted), named by a sequence number
 * so that the oldest is sent first; written to a temporary name and renamed,
 * so a crash leaves no half window.  The files together stay under the
 * bound: a window that would pass it first drops the oldest, counted; one
 * bigger than the bound alone is dropped itself.
 */
#ifndef SP_CH_SPOOL_H
#define SP_CH_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "ch_schema.h"

/* A window as shipped: its token and one RowBinary body per table. */
struct ch_window {
	char token[64];
	const void *body[CH_NR_TABLES];
	size_t len[CH_NR_TABLES];
};

struct ch_spool;

/* DIR (created 0700 if missing), max bytes; the files a run before left are taken up.  0 or -errno (said). */
int ch_spool__open(struct ch_spool **out, const char *dir, uint64_t max);
void ch_spool__free(struct ch_spool *s);
/* The window kept (older ones dropped for it, counted); 0 or -errno. */
int ch_spool__put(struct ch_spool *s, const struct ch_window *w);
/*
 * The oldest window kept, read into *w (bodies in buf, which the caller
 * frees); 0, -ENOENT when none is kept, or -errno (that file is dropped).
 */
int ch_spool__oldest(struct ch_spool *s, struct ch_window *w, void **buf);
/* The oldest window is sent: its file removed. */
void ch_spool__pop(struct ch_spool *s);
uint64_t ch_spool__nr(const struct ch_spool *s);
uint64_t ch_spool__bytes(const struct ch_spool *s);
/* Windows dropped at the bound (or unreadable), since open. */
uint64_t ch_spool__dropped(const struct ch_spool *s);

#endif
