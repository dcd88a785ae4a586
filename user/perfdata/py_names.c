// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perf_sample.h"
#include "py_names.h"
#include "util.h"

/* The RAW payload's fixed part, version 1, host byte order; the strings and runs follow it. */
struct py_names_wire {
	__u32 magic;
	__u16 version;
	__u16 hdr_size; /* this part: a newer writer's longer one is skipped */
	__u32 pid;
	__u32 flags;
	__u64 slot;
	__u64 code;
	__u32 size;
	__u32 ncodeunits;
	__s32 firstlineno;
	__u16 qualname_len, filename_len;
	__u32 lines_len;
	__u32 pad;
};

_Static_assert(sizeof(struct py_names_wire) == 56, "the record's layout is the file's");

/* perf_event_header.size is a u16: room for the sample fields around RAW. */
#define REC_MAX_RAW 65000

void py_names_attr(struct perf_event_attr *a)
{
	*a = (struct perf_event_attr){
		.type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_BPF_OUTPUT, .size = sizeof(*a),
		.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			       PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW,
		.sample_period = 1, .sample_id_all = 1, .use_clockid = 1, .clockid = CLOCK_MONOTONIC,
		.disabled = 1,
	};
}

/* How many of s's first n bytes to keep within max without splitting a UTF-8 sequence. */
static size_t utf8_cut(const char *s, size_t n, size_t max)
{
	if (n <= max)
		return n;
	/* Back off the continuation bytes (10xxxxxx) of a sequence the cut would split. */
	while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--;
	return max;
}

static int uvarint_get(const __u8 **p, const __u8 *end, __u64 *v)
{
	__u64 x = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		__u8 b;

		if (*p >= end)
			return -EINVAL;
		b = *(*p)++;
		x |= (__u64)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -EINVAL;
}

/* The bytes of the whole runs at the start of runs that fit max. */
static size_t runs_prefix(const __u8 *runs, size_t len, size_t max)
{
	const __u8 *p = runs, *end = runs + len, *ok = runs;
	__u64 v;

	while (p < end) {
		if (uvarint_get(&p, end, &v) || (!(v & 1) && uvarint_get(&p, end, &v)))
			break;
		if ((size_t)(p - runs) > max)
			break;
		ok = p;
	}
	return ok - runs;
}

int py_names_rec_write(struct sbuf *b, const struct perf_event_attr *attr, __u64 id, __u64 t,
		       const struct py_names_rec *r)
{
	struct py_names_wire h = {
		.magic = PY_NAMES_REC_MAGIC, .version = PY_NAMES_REC_VERSION, .hdr_size = sizeof(h),
		.pid = r->pid, .flags = r->flags, .slot = r->slot, .code = r->code, .size = r->size,
		.ncodeunits = r->ncodeunits, .firstlineno = r->firstlineno,
	};
	size_t q = utf8_cut(r->qualname ? r->qualname : "", r->qualname ? r->qualname_len : 0, PY_NAMES_STR_MAX);
	size_t f = utf8_cut(r->filename ? r->filename : "", r->filename ? r->filename_len : 0, PY_NAMES_STR_MAX);
	size_t room, lines = r->lines ? r->lines_len : 0;
	struct sbuf raw = {};
	char *rec = NULL;
	long n;
	int err;

	if (q < (r->qualname ? r->qualname_len : 0))
		h.flags |= PY_NAMES_NAME_CUT;
	if (f < (r->filename ? r->filename_len : 0))
		h.flags |= PY_NAMES_FILE_CUT;
	/* The runs are cut at a run's end to fit the record; the later units then have no line. */
	room = REC_MAX_RAW - 4 - 8 - sizeof(h) - q - f;
	if (lines > room) {
		lines = runs_prefix(r->lines, lines, room);
		h.flags |= PY_NAMES_LINES_CUT;
	}
	h.qualname_len = q;
	h.filename_len = f;
	h.lines_len = lines;
	sbuf_add(&raw, &h, sizeof(h));
	sbuf_add(&raw, r->qualname, q);
	sbuf_add(&raw, r->filename, f);
	sbuf_add(&raw, r->lines, lines);
	/* RAW is a u32 size and the payload, padded so that the record stays 8-byte aligned. */
	sbuf_zero(&raw, (8 - (raw.len + 4) % 8) % 8);
	if (raw.err) {
		err = raw.err;
		goto cleanup;
	}
	err = -ENOMEM;
	rec = malloc(raw.len + 256);
	if (!rec)
		goto cleanup;
	{
		struct pd_sample s = { .id = id, .pid = r->pid, .tid = r->pid, .time = t, .period = 1,
				       .ip = r->slot, .raw_size = raw.len, .raw = raw.p };

		n = pd_sample_write(rec, raw.len + 256, attr, PERF_RECORD_MISC_USER, &s);
	}
	err = n < 0 ? (n == -ENOSPC ? -E2BIG : (int)n) : sbuf_add(b, rec, n);
cleanup:
	free(rec);
	sbuf_free(&raw);
	return err;
}

int py_names_rec_decode(const void *raw, size_t len, struct py_names_rec *out)
{
	const char *p = raw;
	struct py_names_wire h;
	size_t need;

	memset(out, 0, sizeof(*out));
	if (!raw || len < sizeof(h))
		return -EINVAL;
	memcpy(&h, raw, sizeof(h));
	if (h.magic != PY_NAMES_REC_MAGIC || h.hdr_size < sizeof(h) || h.hdr_size > len)
		return -EINVAL;
	need = (size_t)h.hdr_size + h.qualname_len + h.filename_len + h.lines_len;
	if (need > len || !h.size || h.slot + h.size < h.slot)
		return -EINVAL;
	*out = (struct py_names_rec){
		.pid = h.pid, .flags = h.flags, .slot = h.slot, .code = h.code, .size = h.size,
		.ncodeunits = h.ncodeunits, .firstlineno = h.firstlineno,
		.qualname_len = h.qualname_len, .filename_len = h.filename_len, .lines_len = h.lines_len,
		.qualname = p + h.hdr_size, .filename = p + h.hdr_size + h.qualname_len,
		.lines = (const __u8 *)p + h.hdr_size + h.qualname_len + h.filename_len,
	};
	return 0;
}

/* Appends s[0..n) to buf at *o (bounded by len - 1), NUL bytes as U+FFFD. */
static void put_text(char *buf, size_t len, size_t *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *c = s[i] ? &s[i] : "\xef\xbf\xbd";
		size_t k = s[i] ? 1 : 3;

		if (*o + k >= len)
			break;
		memcpy(buf + *o, c, k);
		*o += k;
	}
}

/* A UTF-8 sequence the end of the room cut short is dropped whole. */
static size_t trim_partial(const char *buf, size_t o)
{
	size_t c = 0, want;
	unsigned char lead;

	while (c < 3 && c < o && ((unsigned char)buf[o - 1 - c] & 0xc0) == 0x80)
		c++;
	if (c == o)
		return o;
	lead = buf[o - 1 - c];
	if (lead < 0xc0)
		return o; /* ASCII, or stray continuation bytes: the text's own */
	want = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
	return c + 1 < want ? o - 1 - c : o;
}

const char *py_names_name(const char *qualname, size_t qlen, const char *filename, size_t flen, char *buf,
			  size_t len)
{
	size_t o = 0;

	if (!len)
		return buf;
	put_text(buf, len, &o, "py::", 4);
	put_text(buf, len, &o, qualname ? qualname : "", qualname ? qlen : 0);
	put_text(buf, len, &o, ":", 1);
	put_text(buf, len, &o, filename ? filename : "", filename ? flen : 0);
	buf[trim_partial(buf, o)] = 0;
	return buf;
}

const char *py_names_symbol(const struct py_names_rec *r, char *buf, size_t len)
{
	if (r->flags & PY_NAMES_JAVA)
		return py_names_text(r->qualname, r->qualname_len, buf, len);
	return py_names_name(r->qualname, r->qualname_len, r->filename, r->filename_len, buf, len);
}

const char *py_names_text(const char *s, size_t n, char *buf, size_t len)
{
	size_t o = 0;

	if (!len)
		return buf;
	put_text(buf, len, &o, s ? s : "", s ? n : 0);
	buf[trim_partial(buf, o)] = 0;
	return buf;
}

/* ---- line runs ---- */

static void uvarint_put(struct sbuf *b, __u64 v)
{
	__u8 tmp[10];
	int n = 0;

	do {
		tmp[n] = v & 0x7f;
		v >>= 7;
		tmp[n++] |= v ? 0x80 : 0;
	} while (v);
	sbuf_add(b, tmp, n);
}

static __u64 zigzag(__s64 v)
{
	return ((__u64)v << 1) ^ (__u64)(v >> 63);
}

void py_runs_init(struct py_runs *r, struct sbuf *out, int firstlineno, size_t max)
{
	*r = (struct py_runs){ .out = out, .line = firstlineno, .max = max };
}

/* The run gathered so far, if the bytes allow it; else the runs end there, cut. */
static void flush_run(struct py_runs *r)
{
	__u8 tmp[24];
	struct sbuf t = { (char *)tmp, 0, sizeof(tmp), 0 };

	if (!r->pend_n || r->cut)
		return;
	uvarint_put(&t, (__u64)r->pend_n << 1 | r->pend_none);
	if (!r->pend_none)
		uvarint_put(&t, zigzag((__s64)r->pend_line - r->line));
	if (r->out->len + t.len > r->max) {
		r->cut = true;
		return;
	}
	sbuf_add(r->out, tmp, t.len);
	if (!r->pend_none)
		r->line = r->pend_line;
	r->units += r->pend_n;
	r->pend_n = 0;
}

void py_runs_add(struct py_runs *r, __u32 n, int line, bool none)
{
	if (!n || r->cut)
		return;
	if (r->pend_n && r->pend_none == none && (none || r->pend_line == line) && r->pend_n + n > r->pend_n) {
		r->pend_n += n;
		return;
	}
	flush_run(r);
	r->pend_n = n;
	r->pend_line = line;
	r->pend_none = none;
}

int py_runs_end(struct py_runs *r)
{
	flush_run(r);
	return r->out->err;
}

int py_runs_line(const __u8 *runs, size_t len, int firstlineno, __s64 idx)
{
	const __u8 *p = runs, *end = runs ? runs + len : NULL;
	long long line = firstlineno;
	__u64 pos = 0, v, d;

	if (idx == PY_IDX_NOT_STARTED)
		return firstlineno >= 0 ? firstlineno : -1;
	if (idx < 0)
		return -1;
	while (p < end) {
		__u64 n;
		bool none;

		if (uvarint_get(&p, end, &v))
			return -1;
		n = v >> 1;
		none = v & 1;
		if (!none) {
			if (uvarint_get(&p, end, &d) || (d >> 1) > (__u64)INT_MAX * 2)
				return -1;
			line += d & 1 ? -(long long)(d >> 1) - 1 : (long long)(d >> 1);
			if (line < INT_MIN || line > INT_MAX)
				return -1;
		}
		if (!n)
			return -1;
		if ((__u64)idx - pos < n)
			return none || line < 0 ? -1 : (int)line;
		pos += n;
		if (pos > (__u64)idx)
			return -1;
	}
	return -1;
}

void py_runs_iter_init(struct py_runs_iter *it, const __u8 *runs, size_t len, int firstlineno)
{
	*it = (struct py_runs_iter){ runs, runs ? runs + len : NULL, firstlineno };
}

bool py_runs_next(struct py_runs_iter *it, __u32 *n, int *line, bool *none)
{
	__u64 v, d;

	if (it->p >= it->end || uvarint_get(&it->p, it->end, &v) || !(v >> 1) || (v >> 1) > UINT32_MAX)
		return false;
	*n = v >> 1;
	*none = v & 1;
	if (!*none) {
		if (uvarint_get(&it->p, it->end, &d) || (d >> 1) > (__u64)INT_MAX * 2)
			return false;
		it->line += d & 1 ? -(long long)(d >> 1) - 1 : (long long)(d >> 1);
		if (it->line < INT_MIN || it->line > INT_MAX)
			return false;
	}
	*line = it->line;
	return true;
}
