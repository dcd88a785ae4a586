/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Instruction pointers to dso + symbol, the way perf does it: the MMAP and
 * MMAP2 records of the file say which file was mapped where and when
 * (ip - start + pgoff is the file offset), the file's ELF symbol tables say
 * what is there.  Kernel symbols come from /proc/kallsyms, JIT code from
 * /tmp/perf-PID.map.  A dso whose build id differs from the recorded one is
 * not symbolized: its frames print as [unknown] rather than as lies.
 *
 * Each dso's symbols are loaded once into a sorted array.
 */
#ifndef SP_SYMBOLS_H
#define SP_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "perf_data.h"

struct symbolizer;

struct sym {
	const char *name;  /* "[unknown]" when not found */
	const char *dso;   /* short name: "libc.so.6", "[kernel.kallsyms]", "[unknown]" */
	const char *path;  /* the mapped file as recorded */
	const char *build_id; /* hex, or "" */
	__u64 offset;	   /* ip - symbol start, or the file offset when unknown */
	__u64 file_offset; /* ip - map start + pgoff */
	bool kernel;
	bool known;	   /* a symbol was found */
	__u64 sym_start, sym_end; /* when known: its extent, in its file's addresses */
	int dso_id;	   /* stable per dso within a symbolizer, -1 for none */
	/*
	 * A Python frame (symbolizer__add_python): its code object's file
	 * (co_filename) and the line of the instruction (-1: none); NULL and 0
	 * for every other frame.
	 */
	const char *src_file;
	int src_line;
};

struct symbolizer_opts {
	const char *root;	 /* where to find files (NULL or "" for /); tests point it at fixtures */
	bool any_perf_map_owner; /* report --force: /tmp/perf-PID.map files of any owner are read (perf's -f) */
};

/* o: NULL for the defaults. */
struct symbolizer *symbolizer__new(const struct pd_meta *recorded, const struct symbolizer_opts *o);
void symbolizer__free(struct symbolizer *s);
/*
 * A symbolizer that outlives many windows (a live session's) keeps up to
 * max files' symbol tables, max_syms symbols in all, over each trim, those
 * used last first: a host's busy set in bounded memory, each file read once
 * while it stays in it.  0, the default, keeps every table.
 */
void symbolizer__keep_tables(struct symbolizer *s, size_t max, size_t max_syms);
/*
 * Unloads the tables past that bound (to be loaded again when an address
 * falls in them) and JITs' perf maps (read again at their next miss), and
 * lets go of the processes that exited (symbolizer__exit) unless one that
 * lives forked from them.  Names resolved before a trim stay valid until the
 * next one.
 */
void symbolizer__trim(struct symbolizer *s);
/* pid exited at time, and every record of it up to then is in: let go at the next trim, unless it comes back. */
void symbolizer__exit(struct symbolizer *s, __s32 pid, __u64 time);

/*
 * Feed the file's MMAP, MMAP2 records (in any order).  build_id: the
 * record's own (hex), or NULL to take the BUILD_ID feature's for the name.
 */
int symbolizer__add_map(struct symbolizer *s, __s32 pid, __u64 start, __u64 len, __u64 pgoff,
			const char *filename, __u64 time, bool kernel, const char *build_id);
/* How many dsos were read from record's build-id cache (containers' files, files gone since). */
int symbolizer__from_cache(const struct symbolizer *s);
/*
 * The copy record kept of the file of build id hex (buildid_cache.h), if it
 * is the one this recording made (its digest) and root's or ours: 0 with
 * its path in out, else -errno.
 */
int symbolizer__cache_entry(struct symbolizer *s, const char *hex, char *out, size_t len);
/* Cache entries found under a recorded build id but not used: their bytes are another file's. */
int symbolizer__cache_rejected(const struct symbolizer *s);
/*
 * The process timeline, fed in time order after every map is added: pid
 * exec'd at time (its new maps win over the old where they overlap, as in
 * perf); ppid forked pid at time (a new process starts there with a copy of
 * ppid's maps; a thread, ppid == pid, changes nothing).
 */
int symbolizer__exec(struct symbolizer *s, __s32 pid, __u64 time);
int symbolizer__fork(struct symbolizer *s, __s32 ppid, __s32 pid, __u64 time);
/*
 * When pid's address space at t began (its last exec or fork), or an address
 * of it last changed meaning (Python slots named anew, or mapped over); 0 if
 * before the file: a cache key.
 */
__u64 symbolizer__epoch(struct symbolizer *s, __s32 pid, __u64 t);

/*
 * A Python code object the recorder named (py_names.h): the slot
 * [slot, slot + size) of process pid names it at time, and for as long as
 * the process's address space lasts (until an exec or the pid's reuse); a
 * child forked then sees it too.  It wins over any map or symbol at those
 * addresses but a map made after its last naming (the process mapped code
 * there and the recorder moved its region).  0 or -ENOMEM.
 */
struct py_names_rec;
int symbolizer__add_python(struct symbolizer *s, const struct py_names_rec *r, __u64 time);
/* Python code objects named, and records of them seen again (a window's re-emission): for -v. */
void symbolizer__python_counts(const struct symbolizer *s, __u64 *named, __u64 *repeats);

/* Resolves ip for process pid at time t; kernel: the ip is a kernel address. */
void symbolizer__resolve(struct symbolizer *s, __s32 pid, __u64 ip, __u64 t, bool kernel,
			 struct sym *out);

/* The user map under ip for process pid at time t (the unwinder's modules): 0, or -ENOENT. */
struct sym_map {
	__u64 start, end, pgoff;
	const char *path, *dso, *build_id; /* as recorded; build_id hex or "" */
	int dso_id;
};
int symbolizer__map(struct symbolizer *s, __s32 pid, __u64 ip, __u64 t, struct sym_map *out);

/* Dsos seen, for pprof mappings: path, build id, and the first map's range. */
struct sym_dso_info {
	const char *path, *build_id;
	__u64 start, limit, pgoff;
	bool kernel;
};
int symbolizer__dsos(struct symbolizer *s, const struct sym_dso_info **out);

/*
 * The build ids (hex, the symbolizer's strings) of user files that frames
 * fell in but that have no full symbol table here: what debuginfod may
 * name.  The caller frees the array.
 */
int symbolizer__wanting(struct symbolizer *s, const char ***out, size_t *n);
/* The ELF file read for a dso (its debug file when there is one), NULL if none: for DWARF lines. */
const char *symbolizer__elf_file(const struct symbolizer *s, int dso_id);
/* A file offset of a dso as its ELF virtual address (what DWARF speaks). */
__u64 symbolizer__vaddr(const struct symbolizer *s, int dso_id, __u64 file_offset);

#endif
