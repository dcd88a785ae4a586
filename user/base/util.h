/* SPDX-License-Identifier: GPL-2.0 */
/* Logging, number and list parsing, clocks and a growable buffer. */
#ifndef SP_UTIL_H
#define SP_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdbool.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define SP_MIN(a, b) ((a) < (b) ? (a) : (b))
#define SP_MAX(a, b) ((a) > (b) ? (a) : (b))

/* -1 with -q, 0 by default, 1 and up with -v. */
extern int sp_verbose;
/* The name printed before messages: "spanperf record" and so on. */
extern const char *sp_prog;
/* spanperf's own argv, for the CMDLINE feature. */
extern int sp_argc;
extern char **sp_argv;

void pr_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pr_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pr_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pr_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Writes one sentence to err (if any) and returns code: for parsers' errors. */
int set_errorf(char *err, size_t len, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Parsers return 0 or -EINVAL/-ERANGE and never print. */
int parse_u64(const char *s, uint64_t *out, uint64_t min, uint64_t max);
int parse_seconds(const char *s, double *out);

/* A sorted, de-duplicated list of small non-negative integers. */
struct int_list {
	int *v;
	int n;
};
/* "1,2,7" or, with ranges, "0-3,8": the -p/-t/-C forms. */
int int_list_parse(struct int_list *l, const char *s, bool ranges, int max);
bool int_list_has(const struct int_list *l, int x);
void int_list_free(struct int_list *l);

uint64_t now_ns(int clockid);

/* Growable byte buffer; on allocation failure it latches `err`. */
struct sbuf {
	char *p;
	size_t len, cap;
	int err;
};
int sbuf_add(struct sbuf *b, const void *p, size_t n);
int sbuf_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sbuf_zero(struct sbuf *b, size_t n);
/* JSON string with quotes and escapes. */
int sbuf_json_str(struct sbuf *b, const char *s);
void sbuf_free(struct sbuf *b);

/* Reads a small text file (sysfs, procfs) into buf, NUL-terminated, trailing newline cut. */
int read_file_str(const char *path, char *buf, size_t size);
/* Reads a whole file; the caller frees *out. */
int read_file_all(const char *path, char **out, size_t *len);

/*
 * Opens a regular file for reading, or fails with -EINVAL: paths in a
 * perf.data are the file's to choose, and a FIFO or device there must not
 * block or be read.
 */
int open_regular(const char *path);

/* Creates the directories above a file's path (mode 0700); 0 or -errno. path is restored. */
int mkdir_parents(char *path);

/* write() all of it, retrying on EINTR and short writes. */
int write_all(int fd, const void *p, size_t n);

/* True for root or CAP_BPF+CAP_PERFMON (or CAP_SYS_ADMIN on older kernels). */
bool have_bpf_privileges(void);

/* Room for element n of a growing array (doubling); 0 or -ENOMEM, *p unchanged on failure. */
int array_reserve(void **p, size_t *cap, size_t n, size_t elem);

/* qsort that accepts an empty, NULL array (qsort itself may not be given NULL). */
static inline void sort_n(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

/* u64 -> u64 open-addressing map (tids, ids, addresses). */
struct u64_map {
	__extension__ struct { uint64_t key, val; } *slot;
	uint8_t *used;
	size_t cap, n;
};
/* Returns a pointer to the value, inserting 0 if absent; NULL on ENOMEM. */
uint64_t *u64_map_get(struct u64_map *m, uint64_t key, bool insert);
void u64_map_free(struct u64_map *m);

uint64_t hash_str(const char *s); /* FNV-1a */
uint64_t hash_mix(uint64_t h, uint64_t v);

/*
 * An index over the caller's own array: entries are found by their hash and
 * the caller's equality test, so one open-addressing table serves every kind
 * of key (strings, stacks, functions) without copying the keys.
 */
struct hindex {
	uint64_t *hash;
	uint32_t *slot; /* entry index + 1; 0 marks an empty slot */
	size_t cap, n;
};
typedef bool (*hindex_eq)(const void *ctx, size_t idx);
/* The index of the entry with hash h that eq accepts, or -1. */
long hindex_find(const struct hindex *m, uint64_t h, hindex_eq eq, const void *ctx);
/* Adds entry idx under hash h (the caller found it absent); 0 or -ENOMEM. */
int hindex_add(struct hindex *m, uint64_t h, size_t idx);
void hindex_free(struct hindex *m);

/* Strings stored once each: stable pointers, dense ids in order of arrival. */
struct strpool {
	char **str;
	size_t n, cap;
	struct hindex idx;
};
/* The pooled copy of s (and its id, if id is not NULL), or NULL on ENOMEM. */
const char *strpool_intern(struct strpool *p, const char *s, size_t *id);
void strpool_free(struct strpool *p);

#endif

