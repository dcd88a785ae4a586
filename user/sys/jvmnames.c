// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jvmnames.h"
#include "py_names.h"

#define MAX_SYMBOL 1024	 /* bytes of a class, method or signature name kept */
#define MAX_CPOOL 65536	 /* constant-pool entries (a class file's u2 index) */
#define MAX_LNT (64u << 10) /* bytes of a compressed line number table read (two to five per line entry) */
#define MAX_RUNS (64u << 10) /* bytes of line runs kept per method */
#define MAX_PCDESCS (1u << 20)

static int rd(jvm_read_fn read, void *ctx, __u64 a, void *buf, size_t n)
{
	if (a < 4096 || a >= (1ull << 47))
		return -EFAULT;
	return read(ctx, a, buf, n) ? -EFAULT : 0;
}

static int rd_u64(jvm_read_fn read, void *ctx, __u64 a, __u64 *v)
{
	return rd(read, ctx, a, v, 8);
}

/* A Symbol's UTF-8 bytes into buf (NUL-terminated, cut to fit). */
static int symbol(const struct jvm_facts *f, jvm_read_fn read, void *ctx, __u64 sym, char *buf, size_t n)
{
	const struct jvm_offsets *o = &f->o;
	__u32 len = 0;
	__u16 l16;

	if (o->symbol_length_high) {
		if (rd(read, ctx, sym + o->symbol_length + 2, &l16, 2))
			return -EFAULT;
	} else if (rd(read, ctx, sym + o->symbol_length, &l16, 2)) {
		return -EFAULT;
	}
	len = l16;
	if (len >= n)
		len = n - 1;
	if (len && rd(read, ctx, sym + o->symbol_body, buf, len))
		return -EFAULT;
	buf[len] = 0;
	if (memchr(buf, 0, len))
		return -EBADMSG;
	return 0;
}

/* The Symbol* in constant-pool slot idx. */
static int cp_symbol(const struct jvm_facts *f, jvm_read_fn read, void *ctx, __u64 cp, __s32 cplen, __u16 idx,
		     char *buf, size_t n)
{
	__u64 sym;

	if (!idx || idx >= cplen || rd_u64(read, ctx, cp + f->o.cpool_size + 8ull * idx, &sym))
		return -EBADMSG;
	return symbol(f, read, ctx, sym, buf, n);
}

/* One field descriptor at *s as Java writes the type ("int", "java.lang.String[]"), appended to out. */
static const char *java_type(const char *s, char *out, size_t n, size_t *o)
{
	int dims = 0;
	const char *t = NULL;

#define PUT(str, len)                                                   \
	do {                                                            \
		size_t l_ = (len);                                      \
		if (*o + l_ >= n)                                       \
			l_ = n - 1 - *o;                                \
		memcpy(out + *o, (str), l_);                            \
		*o += l_;                                               \
		out[*o] = 0;                                            \
	} while (0)
	while (*s == '[')
		dims++, s++;
	switch (*s) {
	case 'B': t = "byte"; break;
	case 'C': t = "char"; break;
	case 'D': t = "double"; break;
	case 'F': t = "float"; break;
	case 'I': t = "int"; break;
	case 'J': t = "long"; break;
	case 'S': t = "short"; break;
	case 'Z': t = "boolean"; break;
	case 'V': t = "void"; break;
	case 'L': {
		const char *e = strchr(s, ';');

		if (!e)
			return NULL;
		for (const char *c = s + 1; c < e; c++)
			PUT(*c == '/' ? "." : c, 1);
		s = e;
		break;
	}
	default:
		return NULL;
	}
	if (t)
		PUT(t, strlen(t));
	while (dims--)
		PUT("[]", 2);
	return s + 1;
#undef PUT
}

void jvm_method_clear(struct jvm_method *m)
{
	if (m)
		sbuf_free(&m->lines);
}

struct lnt_pair {
	__u32 bci, at;
	int line;
};

static int pair_cmp(const void *a, const void *b)
{
	const struct lnt_pair *x = a, *y = b;

	/* By bci, then by place in the table: the first of equal bcis is HotSpot's answer. */
	if (x->bci != y->bci)
		return x->bci < y->bci ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

/*
 * The compressed line number table at tab (ConstMethod's, after the
 * bytecodes: a byte (bci delta << 3 | line delta) per entry, 0xff then two
 * signed UNSIGNED5 deltas, 0 at its end) as runs of out->code_size bcis.
 * The line of a bci is that of the entry with the greatest bci at or below
 * it (Method::line_number_from_bci); none before the first entry.
 */
static int lnt_runs(const __u8 *tab, size_t len, __u8 excess, struct jvm_method *out)
{
	struct lnt_pair *pairs = NULL;
	size_t pos = 0, n = 0, cap = 0;
	__u32 bci = 0, k = 0;
	int line = 0, e = 0;
	struct py_runs r;

	for (;;) {
		__u8 b;

		if (pos >= len) {
			out->lines_cut = true;
			break;
		}
		b = tab[pos++];
		if (!b)
			break;
		if (b == 0xff) {
			__u32 d1, d2;

			if (jvm_u5(tab, len, &pos, excess, &d1) || jvm_u5(tab, len, &pos, excess, &d2)) {
				out->lines_cut = true;
				break;
			}
			bci += (__u32)((__s32)(d1 >> 1) ^ -(__s32)(d1 & 1));
			line += (__s32)(d2 >> 1) ^ -(__s32)(d2 & 1);
		} else {
			bci += b >> 3;
			line += b & 7;
		}
		/* A bci past the code, or a line no source has: not an entry (the rest may still be). */
		if (bci >= out->code_size || line <= 0)
			continue;
		if (n == cap) {
			void *q = realloc(pairs, (cap = cap ? 2 * cap : 64) * sizeof(*pairs));

			if (!q) {
				free(pairs);
				return -ENOMEM;
			}
			pairs = q;
		}
		pairs[n] = (struct lnt_pair){ bci, (__u32)n, line };
		n++;
	}
	if (!n) {
		free(pairs);
		return 0;
	}
	qsort(pairs, n, sizeof(*pairs), pair_cmp);
	/* The method's entry (bci -1 in a scope) takes its first line. */
	out->firstline = pairs[0].line;
	out->lines.len = 0;
	py_runs_init(&r, &out->lines, out->firstline, MAX_RUNS);
	py_runs_add(&r, pairs[0].bci, 0, true);
	for (size_t i = 0; i < n; i = k) {
		__u32 end;

		for (k = i + 1; k < n && pairs[k].bci == pairs[i].bci; k++)
			;
		end = k < n ? pairs[k].bci : out->code_size;
		py_runs_add(&r, end - pairs[i].bci, pairs[i].line, false);
	}
	e = py_runs_end(&r);
	out->lines_cut |= r.cut;
	free(pairs);
	return e ? -ENOMEM : 0;
}

/* The method's source file and lines into out (left without where they cannot be read). */
static int method_lines(const struct jvm_facts *f, jvm_read_fn read, void *ctx, __u64 cm, __u64 cp, __s32 cplen,
			struct jvm_method *out)
{
	const struct jvm_offsets *o = &f->o;
	__u32 flags = 0;
	__s32 words;
	__u64 tab, end;
	__u8 *buf;
	__u16 sfi;
	int e;

	if (o->cpool_source_file_index != JVM_NONE && !rd(read, ctx, cp + o->cpool_source_file_index, &sfi, 2) && sfi &&
	    cp_symbol(f, read, ctx, cp, cplen, sfi, out->file, sizeof(out->file)))
		out->file[0] = 0;
	if (o->cmethod_flags == JVM_NONE || o->cmethod_cm_size == JVM_NONE ||
	    rd(read, ctx, cm + o->cmethod_flags, &flags, o->cmethod_flags_u32 ? 4 : 2) ||
	    !(flags & f->lnt_flag) || rd(read, ctx, cm + o->cmethod_cm_size, &words, 4))
		return 0;
	/* The table follows the bytecodes, inside the ConstMethod (its size in words). */
	tab = cm + o->cmethod_size + out->code_size;
	end = cm + 8ull * (words > 0 ? (__u32)words : 0);
	if (end <= tab)
		return 0;
	if (end - tab > MAX_LNT)
		end = tab + MAX_LNT;
	if (!(buf = malloc(end - tab)))
		return -ENOMEM;
	e = rd(read, ctx, tab, buf, end - tab) ? 0 : lnt_runs(buf, end - tab, f->u5_excess, out);
	free(buf);
	return e;
}

/*
 * A class loader's metaspace, freed when its classes are unloaded, is
 * handed to the next loader: a class of the same shape loaded then puts its
 * Method and ConstMethod where the other's were.  Its name's Symbol, in the
 * JVM's symbol table rather than the loader's metaspace, tells them apart.
 */
static __u64 cookie_of(__u64 cm, __u64 ksym)
{
	return cm ^ (ksym * 0x9e3779b97f4a7c15ull);
}

int jvm_method_cookie(const struct jvm_facts *f, jvm_read_fn read, void *ctx, __u64 m, __u64 *cookie)
{
	const struct jvm_offsets *o = &f->o;
	__u64 cm, cp, holder, ksym;

	if (rd_u64(read, ctx, m + o->method_constmethod, &cm) || rd_u64(read, ctx, cm + o->cmethod_constants, &cp) ||
	    rd_u64(read, ctx, cp + o->cpool_holder, &holder) || rd_u64(read, ctx, holder + o->klass_name, &ksym))
		return -EFAULT;
	*cookie = cookie_of(cm, ksym);
	return 0;
}

int jvm_method_read(const struct jvm_facts *f, jvm_read_fn read, void *ctx, __u64 m, struct jvm_method *out)
{
	const struct jvm_offsets *o = &f->o;
	char klass[MAX_SYMBOL], name[MAX_SYMBOL], sig[MAX_SYMBOL], ret[MAX_SYMBOL], args[MAX_SYMBOL];
	__u64 cm, cp, holder, ksym;
	__u16 code_size, ni, si;
	__s32 cplen;
	size_t ro = 0, ao = 0;
	const char *s;
	int e;

	{
		struct sbuf keep = out->lines;

		memset(out, 0, sizeof(*out));
		out->lines = keep;
		out->lines.len = 0;
	}
	ret[0] = args[0] = 0;
	if ((m & 7) || rd_u64(read, ctx, m + o->method_constmethod, &cm) || rd_u64(read, ctx, cm + o->cmethod_constants, &cp) ||
	    rd(read, ctx, cm + o->cmethod_code_size, &code_size, 2) || rd(read, ctx, cm + o->cmethod_name_index, &ni, 2) ||
	    rd(read, ctx, cm + o->cmethod_signature_index, &si, 2) || rd_u64(read, ctx, cp + o->cpool_holder, &holder) ||
	    rd(read, ctx, cp + o->cpool_length, &cplen, 4) || rd_u64(read, ctx, holder + o->klass_name, &ksym))
		return -EFAULT;
	if (cplen <= 0 || cplen > MAX_CPOOL)
		return -EBADMSG;
	if ((e = symbol(f, read, ctx, ksym, klass, sizeof(klass))) ||
	    (e = cp_symbol(f, read, ctx, cp, cplen, ni, name, sizeof(name))) ||
	    (e = cp_symbol(f, read, ctx, cp, cplen, si, sig, sizeof(sig))))
		return e;
	if (sig[0] != '(')
		return -EBADMSG;
	for (s = sig + 1; *s && *s != ')';) {
		if (ao) {
			if (ao + 2 < sizeof(args)) {
				memcpy(args + ao, ", ", 3);
				ao += 2;
			}
		}
		s = java_type(s, args, sizeof(args), &ao);
		if (!s)
			return -EBADMSG;
	}
	if (*s != ')' || !java_type(s + 1, ret, sizeof(ret), &ro))
		return -EBADMSG;
	for (char *c = klass; *c; c++)
		if (*c == '/')
			*c = '.';
	/* Hidden classes (lambdas) print as NAME/0x<Klass*>, as the JDK's own map and jstack do. */
	{
		char *plus = strstr(klass, "+0x");

		if (plus)
			snprintf(plus, sizeof(klass) - (plus - klass), "/0x%016llx", (unsigned long long)holder);
	}
	snprintf(out->name, sizeof(out->name), "%s %s.%s(%s)", ret, klass, name, args);
	out->cookie = cookie_of(cm, ksym);
	out->code_size = code_size;
	return method_lines(f, read, ctx, cm, cp, cplen, out);
}

/* A PcDesc's pc offset (from the code's begin). */
static int pcdesc_pc(const struct jvm_facts *f, jvm_read_fn read, void *ctx, const struct jvm_blob *b, __u64 i,
		     __s32 *pc)
{
	return rd(read, ctx, b->pcs_lo + i * f->o.pcdesc_size + f->o.pcdesc_pc, pc, 4);
}

int jvm_pc_scopes(const struct jvm_facts *f, jvm_read_fn read, void *ctx, const struct jvm_blob *b, __u64 pc,
		  struct jvm_scope *out, int max)
{
	const struct jvm_offsets *o = &f->o;
	__u64 n, lo = 0, hi, x, data_len = b->data_hi - b->data_lo, nmeta = (b->meta_hi - b->meta_lo) / 8;
	__s32 at, off, prev;
	int depth = 0;

	if (!b->nmethod || !b->pcs_lo || pc < b->code_begin || pc >= b->code_end || max < 1)
		return -ENOENT;
	n = (b->pcs_hi - b->pcs_lo) / o->pcdesc_size;
	if (n > MAX_PCDESCS)
		return -EBADMSG;
	x = pc - b->code_begin;
	/* The first PcDesc at or after pc, as HotSpot's pc_desc_near (a return address's is its call's). */
	hi = n;
	while (lo < hi) {
		__u64 mid = lo + (hi - lo) / 2;

		if (pcdesc_pc(f, read, ctx, b, mid, &at))
			return -EFAULT;
		if (at < 0 || (__u64)at < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == n)
		return -ENOENT;
	/* Where the table was not in order, the search stops at a PcDesc that is not that one. */
	if (pcdesc_pc(f, read, ctx, b, lo, &at) || (lo && pcdesc_pc(f, read, ctx, b, lo - 1, &prev)))
		return -EFAULT;
	if (at < 0 || (__u64)at < x || (lo && prev >= 0 && (__u64)prev >= x))
		return -EBADMSG;
	if (rd(read, ctx, b->pcs_lo + lo * o->pcdesc_size + o->pcdesc_scope, &off, 4))
		return -EFAULT;
	if (off == 0) {
		/* serialized_null: no scope recorded there; the method itself, where in it unknown. */
		out[0] = (struct jvm_scope){ b->method, JVM_BCI_NONE };
		return 1;
	}
	for (;;) {
		__u8 buf[16];
		size_t len, pos = 0;
		__u32 sender, idx, bci;
		__u64 m;

		if (off < 0 || (__u64)off >= data_len || depth == max || depth == JVM_MAX_SCOPES)
			return -EBADMSG;
		len = data_len - off < sizeof(buf) ? data_len - off : sizeof(buf);
		if (rd(read, ctx, b->data_lo + off, buf, len))
			return -EFAULT;
		/* ScopeDesc::decode_body: the sender's offset, the method's metadata index, bci - InvocationEntryBci. */
		if (jvm_u5(buf, len, &pos, f->u5_excess, &sender) || jvm_u5(buf, len, &pos, f->u5_excess, &idx) ||
		    jvm_u5(buf, len, &pos, f->u5_excess, &bci) || !idx || idx > nmeta || bci > 65536)
			return -EBADMSG;
		if (rd_u64(read, ctx, b->meta_lo + 8ull * (idx - 1), &m))
			return -EFAULT;
		if (!m || (m & 7))
			return -EBADMSG;
		out[depth++] = (struct jvm_scope){ m, (__s32)bci - 1 };
		if (!sender)
			break;
		/* Each scope is written after its sender's: offsets go back, so the chain ends. */
		if ((__s32)sender >= off || sender > (__u32)INT32_MAX)
			return -EBADMSG;
		off = (__s32)sender;
	}
	/* The outermost scope is the nmethod's own method, or this was no chain of its. */
	if (out[depth - 1].method != b->method)
		return -EBADMSG;
	return depth;
}
