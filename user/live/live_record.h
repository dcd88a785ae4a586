/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A recording read while it is made: the recorder's writer hands every
 * record, in memory, to a live session (session.h), whose ordered pass
 * delivers them to its consumers round by round.  The recording is cut in
 * windows (record's --switch-output: every switch_ns, or each file): a
 * window is a set of consumers added when its first record comes and ended
 * once every record of it was delivered.  The session's timeline and
 * symbolizer live on from window to window, so each process and file is
 * read once; what a window built is the engine's to keep or free.
 *
 *   recorder --pd_sink--> live_record --session__feed--> session --> window's consumers
 *            --on_switch--> window end: session__flush, ops->end, session__trim
 */
#ifndef SP_LIVE_RECORD_H
#define SP_LIVE_RECORD_H

#include <stdbool.h>
#include <stddef.h>

struct record_opts;
struct session;
struct report_filter;

/*
 * The symbolizer's tables kept loaded from one window to the next: a host's
 * busy set, in bounded memory (a symbol is about 40 bytes and its name).
 */
#define LIVE_KEPT_TABLES 256
#define LIVE_KEPT_SYMS (512u << 10)

struct live_window_ops {
	/* A window begins: add its consumers to sess.  0 or -errno (err said). */
	int (*begin)(void *arg, struct session *sess, char *err, size_t errlen);
	/*
	 * Every record of the window went to its consumers: end them
	 * (session__end_consumer) and use what they built.  path: the file the
	 * window's records went to, or NULL without one.  <0 fails the
	 * recording (err said); >0 ends it as a signal would.
	 */
	int (*end)(void *arg, struct session *sess, const char *path, char *err, size_t errlen);
	/* The window failed (err was said): end its consumers without their finish, and free them. */
	void (*drop)(void *arg, struct session *sess);
	/* After each pass of the recorder's loop (top's keys), or NULL; nonzero ends the recording. */
	int (*pass)(void *arg);
	/*
	 * Whether the engine still shows a window older than the last one
	 * (top paused), or NULL: then the session is not trimmed, since what
	 * that window resolved (names, processes) must outlive more trims
	 * than one.
	 */
	bool (*holds)(void *arg);
};

struct live_opts {
	const struct live_window_ops *ops;
	void *arg;
	int wake_fd;	/* wakes the loop for ops->pass; -1: none */
	/*
	 * A file is the recording's point (record --pprof-dir): the live view
	 * failing is said once and the recording goes on without it.
	 */
	bool file_first;
	/* The symbolizer's tables kept over a window's end (symbolizer__keep_tables) */
	size_t keep_tables, keep_syms;
	/* report's filters for the live session (top's --comms...), or NULL */
	const struct report_filter *filter;
};

/*
 * record__run with ro's records streamed to lo's windows (ro's sink,
 * on_switch and on_pass are taken).  As record__run: 0 with the exit code
 * to pass on, or -errno; then err says why unless the recorder said it.
 */
int live_record(struct record_opts *ro, const struct live_opts *lo, int argc, char **argv, int *exit_code,
		char *err, size_t errlen);

/*
 * An engine's drop (live_window_ops.drop) of the window it was building:
 * its profile *p and span join *sr (sr NULL where the engine joins none)
 * ended without their finish while sess is still there (NULL once it is
 * gone), freed, and set to NULL.
 */
struct profile;
struct span_report;
void live_window_drop(struct session *sess, struct profile **p, struct span_report **sr);

#endif
