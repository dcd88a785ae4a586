/* SPDX-License-Identifier: GPL-2.0 */
/*
 * record --otel: a live process's OTEP 4719 process context, read from the
 * outside as the OTEP's reading protocol says: the OTEL_CTX mapping found in
 * /proc/PID/maps, its header and payload copied with process_vm_readv, the
 * header read again to check that no update ran meanwhile.  Read at record
 * time because the process may be gone by report time; what report needs of
 * it (the attribute key map, service.name) goes into the perf.data.
 */
#ifndef SP_OTEL_PROCESS_H
#define SP_OTEL_PROCESS_H

#include <linux/types.h>

#include "otel_pctx.h"

/* Why contexts could not be read: each a skipped read, counted once. */
struct otel_process_stats {
	unsigned long read;	  /* decoded */
	unsigned long bad_header; /* no OTEL_CTX signature, or a version other than 2 */
	unsigned long bad_size;	  /* payload size 0 or over 1 MiB, or a NULL pointer */
	unsigned long unstable;	  /* published-at 0, or changing, on every try */
	unsigned long unreadable; /* the header or the payload not mapped */
	unsigned long malformed;  /* the payload is no ProcessContext */
};

/*
 * pid's context into *out: 0, with its published-at (which tells a new
 * version) in *published; -EALREADY if *published already names it (out
 * left empty: a look costs one 32-byte read then); -ENOENT if pid
 * publishes none; another -errno, counted in *st, when it publishes one
 * that cannot be read.  *addr caches where the mapping is (0: look in
 * /proc/PID/maps); a stale one is looked up again.
 */
int otel_process_read(int pid, __u64 *addr, __u64 *published, struct otel_pctx *out,
		      struct otel_process_stats *st);

#endif
