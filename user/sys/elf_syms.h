/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An ELF file's function symbols and load segments, read as perf 6.1 reads
 * them: the report's symbolizer names addresses with them, and record's
 * uprobe spans find a function's file offset.
 */
#ifndef SP_ELF_SYMS_H
#define SP_ELF_SYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <gelf.h>
#include <linux/types.h>

struct elf_sym {
	__u64 start, end;
	char *name;
	int seq;	 /* load order: aliases at one address keep it, as in perf's tree */
	/*
	 * STB_* (0 to 15), for choosing among aliases: a byte, so a symbol is
	 * 32 bytes, not 40; an always-on agent keeps half a million loaded.
	 */
	signed char binding;
	bool demangled; /* name is final (see elf_sym__name) */
	bool own_name;	/* name is its own allocation (demangled), not in the table's name blocks */
	bool object;	 /* STT_OBJECT: names no function (see elf_sym_kept) */
};

struct elf_seg {
	__u64 off, vaddr, filesz;
};

/* A symbol table: sorted by start once finished. Zero-initialised is empty. */
struct elf_syms {
	struct elf_sym *syms;
	int nr_syms;
	size_t cap_syms;
	struct elf_seg *segs;
	int nr_segs;
	/*
	 * The names, packed in blocks freed with the table: one allocation per
	 * name cost a live session's half million kept symbols some 16 bytes
	 * each in malloc's headers and rounding, and each load and unload a
	 * malloc and a free per symbol.
	 */
	struct elf_names *names;
	/*
	 * A file's string table mapped (strs_map, strs_len: the whole mapping),
	 * its names pointing into it rather than copied: they stay in the page
	 * cache, where an always-on agent's half million kept symbols had 40 MiB
	 * of names in its heap, of which its stacks read a few thousand.
	 */
	void *strs_map;
	size_t strs_len;
	/*
	 * Names let go (elf_syms__names_from_file), read again when asked:
	 * the i-th symbol's at name_offs[i] in names_fd.  Unused while NULL.
	 */
	__u32 *name_offs;
	int names_fd;
};

/*
 * Loads file's symbols (.symtab, else .dynsym, and the PLT); want_segs: its
 * PT_LOAD segments too.  all_aliases: keep every name at an address and
 * leave the table unfinished (a lookup by name); else finished.
 * 0, or -errno (-EINVAL: not ELF).
 */
int elf_syms__load_file(struct elf_syms *t, const char *file, bool want_segs, bool all_aliases);
/* The same from an image in memory (the vdso); finished. */
int elf_syms__load_mem(struct elf_syms *t, void *image, size_t size);
/* Adds one symbol (kallsyms, perf-PID.map); finish the table once all are in. */
int elf_syms__add(struct elf_syms *t, __u64 start, __u64 size, const char *name, int binding);
/* The same with name not copied: it must stay until the table's names are let go (elf_syms__names_from_file). */
int elf_syms__add_ref(struct elf_syms *t, __u64 start, __u64 size, const char *name, int binding);
/* The PLT's entries, named as perf names them (NAME@plt), from a file open under a budget (elf_budget.h). */
struct elf_budget;
int elf_syms__add_plt(struct elf_syms *t, struct elf_budget *b);
/* Sorts, sizes the sizeless, keeps perf's choice among aliases. */
void elf_syms__finish(struct elf_syms *t);
/* The symbol covering addr in a finished table, or NULL. */
struct elf_sym *elf_syms__find(const struct elf_syms *t, __u64 addr);
/* A file offset as an ELF virtual address, through the segments. */
__u64 elf_syms__to_vaddr(const struct elf_syms *t, __u64 off);
/* The name as reports print it: demangled the first time it is asked for. */
const char *elf_sym__name(struct elf_sym *sym);
/*
 * A finished table's names let go, to be read again from fd when asked:
 * a symbol's name starts at by_seq[its seq] (its load order) and ends at a
 * tab, space or newline, as kallsyms' lines hold them.  The kernel's 100k
 * names took 3 MiB of a report's heap for the few dozen its samples name.
 * 0: fd is the table's (closed with it); -errno: nothing changed.
 */
int elf_syms__names_from_file(struct elf_syms *t, int fd, const __u32 *by_seq);
/* elf_sym__name for sym of t, whose name may be on file. */
const char *elf_syms__name(struct elf_syms *t, struct elf_sym *sym);
/*
 * The pages of its mapped string table let go (back to the page cache):
 * for a table kept loaded for long, whose names were read since.
 */
void elf_syms__drop_pages(struct elf_syms *t);
/* Frees what the table holds and empties it; NULL is fine. */
void elf_syms__clear(struct elf_syms *t);

/* The .gnu_debuglink name of a file, where stripped binaries point at their symbols. */
int elf_debuglink(const char *file, char *out, size_t len);
/* Whether the file has a full symbol table (not only .dynsym). */
bool elf_has_symtab(const char *file);

/*
 * A function's file offset in an ELF file, for a uprobe: its symbol's
 * address turned into an offset through the PT_LOAD segments.  -ENOENT if
 * no function by that name, -ENOEXEC if not an ELF file, -ENOTUNIQ if a C++
 * name ("over") names several functions (overloads), whose mangled names
 * are then listed in candidates.
 */
int elf_find_function(const char *path, const char *func, __u64 *file_offset, char *candidates,
		      size_t candidates_len);
/* Loads a file's function symbols (tests, fuzzing): count or -errno. */
int elf_syms_count(const char *path);

#endif
