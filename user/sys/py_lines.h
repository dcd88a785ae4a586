/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CPython's line tables, each version's format, read as its own
 * PyCode_Addr2Line reads them (research: python.md section 6, checked on
 * every instruction of each standard library here):
 * - 3.8, 3.9 co_lnotab: (byte-offset increment u8, line increment s8) pairs;
 * - 3.10 co_linetable: (range-end increment u8, line increment s8) pairs,
 *   -128 meaning no line;
 * - 3.11+ location table: entries of a start byte (bit 7, a code, a length
 *   in code units) and varints.
 *
 * Instructions are counted in 2-byte code units (3.11+ caches included);
 * index -1 (not started) is at co_firstlineno.  The tables come from
 * another process: every loop is bounded by the table's length, a varint
 * cut short is malformed, and nothing is read past the end.
 */
#ifndef SP_PY_LINES_H
#define SP_PY_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "py_names.h"

enum py_line_format {
	PY_LINES_LNOTAB,    /* 3.8, 3.9 co_lnotab */
	PY_LINES_310,	    /* 3.10 co_linetable */
	PY_LINES_LOCATIONS, /* 3.11, 3.12, 3.13 co_linetable */
};

/* The format of a version (major << 8 | minor), or -EPROTONOSUPPORT outside 3.8-3.13. */
int py_line_format_of(__u16 version);

/*
 * The line of instruction idx, straight from the table: CPython's
 * PyCode_Addr2Line(code, 2 * idx), >= 0.  -1 where there is none (3.10's
 * -128, 3.11's no-location entries, an index past the table); a malformed
 * table gives -1 too, and sets *bad (when bad is not NULL).
 */
int py_lines_addr2line(enum py_line_format f, const __u8 *tab, size_t len, int firstlineno, __s64 idx, bool *bad);

/*
 * Every instruction's line, [0, ncodeunits), as runs (py_names.h) into r
 * (py_runs_init'ed with the same firstlineno): 0, or -EINVAL for a
 * malformed table (r then holds the runs before the fault, which stay
 * right; the caller may keep them, marked cut).
 */
int py_lines_runs(enum py_line_format f, const __u8 *tab, size_t len, int firstlineno, __u32 ncodeunits,
		  struct py_runs *r);

#endif
