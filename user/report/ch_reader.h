/* SPDX-License-Identifier: GPL-2.0 */
/*
 * report --clickhouse: a fleet's profile and spans read from the tables
 * the agent writes (ch_schema.h), as the second source of what report's
 * outputs read beside a session: a struct profile (funcs and stacks, as a
 * file's pass would fill it) and a spans view, so that every output works
 * unchanged.  The summing runs in ClickHouse (grouped by stack, weights
 * added up, each row's identity taken once with any()); only the result
 * and the stacks it names come back.
 */
#ifndef SP_CH_READER_H
#define SP_CH_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "parse.h"

struct profile;
struct spans_view;
struct name_set;

struct ch_source {
	const char *url, *password_file;
	const char *ca_file;	    /* https: the CA to trust, or NULL: the system's */
	const char *db;		    /* --database */
	uint64_t from_s, to_s;	    /* the windows that start in [from_s, to_s), Unix seconds */
	const char *host;	    /* --host, or NULL: every host */
	const struct name_set *comms; /* --comms, or NULL */
	const struct int_list *pids, *tids;
	const char *span_name;	    /* --span-name, or NULL */
	/* --dsos, --symbols (of each sample's leaf, its first frame not inlined), or NULL */
	const struct name_set *dsos, *syms;
	/*
	 * --time, or NULL: its ranges are of Unix seconds (the stored times),
	 * its percentages of the selected windows' span; a window is kept
	 * whole when its start is in a range, a span when its end is.
	 */
	const char *time;
	bool timeline; /* --html, --speedscope: each window's samples as ticks of it (profile.ticks) */
};

/* "1h", "30m", "90s", "2d" or seconds: --since's duration; 0 or -EINVAL. */
int ch_parse_duration(const char *s, uint64_t *seconds);
/* "YYYY-MM-DD HH:MM:SS" or "YYYY-MM-DDTHH:MM:SS[Z]" (UTC), or "@SECONDS": 0 or -EINVAL. */
int ch_parse_time(const char *s, uint64_t *unix_s);

/* The profile of the windows src selects; 0 or -errno with err saying why. */
int ch_profile_load(struct profile **out, const struct ch_source *src, char *err, size_t errlen);

/* The spans src selects, as a view report --spans prints; free with ch_spans_free.  0 or -errno (err said). */
struct ch_spans;
int ch_spans_load(struct ch_spans **out, const struct ch_source *src, const struct spans_view **v, char *err,
		  size_t errlen);
void ch_spans_free(struct ch_spans *s);

#endif
