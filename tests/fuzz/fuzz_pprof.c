// SPDX-License-Identifier: GPL-2.0
/*
 * The pprof writer (report_pprof.c) over recordings the bytes make
 * (fuzz_rec.h), with off-CPU stacks, OTel labels and JIT names of any
 * bytes.  Checked, after gunzip, what pprof's own reader (profile.Parse,
 * then CheckValid) and proto3 decoders require: well-formed wire format;
 * a string table that starts with ""; every string index, location,
 * mapping and function id a reference to something there; ids unique and
 * not 0; as many values per sample as sample types; and (proto3 strings)
 * UTF-8 in every string.
 *
 * The whole report runs per input: entropic scheduling costs more than it
 * gives (see fuzz_span_join.c).
 * FUZZ_FLAGS: -entropic=0
 */
#include <zlib.h>

#include "fuzz_check.h"
#include "fuzz_profile.h"
#include "report_out.h"

#define MAX_IDS 65536

struct pb {
	const unsigned char *p, *end;
};

struct pprof {
	const char *all;	/* the whole message, for messages */
	size_t len;
	size_t nstr, ntypes;
	/* ids seen, and references to check once every message is read */
	__u64 *loc, *map, *fn;
	size_t nloc, nmap, nfn;
	__u64 *ref_loc, *ref_map, *ref_fn, *ref_str;
	size_t nref_loc, nref_map, nref_fn, nref_str;
};

static void bad(struct pprof *x, const struct pb *at, const char *why)
{
	fuzz_fail(why, x->all, x->len, (const char *)at->p - x->all);
}

static __u64 pb_varint(struct pprof *x, struct pb *b)
{
	__u64 v = 0;

	for (int s = 0; s < 64; s += 7) {
		if (b->p >= b->end)
			bad(x, b, "pprof: a varint that does not end");
		v |= (__u64)(*b->p & 0x7f) << s;
		if (!(*b->p++ & 0x80))
			return v;
	}
	bad(x, b, "pprof: a varint of more than 10 bytes");
	return 0;
}

/* The next field: its number and wire type; a length-delimited one's bytes in *sub. */
static bool pb_field(struct pprof *x, struct pb *b, int *field, int *wt, __u64 *v, struct pb *sub)
{
	__u64 key, n;

	if (b->p >= b->end)
		return false;
	key = pb_varint(x, b);
	*field = key >> 3;
	*wt = key & 7;
	if (!*field)
		bad(x, b, "pprof: field number 0");
	switch (*wt) {
	case 0:
		*v = pb_varint(x, b);
		break;
	case 2:
		n = pb_varint(x, b);
		if (n > (__u64)(b->end - b->p))
			bad(x, b, "pprof: a length past the end");
		sub->p = b->p;
		sub->end = b->p + n;
		b->p += n;
		break;
	default:
		bad(x, b, "pprof: a wire type the writer never uses");
	}
	return true;
}

static void push(__u64 **v, size_t *n, __u64 id)
{
	if (*n == MAX_IDS)
		abort();
	if (!*v && !(*v = malloc(MAX_IDS * sizeof(**v))))
		abort();
	(*v)[(*n)++] = id;
}

/* A repeated varint field, packed or not. */
static void ids(struct pprof *x, int wt, __u64 v, struct pb *sub, __u64 **out, size_t *n)
{
	if (wt == 0) {
		push(out, n, v);
		return;
	}
	while (sub->p < sub->end)
		push(out, n, pb_varint(x, sub));
}

/* A message whose varint fields in `strs` are string indices and in `refs` references of *ref. */
static void msg_refs(struct pprof *x, struct pb m, unsigned strs, int id_field, __u64 **seen, size_t *nseen,
		     int ref_field, __u64 **ref, size_t *nref)
{
	struct pb sub;
	__u64 v, id = 0;
	int f, wt;

	while (pb_field(x, &m, &f, &wt, &v, &sub)) {
		if (wt != 0)
			continue;
		if (f < 32 && strs & 1u << f)
			push(&x->ref_str, &x->nref_str, v);
		if (f == id_field)
			id = v;
		if (f == ref_field && v)
			push(ref, nref, v);
	}
	if (id_field) {
		if (!id)
			bad(x, &m, "pprof: an id 0");
		push(seen, nseen, id);
	}
}

static void location(struct pprof *x, struct pb m)
{
	struct pb sub, line;
	__u64 v, id = 0;
	int f, wt;

	while (pb_field(x, &m, &f, &wt, &v, &sub)) {
		if (f == 1 && wt == 0)
			id = v;
		else if (f == 2 && wt == 0 && v)
			push(&x->ref_map, &x->nref_map, v);
		else if (f == 4 && wt == 2) {
			line = sub;
			msg_refs(x, line, 0, 0, NULL, NULL, 1, &x->ref_fn, &x->nref_fn);
		}
	}
	if (!id)
		bad(x, &m, "pprof: a location without an id");
	push(&x->loc, &x->nloc, id);
}

static void sample(struct pprof *x, struct pb m)
{
	struct pb sub;
	__u64 v, *vals = NULL;
	size_t nvals = 0;
	int f, wt;

	while (pb_field(x, &m, &f, &wt, &v, &sub)) {
		if (f == 1)
			ids(x, wt, v, &sub, &x->ref_loc, &x->nref_loc);
		else if (f == 2)
			ids(x, wt, v, &sub, &vals, &nvals);
		else if (f == 3 && wt == 2)
			msg_refs(x, sub, 1u << 1 | 1u << 2 | 1u << 4, 0, NULL, NULL, 0, NULL, NULL);
	}
	if (nvals != x->ntypes) {
		fprintf(stderr, "fuzz: pprof: a sample of %zu values for %zu types\n", nvals, x->ntypes);
		abort();
	}
	free(vals);
}

static void check_refs(struct pprof *x, const char *what, const __u64 *ref, size_t nref, __u64 *seen, size_t nseen)
{
	for (size_t i = 0; i < nref; i++) {
		size_t k;

		for (k = 0; k < nseen && seen[k] != ref[i]; k++)
			;
		if (k == nseen) {
			fprintf(stderr, "fuzz: pprof: %s %llu is not there\n", what, (unsigned long long)ref[i]);
			abort();
		}
	}
	for (size_t i = 0; i < nseen; i++)
		for (size_t k = i + 1; k < nseen; k++)
			if (seen[i] == seen[k]) {
				fprintf(stderr, "fuzz: pprof: %s %llu twice in %zu bytes\n", what, (unsigned long long)seen[i],
					x->len);
				abort();
			}
}

static void check_profile(const char *buf, size_t len)
{
	struct pprof x = { .all = buf, .len = len };
	struct pb b = { (const unsigned char *)buf, (const unsigned char *)buf + len }, sub;
	__u64 v;
	int f, wt;

	while (pb_field(&x, &b, &f, &wt, &v, &sub)) {
		switch (f) {
		case 1: /* sample_type */
			x.ntypes++;
			/* fall through */
		case 11: /* period_type */
			if (wt != 2)
				bad(&x, &b, "pprof: a ValueType that is not a message");
			msg_refs(&x, sub, 1u << 1 | 1u << 2, 0, NULL, NULL, 0, NULL, NULL);
			break;
		case 2:
			if (wt == 2)
				sample(&x, sub);
			break;
		case 3:
			if (wt == 2)
				msg_refs(&x, sub, 1u << 5 | 1u << 6, 1, &x.map, &x.nmap, 0, NULL, NULL);
			break;
		case 4:
			if (wt == 2)
				location(&x, sub);
			break;
		case 5:
			if (wt == 2)
				msg_refs(&x, sub, 1u << 2 | 1u << 3 | 1u << 4, 1, &x.fn, &x.nfn, 0, NULL, NULL);
			break;
		case 6:
			if (wt != 2)
				bad(&x, &b, "pprof: a string that is not bytes");
			if (!x.nstr && sub.p != sub.end)
				bad(&x, &b, "pprof: the string table does not start with \"\"");
			check_utf8("pprof: a string that is not UTF-8 (proto3 decoders refuse it)", (const char *)sub.p,
				   sub.end - sub.p);
			x.nstr++;
			break;
		case 13: /* comment */
		case 14: /* default_sample_type */
			if (wt == 0)
				push(&x.ref_str, &x.nref_str, v);
			break;
		}
	}
	if (!x.nstr || !x.ntypes)
		bad(&x, &b, "pprof: no string table or no sample type");
	for (size_t i = 0; i < x.nref_str; i++)
		if (x.ref_str[i] >= x.nstr) {
			fprintf(stderr, "fuzz: pprof: string %llu of %zu\n", (unsigned long long)x.ref_str[i], x.nstr);
			abort();
		}
	check_refs(&x, "location", x.ref_loc, x.nref_loc, x.loc, x.nloc);
	check_refs(&x, "mapping", x.ref_map, x.nref_map, x.map, x.nmap);
	check_refs(&x, "function", x.ref_fn, x.nref_fn, x.fn, x.nfn);
	free(x.loc), free(x.map), free(x.fn);
	free(x.ref_loc), free(x.ref_map), free(x.ref_fn), free(x.ref_str);
}

/* The gzip stream's content into *out (the caller frees it). */
static size_t gunzip(const char *in, size_t n, char **out)
{
	z_stream z = {};
	size_t cap = 1 << 16, len = 0;
	int r;

	*out = malloc(cap);
	if (!*out || inflateInit2(&z, 15 + 16) != Z_OK)
		abort();
	z.next_in = (unsigned char *)in;
	z.avail_in = n;
	do {
		if (len == cap && !(*out = realloc(*out, cap *= 2)))
			abort();
		z.next_out = (unsigned char *)*out + len;
		z.avail_out = cap - len;
		r = inflate(&z, Z_NO_FLUSH);
		len = cap - z.avail_out;
	} while (r == Z_OK);
	if (r != Z_STREAM_END || z.avail_in) {
		fprintf(stderr, "fuzz: pprof: not one gzip stream (%d)\n", r);
		abort();
	}
	inflateEnd(&z);
	return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_rec rec = {};
	/* As report --pprof loads it: with source lines (none under the fixture root) and every frame. */
	struct profile *p = fuzz_profile(data, size, &(struct profile_opts){ .srclines = true }, &rec);
	char *buf = NULL, *msg;
	size_t len = 0, n;
	FILE *out;

	if (!p)
		return 0;
	if (!(out = open_memstream(&buf, &len)) || report_pprof(p, out))
		abort();
	fclose(out);
	n = gunzip(buf, len, &msg);
	check_profile(msg, n);
	free(msg);
	free(buf);
	fuzz_profile_free(p);
	return 0;
}
