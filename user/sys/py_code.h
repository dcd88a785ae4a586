/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CPython 3.8-3.13 code objects read out of another process's memory: the
 * name, qualified name, file name, first line and line table of the code
 * object a Python frame ran, for the recorder to name each once (research:
 * python.md sections 5-7).
 *
 * Everything here is the other process's to write: each read goes through
 * a callback with a byte budget, each string and table is bounded, a
 * string's length or kind that no real one has is refused, and a code
 * object is one only if its type is the process's PyCode_Type.  The
 * process runs while it is read: a torn read gives an error or a wrong but
 * bounded answer, never a hang or a read out of bounds here.
 *
 * The offsets are the caller's: the recorder keeps the per-version tables
 * and reads the code object's members from PyCode_Type's tp_members (3.13:
 * _Py_DebugOffsets); py_code_layout_init() fills in the parts of the object
 * layouts that no version changed at runtime, for callers and tests.
 */
#ifndef SP_PY_CODE_H
#define SP_PY_CODE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "py_lines.h"
#include "py_names.h"

/* ---- reading the process ---- */

/*
 * Reads of one process's memory.  read copies len bytes at addr into buf:
 * 0, or -errno (-EFAULT where not every byte could be read).  Each read
 * takes its size from budget first and fails with -E2BIG past it, so that
 * one object costs what the caller allows.
 */
struct py_mem {
	int (*read)(void *ctx, __u64 addr, void *buf, size_t len);
	void *ctx;
	size_t budget;
	unsigned long reads, bytes; /* done, for -v */
};

/* A reader of /proc/PID/mem (or any file at process addresses) open as fd: pread, whole or -EFAULT. */
void py_mem_init_fd(struct py_mem *m, int fd, size_t budget);
/* A reader of a buffer that stands at address base (tests, fuzzing): outside it, -EFAULT. */
struct py_mem_buf {
	const void *p;
	size_t len;
	__u64 base;
};
void py_mem_init_buf(struct py_mem *m, struct py_mem_buf *b, size_t budget);
/* One read through m (the budget, the counts): 0 or -errno. */
int py_mem_read(struct py_mem *m, __u64 addr, void *buf, size_t len);

/* ---- layouts ---- */

/*
 * What the code-object reader needs of a version.  Offsets in bytes from the
 * object's start; 0 where a version has no such field (co_qualname before
 * 3.11, co_code from 3.11).
 */
struct py_code_layout {
	__u16 version;	 /* major << 8 | minor: 0x0308 ... 0x030d */
	__u64 code_type; /* &PyCode_Type in the process: a code object's ob_type */
	/* PyCodeObject members (PyCode_Type.tp_members; 3.13: _Py_DebugOffsets.code_object) */
	__u32 co_name, co_qualname, co_filename, co_firstlineno;
	__u32 co_linetable; /* the line table bytes: co_lnotab before 3.10, co_linetable from */
	__u32 co_code;	    /* before 3.11: the bytes object of the code (its size / 2 counts the units) */
	/*
	 * From 3.11 the code units follow the fixed part and ob_size counts
	 * them; the frame's instruction pointer is relative to
	 * code + co_code_adaptive (PyCode_Type.tp_basicsize).
	 */
	__u32 co_code_adaptive;
	/* PyObject, PyVarObject */
	__u32 ob_type, ob_size;
	/* str: length (characters), state (interned 0-1, kind 2-4, compact 5, ascii 6), compact data */
	__u32 str_length, str_state, str_ascii_data, str_compact_data;
	/* bytes: ob_size, ob_sval */
	__u32 bytes_size, bytes_data;
};

/*
 * The parts of the layout no version changes at runtime: ob_type 8, ob_size
 * 16, str length 16 / state 32 / data 48 and 72 (3.8-3.11) or 40 and 56
 * (3.12+), bytes 16 / 32; code_type and the co_* members stay the
 * caller's (zeroed).  0, or -EPROTONOSUPPORT outside 3.8-3.13.
 */
int py_code_layout_init(struct py_code_layout *l, __u16 version);

/* ---- code objects ---- */

/* Bytes of a string kept (UTF-8, before the NUL); longer ones are cut and flagged. */
#define PY_STR_MAX PY_NAMES_STR_MAX
/* A str claiming more characters than this is a lie (no name or file is a megabyte): refused. */
#define PY_STR_LIE (1u << 20)
/* Line tables past this are refused (research: the standard library's largest is far below). */
#define PY_LINETABLE_MAX (1u << 20)

struct py_code {
	__u64 addr;
	/* UTF-8, NUL-terminated; NUL characters, lone surrogates and invalid code points as U+FFFD. */
	char name[PY_STR_MAX + 1], qualname[PY_STR_MAX + 1], filename[PY_STR_MAX + 1];
	bool has_qualname; /* co_qualname (3.11+); before, qualname is a copy of name */
	__u32 flags;	   /* PY_NAMES_NAME_CUT, PY_NAMES_FILE_CUT, PY_NAMES_LINES_CUT, PY_NAMES_NO_LINES */
	int firstlineno;
	__u32 ncodeunits;
	/* The line table as runs (py_names.h), malloc'ed; NULL with PY_NAMES_NO_LINES */
	__u8 *lines;
	size_t lines_len;
};

/*
 * Reads the code object at code: 0, or -EINVAL (not a code object of this
 * process: another type, a string that lies, more units than
 * PY_MAX_CODEUNITS), -EFAULT (unreadable), -E2BIG (m's budget spent),
 * -ENOMEM.  A line table that cannot be read or decoded is no error: the
 * code object is named, with PY_NAMES_NO_LINES (or its runs cut).
 * lines_max bounds the runs' bytes (what a record has room for).
 */
int py_code_read(struct py_mem *m, const struct py_code_layout *l, __u64 code, size_t lines_max,
		 struct py_code *out);
/* Frees out->lines; out may be zeroed or NULL. */
void py_code_clear(struct py_code *c);

struct py_qualnames;
/*
 * The record of c in pid's slot at slot (py_names.h), pointing into c: its
 * qualified name co_qualname (3.11+), else q's (3.8-3.10; q may be NULL),
 * else co_name, flagged PY_NAMES_QUALNAME_GUESSED; size py_slot_size().
 * The perf-map symbol name for the ELF: py_names_name(out->qualname, ...).
 */
void py_code_rec(const struct py_code *c, const struct py_qualnames *q, __u32 pid, __u64 slot,
		 struct py_names_rec *out);

/*
 * A str object's text as UTF-8 into buf (len >= 4): 0 (*cut when it was
 * longer than fits), -EINVAL (not a compact str, a kind other than 1, 2 or
 * 4, a length over PY_STR_LIE), -EFAULT, -E2BIG.
 */
int py_str_read(struct py_mem *m, const struct py_code_layout *l, __u64 str, char *buf, size_t len, bool *cut);

/*
 * ---- qualified names before 3.11 ----
 *
 * 3.8-3.10 code objects carry no qualified name.  As CPython's perf map
 * would write (its __qualname__), the names are rebuilt once per process
 * from what the interpreter holds: every function in every module's dict
 * (func_code -> func_qualname), every class's methods one level down
 * (staticmethod, classmethod and property unwrapped), then the code objects
 * nested in those (co_consts) as PARENT.<locals>.NAME, or PARENT.NAME in
 * a class body (whose code has no CO_NEWLOCALS), as the compiler names
 * them.  What the walk does not reach (a function made after it, code
 * nested in the module's own) keeps co_name, which is what py-spy and
 * the OpenTelemetry profiler show on every version, and is flagged
 * PY_NAMES_QUALNAME_GUESSED.
 */
struct py_scan_layout {
	__u64 interp;	       /* the interpreter state whose modules are walked */
	__u32 interp_modules;  /* PyInterpreterState.modules: 0x38 (3.8), 0x358 (3.9, 3.10) */
	/* the types, in the process */
	__u64 function_type, staticmethod_type, classmethod_type, property_type, dict_type;
	__u32 func_code, func_qualname; /* 3.8, 3.9: 16, 104; 3.10: 48, 40 */
	__u32 type_flags, type_dict;	/* PyTypeObject: 168, 264 */
	__u32 module_dict;		/* PyModuleObject.md_dict: 16 */
	__u32 wrapped;			/* staticmethod, classmethod, property: the callable at 16 */
	__u32 co_consts, co_flags;	/* PyCode_Type.tp_members; co_flags 0: unknown */
	__u32 tuple_size, tuple_items;	/* 16, 24 */
	/* dict: ma_keys 32, ma_values 40; keys: dk_size 8, dk_nentries 32, indices at 40 */
	__u32 dict_keys, dict_values, keys_size, keys_nentries, keys_indices;
};

/* The fixed parts of 3.8-3.10 (all but interp and the types, which are the caller's): 0 or -EPROTONOSUPPORT. */
int py_scan_layout_init(struct py_scan_layout *s, __u16 version);

/*
 * Walks the interpreter (reads through m, whose budget bounds the walk)
 * and indexes at most max_entries code objects: 0 (an index, perhaps
 * partial: a walk cut short keeps what it found), or -ENOMEM.
 */
int py_qualnames__build(struct py_qualnames **out, struct py_mem *m, const struct py_code_layout *cl,
			const struct py_scan_layout *sl, size_t max_entries);
/* The qualified name of the code object at code (UTF-8), or NULL. */
const char *py_qualnames__find(const struct py_qualnames *q, __u64 code);
size_t py_qualnames__count(const struct py_qualnames *q);
void py_qualnames__free(struct py_qualnames *q);

#endif
