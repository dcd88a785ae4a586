/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A process's mappings, one at a time: by the PROCMAP_QUERY ioctl on its
 * /proc/PID/maps (Linux 6.11+), which hands each mapping over in binary,
 * asked only for those with exec permission where that is all the caller
 * wants; or, where the kernel lacks it, from the text, which the kernel
 * formats whole (every mapping, with its path escaped) and procmaps_next
 * parses.  A process with a few hundred mappings and twenty of code had
 * most of a recorder's CPU going into that text while processes started.
 */
#ifndef SP_PROCMAPS_H
#define SP_PROCMAPS_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>

struct procmap {
	__u64 start, end, pgoff, ino;
	__u32 maj, min, prot, flags;
	char path[PATH_MAX];
};

/* Parses one /proc/PID/maps line; -EINVAL if it is not one. */
int procmaps_parse_line(const char *line, struct procmap *m);
/*
 * The next mapping of a /proc/PID/maps stream: 1, or 0 at the end.  Lines of
 * any length are read whole (getline: *line and *cap as it keeps them, the
 * caller frees *line); one without its newline was cut short, and is
 * dropped and counted in *cut (if not NULL); unparsable ones are skipped.
 */
int procmaps_next(FILE *f, char **line, size_t *cap, struct procmap *m, unsigned long *cut);

/* Which mappings a reader is asked for (0: every one). */
enum {
	PROCMAPS_CODE = 1 << 0,	 /* with exec permission */
	PROCMAPS_FILES = 1 << 1, /* of a file (an inode) */
};

struct procmaps {
	int fd;		   /* the maps file, while the ioctl is used */
	FILE *f;	   /* the maps text, where it is not */
	unsigned int want; /* PROCMAPS_*: the kernel asked for only those, the text filtered alike */
	bool probe;	   /* a real maps file: its refusal of the ioctl is the kernel's answer */
	__u64 addr;	   /* where the next query starts */
	char *line;	   /* the text's line buffer */
	size_t cap;
	unsigned long cut; /* text lines without their newline, dropped */
};

/*
 * pid's mappings, opened for procmaps_read (want: PROCMAPS_* bits, all of
 * which a mapping must have).  0, or -errno (-ENOENT: gone).  The maps file is opened as
 * the text reader opens it (root, ptrace's read check): nothing here opens
 * a path the process names.
 */
int procmaps_open(struct procmaps *pm, __u32 pid, unsigned int want);
/* The same over an open maps file (fd is taken over, closed by procmaps_close): for tests. */
int procmaps_open_fd(struct procmaps *pm, int fd, unsigned int want);
/*
 * The next mapping in ascending address order: 1 with *m filled in as
 * procmaps_parse_line fills it (the path as the kernel names it, "//anon"
 * for none), or 0 at the end.  The first query tells whether the kernel
 * has the ioctl; where it has not (ENOTTY, EINVAL on 6.10 and before) the
 * text is read from the start, and, for a real maps file, every later
 * procmaps_open reads the text at once.  A query failing for another
 * reason (the process gone: ESRCH) ends the mappings.
 */
int procmaps_read(struct procmaps *pm, struct procmap *m);
/* true while this reader uses the ioctl (false once it fell back to the text). */
bool procmaps_by_query(const struct procmaps *pm);
void procmaps_close(struct procmaps *pm);

#endif
