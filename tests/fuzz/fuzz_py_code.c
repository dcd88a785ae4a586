// SPDX-License-Identifier: GPL-2.0
/*
 * Code objects and the 3.8-3.10 name walk over a memory image that lies in
 * any way, and the spanperf-python record's decoder.  The image is a list
 * of segments at addresses; the seeds are real code objects, their strs and
 * line tables as each CPython here holds them (tests/fuzz/py_seeds.py).
 * Input: u8 version (3.8 + n % 6), u64 &PyCode_Type, u64 the code object,
 * u16 co_name, co_qualname, co_filename, co_firstlineno, co_linetable,
 * co_code, co_consts; u64 interp, function type, dict type; then segments
 * (u64 address, u32 length, bytes) to the end.
 */
#include <errno.h>

#include "fuzz_common.h"
#include "py_code.h"
#include "py_names.h"

#define MAX_SEGS 64

struct image {
	struct seg {
		uint64_t addr;
		const uint8_t *p;
		uint32_t len;
	} s[MAX_SEGS];
	int n;
};

static int read_image(void *ctx, __u64 addr, void *buf, size_t len)
{
	const struct image *im = ctx;

	for (int i = 0; i < im->n; i++)
		if (addr >= im->s[i].addr && addr - im->s[i].addr <= im->s[i].len &&
		    len <= im->s[i].len - (addr - im->s[i].addr)) {
			memcpy(buf, im->s[i].p + (addr - im->s[i].addr), len);
			return 0;
		}
	return -EFAULT;
}

static volatile size_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct py_code_layout l;
	struct py_scan_layout sl;
	struct py_qualnames *q = NULL;
	struct py_names_rec rec;
	struct image im = {};
	struct py_mem m;
	struct py_code c;
	uint64_t code, v[3];
	uint16_t off[7];
	const uint8_t *p = data, *end = data + size;
	__u16 version;

	if (!py_names_rec_decode(data, size, &rec))
		sink += rec.qualname_len + rec.filename_len + rec.lines_len;
	if (size < 1 + 16 + 14 + 24)
		return 0;
	version = 0x0308 + p[0] % 6;
	py_code_layout_init(&l, version);
	memcpy(&l.code_type, p + 1, 8);
	memcpy(&code, p + 9, 8);
	memcpy(off, p + 17, 14);
	memcpy(v, p + 31, 24);
	p += 55;
	l.co_name = off[0];
	l.co_qualname = off[1];
	l.co_filename = off[2];
	l.co_firstlineno = off[3];
	l.co_linetable = off[4];
	l.co_code = off[5];
	while (end - p >= 12 && im.n < MAX_SEGS) {
		struct seg *s = &im.s[im.n++];

		memcpy(&s->addr, p, 8);
		memcpy(&s->len, p + 8, 4);
		p += 12;
		if (s->len > (size_t)(end - p))
			s->len = end - p;
		s->p = p;
		p += s->len;
	}
	m = (struct py_mem){ .read = read_image, .ctx = &im, .budget = 1 << 20 };
	if (!py_code_read(&m, &l, code, 1 << 12, &c)) {
		sink += strlen(c.name) + strlen(c.qualname) + strlen(c.filename);
		for (int i = -1; i < 32; i++)
			sink += py_runs_line(c.lines, c.lines_len, c.firstlineno, i);
		py_code_clear(&c);
	}
	if (version <= 0x030a && !py_scan_layout_init(&sl, version)) {
		sl.interp = v[0];
		sl.function_type = v[1];
		sl.dict_type = v[2];
		sl.co_consts = off[6];
		m.budget = 1 << 20;
		if (!py_qualnames__build(&q, &m, &l, &sl, 1000)) {
			sink += py_qualnames__count(q);
			sink += py_qualnames__find(q, code) != NULL;
			py_qualnames__free(q);
		}
	}
	return 0;
}
