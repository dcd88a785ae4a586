// SPDX-License-Identifier: GPL-2.0
/* record's options: their defaults, the --span texts parsed, and what the parsing allocated. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "record_opts.h"

void record_opts_defaults(struct record_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->freq = 999;
	o->output = "perf.data";
	o->mmap_pages = 256;
	o->max_threads = 32768;
	o->span_buffer_kb = 8192;
	o->offcpu_thresh_ms = -1;
	o->offcpu_entries = RECORD_OFFCPU_ENTRIES;
	o->wake_fd = -1;
}

void record_opts_free(struct record_opts *o)
{
	if (!o)
		return;
	int_list_free(&o->pids);
	int_list_free(&o->tids);
	int_list_free(&o->cpus);
	free(o->spans);
	o->spans = NULL;
	free(o->specs);
	o->specs = NULL;
}

int record_opts_parse_specs(struct record_opts *o, char *err, size_t errlen)
{
	int max = SP_MAX_SPANS - o->otel; /* --otel's spans take one of the recording's span ids */

	free(o->specs);
	o->specs = NULL;
	if (!o->nr_spans)
		return 0;
	if (o->nr_spans > max)
		return set_errorf(err, errlen, -E2BIG, "%d --span given; at most %d per recording%s", o->nr_spans, max,
				  o->otel ? " with --otel" : "");
	o->specs = calloc(o->nr_spans, sizeof(*o->specs));
	if (!o->specs)
		return set_errorf(err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
	for (int i = 0; i < o->nr_spans; i++)
		if (span_spec_parse(o->spans[i], &o->specs[i], err, errlen))
			return -EINVAL;
	return 0;
}
