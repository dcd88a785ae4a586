// SPDX-License-Identifier: GPL-2.0
/*
 * What every source shares, apart from the recorder: the recorder calls the
 * sources' constructors, and the sources call these, so with them in
 * record.c each source and the recorder would lead back to each other.
 */
#include <stdio.h>
#include <stdlib.h>

#include "log.h"
#include "source.h"

struct rec_source *rec_source__alloc(const char *name, size_t priv_size)
{
	struct rec_source *s = calloc(1, sizeof(*s) + priv_size);

	if (!s)
		return NULL;
	s->name = name;
	s->priv = priv_size ? s + 1 : NULL;
	return s;
}

void rec_source__free(struct rec_source *s)
{
	if (!s)
		return;
	if (s->free)
		s->free(s);
	free(s);
}

void rec_source_say(const struct rec_figure *f, size_t nr)
{
	for (size_t i = 0; i < nr; i++) {
		unsigned long long n = f[i].n;

		if (!n)
			continue;
		if (f[i].level == REC_DETAIL)
			fprintf(stderr, "  %llu %s\n", n, f[i].text);
		else if (f[i].level == REC_WARN)
			pr_warn("%llu %s", n, f[i].text);
		else if (f[i].level == REC_INFO)
			pr_info("%llu %s", n, f[i].text);
		else
			pr_debug("%llu %s", n, f[i].text);
	}
}
