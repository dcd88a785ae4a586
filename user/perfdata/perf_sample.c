// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>

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

static void walk_trailer(struct walk *w, const struct perf_event_attr *a, struct pd_sample *s)
{
	__u64 t = a->sample_type;

	if (!a->sample_id_all)
		return;
	/* perf_event__id_header order; IDENTIFIER comes last so readers find it from the end. */
	if (t & PERF_SAMPLE_TID)
		u32pair(w, &s->pid, &s->tid);
	if (t & PERF_SAMPLE_TIME)
		u64f(w, &s->time);
	if (t & PERF_SAMPLE_ID)
		u64f(w, &s->id);
	if (t & PERF_SAMPLE_STREAM_ID)
		u64f(w, &s->stream_id);
	if (t & PERF_SAMPLE_CPU)
		u32pair(w, &s->cpu, &s->cpu_res);
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

/* ---- side-band builders ---- */

static size_t str_padded(const char *s)
{
	return (strlen(s) + 1 + 7) & ~(size_t)7;
}

static long finish(void *buf, size_t body, const struct perf_event_attr *attr,
		   const struct pd_sample *ts, __u32 type, __u16 misc)
{
	struct perf_event_header h = { type, misc, (__u16)(body + pd_trailer_size(attr)) };

	memcpy(buf, &h, sizeof(h));
	pd_trailer_write((char *)buf + body, attr, ts);
	return h.size;
}

static int fits(size_t need, size_t bufsz)
{
	return need <= bufsz && need <= 0xffff;
}

long pd_build_comm(void *buf, size_t bufsz, const struct perf_event_attr *attr,
		   const struct pd_sample *ts, __u32 pid, __u32 tid, const char *comm, int exec)
{
	size_t body = 8 + 8 + str_padded(comm);
	char *p = (char *)buf + 8;

	if (!fits(body + pd_trailer_size(attr), bufsz))
		return -ENOSPC;
	memcpy(p, &pid, 4);
	memcpy(p + 4, &tid, 4);
	memset(p + 8, 0, str_padded(comm));
	memcpy(p + 8, comm, strlen(comm));
	return finish(buf, body, attr, ts, PERF_RECORD_COMM, exec ? PERF_RECORD_MISC_COMM_EXEC : 0);
}

long pd_build_mmap(void *buf, size_t bufsz, const struct perf_event_attr *attr,
		   const struct pd_sample *ts, __u16 misc, __u32 pid, __u32 tid, __u64 start,
		   __u64 len, __u64 pgoff, const char *filename)
{
	size_t body = 8 + 8 + 24 + str_padded(filename);
	char *p = (char *)buf + 8;

	if (!fits(body + pd_trailer_size(attr), bufsz))
		return -ENOSPC;
	memcpy(p, &pid, 4);
	memcpy(p + 4, &tid, 4);
	memcpy(p + 8, &start, 8);
	memcpy(p + 16, &len, 8);
	memcpy(p + 24, &pgoff, 8);
	memset(p + 32, 0, str_padded(filename));
	memcpy(p + 32, filename, strlen(filename));
	return finish(buf, body, attr, ts, PERF_RECORD_MMAP, misc);
}

long pd_build_mmap2(void *buf, size_t bufsz, const struct perf_event_attr *attr,
		    const struct pd_sample *ts, __u16 misc, __u32 pid, __u32 tid, __u64 start,
		    __u64 len, __u64 pgoff, const struct pd_mmap2_info *info, const char *filename)
{
	size_t body = 8 + 8 + 24 + 32 + str_padded(filename);
	char *p = (char *)buf + 8;

	if (!fits(body + pd_trailer_size(attr), bufsz))
		return -ENOSPC;
	memcpy(p, &pid, 4);
	memcpy(p + 4, &tid, 4);
	memcpy(p + 8, &start, 8);
	memcpy(p + 16, &len, 8);
	memcpy(p + 24, &pgoff, 8);
	if (info->build_id_size) {
		memset(p + 32, 0, 24);
		p[32] = SP_MIN(info->build_id_size, (__u8)20);
		memcpy(p + 36, info->build_id, p[32]);
		misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
	} else {
		memcpy(p + 32, &info->maj, 4);
		memcpy(p + 36, &info->min, 4);
		memcpy(p + 40, &info->ino, 8);
		memcpy(p + 48, &info->ino_generation, 8);
	}
	memcpy(p + 56, &info->prot, 4);
	memcpy(p + 60, &info->flags, 4);
	memset(p + 64, 0, str_padded(filename));
	memcpy(p + 64, filename, strlen(filename));
	return finish(buf, body, attr, ts, PERF_RECORD_MMAP2, misc);
}

long pd_build_task(void *buf, size_t bufsz, const struct perf_event_attr *attr,
		   const struct pd_sample *ts, __u32 type, __u32 pid, __u32 ppid, __u32 tid,
		   __u32 ptid, __u64 time)
{
	size_t body = 8 + 16 + 8;
	char *p = (char *)buf + 8;

	if (!fits(body + pd_trailer_size(attr), bufsz))
		return -ENOSPC;
	memcpy(p, &pid, 4);
	memcpy(p + 4, &ppid, 4);
	memcpy(p + 8, &tid, 4);
	memcpy(p + 12, &ptid, 4);
	memcpy(p + 16, &time, 8);
	return finish(buf, body, attr, ts, type, 0);
}

long pd_build_lost(void *buf, size_t bufsz, const struct perf_event_attr *attr,
		   const struct pd_sample *ts, __u64 id, __u64 lost)
{
	size_t body = 8 + 16;
	char *p = (char *)buf + 8;

	if (!fits(body + pd_trailer_size(attr), bufsz))
		return -ENOSPC;
	memcpy(p, &id, 8);
	memcpy(p + 8, &lost, 8);
	return finish(buf, body, attr, ts, PERF_RECORD_LOST, 0);
}

long pd_build_finished_round(void *buf, size_t bufsz)
{
	struct perf_event_header h = { PD_RECORD_FINISHED_ROUND, 0, sizeof(h) };

	if (bufsz < sizeof(h))
		return -ENOSPC;
	memcpy(buf, &h, sizeof(h));
	return sizeof(h);
}

/* ---- side-band parsers ---- */

static int has_str(const char *rec, size_t len, size_t off)
{
	return len > off && memchr(rec + off, 0, len - off);
}

int pd_parse_comm(const void *rec, size_t len, struct pd_comm *out)
{
	const char *p = rec;
	const struct perf_event_header *h = rec;

	if (!has_str(p, len, 16))
		return -EINVAL;
	memcpy(&out->pid, p + 8, 4);
	memcpy(&out->tid, p + 12, 4);
	out->comm = p + 16;
	out->exec = !!(h->misc & PERF_RECORD_MISC_COMM_EXEC);
	return 0;
}

int pd_parse_mmap(const void *rec, size_t len, struct pd_mmap *out)
{
	const char *p = rec;
	const struct perf_event_header *h = rec;
	size_t off = h->type == PERF_RECORD_MMAP2 ? 72 : 40;

	if (!has_str(p, len, off))
		return -EINVAL;
	memcpy(&out->pid, p + 8, 4);
	memcpy(&out->tid, p + 12, 4);
	memcpy(&out->start, p + 16, 8);
	memcpy(&out->len, p + 24, 8);
	memcpy(&out->pgoff, p + 32, 8);
	out->filename = p + off;
	out->kernel = (h->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
	out->build_id_size = 0;
	out->prot = out->flags = 0;
	if (h->type != PERF_RECORD_MMAP2)
		return 0;
	memcpy(&out->prot, p + 64, 4);
	memcpy(&out->flags, p + 68, 4);
	/*
	 * The build-id form.  Linux leaks this flag into the records of other
	 * sessions, whose bytes there are device numbers: only a SHA-1 or MD5
	 * size with zeroed reserved bytes is taken for a build id.
	 */
	if ((h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) && (p[40] == 20 || p[40] == 16) && !p[41] && !p[42] &&
	    !p[43]) {
		out->build_id_size = p[40];
		memcpy(out->build_id, p + 44, out->build_id_size);
	}
	return 0;
}

int pd_parse_task(const void *rec, size_t len, struct pd_task *out)
{
	const char *p = rec;

	if (len < 32)
		return -EINVAL;
	memcpy(&out->pid, p + 8, 4);
	memcpy(&out->ppid, p + 12, 4);
	memcpy(&out->tid, p + 16, 4);
	memcpy(&out->ptid, p + 20, 4);
	memcpy(&out->time, p + 24, 8);
	return 0;
}

int pd_parse_lost(const void *rec, size_t len, __u64 *id, __u64 *lost)
{
	const char *p = rec;
	const struct perf_event_header *h = rec;

	*id = 0;
	if (h->type == PERF_RECORD_LOST_SAMPLES) {
		if (len < 16)
			return -EINVAL;
		memcpy(lost, p + 8, 8);
		return 0;
	}
	if (len < 24)
		return -EINVAL;
	memcpy(id, p + 8, 8);
	memcpy(lost, p + 16, 8);
	return 0;
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
