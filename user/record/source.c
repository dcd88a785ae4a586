// SPDX-License-Identifier: GPL-2.0
/*
 * What every source shares, apart from the recorder: the recorder calls the
 * sources' constructors, and the sources call these, so with them in
 * record.c each source and the recorder would lead back to each other.
 */
#include <stdlib.h>

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
