// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>
#include <time.h>

#include "perf_sample.h"
#include "util.h"

/*
 * One walker serves size, write and parse, so that the three can never
 * disagree on the order or width of a field (perf keeps two functions in
 * step by hand; its sample-parsing test exists because they drifted).
 */
enum walk_mode { W_SIZE, W_WRITE, W_PARSE };

struct walk {
	enum walk_mode mode;
	char *p;	  /* write/parse cursor */
	const char *end;  /* write/parse limit */
	size_t size;	  /* bytes walked */
	int err;
};

/* Sizing walks carry no buffer: their cursor stays NULL, never offset. */
static void advance(struct walk *w, size_t n)
{
	if (w->mode != W_SIZE)
		w->p += n;
	w->size += n;
}

static int room(struct walk *w, size_t n)
{
	if (w->err)
		return 0;
	if (w->mode != W_SIZE && (size_t)(w->end - w->p) < n) {
		w->err = w->mode == W_PARSE ? -EINVAL : -ENOSPC;
		return 0;
	}
	return 1;
}

static void u64f(struct walk *w, __u64 *v)
{
	if (!room(w, 8))
		return;
	if (w->mode == W_WRITE)
		memcpy(w->p, v, 8);
	else if (w->mode == W_PARSE)
		memcpy(v, w->p, 8);
	advance(w, 8);
}

static void u32pair(struct walk *w, __u32 *a, __u32 *b)
{
	if (!room(w, 8))
		return;
	if (w->mode == W_WRITE) {
		memcpy(w->p, a, 4);
		memcpy(w->p + 4, b, 4);
	} else if (w->mode == W_PARSE) {
		memcpy(a, w->p, 4);
		memcpy(b, w->p + 4, 4);
	}
	advance(w, 8);
}

/* Variable data: on parse, *ptr points into the record. */
static void bytes(struct walk *w, const void **ptr, __u64 n)
{
	if (w->err)
		return;
	if (n > (1ull << 32)) {
		w->err = -EINVAL;
		return;
	}
	if (!room(w, n))
		return;
	if (w->mode == W_WRITE && n)
		memcpy(w->p, *ptr, n);
	else if (w->mode == W_PARSE)
		*ptr = w->p;
	advance(w, n);
}

/* Fixed-size bytes held in the struct (an array): copied in and out. */
static void fixed(struct walk *w, void *v, size_t n)
{
	if (!room(w, n))
		return;
	if (w->mode == W_WRITE)
		memcpy(w->p, v, n);
	else if (w->mode == W_PARSE)
		memcpy(v, w->p, n);
	advance(w, n);
}

/* Reserved bytes: zero on write, skipped on parse. */
static void zeros(struct walk *w, size_t n)
{
	if (!room(w, n))
		return;
	if (w->mode == W_WRITE)
		memset(w->p, 0, n);
	advance(w, n);
}

/*
 * A NUL-terminated name padded with zeros to 8 bytes, as the kernel writes
 * comm and filename.  On parse *s points into the record, whose NUL must
 * come before the walk's end; a record shorter than the padding is taken.
 */
static void str(struct walk *w, const char **s)
{
	size_t n, len;
	const char *nul;

	if (w->err)
		return;
	if (w->mode != W_PARSE) {
		if (!*s) {
			w->err = -EINVAL;
			return;
		}
		len = strlen(*s);
		n = (len + 1 + 7) & ~(size_t)7;
		if (!room(w, n))
			return;
		if (w->mode == W_WRITE) {
			memcpy(w->p, *s, len);
			memset(w->p + len, 0, n - len);
		}
		advance(w, n);
		return;
	}
	nul = w->end > w->p ? memchr(w->p, 0, w->end - w->p) : NULL;
	if (!nul) {
		w->err = -EINVAL;
		return;
	}
	*s = w->p;
	n = (nul - w->p + 1 + 7) & ~(size_t)7;
	advance(w, SP_MIN(n, (size_t)(w->end - w->p)));
}

static void u64s(struct walk *w, const __u64 **ptr, __u64 nr)
{
	if (nr > (1ull << 28)) {
		w->err = w->err ?: -EINVAL;
		return;
	}
	bytes(w, (const void **)ptr, nr * 8);
}

static int read_entry_words(__u64 read_format)
{
	return 1 + !!(read_format & PERF_FORMAT_ID) + !!(read_format & PERF_FORMAT_LOST);
}

static void walk_read(struct walk *w, const struct perf_event_attr *a, struct pd_sample *s)
{
	__u64 rf = a->read_format;

	if (rf & PERF_FORMAT_GROUP) {
		u64f(w, &s->read_nr);
		if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED)
			u64f(w, &s->read_time_enabled);
		if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING)
			u64f(w, &s->read_time_running);
		if (s->read_nr > (1u << 16)) {
			w->err = w->err ?: -EINVAL;
			return;
		}
		u64s(w, &s->read_group, s->read_nr * read_entry_words(rf));
		return;
	}
	u64f(w, &s->read_value);
	if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED)
		u64f(w, &s->read_time_enabled);
	if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING)
		u64f(w, &s->read_time_running);
	if (rf & PERF_FORMAT_ID)
		u64f(w, &s->read_id);
	if (rf & PERF_FORMAT_LOST)
		u64f(w, &s->read_lost);
}

static void walk_raw(struct walk *w, struct pd_sample *s)
{
	/* u32 size then data; the kernel pads so that both end on 8 bytes. */
	if (!room(w, 4))
		return;
	if (w->mode == W_WRITE)
		memcpy(w->p, &s->raw_size, 4);
	else if (w->mode == W_PARSE)
		memcpy(&s->raw_size, w->p, 4);
	advance(w, 4);
	if ((4 + (__u64)s->raw_size) % 8) {
		w->err = -EINVAL;
		return;
	}
	bytes(w, &s->raw, s->raw_size);
}

static void walk_regs(struct walk *w, __u64 mask, __u64 *abi, const __u64 **regs)
{
	u64f(w, abi);
	if (*abi)
		u64s(w, regs, __builtin_popcountll(mask));
}

/*
 * The fields a sample and the sample_id trailer share, in the kernel's
 * order (perf_output_sample, __perf_event__output_id_sample); ADDR is a
 * sample's only.
 */
static void walk_ids(struct walk *w, __u64 t, struct pd_sample *s)
{
	if (t & PERF_SAMPLE_TID)
		u32pair(w, &s->pid, &s->tid);
	if (t & PERF_SAMPLE_TIME)
		u64f(w, &s->time);
	if (t & PERF_SAMPLE_ADDR)
		u64f(w, &s->addr);
	if (t & PERF_SAMPLE_ID)
		u64f(w, &s->id);
	if (t & PERF_SAMPLE_STREAM_ID)
		u64f(w, &s->stream_id);
	if (t & PERF_SAMPLE_CPU)
		u32pair(w, &s->cpu, &s->cpu_res);
}

static void walk_sample(struct walk *w, const struct perf_event_attr *a, struct pd_sample *s)
{
	__u64 t = a->sample_type;

	if (t & ~(__u64)PD_SAMPLE_KNOWN) {
		w->err = -EOPNOTSUPP;
		return;
	}
	/* Field order of the kernel's perf_output_sample(). */
	if (t & PERF_SAMPLE_IDENTIFIER)
		u64f(w, &s->id);
	if (t & PERF_SAMPLE_IP)
		u64f(w, &s->ip);
	walk_ids(w, t, s);
	if (t & PERF_SAMPLE_PERIOD)
		u64f(w, &s->period);
	if (t & PERF_SAMPLE_READ)
		walk_read(w, a, s);
	if (t & PERF_SAMPLE_CALLCHAIN) {
		u64f(w, &s->callchain_nr);
		u64s(w, &s->callchain, s->callchain_nr);
	}
	if (t & PERF_SAMPLE_RAW)
		walk_raw(w, s);
	if (t & PERF_SAMPLE_BRANCH_STACK) {
		u64f(w, &s->branch_nr);
		if (a->branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX)
			u64f(w, &s->branch_hw_idx);
		if (s->branch_nr > (1u << 20))
			w->err = w->err ?: -EINVAL;
		else
			u64s(w, &s->branch_entries, s->branch_nr * 3);
	}
	if (t & PERF_SAMPLE_REGS_USER)
		walk_regs(w, a->sample_regs_user, &s->regs_user_abi, &s->regs_user);
	if (t & PERF_SAMPLE_STACK_USER) {
		u64f(w, &s->stack_user_size);
		if (s->stack_user_size) {
			bytes(w, &s->stack_user, s->stack_user_size);
			u64f(w, &s->stack_user_dyn_size);
		}
	}
	if (t & (PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT))
		u64f(w, &s->weight);
	if (t & PERF_SAMPLE_DATA_SRC)
		u64f(w, &s->data_src);
	if (t & PERF_SAMPLE_TRANSACTION)
		u64f(w, &s->transaction);
	if (t & PERF_SAMPLE_REGS_INTR)
		walk_regs(w, a->sample_regs_intr, &s->regs_intr_abi, &s->regs_intr);
	if (t & PERF_SAMPLE_PHYS_ADDR)
		u64f(w, &s->phys_addr);
	if (t & PERF_SAMPLE_CGROUP)
		u64f(w, &s->cgroup);
	if (t & PERF_SAMPLE_DATA_PAGE_SIZE)
		u64f(w, &s->data_page_size);
	if (t & PERF_SAMPLE_CODE_PAGE_SIZE)
		u64f(w, &s->code_page_size);
	if (t & PERF_SAMPLE_AUX) {
		u64f(w, &s->aux_size);
		bytes(w, &s->aux, s->aux_size);
	}
	/* Unaligned variable data would misalign the next record. */
	if (!w->err && w->size % 8)
		w->err = -EINVAL;
}

size_t pd_sample_size(const struct perf_event_attr *attr, const struct pd_sample *s)
{
	struct walk w = { .mode = W_SIZE };
	struct pd_sample copy = *s;

	walk_sample(&w, attr, &copy);
	if (w.err || w.size + sizeof(struct perf_event_header) > 0xffff)
		return 0;
	return w.size + sizeof(struct perf_event_header);
}

long pd_sample_write(void *buf, size_t bufsz, const struct perf_event_attr *attr, __u16 misc,
		     const struct pd_sample *s)
{
	size_t sz = pd_sample_size(attr, s);
	struct perf_event_header h = { PERF_RECORD_SAMPLE, misc, (__u16)sz };
	struct pd_sample copy = *s;
	struct walk w;

	if (!sz)
		return -EINVAL;
	if (sz > bufsz)
		return -ENOSPC;
	memcpy(buf, &h, sizeof(h));
	w = (struct walk){ W_WRITE, (char *)buf + sizeof(h), (char *)buf + sz, 0, 0 };
	walk_sample(&w, attr, &copy);
	return w.err ?: (long)sz;
}

int pd_sample_parse(const struct perf_event_attr *attr, const void *rec, size_t len,
		    struct pd_sample *s)
{
	const struct perf_event_header *h = rec;
	struct walk w;

	memset(s, 0, sizeof(*s));
	if (len < sizeof(*h) || h->size > len || h->size < sizeof(*h))
		return -EINVAL;
	w = (struct walk){ W_PARSE, (char *)rec + sizeof(*h), (const char *)rec + h->size, 0, 0 };
	walk_sample(&w, attr, s);
	if (w.err)
		return w.err;
	/* A record larger than its fields is tolerated, as perf does. */
	return 0;
}

int pd_sample_time(const struct perf_event_attr *attr, const void *rec, size_t len, __u64 *time)
{
	const struct perf_event_header *h = rec;
	__u64 t = attr->sample_type;
	/* The fixed fields before it, in perf_output_sample()'s order. */
	size_t at = sizeof(*h) + 8 * (!!(t & PERF_SAMPLE_IDENTIFIER) + !!(t & PERF_SAMPLE_IP) + !!(t & PERF_SAMPLE_TID));

	*time = 0;
	if (len < sizeof(*h) || h->size > len || h->size < sizeof(*h))
		return -EINVAL;
	if (!(t & PERF_SAMPLE_TIME))
		return 0;
	if (at + 8 > h->size)
		return -EINVAL;
	memcpy(time, (const char *)rec + at, 8);
	return 0;
}

static void walk_trailer(struct walk *w, const struct perf_event_attr *a, struct pd_sample *s)
{
	__u64 t = a->sample_type;

	if (!a->sample_id_all)
		return;
	/* IDENTIFIER comes last so that readers find it from the end. */
	walk_ids(w, t & ~(__u64)PERF_SAMPLE_ADDR, s);
	if (t & PERF_SAMPLE_IDENTIFIER)
		u64f(w, &s->id);
}

size_t pd_trailer_size(const struct perf_event_attr *attr)
{
	struct walk w = { .mode = W_SIZE };
	struct pd_sample dummy = {};

	walk_trailer(&w, attr, &dummy);
	return w.size;
}

void pd_trailer_write(void *buf, const struct perf_event_attr *attr, const struct pd_sample *s)
{
	struct walk w = { W_WRITE, buf, (char *)buf + pd_trailer_size(attr), 0, 0 };
	struct pd_sample copy = *s;

	walk_trailer(&w, attr, &copy);
}

int pd_trailer_parse(const struct perf_event_attr *attr, const void *rec, size_t len,
		     struct pd_sample *s)
{
	const struct perf_event_header *h = rec;
	size_t tsz = pd_trailer_size(attr);
	struct walk w;

	memset(s, 0, sizeof(*s));
	if (len < sizeof(*h) || h->size > len || h->size < sizeof(*h) + tsz)
		return -EINVAL;
	w = (struct walk){ W_PARSE, (char *)rec + h->size - tsz, (const char *)rec + h->size, 0, 0 };
	walk_trailer(&w, attr, s);
	return w.err;
}

int pd_record_id(const void *rec, size_t len, __u64 *id)
{
	const struct perf_event_header *h = rec;

	if (len < sizeof(*h) || h->size > len || h->size < sizeof(*h) + 8)
		return -EINVAL;
	if (h->type == PERF_RECORD_SAMPLE)
		memcpy(id, (const char *)rec + sizeof(*h), 8);
	else
		memcpy(id, (const char *)rec + h->size - 8, 8);
	return 0;
}

/* ---- side-band records ---- */

static void walk_comm(struct walk *w, struct pd_sideband *r)
{
	u32pair(w, &r->comm.pid, &r->comm.tid);
	str(w, &r->comm.comm);
}

/*
 * Which form MMAP2's 24 bytes after pgoff take.  Linux leaks the build-id
 * flag into the records of other sessions, whose bytes there are device
 * numbers: on parse, only a SHA-1 or MD5 size with zeroed reserved bytes
 * is taken for a build id.
 */
static bool mmap2_build_id(const struct walk *w, const struct pd_sideband *r)
{
	const unsigned char *b = (const unsigned char *)w->p;

	if (w->mode != W_PARSE)
		return r->mmap.build_id_size;
	return (r->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) && w->end - w->p >= 4 && (b[0] == 20 || b[0] == 16) &&
	       !b[1] && !b[2] && !b[3];
}

static void walk_mmap(struct walk *w, struct pd_sideband *r)
{
	struct pd_mmap *m = &r->mmap;

	u32pair(w, &m->pid, &m->tid);
	u64f(w, &m->start);
	u64f(w, &m->len);
	u64f(w, &m->pgoff);
	if (r->type == PERF_RECORD_MMAP2) {
		if (mmap2_build_id(w, r)) {
			fixed(w, &m->build_id_size, 1);
			zeros(w, 3);
			fixed(w, m->build_id, sizeof(m->build_id));
		} else {
			u32pair(w, &m->maj, &m->min);
			u64f(w, &m->ino);
			u64f(w, &m->ino_generation);
		}
		u32pair(w, &m->prot, &m->flags);
	}
	str(w, &m->filename);
}

static void walk_task(struct walk *w, struct pd_sideband *r)
{
	u32pair(w, &r->task.pid, &r->task.ppid);
	u32pair(w, &r->task.tid, &r->task.ptid);
	u64f(w, &r->task.time);
}

static void walk_lost(struct walk *w, struct pd_sideband *r)
{
	if (r->type == PERF_RECORD_LOST)
		u64f(w, &r->lost.id);
	u64f(w, &r->lost.lost);
}

static void walk_throttle(struct walk *w, struct pd_sideband *r)
{
	u64f(w, &r->throttle.time);
	u64f(w, &r->throttle.id);
	u64f(w, &r->throttle.stream_id);
}

static void walk_nothing(struct walk *w, struct pd_sideband *r)
{
	(void)w;
	(void)r;
}

/* One row per record type the codec knows; test_perf_sample.c fails on a kernel type with none. */
static const struct sb_layout {
	__u32 type;
	void (*walk)(struct walk *w, struct pd_sideband *r);
} sb_layouts[] = {
	{ PERF_RECORD_MMAP, walk_mmap },
	{ PERF_RECORD_LOST, walk_lost },
	{ PERF_RECORD_COMM, walk_comm },
	{ PERF_RECORD_EXIT, walk_task },
	{ PERF_RECORD_THROTTLE, walk_throttle },
	{ PERF_RECORD_UNTHROTTLE, walk_throttle },
	{ PERF_RECORD_FORK, walk_task },
	{ PERF_RECORD_MMAP2, walk_mmap },
	{ PERF_RECORD_LOST_SAMPLES, walk_lost },
	{ PD_RECORD_FINISHED_ROUND, walk_nothing },
};

static const struct sb_layout *sb_layout(__u32 type)
{
	for (size_t i = 0; i < sizeof(sb_layouts) / sizeof(sb_layouts[0]); i++)
		if (sb_layouts[i].type == type)
			return &sb_layouts[i];
	return NULL;
}

bool pd_sideband_known(__u32 type)
{
	return sb_layout(type);
}

static size_t sb_trailer_size(const struct perf_event_attr *attr, __u32 type)
{
	return attr && type < PD_RECORD_USER_START ? pd_trailer_size(attr) : 0;
}

/* Body then trailer, in one walk: what size and write share. */
static void walk_sideband(struct walk *w, const struct perf_event_attr *attr, const struct sb_layout *l,
			  struct pd_sideband *r)
{
	l->walk(w, r);
	if (attr && r->type < PD_RECORD_USER_START)
		walk_trailer(w, attr, &r->sample_id);
}

/* What is written: MMAP2's build-id flag as its layout is, the id clamped to its array and zero past its size. */
static struct pd_sideband sb_for_write(const struct pd_sideband *r)
{
	struct pd_sideband c = *r;

	if (c.type == PERF_RECORD_MMAP2) {
		c.misc &= ~PERF_RECORD_MISC_MMAP_BUILD_ID;
		if (c.mmap.build_id_size) {
			c.mmap.build_id_size = SP_MIN(c.mmap.build_id_size, (__u8)sizeof(c.mmap.build_id));
			memset(c.mmap.build_id + c.mmap.build_id_size, 0,
			       sizeof(c.mmap.build_id) - c.mmap.build_id_size);
			c.misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
		}
	}
	return c;
}

/* The whole record's size, or -EINVAL (no layout, no name), or -ENOSPC (larger than a header can say). */
static long sb_size(const struct perf_event_attr *attr, const struct pd_sideband *c)
{
	const struct sb_layout *l = sb_layout(c->type);
	struct pd_sideband copy = *c;
	struct walk w = { .mode = W_SIZE };

	if (!l)
		return -EINVAL;
	walk_sideband(&w, attr, l, &copy);
	if (w.err)
		return w.err;
	if (w.size + sizeof(struct perf_event_header) > 0xffff)
		return -ENOSPC;
	return w.size + sizeof(struct perf_event_header);
}

size_t pd_sideband_size(const struct perf_event_attr *attr, const struct pd_sideband *r)
{
	struct pd_sideband c = sb_for_write(r);
	long sz = sb_size(attr, &c);

	return sz < 0 ? 0 : sz;
}

long pd_sideband_write(void *buf, size_t bufsz, const struct perf_event_attr *attr, const struct pd_sideband *r)
{
	struct pd_sideband c = sb_for_write(r);
	long sz = sb_size(attr, &c);
	struct perf_event_header h = { c.type, c.misc, (__u16)sz };
	struct walk w;

	if (sz < 0)
		return sz;
	if ((size_t)sz > bufsz)
		return -ENOSPC;
	memcpy(buf, &h, sizeof(h));
	w = (struct walk){ W_WRITE, (char *)buf + sizeof(h), (char *)buf + sz, 0, 0 };
	walk_sideband(&w, attr, sb_layout(c.type), &c);
	return w.err ?: sz;
}

int pd_sideband_parse(const struct perf_event_attr *attr, const void *rec, size_t len, struct pd_sideband *r)
{
	const struct perf_event_header *h = rec;
	const struct sb_layout *l;
	size_t tsz;
	struct walk w;

	memset(r, 0, sizeof(*r));
	if (len < sizeof(*h) || h->size > len || h->size < sizeof(*h))
		return -EINVAL;
	l = sb_layout(h->type);
	if (!l)
		return -EOPNOTSUPP;
	r->type = h->type;
	r->misc = h->misc;
	tsz = sb_trailer_size(attr, h->type);
	if (h->size < sizeof(*h) + tsz)
		return -EINVAL;
	/* The body from the front, the trailer from the back: a record larger than its fields is taken, as perf does. */
	w = (struct walk){ W_PARSE, (char *)rec + sizeof(*h), (const char *)rec + h->size - tsz, 0, 0 };
	l->walk(&w, r);
	if (w.err || !tsz)
		return w.err;
	return pd_trailer_parse(attr, rec, len, &r->sample_id);
}

long pd_sample_offset(const struct perf_event_attr *attr, __u64 field)
{
	/* The fields before the first variable-sized one, in the kernel's order. */
	static const __u64 order[] = { PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_IP, PERF_SAMPLE_TID,
				       PERF_SAMPLE_TIME };
	long off = sizeof(struct perf_event_header);

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		if (!(attr->sample_type & order[i]))
			continue;
		if (order[i] == field)
			return off;
		off += 8;
	}
	return -1;
}

void pd_bpf_output_attr(struct perf_event_attr *a, __u64 more)
{
	*a = (struct perf_event_attr){
		.type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_BPF_OUTPUT, .size = sizeof(*a),
		.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			       PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | more,
		.sample_period = 1, .sample_id_all = 1, .use_clockid = 1, .clockid = CLOCK_MONOTONIC,
		.disabled = 1,
	};
}
