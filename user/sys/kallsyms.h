/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel's symbols.  /proc/kallsyms is slow to read (the kernel formats
 * 100k+ lines on each read, 40 ms here), so record keeps a copy per kernel
 * build id and load address, as perf does in ~/.debug, and report reads that.
 */
#ifndef SP_KALLSYMS_H
#define SP_KALLSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/* Reads /proc/kallsyms; the caller frees *text. */
int kallsyms_read_proc(char **text, size_t *len);
/* The running kernel's _text, from the head of /proc/kallsyms only (cheap). */
int kallsyms_text_start(__u64 *start);
/* The copy for a kernel build id (hex) loaded at _text, or -ENOENT. */
int kallsyms_read_cache(const char *build_id, __u64 text_addr, char **text, size_t *len);
/* _text and _etext from that copy (kallsyms_text_range), without reading all of it: 0 or -errno. */
int kallsyms_cache_text_range(const char *build_id, __u64 text_addr, __u64 *start, __u64 *end);
/* That copy opened for reading (its names read again later, from the same file): fd or -errno. */
int kallsyms_open_cache(const char *build_id, __u64 text_addr);
/* Stores text as that copy, with the /proc/modules it was read with: 0 or -errno. */
int kallsyms_store_cache(const char *build_id, __u64 text_addr, const char *text, size_t len,
			 const char *modules, size_t modules_len);
/* Whether the copy was read with these modules loaded. */
bool kallsyms_cache_fresh(const char *build_id, __u64 text_addr, const char *modules, size_t modules_len);

typedef int (*kallsyms_fn)(void *ctx, __u64 addr, char type, const char *name, size_t name_len);
/* Calls fn per line "ADDR TYPE NAME [module]"; stops at fn's first non-zero. */
int kallsyms_parse(const char *text, size_t len, kallsyms_fn fn, void *ctx);
/* _text and _etext; -EPERM when addresses are hidden (kptr_restrict). */
int kallsyms_text_range(const char *text, size_t len, __u64 *start, __u64 *end);

#endif
