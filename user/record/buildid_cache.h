/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Copies of mapped files that the report could not find by their path:
 * files of processes in another mount namespace (containers), and files
 * deleted while they ran.  For such a mapping the file is opened now, while
 * the process lives, through /proc/PID/map_files (or /proc/PID/root, see
 * proc_file.h); its build id goes into an MMAP2 record of its own (the
 * build-id form), and the inode is held open and copied at the end of the
 * recording, kept by build id as perf keeps ~/.debug.  The report finds
 * it there.
 *
 * Why not the kernel's attr.build_id: Linux sets the MMAP_BUILD_ID flag on
 * the one mmap event it formats for every session, and does not clear it,
 * so a perf record running beside us reads its device numbers as a build
 * id and aborts (seen on 6.18 with perf 6.1).
 */
#ifndef SP_BUILDID_CACHE_H
#define SP_BUILDID_CACHE_H

#include <stdbool.h>
#include <linux/types.h>

#include "perf_data.h"

struct buildid_cache;

/*
 * max_bytes bounds what the cache directory may hold; keep false (-N) still
 * finds foreign files' build ids but copies nothing; link_perf
 * (--perf-cache) enters the copies in perf's ~/.debug too.
 */
struct buildid_cache *buildid_cache__new(bool keep, bool link_perf, __u64 max_bytes);
void buildid_cache__free(struct buildid_cache *c);

/*
 * One executable mapping of pid, [start, end), of path, whose inode the
 * kernel named maj:min ino (ino 0: not known).  When the process sees
 * another file there than we do, returns 1 with its build id in id/size
 * (and keeps a copy unless the cache is off or full); else 0.  Never fails
 * the recording: what cannot be read is counted.
 */
int buildid_cache__note(struct buildid_cache *c, __u32 pid, __u64 start, __u64 end, const char *path, __u32 maj,
			__u32 min, __u64 ino, __u8 id[20], __u8 *size);

/*
 * Makes the copies noted, each of at most the size the file had when noted
 * (and the bound), verified by its build id, until budget_ns has passed or
 * a stop signal came: off the ring-drain path.  m: the build ids the
 * recording lists (dso_set__build_ids), which perf's ~/.debug never gets a
 * container's file under; the digests of every copy the recording made
 * (this file's and, with --switch-output, the earlier ones') go to
 * m->digests, for the report to check the copies by.
 */
void buildid_cache__finish(struct buildid_cache *c, __u64 budget_ns, struct pd_meta *m);

/* pid exec'd: it may have entered another mount namespace before (unshare -m; exec). */
void buildid_cache__exec(struct buildid_cache *c, __u32 pid);

/* With -v: how many files were kept, were already there, or could not be. */
void buildid_cache__report(const struct buildid_cache *c);

#endif
