// SPDX-License-Identifier: GPL-2.0
/* The agent's options: their defaults, and what the parser allocated. */
#include <stdlib.h>
#include <string.h>

#include "agent_opts.h"

void agent_opts_defaults(struct agent_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->database = "spanperf";
	o->window = 10;
	o->freq = 19;
	o->spool_max_mb = 256;
}

void agent_opts_free(struct agent_opts *o)
{
	free(o->span_texts);
	o->span_texts = NULL;
}
