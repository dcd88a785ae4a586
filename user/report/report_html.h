/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A recording as something to look at: one self-contained HTML page
 * (report --html, annotate --html) with a lane per thread, its spans,
 * samples and off-CPU blocks, span and selection panels and flame graphs;
 * or speedscope's file format, an evented profile per thread with the
 * spans as frames around the samples' stacks.
 */
#ifndef SP_REPORT_HTML_H
#define SP_REPORT_HTML_H

#include <stdio.h>

#include "timeline.h"

/* What a page holds at most by default: above it samples are thinned and the longest spans kept. */
#define HTML_MAX_SAMPLES 2000000
#define HTML_MAX_SPANS 200000

/* The page: script, styles and data inline, nothing fetched. */
int report_html(const struct timeline *t, const char *input, FILE *out);
/* https://www.speedscope.app/file-format-schema.json, one evented profile per thread. */
int report_speedscope(const struct timeline *t, const char *input, FILE *out);

#endif
