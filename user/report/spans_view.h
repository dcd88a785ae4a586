/* SPDX-License-Identifier: GPL-2.0 */
/* What report --spans and annotate print, and in which format. */
#ifndef SP_SPANS_VIEW_H
#define SP_SPANS_VIEW_H

/* --format of report --spans and annotate: the table, JSON lines, or one OTLP JSON request. */
enum spans_format { SPANS_TEXT, SPANS_JSON, SPANS_OTLP };

#endif
