// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"

static size_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static int u64_map_grow(struct u64_map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct u64_map n = { calloc(cap, sizeof(*m->slot)), calloc(cap, 1), cap, 0 };

	if (!n.slot || !n.used) {
		free(n.slot);
		free(n.used);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->used[i])
			*u64_map_get(&n, m->slot[i].key, true) = m->slot[i].val;
	free(m->slot);
	free(m->used);
	*m = n;
	return 0;
}

uint64_t *u64_map_get(struct u64_map *m, uint64_t key, bool insert)
{
	size_t i;

	if (insert && 2 * (m->n + 1) > m->cap && u64_map_grow(m))
		return NULL;
	if (!m->cap)
		return NULL;
	for (i = hash_u64(key) & (m->cap - 1); m->used[i]; i = (i + 1) & (m->cap - 1))
		if (m->slot[i].key == key)
			return &m->slot[i].val;
	if (!insert)
		return NULL;
	m->used[i] = 1;
	m->slot[i].key = key;
	m->slot[i].val = 0;
	m->n++;
	return &m->slot[i].val;
}

/*
 * Linear probing keeps no tombstones: the entries after the hole, up to the
 * next free slot, move back into it where their probe started at or before
 * it, so every key is still found from its home slot without a gap.
 */
void u64_map_del(struct u64_map *m, uint64_t key)
{
	size_t mask = m->cap - 1, i, j, home;

	if (!m->cap)
		return;
	for (i = hash_u64(key) & mask; m->used[i] && m->slot[i].key != key; i = (i + 1) & mask)
		;
	if (!m->used[i])
		return;
	for (j = (i + 1) & mask; m->used[j]; j = (j + 1) & mask) {
		home = hash_u64(m->slot[j].key) & mask;
		/* j's entry may fill the hole at i unless its home lies cyclically in (i, j]. */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			m->slot[i] = m->slot[j];
			i = j;
		}
	}
	m->used[i] = 0;
	m->n--;
}

void u64_map_free(struct u64_map *m)
{
	if (!m)
		return;
	free(m->slot);
	free(m->used);
	memset(m, 0, sizeof(*m));
}

uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

uint64_t hash_mix(uint64_t h, uint64_t v)
{
	return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
}

long hindex_find(const struct hindex *m, uint64_t h, hindex_eq eq, const void *ctx)
{
	if (!m->cap)
		return -1;
	for (size_t i = hash_u64(h) & (m->cap - 1); m->slot[i]; i = (i + 1) & (m->cap - 1))
		if (m->hash[i] == h && eq(ctx, m->slot[i] - 1))
			return m->slot[i] - 1;
	return -1;
}

static int hindex_grow(struct hindex *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct hindex n = { calloc(cap, sizeof(*n.hash)), calloc(cap, sizeof(*n.slot)), cap, 0 };

	if (!n.hash || !n.slot) {
		hindex_free(&n);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->slot[i])
			hindex_add(&n, m->hash[i], m->slot[i] - 1);
	hindex_free(m);
	*m = n;
	return 0;
}

int hindex_add(struct hindex *m, uint64_t h, size_t idx)
{
	size_t i;

	if (idx >= UINT32_MAX)
		return -E2BIG;
	if (2 * (m->n + 1) > m->cap && hindex_grow(m))
		return -ENOMEM;
	for (i = hash_u64(h) & (m->cap - 1); m->slot[i]; i = (i + 1) & (m->cap - 1))
		;
	m->hash[i] = h;
	m->slot[i] = idx + 1;
	m->n++;
	return 0;
}

void hindex_free(struct hindex *m)
{
	if (!m)
		return;
	free(m->hash);
	free(m->slot);
	memset(m, 0, sizeof(*m));
}

static bool strpool_eq(const void *ctx, size_t idx)
{
	const void *const *c = ctx;

	return !strcmp(((const struct strpool *)c[0])->str[idx], c[1]);
}

const char *strpool_intern(struct strpool *p, const char *s, size_t *id)
{
	uint64_t h = hash_str(s);
	const void *ctx[2] = { p, s };
	long i = hindex_find(&p->idx, h, strpool_eq, ctx);

	if (i < 0) {
		if (p->n == p->cap) {
			size_t cap = p->cap ? p->cap * 2 : 64;
			char **n = realloc(p->str, cap * sizeof(*n));

			if (!n)
				return NULL;
			p->str = n;
			p->cap = cap;
		}
		p->str[p->n] = strdup(s);
		if (!p->str[p->n] || hindex_add(&p->idx, h, p->n)) {
			free(p->str[p->n]);
			return NULL;
		}
		i = p->n++;
	}
	if (id)
		*id = i;
	return p->str[i];
}

void strpool_free(struct strpool *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		free(p->str[i]);
	free(p->str);
	hindex_free(&p->idx);
	memset(p, 0, sizeof(*p));
}
