/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Copies of mapped files that the report could not find by their path:
 * files of processes in another mount namespace (containers), and files
 * deleted or replaced while they ran.  Each MMAP2 carries the mapped file's
 * build id (attr.build_id, or computed for the /proc synthesis); when the
 * file at that path here has another one, the file is read now, while the
 * process lives, through /proc/PID/map_files (or /proc/PID/root), and kept
 * by build id, as perf keeps ~/.debug.  The report finds it there.
 */
#ifndef SP_BUILDID_CACHE_H
#define SP_BUILDID_CACHE_H

#include <stdbool.h>
#include <linux/types.h>

struct buildid_cache;

/* max_bytes bounds what one cache directory may hold; NULL when disabled (--no-buildid-cache). */
struct buildid_cache *buildid_cache__new(bool enabled, __u64 max_bytes);
void buildid_cache__free(struct buildid_cache *c);

/*
 * One executable mapping of pid, [start, end), of path with that build id.
 * Never fails the recording: what cannot be read is counted.
 */
void buildid_cache__note(struct buildid_cache *c, __u32 pid, __u64 start, __u64 end, const char *path,
			 const __u8 *id, __u8 size);

/* With -v: how many files were kept, were already there, or could not be. */
void buildid_cache__report(const struct buildid_cache *c);

#endif
