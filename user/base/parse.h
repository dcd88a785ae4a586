/* SPDX-License-Identifier: GPL-2.0 */
/* Numbers, durations and the -p/-t/-C lists from the command line: they return an errno, never print. */
#ifndef SP_PARSE_H
#define SP_PARSE_H

#include <stdbool.h>
#include <stdint.h>

/* 0 or -EINVAL/-ERANGE. */
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

#endif
