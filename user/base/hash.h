/* SPDX-License-Identifier: GPL-2.0 */
/* Hash tables: u64 to u64, an index over the caller's own array, and a string pool. */
#ifndef SP_HASH_H
#define SP_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* u64 -> u64 open-addressing map (tids, ids, addresses). */
struct u64_map {
	__extension__ struct { uint64_t key, val; } *slot;
	uint8_t *used;
	size_t cap, n;
};
/* Returns a pointer to the value, inserting 0 if absent; NULL on ENOMEM. */
uint64_t *u64_map_get(struct u64_map *m, uint64_t key, bool insert);
/* key's entry taken out, if it has one: a map of live things (pids) stays their size. */
void u64_map_del(struct u64_map *m, uint64_t key);
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
