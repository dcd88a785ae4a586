// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hash.h"
#include "py_code.h"
#include "sbuf.h"
#include "util.h"

/* ---- reading the process ---- */

static int read_fd(void *ctx, __u64 addr, void *buf, size_t len)
{
	int fd = (int)(intptr_t)ctx;
	size_t done = 0;

	/* Addresses past the user half are not the process's: pread would take them for negative offsets. */
	if (addr >= 1ull << 63 || addr + len < addr)
		return -EFAULT;
	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, addr + done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EFAULT;
		done += n;
	}
	return 0;
}

void py_mem_init_fd(struct py_mem *m, int fd, size_t budget)
{
	*m = (struct py_mem){ .read = read_fd, .ctx = (void *)(intptr_t)fd, .budget = budget };
}

static int read_buf(void *ctx, __u64 addr, void *buf, size_t len)
{
	const struct py_mem_buf *b = ctx;

	if (addr < b->base || addr - b->base > b->len || len > b->len - (addr - b->base))
		return -EFAULT;
	memcpy(buf, (const char *)b->p + (addr - b->base), len);
	return 0;
}

void py_mem_init_buf(struct py_mem *m, struct py_mem_buf *b, size_t budget)
{
	*m = (struct py_mem){ .read = read_buf, .ctx = b, .budget = budget };
}

int py_mem_read(struct py_mem *m, __u64 addr, void *buf, size_t len)
{
	int e;

	if (len > m->budget)
		return -E2BIG;
	/* NULL and the first page are never an object: a common lie, refused without a read. */
	if (addr < 4096)
		return -EFAULT;
	m->budget -= len;
	m->reads++;
	e = m->read(m->ctx, addr, buf, len);
	if (!e)
		m->bytes += len;
	return e;
}

static int read_u64(struct py_mem *m, __u64 addr, __u64 *v)
{
	return py_mem_read(m, addr, v, sizeof(*v));
}

/* ---- layouts ---- */

int py_code_layout_init(struct py_code_layout *l, __u16 version)
{
	if (version < 0x0308 || version > 0x030d)
		return -EPROTONOSUPPORT;
	/* Object headers and str/bytes: the same in every version here (research, from DWARF) but for str's data. */
	*l = (struct py_code_layout){
		.version = version, .ob_type = 8, .ob_size = 16,
		.str_length = 16, .str_state = 32,
		.str_ascii_data = version >= 0x030c ? 40 : 48,	 /* 3.12 dropped wstr */
		.str_compact_data = version >= 0x030c ? 56 : 72, /* and wstr_length */
		.bytes_size = 16, .bytes_data = 32,
	};
	return 0;
}

int py_scan_layout_init(struct py_scan_layout *s, __u16 version)
{
	if (version < 0x0308 || version > 0x030a)
		return -EPROTONOSUPPORT;
	*s = (struct py_scan_layout){
		.interp_modules = version == 0x0308 ? 0x38 : 0x358,
		/* 3.10 moved the function's fields into a shared header (func_globals ... func_closure first). */
		.func_code = version == 0x030a ? 48 : 16, .func_qualname = version == 0x030a ? 40 : 104,
		.type_flags = 168, .type_dict = 264, .module_dict = 16, .wrapped = 16,
		.tuple_size = 16, .tuple_items = 24,
		.dict_keys = 32, .dict_values = 40, .keys_size = 8, .keys_nentries = 32, .keys_indices = 40,
	};
	return 0;
}

/* ---- strings ---- */

/* Appends code point c as UTF-8 if it fits before buf's last byte (the NUL's): false when it does not. */
static bool put_utf8(char *buf, size_t len, size_t *o, __u32 c)
{
	char t[4];
	size_t n;

	/* NUL would end the C string, a surrogate or a value past Unicode is no character: U+FFFD. */
	if (!c || (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
		c = 0xfffd;
	if (c < 0x80) {
		t[0] = c;
		n = 1;
	} else if (c < 0x800) {
		t[0] = 0xc0 | c >> 6;
		t[1] = 0x80 | (c & 63);
		n = 2;
	} else if (c < 0x10000) {
		t[0] = 0xe0 | c >> 12;
		t[1] = 0x80 | ((c >> 6) & 63);
		t[2] = 0x80 | (c & 63);
		n = 3;
	} else {
		t[0] = 0xf0 | c >> 18;
		t[1] = 0x80 | ((c >> 12) & 63);
		t[2] = 0x80 | ((c >> 6) & 63);
		t[3] = 0x80 | (c & 63);
		n = 4;
	}
	if (*o + n >= len)
		return false;
	memcpy(buf + *o, t, n);
	*o += n;
	return true;
}

/* A str's header and its first characters in one read: most names fit in it. */
#define STR_HEAD 128

int py_str_read(struct py_mem *m, const struct py_code_layout *l, __u64 str, char *buf, size_t len, bool *cut)
{
	__u8 head[STR_HEAD], *raw = NULL;
	const __u8 *data;
	__s64 length;
	__u32 state, kind, at;
	size_t chars, o = 0, got = 0;
	int e = 0;

	*cut = false;
	if (len < 4 || l->str_length + 8 > STR_HEAD || l->str_state + 4 > STR_HEAD)
		return -EINVAL;
	buf[0] = 0;
	/* Near the end of a mapping the whole head may not be there: the fields alone then. */
	if (!py_mem_read(m, str, head, STR_HEAD)) {
		got = STR_HEAD;
		memcpy(&length, head + l->str_length, 8);
		memcpy(&state, head + l->str_state, 4);
	} else if ((e = py_mem_read(m, str + l->str_length, &length, 8)) ||
		   (e = py_mem_read(m, str + l->str_state, &state, 4))) {
		return e;
	}
	kind = (state >> 2) & 7;
	/* Only compact strs hold their text inline: code objects' names and files always are. */
	if (length < 0 || length > PY_STR_LIE || !(state >> 5 & 1) || (kind != 1 && kind != 2 && kind != 4))
		return -EINVAL;
	/* Each character takes a byte of UTF-8 at least: more than fit are not read. */
	chars = SP_MIN((size_t)length, len - 1);
	if (!chars)
		return 0;
	at = state >> 6 & 1 ? l->str_ascii_data : l->str_compact_data;
	if (at + chars * kind <= got) {
		data = head + at;
	} else {
		raw = malloc(chars * kind);
		if (!raw)
			return -ENOMEM;
		e = py_mem_read(m, str + at, raw, chars * kind);
		data = raw;
	}
	for (size_t i = 0; !e && i < chars; i++) {
		__u32 c;

		if (kind == 1)
			c = data[i];
		else if (kind == 2)
			c = data[2 * i] | (__u32)data[2 * i + 1] << 8;
		else
			c = data[4 * i] | (__u32)data[4 * i + 1] << 8 | (__u32)data[4 * i + 2] << 16 |
			    (__u32)data[4 * i + 3] << 24;

		if (!put_utf8(buf, len, &o, c)) {
			*cut = true;
			break;
		}
	}
	free(raw);
	buf[o] = 0;
	if (!e && chars < (size_t)length)
		*cut = true;
	return e;
}

/* ---- code objects ---- */

/* The fixed part of a code object read at once: every member the reader takes is in it. */
#define CODE_HEAD_MAX 512

static __u64 field_u64(const __u8 *head, __u32 off)
{
	__u64 v;

	memcpy(&v, head + off, 8);
	return v;
}

/* The line table's runs, or the flags that say why there are none (never an error of the code object's). */
static int read_lines(struct py_mem *m, const struct py_code_layout *l, __u64 table, size_t lines_max,
		      struct py_code *out)
{
	struct sbuf runs = {};
	struct py_runs r;
	__s64 size;
	__u8 *tab = NULL;
	int fmt = py_line_format_of(l->version), e;

	out->flags |= PY_NAMES_NO_LINES;
	if (fmt < 0 || py_mem_read(m, table + l->bytes_size, &size, 8) || size < 0 || size > PY_LINETABLE_MAX)
		return 0;
	if (size && !(tab = malloc(size)))
		return -ENOMEM;
	if (size && py_mem_read(m, table + l->bytes_data, tab, size)) {
		free(tab);
		return 0;
	}
	py_runs_init(&r, &runs, out->firstlineno, lines_max);
	e = py_lines_runs(fmt, tab, size, out->firstlineno, out->ncodeunits, &r);
	free(tab);
	if (runs.err) {
		sbuf_free(&runs);
		return -ENOMEM;
	}
	/* A table malformed past some point: the runs before it stand, the rest has no line. */
	out->flags &= ~PY_NAMES_NO_LINES;
	if (e || r.cut)
		out->flags |= PY_NAMES_LINES_CUT;
	out->lines = (__u8 *)runs.p;
	out->lines_len = runs.len;
	return 0;
}

static bool layout_ok(const struct py_code_layout *l)
{
	__u32 f[] = { l->ob_type, l->ob_size, l->co_name, l->co_qualname, l->co_filename, l->co_firstlineno,
		      l->co_linetable, l->co_code };

	for (size_t i = 0; i < ARRAY_SIZE(f); i++)
		if (f[i] > CODE_HEAD_MAX - 8)
			return false;
	return l->co_name && l->co_filename && l->co_firstlineno && l->co_linetable && l->code_type &&
	       (l->version >= 0x030b ? l->co_qualname != 0 : l->co_code != 0);
}

int py_code_read(struct py_mem *m, const struct py_code_layout *l, __u64 code, size_t lines_max,
		 struct py_code *out)
{
	__u8 head[CODE_HEAD_MAX];
	size_t need = 0;
	__s32 first;
	__s64 units;
	bool cut;
	int e;

	memset(out, 0, sizeof(*out));
	out->addr = code;
	if (!layout_ok(l))
		return -EINVAL;
	{
		__u32 f[] = { l->ob_type, l->ob_size, l->co_name, l->co_qualname, l->co_filename,
			      l->co_firstlineno, l->co_linetable, l->co_code };

		for (size_t i = 0; i < ARRAY_SIZE(f); i++)
			need = SP_MAX(need, (size_t)f[i] + 8);
	}
	if ((e = py_mem_read(m, code, head, need)))
		return e;
	if (field_u64(head, l->ob_type) != l->code_type)
		return -EINVAL;
	memcpy(&first, head + l->co_firstlineno, 4);
	out->firstlineno = first;
	if (l->version >= 0x030b) {
		/* The code units are inline: ob_size counts them, caches included. */
		units = (__s64)field_u64(head, l->ob_size);
	} else {
		__u64 bytes = field_u64(head, l->co_code);

		if ((e = py_mem_read(m, bytes + l->bytes_size, &units, 8)))
			return e;
		units /= 2;
	}
	if (units < 0 || units > PY_MAX_CODEUNITS)
		return -EINVAL;
	out->ncodeunits = units;
	e = py_str_read(m, l, field_u64(head, l->co_name), out->name, sizeof(out->name), &cut);
	if (e)
		return e;
	if (l->version >= 0x030b) {
		e = py_str_read(m, l, field_u64(head, l->co_qualname), out->qualname, sizeof(out->qualname), &cut);
		if (e)
			return e;
		out->has_qualname = true;
	} else {
		/* 3.8-3.10: no qualified name in the code object (py_qualnames may know it). */
		memcpy(out->qualname, out->name, sizeof(out->name));
	}
	if (cut)
		out->flags |= PY_NAMES_NAME_CUT;
	e = py_str_read(m, l, field_u64(head, l->co_filename), out->filename, sizeof(out->filename), &cut);
	if (e)
		return e;
	if (cut)
		out->flags |= PY_NAMES_FILE_CUT;
	e = read_lines(m, l, field_u64(head, l->co_linetable), lines_max, out);
	if (e)
		py_code_clear(out);
	return e;
}

void py_code_clear(struct py_code *c)
{
	if (!c)
		return;
	free(c->lines);
	c->lines = NULL;
	c->lines_len = 0;
}

void py_code_rec(const struct py_code *c, const struct py_qualnames *q, __u32 pid, __u64 slot,
		 struct py_names_rec *out)
{
	const char *qual = c->has_qualname ? c->qualname : py_qualnames__find(q, c->addr);
	__u32 flags = c->flags;

	if (!qual) {
		qual = c->name;
		flags |= PY_NAMES_QUALNAME_GUESSED;
	}
	*out = (struct py_names_rec){
		.pid = pid, .flags = flags, .slot = slot, .code = c->addr, .size = py_slot_size(c->ncodeunits),
		.ncodeunits = c->ncodeunits, .firstlineno = c->firstlineno,
		.qualname = qual, .qualname_len = strlen(qual), .filename = c->filename,
		.filename_len = strlen(c->filename), .lines = c->lines, .lines_len = c->lines_len,
	};
}

/* ---- qualified names before 3.11 ---- */

struct qentry {
	__u64 code;
	char *qual;
};

struct py_qualnames {
	struct qentry *e;
	size_t nr, cap, max;
	struct u64_map idx;  /* code -> index + 1 */
	struct u64_map seen; /* objects visited */
	struct u64_map types; /* type -> its Py_TPFLAGS_TYPE_SUBCLASS bit + 1 */
	struct u64_map consts; /* a constant -> 1 a code object, 2 not */
	/* the walk's */
	struct py_mem *m;
	const struct py_code_layout *cl;
	const struct py_scan_layout *sl;
	bool oom;
};

/* Dicts larger than this are not a module's or a class's namespace: not walked. */
#define DICT_MAX (1 << 20)
/* Nested classes followed this deep, and tuples of constants this long. */
#define TYPE_DEPTH 4
#define CONSTS_MAX 4096
#define CO_NEWLOCALS 2

static int add_entry(struct py_qualnames *q, __u64 code, const char *qual)
{
	uint64_t *v;
	char *dup;

	if (q->nr >= q->max)
		return -E2BIG;
	v = u64_map_get(&q->idx, code, true);
	if (!v)
		return -ENOMEM;
	if (*v)
		return 0; /* the first name found stays: a function's, before an alias's */
	dup = strdup(qual);
	if (!dup || array_reserve((void **)&q->e, &q->cap, q->nr, sizeof(*q->e))) {
		free(dup);
		return -ENOMEM;
	}
	q->e[q->nr++] = (struct qentry){ code, dup };
	*v = q->nr;
	return 0;
}

typedef int (*item_fn)(struct py_qualnames *q, __u64 key, __u64 value, int depth);

/*
 * Every (key, value) of a 3.8-3.10 dict: the keys object's entries
 * {hash, key, value} follow its index table (1, 2, 4 or 8 bytes an index
 * by size); a split table keeps the values apart.  Read in one piece each.
 */
static int dict_items(struct py_qualnames *q, __u64 dict, item_fn fn, int depth)
{
	const struct py_scan_layout *s = q->sl;
	__u64 keys, values, *ents = NULL, *vals = NULL;
	__s64 size, nent;
	int w, e;

	if ((e = read_u64(q->m, dict + s->dict_keys, &keys)) || (e = read_u64(q->m, dict + s->dict_values, &values)) ||
	    (e = py_mem_read(q->m, keys + s->keys_size, &size, 8)) ||
	    (e = py_mem_read(q->m, keys + s->keys_nentries, &nent, 8)))
		return e;
	if (size <= 0 || size > DICT_MAX || nent < 0 || nent > size)
		return -EINVAL;
	w = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
	if (!nent)
		return 0;
	/* What the budget could not read anyway is not allocated either (a lying size). */
	if ((size_t)nent * (values ? 32 : 24) > q->m->budget)
		return -E2BIG;
	ents = malloc(24 * nent);
	vals = values ? malloc(8 * nent) : NULL;
	e = -ENOMEM;
	if (!ents || (values && !vals))
		goto cleanup;
	e = py_mem_read(q->m, keys + s->keys_indices + (__u64)size * w, ents, 24 * nent);
	if (!e && values)
		e = py_mem_read(q->m, values, vals, 8 * nent);
	for (__s64 i = 0; !e && i < nent; i++) {
		__u64 k = ents[3 * i + 1], v = values ? vals[i] : ents[3 * i + 2];

		if (k && v)
			e = fn(q, k, v, depth);
		/* An object that cannot be read is skipped: the process moved on under us. */
		if (e == -EFAULT || e == -EINVAL)
			e = 0;
	}
cleanup:
	free(ents);
	free(vals);
	return e;
}

/* The bytes of an object the walk looks at (its type, a function's code and name, a class's dict), read at once. */
#define OBJ_HEAD 288

/* A field of an object: from its head where it was read, else on its own. */
static int field(struct py_qualnames *q, __u64 obj, const __u8 *head, size_t got, __u32 off, __u64 *v)
{
	if (off + 8 <= got) {
		memcpy(v, head + off, 8);
		return 0;
	}
	return read_u64(q->m, obj + off, v);
}

/* A type's tp_flags, read once per type: most objects of a namespace are of a few types. */
static int type_flags(struct py_qualnames *q, __u64 typ, __u64 *flags)
{
	uint64_t *v = u64_map_get(&q->types, typ, true);
	int e;

	if (!v)
		return -ENOMEM;
	if (*v) {
		*flags = *v - 1;
		return 0;
	}
	e = read_u64(q->m, typ + q->sl->type_flags, flags);
	if (!e)
		*v = (*flags & (1ull << 31)) + 1; /* the one bit the walk wants */
	return e;
}

static int visit_obj(struct py_qualnames *q, __u64 key, __u64 v, int depth)
{
	const struct py_scan_layout *s = q->sl;
	__u64 typ, flags, code, qual;
	uint64_t *seen = u64_map_get(&q->seen, v, true);
	char name[PY_STR_MAX + 1];
	__u8 head[OBJ_HEAD];
	size_t got = OBJ_HEAD;
	bool cut;
	int e;

	(void)key;
	if (!seen)
		return -ENOMEM;
	if (*seen)
		return 0;
	*seen = 1;
	if (py_mem_read(q->m, v, head, OBJ_HEAD))
		got = 0;
	if ((e = field(q, v, head, got, q->cl->ob_type, &typ)))
		return e;
	/* staticmethod, classmethod, property: the function they wrap */
	if (typ && (typ == s->staticmethod_type || typ == s->classmethod_type || typ == s->property_type)) {
		if ((e = field(q, v, head, got, s->wrapped, &v)))
			return e;
		got = py_mem_read(q->m, v, head, OBJ_HEAD) ? 0 : OBJ_HEAD;
		if ((e = field(q, v, head, got, q->cl->ob_type, &typ)))
			return e;
	}
	if (typ == s->function_type) {
		if ((e = field(q, v, head, got, s->func_code, &code)) || (e = field(q, v, head, got, s->func_qualname, &qual)) ||
		    (e = py_str_read(q->m, q->cl, qual, name, sizeof(name), &cut)))
			return e;
		return cut ? 0 : add_entry(q, code, name);
	}
	/* A class (its type's flags have Py_TPFLAGS_TYPE_SUBCLASS): its namespace, a level down. */
	if (depth >= TYPE_DEPTH || !typ || (e = type_flags(q, typ, &flags)) || !(flags & 1ull << 31) ||
	    (e = field(q, v, head, got, s->type_dict, &v)) || !v)
		return e;
	return dict_items(q, v, visit_obj, depth + 1);
}

static int visit_module(struct py_qualnames *q, __u64 key, __u64 mod, int depth)
{
	__u64 d, typ;
	int e;

	(void)key;
	(void)depth;
	if ((e = read_u64(q->m, mod + q->sl->module_dict, &d)) || !d || (e = read_u64(q->m, d + q->cl->ob_type, &typ)))
		return e;
	if (typ != q->sl->dict_type)
		return 0;
	e = dict_items(q, d, visit_obj, 0);
	return e == -EFAULT || e == -EINVAL ? 0 : e;
}

/* Code objects in a known one's constants: PARENT.<locals>.NAME, as the compiler names them. */
/* Whether the object at obj is a code object: each constant read once (names and numbers are shared). */
static bool is_code(struct py_qualnames *q, __u64 obj)
{
	uint64_t *v = u64_map_get(&q->consts, obj, true);
	__u64 typ;

	if (v && *v)
		return *v == 1;
	if (read_u64(q->m, obj + q->cl->ob_type, &typ))
		return false; /* not remembered: a torn read may do better next time */
	if (v)
		*v = typ == q->cl->code_type ? 1 : 2;
	return typ == q->cl->code_type;
}

/* The first constants come with the tuple's header; more are read after. */
#define CONSTS_HEAD 32

static int nested(struct py_qualnames *q)
{
	const struct py_code_layout *cl = q->cl;
	const struct py_scan_layout *sl = q->sl;
	char name[PY_STR_MAX + 1], qual[2 * PY_STR_MAX + 16];
	__u64 tuple[3 + CONSTS_HEAD], *items = NULL;
	size_t cap = 0;
	int e = 0;

	if (!sl->co_consts || sl->tuple_items + 8 * CONSTS_HEAD > sizeof(tuple) || sl->tuple_size + 8 > sizeof(tuple))
		return 0;
	/* The array grows as it is walked: each new entry is visited in turn. */
	for (size_t i = 0; i < q->nr && q->nr < q->max && !e; i++) {
		__u64 consts, code = q->e[i].code, head[CODE_HEAD_MAX / 8];
		size_t need = SP_MAX(sl->co_consts, sl->co_flags) + 8;
		__u32 flags = CO_NEWLOCALS;
		__s64 n;
		bool cut;

		if (need > sizeof(head) || py_mem_read(q->m, code, head, need))
			continue;
		memcpy(&consts, (__u8 *)head + sl->co_consts, 8);
		/* A class body's code makes no new locals: what it holds is named PARENT.NAME. */
		if (sl->co_flags)
			memcpy(&flags, (__u8 *)head + sl->co_flags, 4);
		if (py_mem_read(q->m, consts, tuple, sizeof(tuple)))
			continue;
		memcpy(&n, (__u8 *)tuple + sl->tuple_size, 8);
		if (n <= 0 || n > CONSTS_MAX)
			continue;
		if (array_reserve((void **)&items, &cap, n, sizeof(*items))) {
			e = -ENOMEM;
			break;
		}
		memcpy(items, (__u8 *)tuple + sl->tuple_items, 8 * SP_MIN(n, CONSTS_HEAD));
		if (n > CONSTS_HEAD && py_mem_read(q->m, consts + sl->tuple_items + 8 * CONSTS_HEAD, items + CONSTS_HEAD,
						   8 * (n - CONSTS_HEAD)))
			n = CONSTS_HEAD;
		for (__s64 k = 0; k < n && !e; k++) {
			__u64 nm;
			uint64_t *known;

			if (!items[k] || !is_code(q, items[k]))
				continue;
			known = u64_map_get(&q->idx, items[k], false);
			if ((known && *known) || read_u64(q->m, items[k] + cl->co_name, &nm) ||
			    py_str_read(q->m, cl, nm, name, sizeof(name), &cut) || cut)
				continue;
			snprintf(qual, sizeof(qual), "%s%s%s", q->e[i].qual, flags & CO_NEWLOCALS ? ".<locals>." : ".", name);
			e = add_entry(q, items[k], qual);
		}
	}
	free(items);
	return e == -E2BIG ? 0 : e;
}

int py_qualnames__build(struct py_qualnames **out, struct py_mem *m, const struct py_code_layout *cl,
			const struct py_scan_layout *sl, size_t max_entries)
{
	struct py_qualnames *q = calloc(1, sizeof(*q));
	__u64 mods;
	int e;

	*out = NULL;
	if (!q)
		return -ENOMEM;
	*q = (struct py_qualnames){ .max = max_entries, .m = m, .cl = cl, .sl = sl };
	/* A walk cut short (the budget, a torn read, the entry bound) keeps what it found. */
	e = read_u64(m, sl->interp + sl->interp_modules, &mods);
	if (!e && mods)
		e = dict_items(q, mods, visit_module, 0);
	if (e != -ENOMEM)
		e = nested(q);
	u64_map_free(&q->seen);
	u64_map_free(&q->types);
	u64_map_free(&q->consts);
	q->m = NULL;
	q->cl = NULL;
	q->sl = NULL;
	if (e == -ENOMEM) {
		py_qualnames__free(q);
		return e;
	}
	*out = q;
	return 0;
}

const char *py_qualnames__find(const struct py_qualnames *q, __u64 code)
{
	uint64_t *v;

	if (!q || !q->nr)
		return NULL;
	v = u64_map_get((struct u64_map *)&q->idx, code, false);
	return v && *v ? q->e[*v - 1].qual : NULL;
}

size_t py_qualnames__count(const struct py_qualnames *q)
{
	return q ? q->nr : 0;
}

void py_qualnames__free(struct py_qualnames *q)
{
	if (!q)
		return;
	for (size_t i = 0; i < q->nr; i++)
		free(q->e[i].qual);
	free(q->e);
	u64_map_free(&q->idx);
	u64_map_free(&q->seen);
	u64_map_free(&q->types);
	u64_map_free(&q->consts);
	free(q);
}
