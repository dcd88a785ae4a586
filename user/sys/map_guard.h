/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Files mapped for reading, cut short by someone else while read.  Anyone
 * who may write a file may truncate it under a reader that mapped it (here
 * every other root process: a rebuild in place, a copy over it), and a read
 * of a page past its new end is SIGBUS, which kills the reader.  With the
 * guard installed that page reads as zeros instead, which the readers bound
 * as any other bad input, and is counted so that the command can say so.
 */
#ifndef SP_MAP_GUARD_H
#define SP_MAP_GUARD_H

/* SIGBUS for a page past a mapped file's end maps zeros there; any other SIGBUS stays fatal. */
int map_guard__install(void);
/* The pages so replaced since the guard was installed. */
unsigned long map_guard__pages(void);

#endif
