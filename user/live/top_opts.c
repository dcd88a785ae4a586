// SPDX-License-Identifier: GPL-2.0
/* top's options: their defaults, and what the parser allocated. */
#include <stdlib.h>
#include <string.h>

#include "top_opts.h"

void top_opts_defaults(struct top_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->freq = 999;
	o->delay = 2;
	o->entries = 20;
}

void top_opts_free(struct top_opts *o)
{
	free(o->span_texts);
	o->span_texts = NULL;
	report_filter_free(&o->filter);
	int_list_free(&o->pids);
	int_list_free(&o->tids);
	int_list_free(&o->cpus);
}
