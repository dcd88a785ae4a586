/* SPDX-License-Identifier: GPL-2.0 */
/*
 * top's screens, private to live/top*.c: the state a window leaves for
 * drawing (the last window's profile, or its span view), the printed
 * refreshes (--stdio, --batch), and the full screen with its keys.
 */
#ifndef SP_TOP_VIEW_H
#define SP_TOP_VIEW_H

#include <stdbool.h>
#include <stdint.h>

#include "report_out.h"
#include "top_opts.h"

struct profile;
struct span_report;
struct spans_view;

struct top {
	const struct top_opts *o;
	struct table_opts to; /* the sort keys (s changes them) and -g */
	char sort[128];
	uint64_t refreshes;
	bool clear;	      /* --stdio on a terminal: clear it before each table */
	bool curses, paused;  /* the full screen, and p */
	/* The window being built: its profile, or its span join (--spans). */
	struct profile *cur;
	struct span_report *cur_sr;
	/*
	 * The last window's, drawn until the next: its profile, or its span
	 * join and the view of it (whose table's rows are drawn).
	 */
	struct profile *last;
	struct span_report *last_sr;
	const struct spans_view *last_view;
	char filter[64];
	char note[128];
};

/* The last window, printed after the others (--batch) or over them (--stdio). */
void top_view_print(struct top *t);
/* The full screen: set up (after which top_view_end must come), drawn, given back. */
void top_view_start(struct top *t);
void top_view_draw(struct top *t);
void top_view_end(struct top *t);
/* The keys typed since the last pass; nonzero quits. */
int top_view_keys(struct top *t);

#endif
