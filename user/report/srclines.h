/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Source lines and inlined functions of user addresses, from the DWARF of
 * the file the symbolizer read for a dso (its debug file when there is one),
 * with libdw: what perf 6.1 asks addr2line for, one process per dso, but
 * in-process and once per (dso, address).
 */
#ifndef SP_SRCLINES_H
#define SP_SRCLINES_H

#include <stdbool.h>
#include <linux/types.h>

#include "symbols.h"

/* One function around an address: "NAME" and "file.c:LINE" (the call site, for an outer one). */
struct src_frame {
	const char *name;
	const char *srcline; /* NULL where DWARF has no line */
};

/*
 * What DWARF says of one address: its srcline ("file.c:11", as perf prints
 * it: the base name unless full paths were asked for), and the functions
 * the address is in, innermost first, the last being the real (not inlined)
 * function.  Strings live as long as the srclines.
 */
struct src_info {
	const char *srcline; /* NULL: no line information */
	int nr;		     /* frames; 0 when DWARF knows no function there */
	const struct src_frame *frames;
};

struct srclines;

struct srclines *srclines__new(struct symbolizer *sym, bool full_path);
void srclines__free(struct srclines *s);
/* For dso_id at the ELF virtual address vaddr: 0 and *out (zeroed where DWARF says nothing), or -ENOMEM. */
int srclines__lookup(struct srclines *s, int dso_id, __u64 vaddr, struct src_info *out);
/*
 * As srclines__lookup; without frames its line alone (out->nr is 0), for an
 * output that shows no inlined frame: the unit's functions are not read.
 */
int srclines__lookup_as(struct srclines *s, int dso_id, __u64 vaddr, bool frames, struct src_info *out);

/*
 * Closes every dso's DWARF (what libdw decompressed and parsed, the CUs'
 * indexes) and keeps what lookups gave: called once no more addresses
 * come, before the outputs allocate theirs.  A later lookup opens again.
 */
void srclines__release(struct srclines *s);

/* A string kept as long as the srclines (perf's fallbacks for addresses without a line). */
const char *srclines__intern(struct srclines *s, const char *str);

#endif
