/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A CPython 3.8-3.13 runtime (x86-64, GIL build) in another process: which
 * file holds it, which version it is, and the layout of everything a
 * profiler reads of it, from the binary where it says (Py_Version, 3.13's
 * _Py_DebugOffsets, PyCode_Type's member table) and from the per-version
 * tables here where it does not (each checked against the DWARF of that
 * version's build; tests/integration/test_python.py runs every version).
 *
 * The walk in BPF takes struct sp_py_proc (spanperf_abi.h); naming a code
 * object takes struct py_layout.  Nothing here writes to the process or
 * calls into it: its memory is read, and every value read is the
 * process's to lie about, so each is checked before it is used as a size.
 */
#ifndef SP_PYFACTS_H
#define SP_PYFACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "spanperf_abi.h"

/* Reads len bytes of a process's memory at addr: 0, or -errno (-EFAULT: not all mapped). */
typedef int (*py_read_fn)(void *ctx, __u64 addr, void *buf, size_t len);
/* A py_read_fn for process pid, passed as (void *)(long)pid: process_vm_readv. */
int py_read_pid(void *ctx, __u64 addr, void *buf, size_t len);

/* CPython's version: PY_VERSION_HEX's major, minor, micro (release level and serial dropped). */
#define PY_VER(maj, min) ((maj) << 24 | (min) << 16)
#define PY_VER_MINOR(v) ((v) & 0xffff0000u)

/*
 * What naming a code object needs: the code object's fields (from
 * PyCode_Type.tp_members, or 3.13's debug offsets), strings and bytes, and
 * for 3.8-3.10, whose code objects carry no qualified name, what the
 * module scan of python.md section 7 follows.  Offsets in bytes;
 * SP_PY_NONE where the version has no such field.
 */
struct py_layout {
	__u32 version;		/* PY_VERSION_HEX as the binary says, e.g. 0x030b07f0 */
	__u64 code_type;	/* &PyCode_Type: an object whose ob_type is not this is no code object */
	__u64 runtime;		/* &_PyRuntime */
	/* PyCodeObject */
	__u32 co_name, co_qualname, co_filename, co_firstlineno;
	__u32 co_linetable;	/* 3.10+: bytes, the version's own format */
	__u32 co_lnotab;	/* 3.8/3.9: bytes of (address delta, line delta) pairs */
	__u32 co_code;		/* 3.8-3.10: the bytes object of the code (its size / 2: the units) */
	__u32 co_consts, co_flags;
	__u32 code_units;	/* 3.11+: the first code unit, at tp_basicsize; ob_size counts the units */
	bool lasti_bytes;	/* 3.8/3.9: an instruction index is a byte offset over 2 (the BPF gives units) */
	/* PyUnicodeObject: length at +16, state at +32 (kind bits 2-4, compact 5, ascii 6) */
	__u32 uni_ascii;	/* data of a compact ASCII string: sizeof(PyASCIIObject) */
	__u32 uni_compact;	/* data of another compact one: sizeof(PyCompactUnicodeObject) */
	/* PyBytesObject: ob_size at +16, data at +32 */
	/* 3.8-3.10 qualified names: every module's functions and classes (python.md 7) */
	__u64 function_type, staticmethod_type, classmethod_type, property_type, dict_type;
	__u32 is_modules;	/* interp->modules (a dict) */
	__u32 fn_code, fn_qualname; /* PyFunctionObject */
	__u32 tp_flags, tp_dict; /* PyTypeObject */
	__u32 d_keys, d_values;	/* PyDictObject; keys: dk_size +8, dk_nentries +32, indices +40 */
	__u32 rt_interp_head, ts_interp;
};

/* What the file that holds the runtime says, before any process is read (one per file). */
struct py_binary {
	__u16 e_type;		/* ET_EXEC (Debian's python3.11) or ET_DYN (libpython, a PIE) */
	__u64 load_base;	/* p_vaddr - p_offset of the first PT_LOAD: a mapping's bias is start - pgoff - this */
	__u64 runtime, py_version, code_type, get_version; /* symbol values (0: none) */
	__u64 function_type, staticmethod_type, classmethod_type, property_type, dict_type;
	__u64 eval[SP_PY_EVAL_RANGES][2]; /* _PyEval_EvalFrameDefault and its .cold parts, as link addresses */
	int nr_eval;
	__u32 version;		/* PY_VERSION_HEX from the file: Py_Version, else Py_GetVersion's string; 0 unknown */
	__u8 tramp[SP_PY_TRAMP_MAX]; /* _Py_trampoline_func_start's bytes */
	__u32 tramp_len;
};

/*
 * The ELF file fd's CPython facts: 0, -ENOENT when it defines no
 * _PyRuntime (not a CPython runtime), -EINVAL when not an ELF file.
 */
int py_binary_read(int fd, struct py_binary *out);

/* One process's runtime: the walk's layout (start_stack and the thread state's way left to the caller) and the names'. */
struct py_facts {
	struct sp_py_proc bpf;
	struct py_layout l;
	__u32 tss_key;		/* the runtime's pthread key (autoTSSkey) */
	bool debug_offsets;	/* 3.13: taken from _Py_DebugOffsets */
};

/*
 * The runtime of file e mapped at load bias `bias` in the process that
 * read() reads: its version checked against the process (the key
 * initialised, the first thread state's interpreter the head), the tables
 * and what the binary carries combined.  0, or -errno with why (a version
 * not covered: -EPROTONOSUPPORT; a process whose runtime is not set up
 * yet or lies: -EAGAIN / -EBADMSG).
 */
int py_facts_read(const struct py_binary *e, __u64 bias, py_read_fn read, void *ctx, struct py_facts *out, char *why,
		  size_t n);

/* "3.11.7" from PY_VERSION_HEX. */
void py_version_str(__u32 version, char *buf, size_t n);

#endif
