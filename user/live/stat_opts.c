// SPDX-License-Identifier: GPL-2.0
/* stat's options: their defaults, and what the parser allocated. */
#include <stdlib.h>
#include <string.h>

#include "stat_opts.h"

void stat_opts_init(struct stat_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_threads = 32768;
	o->serve_top = 50;
}

void stat_opts_free(struct stat_opts *o)
{
	if (!o)
		return;
	int_list_free(&o->pids);
	int_list_free(&o->tids);
	free(o->spans);
	o->spans = NULL;
	free(o->node_tps);
	o->node_tps = NULL;
}
