/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel's symbols.  /proc/kallsyms is slow to read (the kernel formats
 * 100k+ lines on each read, 40 ms here), so record keeps a copy per kernel
 * build id, as perf does in ~/.debug, and report reads that.
 */
#ifndef SP_KALLSYMS_H
#define SP_KALLSYMS_H

#include <stddef.h>
#include <linux/types.h>

/* Reads /proc/kallsyms; the caller frees *text. */
int kallsyms_read_proc(char **text, size_t *len);
/* The cached copy for a kernel build id (hex), or -ENOENT. */
int kallsyms_read_cache(const char *build_id, char **text, size_t *len);
/* Stores text as the copy for build_id, unless one exists: 0 or -errno. */
int kallsyms_store_cache(const char *build_id, const char *text, size_t len);

typedef int (*kallsyms_fn)(void *ctx, __u64 addr, char type, const char *name, size_t name_len);
/* Calls fn per line "ADDR TYPE NAME [module]"; stops at fn's first non-zero. */
int kallsyms_parse(const char *text, size_t len, kallsyms_fn fn, void *ctx);
/* _text and _etext; -EPERM when addresses are hidden (kptr_restrict). */
int kallsyms_text_range(const char *text, size_t len, __u64 *start, __u64 *end);

#endif
