/* SPDX-License-Identifier: GPL-2.0 */
/*
 * GNU build ids of the kernel and of the files that processes mapped, for
 * the BUILD_ID feature: with them perf (and spanperf report) can tell that a
 * binary changed since the recording instead of mis-symbolizing it.
 */
#ifndef SP_BUILDID_H
#define SP_BUILDID_H

#include <stddef.h>
#include <linux/types.h>

#include "perf_data.h"
#include "sha256.h"

#define BUILD_ID_MAX 20

/* Scans a buffer of ELF notes (as in /sys/kernel/notes) for NT_GNU_BUILD_ID. */
int buildid_from_notes(const void *buf, size_t len, __u8 id[BUILD_ID_MAX], __u8 *size);
/* Reads an ELF file's build id; -ENOENT when it has none. */
int buildid_from_file(const char *path, __u8 id[BUILD_ID_MAX], __u8 *size);
/* The same from a descriptor open for reading (read with pread, never mapped); fd stays open. */
int buildid_from_fd(int fd, __u8 id[BUILD_ID_MAX], __u8 *size);
int buildid_kernel(__u8 id[BUILD_ID_MAX], __u8 *size);
/* Lower-case hex, as perf prints it. */
void buildid_hex(const __u8 *id, __u8 size, char *out /* 2*BUILD_ID_MAX+1 */);

/*
 * Where record keeps a copy of a file by its build id (hex), as perf keeps
 * ~/.debug: $XDG_CACHE_HOME/spanperf/buildid/HEX, else ~/.cache/...
 */
int buildid_cache_path(const char *hex, char *out, size_t len);
/*
 * A copy record keeps, named by its build id and the SHA-256 of its bytes
 * (HEX.SHA256 there): a file that claims a build id cannot take the place
 * of another with the same id, whichever came first.  perf's ~/.debug
 * layout has one file per id; this one lets them stand side by side, and a
 * recording names the one it relies on (PD_FEAT_SP_DIGESTS).
 */
int buildid_cache_entry(const char *hex, const __u8 sha256[SHA256_SIZE], char *out, size_t len);
/* SHA-256 of what fd holds (pread from 0 to EOF); -EFBIG past max bytes. */
int sha256_of_fd(int fd, __u64 max, __u8 out[SHA256_SIZE]);

/*
 * Build ids kept by the inode they were read from, for a reader that meets
 * the same files again and again (the agent's windows): a file's notes are
 * read again only when its device and inode are new, or its size, mtime or
 * ctime moved (ctime: no one can set it, so a file rewritten in place at its
 * old size and mtime is read again).  At most max inodes; past that, all
 * are forgotten and read again as met.
 */
struct buildid_memo;
struct buildid_memo *buildid_memo__new(size_t max);
void buildid_memo__free(struct buildid_memo *m);
/* As buildid_from_fd, from what m kept if fd's file is one it has read (m NULL: read). */
int buildid_memo__fd(struct buildid_memo *m, int fd, __u8 id[BUILD_ID_MAX], __u8 *size);

/* A set of unique file names seen in MMAP2 records. */
struct dso_set;
struct dso_set *dso_set__new(void);
void dso_set__free(struct dso_set *s);
int dso_set__add(struct dso_set *s, const char *filename);
/*
 * A file as a process in another mount namespace saw it: its build id, read
 * while it ran, goes to the BUILD_ID feature too (the host's file of that
 * name, if any, is another build).  Once per name and build id.
 */
int dso_set__add_foreign(struct dso_set *s, const char *filename, const __u8 *id, __u8 size);
int dso_set__count(const struct dso_set *s);
/* Appends the kernel's and each readable file's build id to m->build_ids. */
int dso_set__build_ids(const struct dso_set *s, struct pd_meta *m);

#endif
