/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Python frames in a perf.data: where their addresses are, and the records
 * that name them.
 *
 * The recorder turns each Python frame, a code object and the index of the
 * instruction it was running, into an ordinary callchain address in a
 * synthetic region of its process: each code object has a slot there of
 * py_slot_size() bytes, named once, and a frame of it is the odd address
 * py_frame_addr(slot, idx).  An odd address is never a symbol's start, and an
 * unwinder's "return address - 1" stays on the same instruction.
 *
 * Two readers name those addresses:
 * - perf, from the symbol-only ELF (py_elf.h) an MMAP2 record of the region
 *   names: one symbol "py::QUALNAME:FILENAME" per slot;
 * - spanperf's report and live sessions, from the records below, which the
 *   file (or the stream) carries itself: a code object may be freed, and the
 *   ELF moved or lost, before report runs.
 *
 * A record is a SAMPLE of the attr PY_NAMES_EVENT_NAME (names.h), pid/tid
 * the process's, with a struct py_names_rec in RAW followed by its strings
 * and line runs (its IP is the slot, so that perf report's section of the
 * event lists the code objects named).  The recorder stamps it no later
 * than the first sample that uses the slot (that sample's time will do) and
 * writes it no later than that sample's round: report applies records in
 * time order, with the forks and execs, before the samples of their time.
 *
 * In a process, a slot address names one code object for as long as the
 * process image lives (until an exec or the pid's reuse), so report keys
 * names by (pid, address) and the image the record's time falls in; a
 * forked child sees the names its parent had at the fork.  For perf, which
 * knows no pids in the ELF, each image's region has a pgoff of its own
 * (py_elf__add_region), and a child that keeps using its parent's slots
 * must take its new ones from the same allocator.
 *
 * Where the recorder replaces the sampled eval-loop frame (the chain's
 * first user entry) with a Python frame, the sample's IP must become that
 * frame's address too: perf report without -g, and report's span top
 * functions, name a sample by its IP.
 */
#ifndef SP_PY_NAMES_H
#define SP_PY_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/perf_event.h>
#include <linux/types.h>

#include "names.h"
#include "sbuf.h"

/* ---- addresses ---- */

/* Slots start 16-byte aligned; a code object of more code units than this is refused. */
#define PY_SLOT_ALIGN 16
#define PY_MAX_CODEUNITS (1u << 22)
/* The index of an instruction not started yet (3.11+ prev_instr before the first). */
#define PY_IDX_NOT_STARTED (-1)

/*
 * The bytes of a code object's slot: two per code unit, one unit for index
 * -1 (not started) and one for an index the walk could not place.
 */
static inline __u64 py_slot_size(__u32 ncodeunits)
{
	return (2ull * ((__u64)ncodeunits + 2) + PY_SLOT_ALIGN - 1) & ~(__u64)(PY_SLOT_ALIGN - 1);
}

/*
 * The address of a frame at instruction idx (-1: not started) of the code
 * object whose slot starts at slot; an idx outside [-1, ncodeunits) (a torn
 * read) takes the slot's last unit, whose line is unknown.
 */
static inline __u64 py_frame_addr(__u64 slot, __u32 ncodeunits, __s64 idx)
{
	if (idx < -1 || idx >= (__s64)ncodeunits)
		idx = ncodeunits;
	return slot + 2 * (__u64)(idx + 1) + 1;
}

/* The instruction index of a frame address (or that address less 1) in the slot at slot. */
static inline __s64 py_frame_index(__u64 slot, __u64 addr)
{
	return (__s64)((addr - slot) / 2) - 1;
}

/* ---- the record ---- */

#define PY_NAMES_REC_MAGIC 0x59505053u /* "SPPY" in a little-endian file */
#define PY_NAMES_REC_VERSION 1
/* Bytes kept of a qualified name or a file name (UTF-8); longer ones are cut, flagged. */
#define PY_NAMES_STR_MAX 1024

/* flags */
#define PY_NAMES_QUALNAME_GUESSED 1 /* 3.8-3.10: no qualified name found; qualname is co_name */
#define PY_NAMES_NAME_CUT 2	    /* qualname was longer than PY_NAMES_STR_MAX */
#define PY_NAMES_FILE_CUT 4	    /* filename likewise */
#define PY_NAMES_LINES_CUT 8	    /* the runs stop before the code's end: the rest has no line */
#define PY_NAMES_NO_LINES 16	    /* the line table could not be read or decoded */
/*
 * A Java method (issue 35): the same slots and records, a method for a code
 * object and a bytecode index for an instruction; qualname is the name the
 * JDK's perf map gives it, the symbol's name as it is.
 */
#define PY_NAMES_JAVA 32

/*
 * One named code object.  Strings are not NUL-terminated in the record;
 * decoded, they point into it (py_names_rec_decode) and are NUL-terminated
 * copies only through py_names_name().
 */
struct py_names_rec {
	__u32 pid;
	__u32 flags;	       /* PY_NAMES_* */
	__u64 slot;	       /* the slot's first address, in pid's address space */
	__u64 code;	       /* the code object's address in the process (informative) */
	__u32 size;	       /* the slot's bytes: py_slot_size(ncodeunits) */
	__u32 ncodeunits;
	__s32 firstlineno;
	__u16 qualname_len, filename_len;
	const char *qualname, *filename; /* UTF-8, _len bytes each, no NUL */
	__u32 lines_len;
	const __u8 *lines;     /* line runs, below */
};

/* The attr the records are samples of: a software BPF-output event with RAW, as spans'. */
void py_names_attr(struct perf_event_attr *a);

/*
 * The SAMPLE record of r at time t, under attr with id, appended to b: 0,
 * -E2BIG if it cannot fit a record (strings and runs are cut to fit first,
 * and the flags say so), -ENOMEM.
 */
int py_names_rec_write(struct sbuf *b, const struct perf_event_attr *attr, __u64 id, __u64 t,
		       const struct py_names_rec *r);
/* A record's RAW into out (pointing into raw): 0, or -EINVAL when it holds none this reader knows. */
int py_names_rec_decode(const void *raw, size_t len, struct py_names_rec *out);

/*
 * The symbol name CPython's perf map gives the code object (3.12+ -X perf):
 * "py::QUALNAME:FILENAME", in buf (cut to fit, always NUL-terminated).
 * NUL bytes in either string are written as U+FFFD.  Returns buf.
 */
#define PY_NAME_BUF (6 * PY_NAMES_STR_MAX + 16)
const char *py_names_name(const char *qualname, size_t qlen, const char *filename, size_t flen, char *buf,
			  size_t len);
/* The symbol name of a record's slot: py_names_name's, or a Java method's own name. */
const char *py_names_symbol(const struct py_names_rec *r, char *buf, size_t len);
/* One of a record's strings alone, NUL-terminated, the same way (buf of 3 * n + 1 holds any). */
const char *py_names_text(const char *s, size_t n, char *buf, size_t len);

/*
 * ---- line runs ----
 *
 * A code object's line of each instruction, in order from index 0, as runs
 * of instructions that share a line: each run is uvarint(n << 1 | none)
 * then, unless none, svarint(line - previous line), where n >= 1 counts
 * code units, the previous line starts at firstlineno, a uvarint is LEB128
 * and an svarint zigzag-coded LEB128.  Index -1 (not started) is at
 * firstlineno; an index past the runs has no line.  The recorder builds
 * them from the version's own table (py_lines.h), so report reads one
 * format whatever the Python.
 */
struct py_runs {
	struct sbuf *out;
	__u32 units;	    /* code units covered so far */
	int line;	    /* the last line written (firstlineno at first) */
	__u32 pend_n;	    /* the run being gathered: n units of line pend_line (none: pend_none) */
	int pend_line;
	bool pend_none;
	size_t max;	    /* bytes the runs may take */
	bool cut;	    /* the bytes ran out: the later units have no line */
};
/* Starts runs appended to out, at most max bytes of them. */
void py_runs_init(struct py_runs *r, struct sbuf *out, int firstlineno, size_t max);
/* The next n code units have line (or none): consecutive ones of one line make one run. */
void py_runs_add(struct py_runs *r, __u32 n, int line, bool none);
/* Writes the run being gathered; 0, or out's error. */
int py_runs_end(struct py_runs *r);

/* The line of instruction idx (>= 0) as the runs say; -1 where none (or a malformed run). */
int py_runs_line(const __u8 *runs, size_t len, int firstlineno, __s64 idx);

/* The runs one by one: n code units of line (or none); false at their end or at a malformed one. */
struct py_runs_iter {
	const __u8 *p, *end;
	long long line;
};
void py_runs_iter_init(struct py_runs_iter *it, const __u8 *runs, size_t len, int firstlineno);
bool py_runs_next(struct py_runs_iter *it, __u32 *n, int *line, bool *none);

#endif
