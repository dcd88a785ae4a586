/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Debug files whose DWARF is zlib-compressed (SHF_COMPRESSED, as Debian's
 * -dbg and -dbgsym packages ship them), inflated once into a cache file
 * that libdw then maps.  libdw inflates every compressed section of a file
 * it opens into the heap, all of them, whatever the lookup needs: 10 MB of
 * a report's 34.5 MiB for one inline frame in libc (issue 41).  Mapped, a
 * section costs only the pages the lookup touches, and those are the page
 * cache's, dropped under pressure.
 *
 * The cache file is the debug file's own bytes, unchanged (its program
 * headers' offsets stay true), then each compressed section inflated, then
 * a section header table naming those copies in place of the compressed
 * ones, then a trailer naming the source: its build id, device, inode,
 * size, change times.  Entries live in root's own cache directory
 * (cache_home, "spanperf/zdebug": as root never one HOME or XDG_CACHE_HOME
 * may steer to another user's), checked to be ours and writable by no one
 * else, named by the build id.  A file there is used only if it is ours,
 * mode 0600, regular, of exactly the size the source's headers give it,
 * and its trailer names this source as it is now; anything else is made
 * again.  Written under a temporary name and renamed (atomic_file.h); the
 * directory is bounded, the least recently used copies removed first.
 *
 * The source is another party's file: its headers are read within
 * ELF_BUDGET_HEADERS, and what its sections claim to inflate to is summed
 * over all of them and bounded (ZDEBUG_MAX_BYTES, and zlib's own ratio)
 * before anything is written; a stream that inflates to more or less than
 * it claimed is refused.  Only a source no one else may change is kept
 * (eh_cache__storable's rule): a user's debug file is read as before.
 *
 * SPANPERF_NO_ZDEBUG_CACHE (any value) turns it off.
 */
#ifndef SP_ZDEBUG_H
#define SP_ZDEBUG_H

#include <linux/types.h>

/* What one cache file may hold in all: what libdw may inflate of a file (elf_budget.h). */
#define ZDEBUG_MAX_BYTES (1ull << 30)
/* What the directory may hold, for copies of at most max bytes each: the least recently used go first. */
#define ZDEBUG_DIR_BYTES(max) ((max) * 4)

/*
 * A descriptor of the inflated copy of the debug file fd, whose build id is
 * hex (checked by the caller), made if needed: >= 0, or -errno: -ENOENT
 * (nothing compressed, turned off, no directory of ours), -ENOTSUP (not a
 * 64-bit little-endian file, another compression), -EPERM (a source others
 * may change), -EFBIG (over the bound, said once), -EBADMSG (corrupt).
 * -ENOSPC (no room in the directory's bound).  fd stays open and its
 * offset is left alone.
 */
int zdebug_open(int fd, const char *hex);

/* The same in the directory dir (made if missing, checked as above), copies of max bytes at most: for the tests. */
int zdebug_open_in(const char *dir, int fd, const char *hex, __u64 max);

#endif
