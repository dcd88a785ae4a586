// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otel_pctx.h"
#include "perf_sample.h"
#include "util.h"

int otel_pctx_header_parse(const void *buf, size_t len, struct otel_pctx_header *h)
{
	const __u8 *p = buf;

	memset(h, 0, sizeof(*h));
	if (len < OTEL_PCTX_HEADER || memcmp(p, OTEL_PCTX_SIGNATURE, 8))
		return -EINVAL;
	/* Host byte order, and the mapping is page-aligned: copies all the same, never casts. */
	memcpy(&h->version, p + 8, 4);
	memcpy(&h->payload_size, p + 12, 4);
	memcpy(&h->published_at, p + 16, 8);
	memcpy(&h->payload, p + 24, 8);
	if (h->version != OTEL_PCTX_VERSION)
		return -EPROTONOSUPPORT;
	if (!h->published_at)
		return -EAGAIN;
	if (!h->payload_size || h->payload_size > OTEL_PCTX_MAX_PAYLOAD || !h->payload)
		return -E2BIG;
	return 0;
}

/* ---- a protobuf wire-format reader: just what ProcessContext needs, bounded everywhere ---- */

struct pb {
	const __u8 *p, *end;
};

static int pb_varint(struct pb *b, __u64 *v)
{
	*v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (b->p >= b->end)
			return -EINVAL;
		*v |= (__u64)(*b->p & 0x7f) << shift;
		if (!(*b->p++ & 0x80))
			return 0;
	}
	return -EINVAL; /* more than 10 bytes */
}

/* The next field: 1 with its number and, for LEN fields, its bytes in *sub; 0 at the end. */
static int pb_next(struct pb *b, __u32 *field, __u32 *wt, struct pb *sub)
{
	__u64 tag, v;

	if (b->p >= b->end)
		return 0;
	if (pb_varint(b, &tag) || tag >> 3 == 0 || tag >> 3 > 0x1fffffff)
		return -EINVAL;
	*field = tag >> 3;
	*wt = tag & 7;
	switch (*wt) {
	case 0:
		return pb_varint(b, &v) ?: 1;
	case 1:
	case 5: {
		size_t n = *wt == 1 ? 8 : 4;

		if ((size_t)(b->end - b->p) < n)
			return -EINVAL;
		b->p += n;
		return 1;
	}
	case 2:
		if (pb_varint(b, &v) || v > (__u64)(b->end - b->p))
			return -EINVAL;
		sub->p = b->p;
		sub->end = b->p + v;
		b->p += v;
		return 1;
	default:
		return -EINVAL; /* groups (3, 4) are in none of these messages; 6 and 7 do not exist */
	}
}

/* A string field, cut as the file record keeps it: what the process wrote beyond is never copied. */
static char *pb_strdup(struct pb s)
{
	return strndup((const char *)s.p, SP_MIN((size_t)(s.end - s.p), (size_t)OTEL_PCTX_MAX_STR));
}

/* AnyValue.string_value (field 1) of v, copied: 1, 0 when v holds no string, or -errno. */
static int any_string(struct pb v, char **out)
{
	struct pb sub;
	__u32 f, wt;
	int r;

	*out = NULL;
	while ((r = pb_next(&v, &f, &wt, &sub)) > 0) {
		if (f != 1 || wt != 2)
			continue;
		free(*out);
		*out = pb_strdup(sub);
		if (!*out)
			return -ENOMEM;
	}
	if (r < 0) {
		free(*out);
		*out = NULL;
		return r;
	}
	return *out ? 1 : 0;
}

/* AnyValue.array_value (field 5) of strings: the key map, position = key_index. */
static int key_map(struct pb v, struct otel_pctx *out)
{
	struct pb arr, el;
	__u32 f, wt;
	int r, found = 0;

	while ((r = pb_next(&v, &f, &wt, &arr)) > 0) {
		if (f != 5 || wt != 2)
			continue;
		/* A newer map replaces an older one whole: positions are what matter. */
		for (int i = 0; i < out->nkeys; i++) {
			free(out->keys[i]);
			out->keys[i] = NULL;
		}
		out->nkeys = 0;
		found = 1;
		while ((r = pb_next(&arr, &f, &wt, &el)) > 0) {
			if (f != 1 || wt != 2)
				continue;
			if (out->nkeys == OTEL_PCTX_MAX_KEYS)
				continue; /* no u8 key_index names it */
			/* A non-string element keeps its position: its index prints as a number. */
			r = any_string(el, &out->keys[out->nkeys]);
			if (r < 0)
				return r;
			out->nkeys++;
		}
		if (r < 0)
			return r;
	}
	return r < 0 ? r : found;
}

/* Whether a string field is exactly name. */
static bool pb_is(struct pb s, const char *name)
{
	size_t n = strlen(name);

	return (size_t)(s.end - s.p) == n && !memcmp(s.p, name, n);
}

/* One KeyValue: the ones report uses are kept, the rest checked and skipped (their keys never copied). */
static int key_value(struct pb kv, struct otel_pctx *out)
{
	struct pb sub, key = { NULL, NULL }, val = { NULL, NULL };
	__u32 f, wt;
	int r;

	while ((r = pb_next(&kv, &f, &wt, &sub)) > 0) {
		if (wt != 2)
			continue;
		if (f == 1)
			key = sub;
		else if (f == 2)
			val = sub;
	}
	/* A KeyValue without a key is no KeyValue: that tells a bare Resource from a ProcessContext. */
	if (r < 0 || !key.p)
		return r < 0 ? r : -EINVAL;
	if (val.p && pb_is(key, "service.name")) {
		char *s;

		r = any_string(val, &s);
		if (r > 0) {
			free(out->service_name);
			out->service_name = s;
		}
	} else if (val.p && pb_is(key, OTEL_PCTX_KEY_MAP)) {
		r = key_map(val, out);
	}
	return r < 0 ? r : 0;
}

/* Resource: repeated KeyValue attributes = 1. */
static int resource(struct pb b, struct otel_pctx *out)
{
	struct pb sub;
	__u32 f, wt;
	int r;

	while ((r = pb_next(&b, &f, &wt, &sub)) > 0)
		if (f == 1 && wt == 2 && (r = key_value(sub, out)) < 0)
			return r;
	return r;
}

/* ProcessContext: Resource resource = 1; repeated KeyValue extra_attributes = 2. */
static int process_context(struct pb b, struct otel_pctx *out)
{
	struct pb sub;
	__u32 f, wt;
	int r;

	while ((r = pb_next(&b, &f, &wt, &sub)) > 0) {
		if (wt != 2)
			continue;
		if (f == 1)
			r = resource(sub, out);
		else if (f == 2)
			r = key_value(sub, out);
		if (r < 0)
			return r;
	}
	return r;
}

void otel_pctx_clear(struct otel_pctx *p)
{
	if (!p)
		return;
	free(p->service_name);
	for (int i = 0; i < p->nkeys; i++)
		free(p->keys[i]);
	memset(p, 0, sizeof(*p));
}

int otel_pctx_decode(const void *pb, size_t len, struct otel_pctx *out)
{
	struct pb b = { pb, (const __u8 *)pb + len };
	int r;

	memset(out, 0, sizeof(*out));
	r = process_context(b, out);
	if (r < 0 && r != -ENOMEM) {
		/* The OTEP's first writers: the payload is the Resource itself. */
		otel_pctx_clear(out);
		r = resource(b, out);
	}
	if (r < 0)
		otel_pctx_clear(out);
	return r >= 0 ? 0 : r == -ENOMEM ? r : -EINVAL;
}

/* ---- the perf.data record ---- */

struct pctx_rec_hdr {
	__u32 magic;
	__u16 version;
	__u16 hdr_size; /* this header; the strings follow it */
	__u32 pid;
	__u16 nkeys;
	__u16 service_len; /* 0: none */
};

/* perf_event_header.size is a u16: room for the sample fields around RAW. */
#define REC_MAX_RAW 65000

int otel_pctx_rec_write(struct sbuf *b, const struct perf_event_attr *attr, __u64 id, __u32 pid, __u64 t,
			const struct otel_pctx *p)
{
	struct pctx_rec_hdr h = { .magic = OTEL_PCTX_REC_MAGIC, .version = OTEL_PCTX_REC_VERSION,
				  .hdr_size = sizeof(h), .pid = pid };
	struct sbuf raw = {};
	size_t svc = p->service_name ? strnlen(p->service_name, 255) : 0;
	char *rec = NULL;
	long n;
	int err;

	h.service_len = svc;
	sbuf_add(&raw, &h, sizeof(h));
	sbuf_add(&raw, p->service_name ?: "", svc);
	for (int i = 0; i < p->nkeys; i++) {
		__u8 l = p->keys[i] ? strnlen(p->keys[i], 255) : 0;

		/* The map is cut, not the record: the later indexes print as numbers. */
		if (raw.len + 1 + l > REC_MAX_RAW - 4)
			break;
		sbuf_add(&raw, &l, 1);
		sbuf_add(&raw, p->keys[i] ?: "", l);
		h.nkeys = i + 1;
	}
	/* RAW is a u32 size and the payload, padded so that the record stays 8-byte aligned. */
	sbuf_zero(&raw, (8 - (raw.len + 4) % 8) % 8);
	if (raw.err) {
		err = raw.err;
		goto cleanup;
	}
	memcpy(raw.p + offsetof(struct pctx_rec_hdr, nkeys), &h.nkeys, 2);
	rec = malloc(raw.len + 256);
	err = -ENOMEM;
	if (!rec)
		goto cleanup;
	{
		struct pd_sample s = { .id = id, .pid = pid, .tid = pid, .time = t, .period = 1,
				       .raw_size = raw.len, .raw = raw.p };

		n = pd_sample_write(rec, raw.len + 256, attr, PERF_RECORD_MISC_USER, &s);
	}
	err = n < 0 ? (int)n : sbuf_add(b, rec, n);
cleanup:
	free(rec);
	sbuf_free(&raw);
	return err;
}

int otel_pctx_rec_decode(const void *raw, size_t len, __u32 *pid, struct otel_pctx *out)
{
	const __u8 *p = raw, *end = p + len;
	struct pctx_rec_hdr h;
	int err = -EINVAL;

	memset(out, 0, sizeof(*out));
	if (len < sizeof(h))
		return -EINVAL;
	memcpy(&h, p, sizeof(h));
	/* A newer writer's longer header: the strings start where it says. */
	if (h.magic != OTEL_PCTX_REC_MAGIC || h.hdr_size < sizeof(h) || h.hdr_size > len ||
	    h.nkeys > OTEL_PCTX_MAX_KEYS || h.service_len > len - h.hdr_size)
		return -EINVAL;
	*pid = h.pid;
	p += h.hdr_size;
	if (h.service_len && !(out->service_name = strndup((const char *)p, SP_MIN(h.service_len, OTEL_PCTX_MAX_STR)))) {
		err = -ENOMEM;
		goto cleanup;
	}
	p += h.service_len;
	for (int i = 0; i < h.nkeys; i++) {
		__u8 l;

		if (p >= end || (size_t)(end - p - 1) < *p)
			goto cleanup;
		l = *p++;
		if (!(out->keys[i] = strndup((const char *)p, l))) {
			err = -ENOMEM;
			goto cleanup;
		}
		out->nkeys = i + 1;
		p += l;
	}
	return 0;
cleanup:
	otel_pctx_clear(out);
	return err;
}

const char *otel_pctx_key(const struct otel_pctx *p, unsigned idx, char buf[16])
{
	if (p && idx < (unsigned)p->nkeys && p->keys[idx] && p->keys[idx][0])
		return p->keys[idx];
	snprintf(buf, 16, "attr.%u", idx);
	return buf;
}

const char *otel_attr_value(const __u8 *val, size_t len, char *buf)
{
	char *o = buf;

	for (size_t i = 0; i < len && i < 255; i++) {
		if (val[i]) {
			*o++ = val[i];
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
		}
	}
	*o = 0;
	return buf;
}
