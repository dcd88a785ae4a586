/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Unwind tables kept on disk, so that a file parsed once (by any recording
 * or agent on this host) is not parsed again: a short-lived compiler's
 * table is there at its exec, not a parse later, and an agent restarted or
 * a host that keeps starting the same programs pays a read instead of a
 * parse.
 *
 * An entry is named by the file's build id and by ehtab_digest, the SHA-256
 * of everything the parse reads (ehframe.h): a build id is a note any
 * program can forge, and a wrong frame is worse than a short chain, so the
 * build id says only where to look, the digest which rows.  Entries live in
 * the recorder's own cache directory (cache_home: as root never one that
 * HOME or XDG_CACHE_HOME may steer to another user's directory), checked to
 * be ours and writable by no one else; each file is ours, mode 0600, of the
 * size its header says, and its rows' checksum is checked before they are
 * used.  Anything else is refused, removed and counted, and the table is
 * built again.  Written under a temporary name and renamed (atomic_file.h);
 * the directory is bounded, the least recently used entries removed first.
 *
 * SPANPERF_NO_EH_CACHE (any value) turns it off.
 */
#ifndef SP_EHCACHE_H
#define SP_EHCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "buildid.h"
#include "ehframe.h"

/* What the directory may hold in all. */
#define EH_CACHE_MAX_BYTES (256ull << 20)

struct eh_cache;

struct eh_cache_key {
	__u8 id[BUILD_ID_MAX];
	__u8 id_size;
	__u8 digest[SHA256_SIZE];
	bool remembered; /* the digest (or a part of it) is a memo's, not a hash of the bytes now */
};

struct eh_cache_stats {
	__u64 hits, misses, stored, refused, evicted, store_failed;
	__u64 remembered; /* keys whose digest was remembered, not hashed (ehcache.c's memo) */
	__u64 digest_ns, load_ns;
	bool off; /* turned off, or no usable directory */
};

/* NULL when turned off or no directory of ours can hold it (then every call is a no-op). */
struct eh_cache *eh_cache__new(__u64 max_bytes);
void eh_cache__free(struct eh_cache *c);
/*
 * The key of the ELF file fd with build id id: 0, or -errno (the file is
 * then not cached).  The digest of a file no one but root can change, and
 * unchanged since it was last hashed, is remembered rather than hashed
 * again (ehcache.c says when).
 */
int eh_cache__key(struct eh_cache *c, int fd, const __u8 *id, __u8 id_size, struct eh_cache_key *k);
/*
 * eh_cache__key with the digest always hashed from the bytes now, never a
 * memo's: the key a table is stored under.  A memo is only as true as the
 * fstat fields it is named by, which a device number reused (a loop device
 * mounted again) or an image edited offline (debugfs sets ctime) can match
 * for other bytes: a lookup under a stale memo finds at worst the table of
 * other bytes for its own process, a store under one would give every later
 * recording the wrong rows.
 */
int eh_cache__key_hashed(struct eh_cache *c, int fd, const __u8 *id, __u8 id_size, struct eh_cache_key *k);
/* For tests: how long a file must have been unchanged for its digest to be remembered (default 2 s). */
void eh_cache__set_quiet_ns(struct eh_cache *c, __u64 ns);
/* For tests: how many memo files the directory may hold (default 4,096; past it they are removed). */
void eh_cache__set_memo_max(struct eh_cache *c, long n);
/* The key of the table ehtab_from_fds builds from fd and its debug file debug_fd: 0, or -errno. */
int eh_cache__key_debug(struct eh_cache *c, int fd, int debug_fd, const __u8 *id, __u8 id_size,
			struct eh_cache_key *k);
int eh_cache__key_debug_hashed(struct eh_cache *c, int fd, int debug_fd, const __u8 *id, __u8 id_size,
			       struct eh_cache_key *k);
/* The kept table of k (at most max_rows rows): 0, -ENOENT (none), or -EBADMSG (refused, removed). */
int eh_cache__load(struct eh_cache *c, const struct eh_cache_key *k, size_t max_rows, struct ehtab *tab);
/*
 * Room for nr rows that a kept table's are read into, or NULL (then the
 * heap): the rows' last home, so they are not read into a fresh buffer
 * and copied again.  What it returns may hold anything afterwards, the
 * load failing or not; where the load succeeds, tab->rows points into it
 * and is the caller's, not tab's to free.
 */
typedef struct sp_eh_row *(*eh_cache_place_fn)(void *ctx, size_t nr);
/* eh_cache__load, the rows read where place(ctx, nr) says. */
int eh_cache__load_at(struct eh_cache *c, const struct eh_cache_key *k, size_t max_rows, eh_cache_place_fn place,
		      void *ctx, struct ehtab *tab);
/*
 * Whether a table parsed from fd may be kept for others: fd's bytes are no
 * one's to change but ours (owner root or us, writable by no group or
 * other, not on FUSE).  Else its owner could show the digest one file and
 * the parse another (the same build id, other CFI), and so place a table
 * under a key whose bytes are not the ones it came from; a file of the
 * recorded process is still read from the cache, which only ever holds
 * tables of the bytes named.
 */
bool eh_cache__storable(int fd);
/* Keeps tab under k, never a k whose digest is a memo's; failures are counted, never fatal. */
void eh_cache__store(struct eh_cache *c, const struct eh_cache_key *k, const struct ehtab *tab);
void eh_cache__stats(const struct eh_cache *c, struct eh_cache_stats *st);

#endif
