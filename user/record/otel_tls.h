/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a process keeps its OTEP 4947 thread-context pointer,
 * otel_thread_ctx_v1: the symbol from the ELF, its TLS model from the
 * relocations that reach it, and, for shared objects, the thread-pointer
 * offset or module id that the dynamic linker wrote into the process's GOT.
 * The result is a recipe (struct sp_otel_recipe) the sampling program
 * follows from a thread's fsbase.
 */
#ifndef SP_OTEL_TLS_H
#define SP_OTEL_TLS_H

#include <stdbool.h>
#include <linux/types.h>

#include "spanperf_abi.h"

#define OTEL_TLS_SYMBOL "otel_thread_ctx_v1"

/* How the module reaches the variable. */
enum otel_tls_model {
	OTEL_TLS_EXEC = 1, /* main executable: local-exec, offset from PT_TLS */
	OTEL_TLS_IE,	   /* R_X86_64_TPOFF64: the GOT slot holds the tp offset */
	OTEL_TLS_DESC,	   /* R_X86_64_TLSDESC: the descriptor's second word */
	OTEL_TLS_GD,	   /* R_X86_64_DTPMOD64 + DTPOFF64: module id and offset */
};

const char *otel_tls_model_name(enum otel_tls_model m);
/* Why a module's otel_thread_ctx_v1 cannot be followed, for an error from the calls below. */
const char *otel_tls_why(int err);

/* What the ELF file alone tells. */
struct otel_tls_elf {
	enum otel_tls_model model;
	__u64 sym_value;   /* offset of the variable in the module's TLS block */
	__u64 got;	   /* link-time address of the GOT slot or descriptor (not EXEC) */
	__s64 exec_tpoff;  /* EXEC: the variable's offset from the thread pointer */
	__u64 first_vaddr; /* the first PT_LOAD's p_vaddr, page-aligned: for the load bias */
};

/*
 * Reads PATH.  main_exe: the module is the process's executable (module 1,
 * whose TLS block sits right below the thread pointer).  -ENOENT if the file
 * defines no otel_thread_ctx_v1; -ENOEXEC if it defines one that is not
 * thread-local; -EPROTO if it defines one that nothing
 * reaches by a model a reader can follow (local-dynamic, or never
 * referenced in a shared object); -EINVAL if the file is not a usable ELF;
 * -EFBIG or -E2BIG if its tables would cost more to read than a real
 * file's (elf_budget.h: the sum over all of them is bounded).
 */
int otel_tls_elf_find(const char *path, bool main_exe, struct otel_tls_elf *out);
/* The same from a descriptor open for reading (read, never mapped); fd stays open. */
int otel_tls_elf_find_fd(int fd, bool main_exe, struct otel_tls_elf *out);

/*
 * The recipe for process pid: its executable first, then its shared objects
 * in address order, as the dynamic linker's lookup would find the symbol.
 * Reads the relocated GOT from /proc/PID/mem.  -ENOENT if no module defines
 * the variable; -EAGAIN if the dynamic linker has not relocated its GOT yet
 * (ask again later); another -errno with *model set when one does but it
 * cannot be followed.
 */
int otel_tls_recipe(int pid, struct sp_otel_recipe *out, enum otel_tls_model *model);

/*
 * Follows a recipe in user space, from a thread's fsbase, the way the
 * sampling program does: the variable's address.  For tests and tools.
 */
int otel_tls_var_addr(int pid, __u64 fsbase, const struct sp_otel_recipe *r, __u64 *addr);

#endif
