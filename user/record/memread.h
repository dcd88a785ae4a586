/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A process's memory as the runtime readers read it (pyfacts.h,
 * jvmfacts.h: their read function), a page at a time, the pages kept for
 * the reads that follow.  HotSpot's vmStructs tables are read entry by
 * entry and name by name: 4,174 process_vm_readv calls of a few bytes each
 * for one JVM at a recorder's start (strace -c, record -p JVM), each with
 * its ptrace check and page pinning.  The pages are those of one reading:
 * a new reader reads what the process wrote since.
 */
#ifndef SP_MEMREAD_H
#define SP_MEMREAD_H

#include <stddef.h>
#include <linux/types.h>

struct mem_pages;

/* A reader of pid's memory, or NULL (ENOMEM): then read with py_read_pid and (void *)(long)pid. */
struct mem_pages *mem_pages__new(__u32 pid);
void mem_pages__free(struct mem_pages *m);
/*
 * py_read_fn's and jvm_read_fn's contract, ctx a mem_pages: 0, or -errno.
 * What it returns is what py_read_pid returns for the same range: a page
 * that cannot be read whole is read as asked, bypassing the pages.
 */
int mem_pages__read(void *ctx, __u64 addr, void *buf, size_t len);

#endif
