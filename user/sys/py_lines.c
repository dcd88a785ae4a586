// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <limits.h>

#include "py_lines.h"

int py_line_format_of(__u16 version)
{
	if (version < 0x0308 || version > 0x030d)
		return -EPROTONOSUPPORT;
	if (version < 0x030a)
		return PY_LINES_LNOTAB;
	return version == 0x030a ? PY_LINES_310 : PY_LINES_LOCATIONS;
}

/*
 * Each format is read as ranges of code units sharing a line (or none), in
 * order from unit 0, handed to a visitor until it says stop; the last range
 * of co_lnotab runs to the end of the code (end == ~0).
 */
typedef bool (*range_fn)(void *ctx, __u64 start, __u64 end, int line, bool none);

/* A range of bytes [b0, b1) holds the instructions whose first byte (2 * idx) is in it. */
static bool byte_range(range_fn fn, void *ctx, __u64 b0, __u64 b1, int line, bool none)
{
	__u64 u0 = (b0 + 1) / 2, u1 = b1 == ~0ull ? ~0ull : (b1 + 1) / 2;

	return u1 > u0 ? fn(ctx, u0, u1, line, none) : false;
}

static bool add_line(long long *line, long long d)
{
	*line += d;
	return *line >= INT_MIN && *line <= INT_MAX;
}

/*
 * 3.8, 3.9: the line of byte offset q is firstlineno plus the increments of
 * every pair whose address (the running sum of increments) is <= q.
 */
static int lnotab(const __u8 *t, size_t len, int first, range_fn fn, void *ctx)
{
	__u64 addr = 0;
	long long line = first;

	for (size_t i = 0; i + 1 < len; i += 2) {
		if (t[i] && byte_range(fn, ctx, addr, addr + t[i], line, false))
			return 0;
		addr += t[i];
		if (!add_line(&line, (__s8)t[i + 1]))
			return -EINVAL;
	}
	byte_range(fn, ctx, addr, ~0ull, line, false);
	return 0;
}

/* 3.10: each pair ends a range of bytes; a line increment of -128 says the range has no line. */
static int linetable310(const __u8 *t, size_t len, int first, range_fn fn, void *ctx)
{
	__u64 end = 0;
	long long line = first;

	for (size_t i = 0; i + 1 < len; i += 2) {
		__u64 start = end;
		bool none = (__s8)t[i + 1] == -128;

		end += t[i];
		if (!none && !add_line(&line, (__s8)t[i + 1]))
			return -EINVAL;
		if (end > start && byte_range(fn, ctx, start, end, line, none))
			return 0;
	}
	return 0;
}

/* CPython's location-table varint: 6-bit groups, the low first, 0x40 where another follows. */
static int varint(const __u8 *t, size_t len, size_t *i, __u64 *v)
{
	__u64 x = 0;

	for (int shift = 0; shift <= 36; shift += 6) {
		__u8 b;

		if (*i >= len)
			return -EINVAL;
		b = t[(*i)++];
		x |= (__u64)(b & 63) << shift;
		if (!(b & 64)) {
			*v = x;
			return 0;
		}
	}
	return -EINVAL;
}

static int svarint(const __u8 *t, size_t len, size_t *i, long long *v)
{
	__u64 x;
	int e = varint(t, len, i, &x);

	if (e)
		return e;
	*v = x & 1 ? -(long long)(x >> 1) : (long long)(x >> 1);
	return 0;
}

/*
 * 3.11+: entries of a start byte (bit 7 set; code = bits 3-6; bits 0-2 the
 * length in code units, less 1) and the code's operands: 0-9 one column
 * byte, same line; 10-12 line += code - 10, two column bytes; 13 line +=
 * svarint; 14 line += svarint, then end line, column and end column
 * varints; 15 no location.
 */
static int locations(const __u8 *t, size_t len, int first, range_fn fn, void *ctx)
{
	long long line = first, d;
	__u64 unit = 0, skip;
	size_t i = 0;

	while (i < len) {
		__u8 b = t[i++];
		int code = (b >> 3) & 15, n = (b & 7) + 1;
		bool none = code == 15;

		if (!(b & 0x80))
			return -EINVAL;
		if (code == 14 || code == 13) {
			if (svarint(t, len, &i, &d) || !add_line(&line, d))
				return -EINVAL;
			for (int k = 0; code == 14 && k < 3; k++)
				if (varint(t, len, &i, &skip))
					return -EINVAL;
		} else if (code >= 10 && code <= 12) {
			if (!add_line(&line, code - 10) || len - i < 2)
				return -EINVAL;
			i += 2;
		} else if (code < 10) {
			if (i >= len)
				return -EINVAL;
			i++;
		}
		if (fn(ctx, unit, unit + n, line, none))
			return 0;
		unit += n;
	}
	return 0;
}

static int visit(enum py_line_format f, const __u8 *t, size_t len, int first, range_fn fn, void *ctx)
{
	if (!t)
		len = 0;
	switch (f) {
	case PY_LINES_LNOTAB:
		return lnotab(t, len, first, fn, ctx);
	case PY_LINES_310:
		return linetable310(t, len, first, fn, ctx);
	case PY_LINES_LOCATIONS:
		return locations(t, len, first, fn, ctx);
	}
	return -EINVAL;
}

struct one {
	__u64 idx;
	int line;
};

static bool find_one(void *ctx, __u64 start, __u64 end, int line, bool none)
{
	struct one *o = ctx;

	if (o->idx < start || o->idx >= end)
		return o->idx < start; /* past it: ranges are in order */
	o->line = none || line < 0 ? -1 : line;
	return true;
}

int py_lines_addr2line(enum py_line_format f, const __u8 *tab, size_t len, int firstlineno, __s64 idx, bool *bad)
{
	struct one o = { (__u64)idx, -1 };
	int e;

	if (bad)
		*bad = false;
	if (idx == PY_IDX_NOT_STARTED)
		return firstlineno >= 0 ? firstlineno : -1;
	if (idx < 0)
		return -1;
	e = visit(f, tab, len, firstlineno, find_one, &o);
	if (e) {
		if (bad)
			*bad = true;
		return -1;
	}
	return o.line;
}

struct to_runs {
	struct py_runs *r;
	__u64 n, done;
};

static bool add_run(void *ctx, __u64 start, __u64 end, int line, bool none)
{
	struct to_runs *t = ctx;

	if (start >= t->n)
		return true;
	if (end > t->n)
		end = t->n;
	py_runs_add(t->r, end - start, line, none || line < 0);
	t->done = end;
	return end >= t->n || t->r->cut;
}

int py_lines_runs(enum py_line_format f, const __u8 *tab, size_t len, int firstlineno, __u32 ncodeunits,
		  struct py_runs *r)
{
	struct to_runs t = { r, ncodeunits, 0 };
	int e = visit(f, tab, len, firstlineno, add_run, &t);

	/* The units no range reached have no line; a malformed table keeps the runs before the fault. */
	if (!e && t.done < t.n)
		py_runs_add(r, t.n - t.done, -1, true);
	return py_runs_end(r) ?: e;
}
