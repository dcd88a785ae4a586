/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An ELF file's call frame information (.eh_frame, else .debug_frame) as the
 * compact x86-64 unwind rows the BPF unwinder searches (struct sp_eh_row in
 * spanperf_abi.h): one row per change of rule, sorted by file offset, so that
 * a pc's rule is the last row at or below pc - mapping start + pgoff.
 *
 * The parser is bounded by its input (every length is checked against the
 * section it lies in, every loop advances) and by max_rows; it reads the
 * file with pread, so a file truncated under it gives an error, not SIGBUS.
 */
#ifndef SP_EHFRAME_H
#define SP_EHFRAME_H

#include <stddef.h>
#include <linux/types.h>

#include "sha256.h"
#include "spanperf_abi.h"

struct ehtab {
	struct sp_eh_row *rows;
	size_t nr;
	/* What the CFI held: for -v and the tests. */
	size_t fdes, cannot, plt, signal;
	int from_debug_frame;
};

/*
 * Rows for the ELF file open at fd; 0, -ENOENT (no CFI), -EINVAL (not an
 * x86-64 ELF, or CFI that is not CFI), -E2BIG (more than max_rows rows),
 * -ENOMEM, or a read's -errno.  *t is empty on error.
 */
int ehtab_from_fd(int fd, size_t max_rows, struct ehtab *t);
/*
 * The same, with debug_fd's .debug_frame (fd's separate debug file) added:
 * a stripped file, or one built without unwind tables whose .eh_frame
 * covers only its start-up code.  from_debug_frame says whether any rows
 * came from there.
 */
int ehtab_from_fds(int fd, int debug_fd, size_t max_rows, struct ehtab *t);
/*
 * SHA-256 of everything ehtab_from_fd reads of fd: its size, ELF, program
 * and section headers, section names, and its .eh_frame and .debug_frame
 * bytes.  Equal digests give equal rows, whatever build id a file claims:
 * what the table cache (ehcache.h) keys a table by.  Cheap beside a parse
 * (the sections are read and hashed, not decoded).  0, or the -errno of a
 * file the parse would refuse too.
 */
int ehtab_digest(int fd, uint8_t out[SHA256_SIZE]);
int ehtab_from_path(const char *path, size_t max_rows, struct ehtab *t);
/* The row that covers file offset off, or NULL: what the BPF side computes. */
const struct sp_eh_row *ehtab_find(const struct ehtab *t, __u64 off);
void ehtab_free(struct ehtab *t);

#endif
