/* SPDX-License-Identifier: GPL-2.0 */
/* Reading JSON strings, for the span readers (spans JSONL, OTLP JSON). */
#ifndef SP_JSON_SCAN_H
#define SP_JSON_SCAN_H

#include <stddef.h>

/*
 * The JSON string at *p (which must be its opening quote) into out,
 * truncated to len - 1 and NUL-terminated; escapes decoded, and \uXXXX as
 * '?' so that names stay printable.  out may be NULL to skip it.  Moves *p
 * past the closing quote; 0, or -1 if malformed (and *p is left anywhere).
 */
int json_scan_str(const char **p, const char *end, char *out, size_t len);

#endif
