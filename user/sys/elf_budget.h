/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What reading one ELF file may cost, and what all of a process's reads
 * cost together.
 *
 * Every ELF file spanperf reads on another process's behalf (its
 * executable, its libraries, a debug file named by its build id) is that
 * process's to craft, and libelf checks a section only against the file's
 * size: a library of a megabyte can declare a thousand sections over one
 * sparse hole, and libelf keeps the data of every section read until
 * elf_end.  A cap per section bounds none of that.  So a file is read
 * under a budget fixed for the purpose:
 *   - its headers are looked at before libelf sets one structure up per
 *     section (ELF_BUDGET_HEADERS of each kind at most);
 *   - the distinct sections read are counted (ELF_BUDGET_SECTIONS);
 *   - their bytes are summed against the purpose's limit, and never past
 *     the file's own size, which real sections do not overlap;
 *   - a section libelf keeps is charged once, however often it is asked
 *     for, and what is only scanned (notes, relocations) is read into a
 *     buffer of the caller's and let go at once, never kept by libelf;
 *   - what libelf holds for all the files open at once, in every thread,
 *     is bounded too (ELF_BUDGET_HELD), and the process's reads are
 *     summed for -v.
 * A refusal is an error of the read (-EFBIG over the bytes, -E2BIG over a
 * count), said once per process at warning level.
 */
#ifndef SP_ELF_BUDGET_H
#define SP_ELF_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <gelf.h>
#include <linux/types.h>

/*
 * Per purpose, what one file's reads may sum to: far above what real files
 * need (the largest here: chromium's .rela.dyn 26 MB, libLLVM's .eh_frame
 * 5 MB, libjvm's symbol table and names 7 MB).
 */
#define ELF_BUDGET_NOTES (1ull << 20) /* build-id notes: a few hundred bytes in a real file */
#define ELF_BUDGET_TLS (128ull << 20) /* otel: symbols, their names, relocations */
#define ELF_BUDGET_SYMS (512ull << 20) /* symbol tables with their names, the PLT's relocations */
#define ELF_BUDGET_CFI (256ull << 20) /* .eh_frame or .debug_frame, and the section names */
#define ELF_BUDGET_DWARF (1ull << 30) /* what libdw may inflate of a file: debuginfo.c keeps no larger */
/* Distinct sections one purpose reads of one file: a real file needs a few. */
#define ELF_BUDGET_SECTIONS 64
/* Section or program headers a file may declare (a real one: a few dozen; ELF's own limit without extension). */
#define ELF_BUDGET_HEADERS 65535
/* What libelf may hold at once for every file open in the process. */
#define ELF_BUDGET_HELD (1ull << 30)

struct elf_budget {
	Elf *elf;
	int fd;		   /* -1 for an image in memory */
	const void *image; /* the image, if so */
	__u64 size;	   /* the file's or the image's */
	const char *name;  /* for messages; may be NULL */
	__u64 limit, used; /* bytes */
	__u64 held;	   /* of used, what libelf keeps until elf_budget_end */
	struct {
		size_t ndx;
		bool kept;
	} seen[ELF_BUDGET_SECTIONS];
	unsigned nr_seen;
	int err; /* the first refusal, or why begin failed */
};

/*
 * elf_begin on fd under a budget of limit bytes (the file's size bounds it
 * too), once its ELF header is checked: its section and program header
 * counts, extended numbering included.  map: mapped if no one else can
 * truncate the file under us (root's or ours, writable by no one else),
 * else read; without map always read.  NULL with b->err set (-EINVAL: not
 * ELF; -E2BIG: too many headers); b may be ended either way.
 */
Elf *elf_budget_begin(struct elf_budget *b, int fd, bool map, __u64 limit, const char *name);
/* The same over an image in memory of size bytes (the vdso). */
Elf *elf_budget_memory(struct elf_budget *b, const void *image, size_t size, __u64 limit, const char *name);
/* elf_end, and what libelf held given back to the process's total; NULL and repeated calls are fine. */
void elf_budget_end(struct elf_budget *b);

/* elf_getdata: libelf's copy, kept until the end and charged once; NULL when refused (b->err). */
Elf_Data *elf_budget_data(struct elf_budget *b, Elf_Scn *scn);
/* elf_strptr: the string section is charged once, as libelf then keeps it whole. */
const char *elf_budget_str(struct elf_budget *b, size_t ndx, size_t off);
/*
 * len bytes of scn's from off, converted to memory order as type, into
 * buf: charged, and never kept.  0, -EFBIG/-E2BIG when refused, -EINVAL
 * past the section's end or the file's, or a read's -errno.
 */
int elf_budget_read(struct elf_budget *b, Elf_Scn *scn, Elf_Type type, __u64 off, void *buf, size_t len);
/* All of scn's bytes the same way, in a buffer the caller frees; NULL with b->err (or errno) set. */
void *elf_budget_copy(struct elf_budget *b, Elf_Scn *scn, Elf_Type type, size_t *len);
/*
 * For a reader that reads the file itself (ehframe.c): a budget with no
 * Elf (fd only names the file in a message), and section ndx costing
 * bytes.  0 or -EFBIG/-E2BIG.
 */
void elf_budget_init(struct elf_budget *b, int fd, __u64 file_size, __u64 limit, const char *name);
int elf_budget_take(struct elf_budget *b, size_t ndx, __u64 bytes);

/*
 * A file libdw is about to read (it opens and maps what it is given
 * itself): its headers as elf_budget_begin checks them, and the bytes of
 * all its sections that hold any, compressed ones at the size they claim
 * to inflate to, within limit.  fd's offset is left alone.  0, or -E2BIG,
 * -EFBIG, -EINVAL (not ELF).
 */
int elf_budget_vet(int fd, __u64 limit, const char *name);

/* The process's reads so far. */
struct elf_budget_stats {
	__u64 files, bytes;  /* files begun, bytes read in all */
	__u64 refused;	     /* files refused part of a read */
	__u64 held, held_max; /* what libelf holds now, and the most it held */
};
void elf_budget_stats(struct elf_budget_stats *st);
/* The same as one line for -v (record's and report's figures). */
void elf_budget_say(void);

/* Whether elf is a 64-bit x86-64 ELF file, *eh its header: the one kind whose runtimes are read. */
bool elf_is_x86_64(Elf *elf, GElf_Ehdr *eh);
/*
 * Each defined symbol (st_shndx not SHN_UNDEF) of b's symbol tables with its
 * name, the tables of type first (SHT_SYMTAB or SHT_DYNSYM) before the
 * other's, to fn until fn returns nonzero, which this returns; else 0.  A
 * table of over 64 MiB, or with entries of another size, is no runtime's and
 * passed over (a sparse file could claim any size).
 */
typedef int (*elf_sym_fn)(const char *name, const GElf_Sym *sym, void *ctx);
int elf_budget_each_sym(struct elf_budget *b, Elf64_Word first, elf_sym_fn fn, void *ctx);
/*
 * len bytes at link address vaddr of elf's file fd, from the PT_LOAD that
 * holds them in the file: a pread, nothing libelf keeps or the budget
 * counts.  0, -ENOENT (no segment holds them), -EINVAL, -EIO.
 */
int elf_pread_vaddr(int fd, Elf *elf, __u64 vaddr, void *buf, size_t len);

#endif
