// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "jvmnames.h"

#define MAX_SYMBOL 1024	 /* bytes of a class, method or signature name kept */
#define MAX_CPOOL 65536	 /* constant-pool entries (a class file's u2 index) */

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

int jvm_method_cookie(const struct jvm_facts *f, jvm_read_fn read, void *ctx, __u64 m, __u64 *constmethod)
{
	return rd_u64(read, ctx, m + f->o.method_constmethod, constmethod);
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

	memset(out, 0, sizeof(*out));
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
	out->constmethod = cm;
	out->code_size = code_size;
	return 0;
}
