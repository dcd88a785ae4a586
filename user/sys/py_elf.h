/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The symbol-only ELF that names Python or Java frames for perf 6.1 (research:
 * python.md section 10, perfnames/): an MMAP2 record maps each process's
 * synthetic region (py_names.h) at its pgoff in this file, and perf names an
 * address by the symbol at address - start + pgoff, with no option.
 *
 * The file holds no code: ET_DYN, one PT_LOAD and a NOBITS .text whose file
 * offsets equal their addresses (sh_offset == sh_addr: perf shifts every
 * symbol by the difference), a .symtab of one GLOBAL FUNC symbol per slot,
 * and a GNU build-id note.
 *
 * One file per perf.data (per --switch-output file: each is self-contained),
 * and runtime, for every process of it that runs the runtime: one build-id
 * entry and one file to keep, where a file per process would make hundreds on
 * a busy host.  It lives in OUTPUT.spanperf/ beside the perf.data, as
 * python-BUILDID.elf or java-BUILDID.elf (perf shows the name as the frames'
 * dso, so a Java frame must not read "python"): the name is
 * fixed when the window starts (the MMAP2 records carry it) while a
 * --switch-output file is named only at its end; the build id is random,
 * made per file, since the symbols are known only at the end.  Never in
 * perf's ~/.debug (round 3's rule): the recorder may enter it there under
 * --perf-cache like any other file.
 *
 * The folder is created private (0700, the file 0600, as the perf.data) and
 * used only if it is a directory (not a symlink) of ours that no one else
 * may write: its files
 * are written, renamed and removed through it.  A file is written under a
 * temporary name and renamed, as the perf.data is.
 */
#ifndef SP_PY_ELF_H
#define SP_PY_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#define PY_ELF_BUILD_ID_SIZE 20
/* Where the first region starts in the file; regions are page-aligned. */
#define PY_ELF_FIRST_PGOFF 0x1000ull

struct py_elf;

/* The runtime whose frames a file names: its name's prefix. */
enum py_elf_runtime {
	PY_ELF_PYTHON,
	PY_ELF_JAVA,
	PY_ELF_RUNTIMES,
};

/*
 * A writer for the ELF of the perf.data `output` (its final name or its
 * -o, whichever the recorder has; only its folder and name are used).
 * 0; -EOPNOTSUPP when output is no regular file (-o /dev/null: no ELF,
 * the recorder goes on without); -EPERM when OUTPUT.spanperf exists and is
 * not a private directory of ours; -errno.  err says which, naming the path.
 */
int py_elf__new(struct py_elf **out, const char *output, enum py_elf_runtime rt, char *err, size_t errlen);
/* Its final absolute path, for the MMAP2 records of its regions. */
const char *py_elf__path(const struct py_elf *w);
/* Its build id (PY_ELF_BUILD_ID_SIZE bytes): the MMAP2 build-id form, or the BUILD_ID feature. */
const __u8 *py_elf__build_id(const struct py_elf *w);

/*
 * Reserves len bytes of the file's address space for one region: *pgoff is
 * where its MMAP2 record maps it.  0, -E2BIG (the file's space is spent:
 * 2^46 bytes), -ENOMEM.
 */
int py_elf__add_region(struct py_elf *w, __u64 len, __u64 *pgoff);
/*
 * A symbol of size bytes at file offset off (a region's pgoff + the slot's
 * offset in it), named name (copied; "py::QUALNAME:FILENAME").  0, -EINVAL
 * (outside every region, or size 0), -ENOMEM.  A symbol that overlaps one
 * already added is dropped at commit (counted), as perf would pick one.
 */
int py_elf__add_symbol(struct py_elf *w, __u64 off, __u64 size, const char *name);
/*
 * The lines of the symbol just added at off, for perf's srcline (`perf
 * report --sort srcline`, addr2line): its code object's file and line runs
 * (py_names.h, from firstlineno), written as DWARF line tables in which
 * each instruction's two bytes have its line.  0, -EINVAL (no symbol
 * starts at off), -ENOMEM.  Optional: without it perf names the frames
 * all the same.
 */
int py_elf__add_lines(struct py_elf *w, __u64 off, const char *file, int firstlineno, const __u8 *runs,
		      size_t len);
/* Symbols added, and dropped at commit for overlapping. */
size_t py_elf__symbols(const struct py_elf *w);
size_t py_elf__dropped(const struct py_elf *w);

/*
 * Writes the file: a temporary in the folder, renamed to its path.  A
 * writer without regions writes nothing (no Python frame named it).  0 or
 * -errno; err names the file.
 */
int py_elf__commit(struct py_elf *w, char *err, size_t errlen);
/* Frees the writer; before commit, nothing is left on disk. */
void py_elf__free(struct py_elf *w);

/*
 * The ELF image alone (for tests and the fuzz seeds): malloc'ed into
 * *image, its size in *len.  0 or -ENOMEM.
 */
int py_elf__image(struct py_elf *w, void **image, size_t *len);

/*
 * After a perf.data beside it was written or removed: the python-*.elf
 * files of OUTPUT.spanperf/ that no perf.data there names any more are
 * removed, and the folder if it ends empty.  The files that name them are
 * OUTPUT, OUTPUT.old and OUTPUT.STAMP (--switch-output), through their
 * BUILD_ID features: the recorder enters each ELF there (perf checks a
 * file's build id against it, and perf archive keys by it).  Returns how
 * many were removed, or -errno.
 */
int py_elf_prune(const char *output);

#endif
