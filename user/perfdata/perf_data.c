// SPDX-License-Identifier: GPL-2.0
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "atomic_file.h"
#include "fileio.h"
#include "names.h"
#include "perf_data.h"
#include "sbuf.h"
#include "util.h"

#define PD_MAGIC 0x32454c4946524550ull /* "PERFILE2" */
#define WBUF_SIZE (1 << 20)

struct file_section {
	__u64 offset, size;
};

struct file_header {
	__u64 magic, size, attr_size;
	struct file_section attrs, data, event_types;
	__u64 features[4];
};

_Static_assert(sizeof(struct file_header) == PD_HEADER_SIZE, "perf_file_header is 104 bytes");

void pd_meta_free(struct pd_meta *m)
{
	if (!m)
		return;
	free(m->hostname);
	free(m->osrelease);
	free(m->version);
	free(m->arch);
	free(m->cpudesc);
	free(m->cpuid);
	for (int i = 0; i < m->cmdline_argc; i++)
		free(m->cmdline_argv[i]);
	free(m->cmdline_argv);
	for (int i = 0; i < m->nr_build_ids; i++)
		free(m->build_ids[i].filename);
	free(m->build_ids);
	free(m->digests);
	for (int i = 0; i < m->nr_jit_maps; i++)
		free(m->jit_maps[i].text);
	free(m->jit_maps);
	for (int i = 0; i < m->nr_unwind; i++)
		free(m->unwind[i].key);
	free(m->unwind);
	memset(m, 0, sizeof(*m));
}

/* ==== writer ==== */

struct pd_writer {
	struct atomic_file out;
	bool file; /* out is open: without, the records go to the sink alone */
	bool begun;
	const struct pd_sink *sink;
	struct pd_attr *attrs;
	int nr_attrs;
	__u64 data_offset, data_size;
	char *buf;
	size_t buf_len;
	bool keep_going; /* a full disk stops the file only (pd_writer__keep_going) */
	int ferr;	 /* what stopped it */
};

void pd_writer__keep_going(struct pd_writer *w)
{
	w->keep_going = true;
}

int pd_writer__file_error(const struct pd_writer *w)
{
	return w->ferr;
}

/* A file write's error: with keep_going, a full disk stops the file and the writer goes on. */
static int file_failed(struct pd_writer *w, int err)
{
	if (!w->keep_going || (err != -ENOSPC && err != -EDQUOT))
		return err;
	w->ferr = err;
	w->buf_len = 0;
	return 0;
}

int pd_writer__open(struct pd_writer **out, const char *path)
{
	struct pd_writer *w;
	int err;

	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	if (!path) {
		*out = w;
		return 0;
	}
	w->buf = malloc(WBUF_SIZE);
	if (!w->buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	/* 0600: profiles show what a host runs. */
	err = atomic_file__open(&w->out, path, 0600, true);
	if (err)
		goto cleanup;
	w->file = true;
	*out = w;
	return 0;
cleanup:
	pd_writer__free(w);
	return err;
}

void pd_writer__set_sink(struct pd_writer *w, const struct pd_sink *sink)
{
	w->sink = sink;
}

int pd_writer__retarget(struct pd_writer *w, const char *path)
{
	return w->file ? atomic_file__retarget(&w->out, path) : -EINVAL;
}

const char *pd_writer__tmp_path(const struct pd_writer *w)
{
	return w && w->file ? w->out.tmp : NULL;
}

int pd_writer__add_attr(struct pd_writer *w, const struct perf_event_attr *attr,
			const char *name, const __u64 *ids, int nr_ids)
{
	struct pd_attr *na, *a;

	if (w->begun)
		return -EBUSY; /* attrs are laid out before the data */
	na = realloc(w->attrs, (w->nr_attrs + 1) * sizeof(*na));
	if (!na)
		return -ENOMEM;
	w->attrs = na;
	a = &w->attrs[w->nr_attrs];
	memset(a, 0, sizeof(*a));
	a->attr = *attr;
	a->attr.size = PD_ATTR_SIZE;
	a->name = strdup(name ? name : "");
	a->ids = malloc((nr_ids ? nr_ids : 1) * sizeof(__u64));
	if (!a->name || !a->ids) {
		free(a->name);
		free(a->ids);
		return -ENOMEM;
	}
	memcpy(a->ids, ids, nr_ids * sizeof(__u64));
	a->nr_ids = nr_ids;
	w->nr_attrs++;
	return 0;
}

static int pwrite_all(int fd, const void *p, size_t n, off_t off)
{
	const char *c = p;

	while (n) {
		ssize_t r = pwrite(fd, c, n, off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!r)
			return -EIO;
		c += r;
		n -= r;
		off += r;
	}
	return 0;
}

/* [header][ids of attr 0][ids of attr 1]...[attr 0 + section][attr 1 + section]... */
static int write_attrs(struct pd_writer *w, struct file_header *h)
{
	struct sbuf b = {};
	__u64 off = PD_HEADER_SIZE;
	int err;

	for (int i = 0; i < w->nr_attrs; i++)
		sbuf_add(&b, w->attrs[i].ids, w->attrs[i].nr_ids * sizeof(__u64));
	h->attrs.offset = PD_HEADER_SIZE + b.len;
	for (int i = 0; i < w->nr_attrs; i++) {
		struct file_section ids = { off, w->attrs[i].nr_ids * sizeof(__u64) };
		char attr[PD_ATTR_SIZE] = {};

		memcpy(attr, &w->attrs[i].attr, SP_MIN(sizeof(attr), sizeof(w->attrs[i].attr)));
		sbuf_add(&b, attr, sizeof(attr));
		sbuf_add(&b, &ids, sizeof(ids));
		off += ids.size;
	}
	h->attrs.size = w->nr_attrs * (PD_ATTR_SIZE + sizeof(struct file_section));
	h->attr_size = PD_ATTR_SIZE + sizeof(struct file_section);
	err = b.err ?: pwrite_all(w->out.fd, b.p, b.len, PD_HEADER_SIZE);
	sbuf_free(&b);
	return err;
}

int pd_writer__begin(struct pd_writer *w)
{
	struct file_header h = { .magic = PD_MAGIC, .size = PD_HEADER_SIZE };
	int err;

	if (!w->nr_attrs || w->begun)
		return -EINVAL;
	w->begun = true;
	if (w->sink && w->sink->begin && (err = w->sink->begin(w->sink->arg, w->attrs, w->nr_attrs)))
		return err;
	if (!w->file)
		return 0;
	err = write_attrs(w, &h);
	if (err)
		return file_failed(w, err);
	w->data_offset = h.attrs.offset + h.attrs.size;
	/*
	 * The header stays zero until finish(): a file cut short by a crash
	 * is then rejected by perf instead of being half-read.
	 */
	if (lseek(w->out.fd, w->data_offset, SEEK_SET) < 0)
		return -errno;
	return 0;
}

static int flush(struct pd_writer *w)
{
	int err;

	if (!w->buf_len)
		return 0;
	err = write_all(w->out.fd, w->buf, w->buf_len);
	if (!err)
		w->buf_len = 0;
	return err;
}

/* The file's part of a write: buffered, a large record past the buffer. */
static int write_file(struct pd_writer *w, const void *p, size_t n)
{
	int err;

	if (w->buf_len + n > WBUF_SIZE) {
		err = flush(w);
		if (err)
			return err;
		if (n >= WBUF_SIZE / 2) {
			err = write_all(w->out.fd, p, n);
			if (!err)
				w->data_size += n;
			return err;
		}
	}
	memcpy(w->buf + w->buf_len, p, n);
	w->buf_len += n;
	w->data_size += n;
	return 0;
}

int pd_writer__write(struct pd_writer *w, const void *p, size_t n)
{
	int err = 0;

	if (w->file && !w->ferr)
		err = write_file(w, p, n);
	else
		w->data_size += n;
	if (err && !(err = file_failed(w, err)))
		w->data_size += n;
	if (!err && w->sink && w->sink->write)
		err = w->sink->write(w->sink->arg, p, n);
	return err;
}

__u64 pd_writer__data_size(const struct pd_writer *w)
{
	return w->data_size;
}

/*
 * ---- features: one row per feature, as perf's header.c feat_ops ----
 *
 * Each row writes its section from a pd_meta (or the writer's attrs), reads
 * it back into the reader's pd_meta, and prints it as perf report
 * --header-only does.  A row with a meta field (mf) is one string there.
 */

/* [off, off+len) inside the file, without overflow. */
static bool in_file(const struct pd_reader *r, __u64 off, __u64 len)
{
	return off <= r->size && len <= r->size - off;
}

static void put_u32(struct sbuf *b, __u32 v)
{
	sbuf_add(b, &v, 4);
}

static void put_u64(struct sbuf *b, __u64 v)
{
	sbuf_add(b, &v, 8);
}

/* perf's do_write_string: u32 length including NUL, padded to 64. */
static void put_str(struct sbuf *b, const char *s)
{
	size_t len = strlen(s) + 1, padded = (len + 63) & ~(size_t)63;

	put_u32(b, padded);
	sbuf_add(b, s, len - 1);
	sbuf_zero(b, padded - len + 1);
}

/* A feature-section cursor: reads never pass its end. */
struct fcur {
	const unsigned char *p, *end;
	bool bad;
};

static __u32 f_u32(struct fcur *c)
{
	__u32 v = 0;

	if (c->end - c->p < 4) {
		c->bad = true;
		return 0;
	}
	memcpy(&v, c->p, 4);
	c->p += 4;
	return v;
}

static __u64 f_u64(struct fcur *c)
{
	__u64 v = 0;

	if (c->end - c->p < 8) {
		c->bad = true;
		return 0;
	}
	memcpy(&v, c->p, 8);
	c->p += 8;
	return v;
}

static char *f_str(struct fcur *c)
{
	__u32 len = f_u32(c);
	char *s;

	if (c->bad || len > (__u64)(c->end - c->p) || len > (1u << 20)) {
		c->bad = true;
		return NULL;
	}
	s = strndup((const char *)c->p, len);
	if (!s)
		c->bad = true;
	c->p += len;
	return s;
}

struct feat;
/* 0, or -ENOENT when there is nothing to write: the feature is then left out. */
typedef int (*feat_write_fn)(const struct feat *f, struct sbuf *b, const struct pd_writer *w,
			     const struct pd_meta *m);
/* Fills r->meta (or r->attrs); a short or bad section sets c->bad and keeps what was read. */
typedef void (*feat_read_fn)(const struct feat *f, struct fcur *c, struct pd_reader *r);
typedef void (*feat_print_fn)(const struct feat *f, const struct pd_reader *r, FILE *out);

struct feat {
	feat_write_fn write;
	feat_read_fn read;
	feat_print_fn print;
	size_t mf;	   /* string rows: offsetof the char * in pd_meta */
	const char *label; /* string rows: perf's "# label : value" */
};

static char **meta_str(const struct feat *f, struct pd_meta *m)
{
	return (char **)((char *)m + f->mf);
}

static int w_str(const struct feat *f, struct sbuf *b, const struct pd_writer *w, const struct pd_meta *m)
{
	const char *s = *meta_str(f, (struct pd_meta *)m);

	(void)w;
	if (!s)
		return -ENOENT;
	put_str(b, s);
	return 0;
}

static void r_str(const struct feat *f, struct fcur *c, struct pd_reader *r)
{
	char **s = meta_str(f, &r->meta);

	free(*s);
	*s = f_str(c);
}

static void p_str(const struct feat *f, const struct pd_reader *r, FILE *out)
{
	const char *s = *meta_str(f, (struct pd_meta *)&r->meta);

	if (s)
		fprintf(out, "# %s : %s\n", f->label, s);
}

static int w_nrcpus(const struct feat *f, struct sbuf *b, const struct pd_writer *w, const struct pd_meta *m)
{
	(void)f, (void)w;
	if (!m->nr_cpus_online)
		return -ENOENT;
	put_u32(b, m->nr_cpus_avail);
	put_u32(b, m->nr_cpus_online);
	return 0;
}

static void r_nrcpus(const struct feat *f, struct fcur *c, struct pd_reader *r)
{
	(void)f;
	r->meta.nr_cpus_avail = f_u32(c);
	r->meta.nr_cpus_online = f_u32(c);
}

static void p_nrcpus(const struct feat *f, const struct pd_reader *r, FILE *out)
{
	(void)f;
	fprintf(out, "# nrcpus online : %u\n# nrcpus avail : %u\n", r->meta.nr_cpus_online, r->meta.nr_cpus_avail);
}

static int w_total_mem(const struct feat *f, struct sbuf *b, const struct pd_writer *w, const struct pd_meta *m)
{
	(void)f, (void)w;
	if (!m->total_mem_kb)
		return -ENOENT;
	put_u64(b, m->total_mem_kb);
	return 0;
}

static void r_total_mem(const struct feat *f, struct fcur *c, struct pd_reader *r)
{
	(void)f;
	r->meta.total_mem_kb = f_u64(c);
}

static void p_total_mem(const struct feat *f, const struct pd_reader *r, FILE *out)
{
	(void)f;
	fprintf(out, "# total memory : %llu kB\n", (unsigned long long)r->meta.total_mem_kb);
}

static int w_cmdline(const struct feat *f, struct sbuf *b, const struct pd_writer *w, const struct pd_meta *m)
{
	(void)f, (void)w;
	if (!m->cmdline_argc)
		return -ENOENT;
	put_u32(b, m->cmdline_argc);
	for (int i = 0; i < m->cmdline_argc; i++)
		put_str(b, m->cmdline_argv[i]);
	return 0;
}

static void r_cmdline(const struct feat *f, struct fcur *c, struct pd_reader *r)
{
	__u32 nr = f_u32(c);

	(void)f;
	if (c->bad || nr > 4096)
		return;
	r->meta.cmdline_argv = calloc(nr ? nr : 1, sizeof(char *));
	for (__u32 i = 0; r->meta.cmdline_argv && i < nr && !c->bad; i++) {
		char *s = f_str(c);

		if (s)
			r->meta.cmdline_argv[r->meta.cmdline_argc++] = s;
	}
}

static void p_cmdline(const struct feat *f, const struct pd_reader *r, FILE *out)
{
	(void)f;
	fputs("# cmdline : ", out);
	for (int i = 0; i < r->meta.cmdline_argc; i++)
		fprintf(out, "%s ", r->meta.cmdline_argv[i]);
	fputc('\n', out);
}

static int w_event_desc(const struct feat *f, struct sbuf *b, const struct pd_writer *w, const struct pd_meta *m)
{
	(void)f, (void)m;
	put_u32(b, w->nr_attrs);
	put_u32(b, PD_ATTR_SIZE);
	for (int i = 0; i < w->nr_attrs; i++) {
		char attr[PD_ATTR_SIZE] = {};

		memcpy(attr, &w->attrs[i].attr, SP_MIN(sizeof(attr), sizeof(w->attrs[i].attr)));
		sbuf_add(b, attr, sizeof(attr));
		put_u32(b, w->attrs[i].nr_ids);
		put_str(b, w->attrs[i].name);
		sbuf_add(b, w->attrs[i].ids, w->attrs[i].nr_ids * sizeof(__u64));
	}
	return 0;
}

/* Only the names are kept: the attrs and ids are the attr section's. */
static void r_event_desc(const struct feat *f, struct fcur *c, struct pd_reader *r)
{
	__u32 nr = f_u32(c), sz = f_u32(c);

	(void)f;
	if (c->bad || sz < 64 || sz > 4096 || nr > PD_MAX_ATTRS)
		return;
	for (__u32 i = 0; i < nr && !c->bad; i++) {
		__u32 nr_ids;
		char *name;

		if ((size_t)(c->end - c->p) < sz) {
			c->bad = true;
			return;
		}
		c->p += sz;
		nr_ids = f_u32(c);
		name = f_str(c);
		if (c->bad || (__u64)nr_ids * 8 > (__u64)(c->end - c->p)) {
			free(name);
			c->bad = true;
			return;
		}
		c->p += (size_t)nr_ids * 8;
		/* The attrs come in the same order as the attr section. */
		if ((int)i < r->nr_attrs && !r->attrs[i].name)
			r->attrs[i].name = name;
		else
			free(name);
	}
}

/* The start of perf's line; perf goes on with every non-zero attr field. */
static void p_event_desc(const struct feat *f, const struct pd_reader *r, FILE *out)
{
	(void)f;
	for (int i = 0; i < r->nr_attrs; i++) {
		const struct pd_attr *a = &r->attrs[i];

		fprintf(out, "# event : name = %s, ", a->name ? a->name : "");
		if (a->nr_ids) {
			fputs(", id = {", out);
			for (__u32 j = 0; j < a->nr_ids; j++)
				fprintf(out, "%s %llu", j ? "," : "", (unsigned long long)a->ids[j]);
			fputs(" }", out);
		}
		fprintf(out, ", type = %u, size = %u", a->attr.type, a->attr.size);
		if (a->attr.config)
			fprintf(out, ", config = %#llx", (unsigned long long)a->attr.config);
		fputc('\n', out);
	}
}

static int w_build_id(const struct feat *f, struct sbuf *b, const struct pd_writer *w, const struct pd_meta *m)
{
	(void)f, (void)w;
	if (!m->nr_build_ids)
		return -ENOENT;
	for (int i = 0; i < m->nr_build_ids; i++) {
		const struct pd_build_id *bi = &m->build_ids[i];
		size_t name = strlen(bi->filename) + 1, padded = (name + 63) & ~(size_t)63;
		/* struct perf_record_header_build_id: header, pid, id[20], size, 3 pad */
		struct perf_event_header h = { 0, (__u16)(bi->misc | 0x8000 /* BUILD_ID_SIZE */),
					       (__u16)(8 + 4 + 24 + padded) };
		__u8 id[24] = {};

		memcpy(id, bi->id, SP_MIN(bi->size, 20));
		id[20] = bi->size;
		sbuf_add(b, &h, sizeof(h));
		sbuf_add(b, &bi->pid, 4);
		sbuf_add(b, id, sizeof(id));
		sbuf_add(b, bi->filename, name - 1);
		sbuf_zero(b, padded - name + 1);
	}
	return 0;
}

static void r_build_id(const struct feat *f, struct fcur *c, struct pd_reader *r)
{
	(void)f;
	while (c->end - c->p >= 8 + 4 + 24 && !c->bad) {
		struct perf_event_header h;
		struct pd_build_id *nb, *b;
		size_t namelen;

		memcpy(&h, c->p, sizeof(h));
		if (h.size < 36 || h.size > (size_t)(c->end - c->p))
			return;
		nb = realloc(r->meta.build_ids, (r->meta.nr_build_ids + 1) * sizeof(*nb));
		if (!nb)
			return;
		r->meta.build_ids = nb;
		b = &nb[r->meta.nr_build_ids];
		memset(b, 0, sizeof(*b));
		b->misc = h.misc & ~0x8000;
		memcpy(&b->pid, c->p + 8, 4);
		memcpy(b->id, c->p + 12, 20);
		b->size = (h.misc & 0x8000) ? SP_MIN(c->p[32], 20) : 20;
		namelen = h.size - 36;
		b->filename = strndup((const char *)c->p + 36, namelen);
		if (!b->filename)
			return;
		r->meta.nr_build_ids++;
		c->p += h.size;
	}
}

/* perf --header-only leaves the build ids to perf buildid-list; so does this. */

static int w_sample_time(const struct feat *f, struct sbuf *b, const struct pd_writer *w, const struct pd_meta *m)
{
	(void)f, (void)w;
	if (!m->last_sample_ns)
		return -ENOENT;
	put_u64(b, m->first_sample_ns);
	put_u64(b, m->last_sample_ns);
	return 0;
}

static void r_sample_time(const struct feat *f, struct fcur *c, struct pd_reader *r)
{
	(void)f;
	r->meta.first_sample_ns = f_u64(c);
	r->meta.last_sample_ns = f_u64(c);
	r->have_sample_time = !c->bad;
}

static void p_sample_time(const struct feat *f, const struct pd_reader *r, FILE *out)
{
	__u64 a = r->meta.first_sample_ns, b = r->meta.last_sample_ns;

	(void)f;
	if (!r->have_sample_time)
		return;
	/* perf's timestamp__scnprintf_usec: seconds.microseconds */
	fprintf(out, "# time of first sample : %llu.%06llu\n", (unsigned long long)(a / 1000000000),
		(unsigned long long)(a % 1000000000 / 1000));
	fprintf(out, "# time of last sample : %llu.%06llu\n", (unsigned long long)(b / 1000000000),
		(unsigned long long)(b % 1000000000 / 1000));
	fprintf(out, "# sample duration : %10.3f ms\n", (b - a) / 1e6);
}

static int w_clockid(const struct feat *f, struct sbuf *b, const struct pd_writer *w, const struct pd_meta *m)
{
	(void)f, (void)w;
	if (m->clockid < 0)
		return -ENOENT;
	put_u64(b, m->clockid_res_ns);
	return 0;
}

static void r_clockid(const struct feat *f, struct fcur *c, struct pd_reader *r)
{
	(void)f;
	r->meta.clockid_res_ns = f_u64(c);
}

static void p_clockid(const struct feat *f, const struct pd_reader *r, FILE *out)
{
	(void)f;
	/* As perf prints it: the resolution in ns times 1000. */
	fprintf(out, "# clockid frequency: %llu MHz\n", (unsigned long long)r->meta.clockid_res_ns * 1000);
}

/* Lets perf script convert the monotonic stamps to wall-clock time (-F tod). */
static int w_clock_data(const struct feat *f, struct sbuf *b, const struct pd_writer *w, const struct pd_meta *m)
{
	(void)f, (void)w;
	if (m->clockid < 0 || !m->clock_tod_ns)
		return -ENOENT;
	put_u32(b, 1); /* version */
	put_u32(b, m->clockid);
	put_u64(b, m->clock_tod_ns);
	put_u64(b, m->clock_ref_ns);
	return 0;
}

static void r_clock_data(const struct feat *f, struct fcur *c, struct pd_reader *r)
{
	(void)f;
	f_u32(c);
	r->meta.clockid = f_u32(c);
	r->meta.clock_tod_ns = f_u64(c);
	r->meta.clock_ref_ns = f_u64(c);
	if (c->bad)
		r->meta.clockid = -1;
}

static void p_clock_data(const struct feat *f, const struct pd_reader *r, FILE *out)
{
	static const char *const names[] = { [CLOCK_REALTIME] = "realtime", [CLOCK_MONOTONIC] = "monotonic",
					     [CLOCK_MONOTONIC_RAW] = "monotonic_raw", [CLOCK_BOOTTIME] = "boottime",
					     [CLOCK_TAI] = "tai" };
	const struct pd_meta *m = &r->meta;
	const char *name = m->clockid >= 0 && m->clockid < (int)ARRAY_SIZE(names) && names[m->clockid]
				   ? names[m->clockid] : "unknown clockid";
	time_t sec = m->clock_tod_ns / 1000000000;
	char date[64] = "";
	struct tm tm;

	(void)f;
	if (m->clockid < 0)
		return;
	if (localtime_r(&sec, &tm))
		strftime(date, sizeof(date), "%F %T", &tm);
	fprintf(out, "# clockid: %s (%d)\n", name, m->clockid);
	fprintf(out, "# reference time: %s.%06llu = %llu.%06llu (TOD) = %llu.%09llu (%s)\n", date,
		(unsigned long long)(m->clock_tod_ns % 1000000000 / 1000), (unsigned long long)sec,
		(unsigned long long)(m->clock_tod_ns % 1000000000 / 1000),
		(unsigned long long)(m->clock_ref_ns / 1000000000), (unsigned long long)(m->clock_ref_ns % 1000000000),
		name);
}

/* u32 rows, u32 0, then per row: u8 size, 3 pad, id[20], sha256[32]. */
static int w_digests(const struct feat *f, struct sbuf *b, const struct pd_writer *w, const struct pd_meta *m)
{
	(void)f, (void)w;
	if (!m->nr_digests && !m->digests_kept)
		return -ENOENT;
	put_u32(b, m->nr_digests);
	put_u32(b, 0);
	for (int i = 0; i < m->nr_digests; i++) {
		const struct pd_digest *d = &m->digests[i];

		sbuf_add(b, &d->size, 1);
		sbuf_zero(b, 3);
		sbuf_add(b, d->id, sizeof(d->id));
		sbuf_add(b, d->sha256, sizeof(d->sha256));
	}
	return 0;
}

static void r_digests(const struct feat *f, struct fcur *c, struct pd_reader *r)
{
	__u32 n = f_u32(c);

	(void)f;
	f_u32(c);
	/* Rows bounded by the section's size, not by the count it claims. */
	if (c->bad || n > (size_t)(c->end - c->p) / 56)
		return;
	r->meta.digests_kept = true;
	free(r->meta.digests);
	r->meta.digests = calloc(n ?: 1, sizeof(*r->meta.digests));
	if (!r->meta.digests)
		return;
	for (__u32 i = 0; i < n; i++, c->p += 56) {
		struct pd_digest *d = &r->meta.digests[i];

		d->size = SP_MIN(c->p[0], sizeof(d->id));
		memcpy(d->id, c->p + 4, sizeof(d->id));
		memcpy(d->sha256, c->p + 24, sizeof(d->sha256));
	}
	r->meta.nr_digests = n;
}

static void p_digests(const struct feat *f, const struct pd_reader *r, FILE *out)
{
	(void)f;
	fprintf(out, "# spanperf build-id cache entries: %d, each used only if its bytes have the SHA-256 kept here\n",
		r->meta.nr_digests);
}

/* u32 rows, u32 0, then per row: s32 pid, u32 length, the text padded to 8 bytes. */
static int w_jit_maps(const struct feat *f, struct sbuf *b, const struct pd_writer *w, const struct pd_meta *m)
{
	(void)f, (void)w;
	if (!m->nr_jit_maps)
		return -ENOENT;
	put_u32(b, m->nr_jit_maps);
	put_u32(b, 0);
	for (int i = 0; i < m->nr_jit_maps; i++) {
		const struct pd_jit_map *j = &m->jit_maps[i];

		put_u32(b, (__u32)j->pid);
		put_u32(b, (__u32)j->len);
		sbuf_add(b, j->text, j->len);
		sbuf_zero(b, (8 - j->len % 8) % 8);
	}
	return 0;
}

static void r_jit_maps(const struct feat *f, struct fcur *c, struct pd_reader *r)
{
	__u32 n = f_u32(c);

	(void)f;
	f_u32(c);
	if (c->bad || n > (size_t)(c->end - c->p) / 8)
		return;
	r->meta.jit_maps = calloc(n ?: 1, sizeof(*r->meta.jit_maps));
	for (__u32 i = 0; r->meta.jit_maps && i < n; i++) {
		struct pd_jit_map *j = &r->meta.jit_maps[r->meta.nr_jit_maps];
		__s32 pid = (__s32)f_u32(c);
		__u32 len = f_u32(c);
		size_t padded = ((size_t)len + 7) & ~(size_t)7;

		if (c->bad || padded > (size_t)(c->end - c->p))
			return;
		j->text = malloc(len + 1);
		if (!j->text)
			return;
		memcpy(j->text, c->p, len);
		j->text[len] = 0;
		j->len = len;
		j->pid = pid;
		r->meta.nr_jit_maps++;
		c->p += padded;
	}
}

static void p_jit_maps(const struct feat *f, const struct pd_reader *r, FILE *out)
{
	(void)f;
	fprintf(out, "# spanperf JIT perf maps kept from containers: %d\n", r->meta.nr_jit_maps);
}

/*
 * spanperf's SP_UNWIND: u32 nr, then nr times { u64 value, string key }.
 * Keyed by name so that a file of another version reads right.
 */
static int w_sp_unwind(const struct feat *f, struct sbuf *b, const struct pd_writer *w, const struct pd_meta *m)
{
	(void)f, (void)w;
	if (!m->nr_unwind)
		return -ENOENT;
	put_u32(b, m->nr_unwind);
	for (int i = 0; i < m->nr_unwind; i++) {
		put_u64(b, m->unwind[i].value);
		put_str(b, m->unwind[i].key);
	}
	return 0;
}

static void r_sp_unwind(const struct feat *f, struct fcur *c, struct pd_reader *r)
{
	__u32 nr = f_u32(c);
	struct pd_meta *m = &r->meta;

	(void)f;
	if (c->bad || nr > 1024)
		return;
	m->unwind = calloc(nr ? nr : 1, sizeof(*m->unwind));
	for (__u32 i = 0; m->unwind && i < nr && !c->bad; i++) {
		__u64 v = f_u64(c);
		char *key = f_str(c);

		if (!key)
			break;
		m->unwind[m->nr_unwind++] = (struct pd_count){ key, v };
	}
}

#define SP_EH_KEY_LABEL(id, key, label) { key, label },

static void p_sp_unwind(const struct feat *f, const struct pd_reader *r, FILE *out)
{
	static const struct { const char *key, *label; } names[] = { SP_EH_STAT_NAMES(SP_EH_KEY_LABEL)
								     SP_PY_STAT_NAMES(SP_EH_KEY_LABEL) };

	(void)f;
	fputs("# spanperf unwind (--call-graph ehframe), why user chains ended:\n", out);
	for (int i = 0; i < r->meta.nr_unwind; i++) {
		const char *label = r->meta.unwind[i].key;

		for (size_t j = 0; j < ARRAY_SIZE(names); j++)
			if (!strcmp(names[j].key, label)) {
				label = names[j].label;
				break;
			}
		fprintf(out, "#   %-58s %llu\n", label, (unsigned long long)r->meta.unwind[i].value);
	}
}

#define FEAT_STR(id, field, label) [id] = { w_str, r_str, p_str, offsetof(struct pd_meta, field), label }
#define FEAT(id, name) [id] = { w_##name, r_##name, p_##name, 0, NULL }

/* Indexed by feature id: the writer lays the sections out in this (bit) order. */
static const struct feat feats[PD_FEAT_LAST] = {
	[PD_FEAT_BUILD_ID] = { w_build_id, r_build_id, NULL, 0, NULL },
	FEAT_STR(PD_FEAT_HOSTNAME, hostname, "hostname"),
	FEAT_STR(PD_FEAT_OSRELEASE, osrelease, "os release"),
	FEAT_STR(PD_FEAT_VERSION, version, "perf version"),
	FEAT_STR(PD_FEAT_ARCH, arch, "arch"),
	FEAT(PD_FEAT_NRCPUS, nrcpus),
	FEAT_STR(PD_FEAT_CPUDESC, cpudesc, "cpudesc"),
	FEAT_STR(PD_FEAT_CPUID, cpuid, "cpuid"),
	FEAT(PD_FEAT_TOTAL_MEM, total_mem),
	FEAT(PD_FEAT_CMDLINE, cmdline),
	FEAT(PD_FEAT_EVENT_DESC, event_desc),
	FEAT(PD_FEAT_SAMPLE_TIME, sample_time),
	FEAT(PD_FEAT_CLOCKID, clockid),
	FEAT(PD_FEAT_CLOCK_DATA, clock_data),
	FEAT(PD_FEAT_SP_DIGESTS, digests),
	FEAT(PD_FEAT_SP_JIT_MAPS, jit_maps),
	FEAT(PD_FEAT_SP_UNWIND, sp_unwind),
};

static int write_features(struct pd_writer *w, const struct pd_meta *m, struct file_header *h)
{
	struct sbuf parts[ARRAY_SIZE(feats)] = {}, table = {};
	__u64 table_off = w->data_offset + w->data_size, off;
	size_t nr = 0;
	int err = 0;

	for (size_t i = 0; i < ARRAY_SIZE(feats); i++) {
		/* A feature whose writer fails is dropped; it does not abort the file. */
		if (!feats[i].write || feats[i].write(&feats[i], &parts[i], w, m) || parts[i].err || !parts[i].len) {
			sbuf_free(&parts[i]);
			continue;
		}
		h->features[i / 64] |= 1ull << (i % 64);
		nr++;
	}
	off = table_off + nr * sizeof(struct file_section);
	for (size_t i = 0; i < ARRAY_SIZE(feats); i++) {
		if (!parts[i].len)
			continue;
		put_u64(&table, off);
		put_u64(&table, parts[i].len);
		off += parts[i].len;
	}
	err = table.err ?: pwrite_all(w->out.fd, table.p, table.len, table_off);
	off = table_off + table.len;
	for (size_t i = 0; i < ARRAY_SIZE(feats); i++) {
		if (!err && parts[i].len)
			err = pwrite_all(w->out.fd, parts[i].p, parts[i].len, off);
		off += parts[i].len;
		sbuf_free(&parts[i]);
	}
	sbuf_free(&table);
	return err;
}

/* The section of each feature present, in bit order; features are optional, so a bad one is skipped. */
static void read_features(struct pd_reader *r)
{
	__u64 table = r->data_offset + r->data_size;
	int n = 0;

	for (int bit = 0; bit < PD_FEAT_MAX; bit++) {
		struct file_section s;
		struct fcur c;

		if (!pd_reader__has_feature(r, bit))
			continue;
		if (!in_file(r, table + n * 16ull, 16))
			return; /* a cut table loses the features only */
		memcpy(&s, r->map + table + n * 16ull, sizeof(s));
		n++;
		if (bit >= (int)ARRAY_SIZE(feats) || !feats[bit].read || !in_file(r, s.offset, s.size))
			continue;
		c = (struct fcur){ r->map + s.offset, r->map + s.offset + s.size, false };
		feats[bit].read(&feats[bit], &c, r);
	}
}

void pd_reader__print_features(const struct pd_reader *r, FILE *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(feats); i++)
		if (feats[i].print && pd_reader__has_feature(r, i))
			feats[i].print(&feats[i], r, out);
}

int pd_writer__finish(struct pd_writer *w, const struct pd_meta *meta)
{
	struct file_header h = { .magic = PD_MAGIC, .size = PD_HEADER_SIZE };
	struct pd_meta none = { .clockid = -1 };
	int err;

	if (!w->file)
		return -EINVAL;
	if (w->ferr)
		return w->ferr;
	if (!meta)
		meta = &none;
	err = flush(w);
	if (err)
		return err;
	h.attr_size = PD_ATTR_SIZE + sizeof(struct file_section);
	h.attrs.offset = w->data_offset - w->nr_attrs * h.attr_size;
	h.attrs.size = w->nr_attrs * h.attr_size;
	h.data.offset = w->data_offset;
	h.data.size = w->data_size;
	err = write_features(w, meta, &h);
	if (!err)
		err = pwrite_all(w->out.fd, &h, sizeof(h), 0);
	/* Keep the previous file as FILE.old, as perf does. */
	return err ?: atomic_file__commit(&w->out);
}

void pd_writer__free(struct pd_writer *w)
{
	if (!w)
		return;
	if (w->file)
		atomic_file__release(&w->out);
	for (int i = 0; i < w->nr_attrs; i++) {
		free(w->attrs[i].name);
		free(w->attrs[i].ids);
	}
	free(w->attrs);
	free(w->buf);
	free(w);
}

/* ==== reader ==== */

static int rerr(struct pd_reader *r, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int rerr(struct pd_reader *r, int err, const char *fmt, ...)
{
	char msg[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(r->err, sizeof(r->err), "%s: %s", r->path, msg);
	return err;
}

static int cmp_idx(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return (x > y) - (x < y);
}

static int index_ids(struct pd_reader *r);

static int parse_attrs(struct pd_reader *r, const struct file_header *h)
{
	__u64 nr, id_bytes = 0;

	if (h->attr_size < 64 + 16 || h->attr_size > 4096 + 16)
		return rerr(r, -EINVAL, "attr size %llu is not that of a perf_event_attr", (unsigned long long)h->attr_size);
	if (h->attrs.size % h->attr_size || !in_file(r, h->attrs.offset, h->attrs.size))
		return rerr(r, -EINVAL, "the attr section lies outside the file");
	nr = h->attrs.size / h->attr_size;
	if (!nr)
		return rerr(r, -EINVAL, "the file has no events (attr section is empty)");
	if (nr > PD_MAX_ATTRS)
		return rerr(r, -EINVAL, "the file claims %llu events, more than %d", (unsigned long long)nr, PD_MAX_ATTRS);
	r->attrs = calloc(nr, sizeof(*r->attrs));
	if (!r->attrs)
		return rerr(r, -ENOMEM, "out of memory");
	r->nr_attrs = nr;
	for (__u64 i = 0; i < nr; i++) {
		const unsigned char *p = r->map + h->attrs.offset + i * h->attr_size;
		size_t asz = h->attr_size - 16;
		struct pd_attr *a = &r->attrs[i];
		struct file_section ids;
		__u32 declared;

		memcpy(&a->attr, p, SP_MIN(asz, sizeof(a->attr)));
		memcpy(&declared, p + 4, 4);
		if (declared != asz)
			return rerr(r, -EINVAL, "event %llu has attr.size %u but the header says %zu",
				    (unsigned long long)i, declared, asz);
		memcpy(&ids, p + asz, sizeof(ids));
		if (ids.size % 8 || !in_file(r, ids.offset, ids.size) || ids.size / 8 > (1u << 24))
			return rerr(r, -EINVAL, "event %llu has its ids outside the file", (unsigned long long)i);
		/*
		 * perf gives each event ids of its own: sections that share bytes
		 * (0.7 MB of file made 2.6 GB of index) hold more ids than the file.
		 */
		id_bytes += ids.size;
		if (id_bytes > r->size)
			return rerr(r, -EINVAL, "the events' id sections overlap: %llu bytes of ids in a file of %zu",
				    (unsigned long long)id_bytes, r->size);
		a->nr_ids = ids.size / 8;
		a->ids = malloc(ids.size ? ids.size : 8);
		if (!a->ids)
			return rerr(r, -ENOMEM, "out of memory");
		memcpy(a->ids, r->map + ids.offset, ids.size);
	}
	return index_ids(r);
}

/* Every attr's sample_type known, and the id -> attr index for bsearch. */
static int index_ids(struct pd_reader *r)
{
	r->nr_idx = 0;
	for (int i = 0; i < r->nr_attrs; i++) {
		const struct pd_attr *a = &r->attrs[i];

		r->nr_idx += a->nr_ids;
		if (a->attr.sample_type & ~(__u64)PD_SAMPLE_KNOWN)
			return rerr(r, -EINVAL, "event %d has unknown sample_type bits %#llx", i,
				    (unsigned long long)(a->attr.sample_type & ~(__u64)PD_SAMPLE_KNOWN));
	}
	r->idx = malloc((r->nr_idx ? r->nr_idx : 1) * sizeof(*r->idx));
	if (!r->idx)
		return rerr(r, -ENOMEM, "out of memory");
	r->nr_idx = 0;
	for (int i = 0; i < r->nr_attrs; i++)
		for (__u32 j = 0; j < r->attrs[i].nr_ids; j++) {
			r->idx[r->nr_idx].id = r->attrs[i].ids[j];
			r->idx[r->nr_idx++].attr = i;
		}
	sort_n(r->idx, r->nr_idx, sizeof(*r->idx), cmp_idx);
	return 0;
}

/* The file as given: a regular, non-empty file as long as a header at least, the caller's or root's (or --force). */
static int check_file(struct pd_reader *r, int fd, const struct pd_reader_opts *o, struct stat *st)
{
	if (fstat(fd, st))
		return rerr(r, -errno, "cannot stat: %s", strerror(errno));
	if (S_ISDIR(st->st_mode))
		return rerr(r, -EISDIR, "is a directory, not a perf.data file");
	if (!S_ISREG(st->st_mode))
		return rerr(r, -EINVAL, "is not a regular file");
	if (st->st_size == 0)
		return rerr(r, -EINVAL, "is empty");
	if ((size_t)st->st_size < sizeof(struct file_header))
		return rerr(r, -EINVAL, "is too short (%lld bytes) to be a perf.data file", (long long)st->st_size);
	/* perf's rule (perf report -f overrides it): a profile another user made is theirs to craft. */
	if (st->st_uid != geteuid() && st->st_uid != 0 && !(o && o->any_owner))
		return rerr(r, -EPERM, "is owned by uid %u, not by you or root (--force reads it)", (unsigned)st->st_uid);
	return 0;
}

/*
 * The file's bytes in r->map: mapped only if no one else can truncate it
 * under us (a SIGBUS mid-report); a file others may write is read into
 * memory.
 */
static int load_bytes(struct pd_reader *r, int fd, const struct stat *st)
{
	unsigned char *copy;
	size_t got = 0;

	r->size = st->st_size;
	if ((st->st_uid == geteuid() || st->st_uid == 0) && !(st->st_mode & 022)) {
		r->map = mmap(NULL, r->size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (r->map != MAP_FAILED)
			return 0;
		r->map = NULL;
		return rerr(r, -errno, "cannot map: %s", strerror(errno));
	}
	copy = malloc(r->size);
	if (!copy)
		return rerr(r, -ENOMEM, "out of memory for a copy of %zu bytes", r->size);
	while (got < r->size) {
		ssize_t n = pread(fd, copy + got, r->size - got, got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(copy);
			return rerr(r, n < 0 ? -errno : -EIO, "shrank while read");
		}
		got += n;
	}
	r->map = copy;
	r->map_copied = true;
	return 0;
}

/* The header in *h, and the data section it names, inside the file and 8-byte aligned. */
static int read_header(struct pd_reader *r, struct file_header *h)
{
	memcpy(h, r->map, sizeof(*h));
	if (h->magic != PD_MAGIC)
		return rerr(r, -EINVAL, "is not a perf.data file (no PERFILE2 magic)");
	if (h->size != PD_HEADER_SIZE)
		return rerr(r, -EINVAL, h->size == 16 ? "is a pipe-mode perf.data, which is not supported"
						      : "has a header of unknown size");
	if (!h->data.size && !h->data.offset)
		return rerr(r, -EINVAL, "is incomplete: its header was never written (recording interrupted?)");
	if (!in_file(r, h->data.offset, h->data.size))
		return rerr(r, -EINVAL, "has a data section (offset %llu, size %llu) past its end (%zu bytes); truncated?",
			    (unsigned long long)h->data.offset, (unsigned long long)h->data.size, r->size);
	r->data_offset = h->data.offset;
	r->data_size = h->data.size;
	r->data = r->map + r->data_offset;
	/*
	 * Records are read in place through struct pointers, which need
	 * 8-byte alignment; perf writes it, but nothing forces a file to.
	 */
	if (r->data_offset % 8) {
		r->data_copy = malloc(r->data_size ? r->data_size : 1);
		if (!r->data_copy)
			return -ENOMEM;
		memcpy(r->data_copy, r->data, r->data_size);
		r->data = r->data_copy;
	}
	memcpy(r->features, h->features, sizeof(r->features));
	return 0;
}

int pd_reader__open(struct pd_reader **out, const char *path, const struct pd_reader_opts *o, char *err,
		    size_t errlen)
{
	struct pd_reader *r;
	struct file_header h;
	struct stat st;
	int fd = -1, e;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->meta.clockid = -1;
	r->path = strdup(path);
	if (!r->path) {
		e = -ENOMEM;
		goto cleanup;
	}
	/* O_NONBLOCK: a FIFO given as input must fail, not block. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		e = rerr(r, -errno, "cannot open: %s", strerror(errno));
		goto cleanup;
	}
	e = check_file(r, fd, o, &st) ?: load_bytes(r, fd, &st) ?: read_header(r, &h) ?: parse_attrs(r, &h);
	if (e)
		goto cleanup;
	read_features(r);
	close(fd);
	*out = r;
	return 0;
cleanup:
	if (err && errlen)
		snprintf(err, errlen, "%s", r->err[0] ? r->err : strerror(-e));
	if (fd >= 0)
		close(fd);
	pd_reader__free(r);
	return e;
}

int pd_reader__open_mem(struct pd_reader **out, const struct pd_attr *attrs, int nr_attrs, const char *name,
			char *err, size_t errlen)
{
	struct pd_reader *r = calloc(1, sizeof(*r));
	int e = -ENOMEM;

	*out = NULL;
	if (!r)
		goto cleanup;
	r->meta.clockid = -1;
	r->in_memory = true;
	r->path = strdup(name);
	r->attrs = calloc(nr_attrs > 0 ? nr_attrs : 1, sizeof(*r->attrs));
	if (!r->path || !r->attrs)
		goto cleanup;
	if (nr_attrs <= 0 || nr_attrs > PD_MAX_ATTRS) {
		e = rerr(r, -EINVAL, "%d events: not from 1 to %d", nr_attrs, PD_MAX_ATTRS);
		goto cleanup;
	}
	for (int i = 0; i < nr_attrs; i++) {
		struct pd_attr *a = &r->attrs[i];

		a->attr = attrs[i].attr;
		a->name = attrs[i].name ? strdup(attrs[i].name) : NULL;
		a->ids = malloc((attrs[i].nr_ids ? attrs[i].nr_ids : 1) * sizeof(__u64));
		r->nr_attrs++;
		if ((attrs[i].name && !a->name) || !a->ids)
			goto cleanup;
		memcpy(a->ids, attrs[i].ids, attrs[i].nr_ids * sizeof(__u64));
		a->nr_ids = attrs[i].nr_ids;
	}
	e = index_ids(r);
	if (e)
		goto cleanup;
	*out = r;
	return 0;
cleanup:
	if (err && errlen)
		snprintf(err, errlen, "%s", r && r->err[0] ? r->err : strerror(-e));
	pd_reader__free(r);
	return e;
}

/*
 * What was released goes once it is as large as what is kept, so that each
 * byte moves about once; a buffer grown by a burst shrinks back.
 */
static void compact(struct pd_reader *r)
{
	size_t gone = r->released - r->base, kept = r->data_size - r->released;

	if (gone < kept || gone < 4096)
		return;
	memmove(r->buf, r->buf + gone, kept);
	r->base = r->released;
	if (r->cap > (1u << 20) && kept < r->cap / 8) {
		unsigned char *nb = realloc(r->buf, r->cap / 4);

		if (nb) {
			r->buf = nb;
			r->cap /= 4;
		}
	}
	r->data = r->buf;
}

int pd_reader__append(struct pd_reader *r, const void *p, size_t n)
{
	size_t len;

	if (!r->in_memory)
		return -EINVAL;
	len = r->data_size - r->base;
	if (len + n > r->cap) {
		size_t cap = r->cap ? r->cap : 65536;
		unsigned char *nb;

		while (cap < len + n)
			cap *= 2;
		nb = realloc(r->buf, cap);
		if (!nb)
			return -ENOMEM;
		r->buf = nb;
		r->cap = cap;
		r->data = nb;
	}
	memcpy(r->buf + len, p, n);
	r->data_size += n;
	return 0;
}

void pd_reader__release(struct pd_reader *r, __u64 pos)
{
	if (r->in_memory && pos > r->released) {
		r->released = SP_MIN(pos, r->data_size);
		compact(r);
	}
}

void pd_reader__evict(struct pd_reader *r, __u64 from, __u64 to)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), a, b;

	if (!r->map || r->map_copied || r->data_copy || r->in_memory || from >= to || from >= r->data_size)
		return;
	to = SP_MIN(to, r->data_size);
	/* Whole pages only: the one at each end holds records next to the range, which would fault right back. */
	a = ((uintptr_t)r->data + from + pg - 1) & ~(pg - 1);
	b = ((uintptr_t)r->data + to) & ~(pg - 1);
	if (a < b)
		madvise((void *)a, b - a, MADV_DONTNEED);
}

void pd_reader__free(struct pd_reader *r)
{
	if (!r)
		return;
	free(r->buf);
	if (r->map && r->map_copied)
		free((void *)r->map);
	else if (r->map)
		munmap((void *)r->map, r->size);
	free(r->data_copy);
	for (int i = 0; i < r->nr_attrs; i++) {
		free(r->attrs[i].name);
		free(r->attrs[i].ids);
	}
	free(r->attrs);
	free(r->idx);
	pd_meta_free(&r->meta);
	free(r->path);
	free(r);
}

const struct pd_attr *pd_reader__attr_by_id(const struct pd_reader *r, __u64 id)
{
	size_t lo = 0, hi = r->nr_idx; /* [lo, hi) */

	/* Single-event files from older tools carry no ids at all. */
	if (r->nr_attrs == 1 && r->nr_idx == 0)
		return &r->attrs[0];
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->idx[mid].id == id)
			return &r->attrs[r->idx[mid].attr];
		if (r->idx[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

bool pd_reader__has_feature(const struct pd_reader *r, int feat)
{
	return feat >= 0 && feat < PD_FEAT_MAX && (r->features[feat / 64] >> (feat % 64) & 1);
}

static bool has_identifier(const struct pd_reader *r)
{
	return r->attrs[0].attr.sample_type & PERF_SAMPLE_IDENTIFIER;
}

static int next(struct pd_reader *r, struct pd_iter *it, struct pd_event *ev, bool whole)
{
	const unsigned char *rec;
	struct perf_event_header h;
	size_t left;
	__u64 id = 0;

	memset(ev, 0, sizeof(*ev));
	if (it->pos >= r->data_size)
		return 0;
	if (it->pos < r->base)
		return rerr(r, -EINVAL, "record at offset %llu was read and let go", (unsigned long long)it->pos);
	rec = r->data + (it->pos - r->base); /* data holds the records from position base on */
	left = r->data_size - it->pos;
	/* In memory, a record not yet appended whole is to come, not cut short. */
	if (left < sizeof(h))
		return r->in_memory ? 0 : rerr(r, -EINVAL, "record at offset %llu is cut short",
						(unsigned long long)(r->data_offset + it->pos));
	memcpy(&h, rec, sizeof(h));
	if (r->in_memory && h.size > left && h.size >= sizeof(h) && h.size % 8 == 0)
		return 0;
	if (h.size < sizeof(h) || h.size > left || h.size % 8)
		return rerr(r, -EINVAL, "record at offset %llu has a bad size %u",
			    (unsigned long long)(r->data_offset + it->pos), h.size);
	ev->hdr = (const struct perf_event_header *)rec;
	ev->offset = r->data_offset + it->pos;
	it->pos += h.size;
	/* Records the kernel writes carry an id; user records (64 and up) do not. */
	if (h.type >= 64 || h.type == 0)
		return 1;
	if (h.type == PERF_RECORD_SAMPLE || r->attrs[0].attr.sample_id_all) {
		if (has_identifier(r)) {
			if (pd_record_id(ev->hdr, h.size, &id))
				return rerr(r, -EINVAL, "record at offset %llu is too short for its id",
					    (unsigned long long)ev->offset);
			ev->attr = pd_reader__attr_by_id(r, id);
			if (!ev->attr)
				return rerr(r, -EINVAL, "record at offset %llu has id %llu, which no event owns",
					    (unsigned long long)ev->offset, (unsigned long long)id);
		} else {
			ev->attr = &r->attrs[0];
		}
	}
	if (!ev->attr)
		return 1;
	if (h.type == PERF_RECORD_SAMPLE && !whole) {
		/* One that does not read reads as time 0 here, and fails its whole read. */
		if (pd_sample_time(&ev->attr->attr, ev->hdr, h.size, &ev->sample.time))
			ev->sample.time = 0;
	} else if (h.type == PERF_RECORD_SAMPLE) {
		if (pd_sample_parse(&ev->attr->attr, ev->hdr, h.size, &ev->sample))
			return rerr(r, -EINVAL, "sample at offset %llu does not match its event's sample_type",
				    (unsigned long long)ev->offset);
		if (ev->sample.callchain_nr > (h.size / 8))
			return rerr(r, -EINVAL, "sample at offset %llu has a call chain longer than itself",
				    (unsigned long long)ev->offset);
	} else if (pd_trailer_parse(&ev->attr->attr, ev->hdr, h.size, &ev->sample)) {
		return rerr(r, -EINVAL, "record at offset %llu is too short for its sample_id",
			    (unsigned long long)ev->offset);
	}
	return 1;
}

int pd_reader__next(struct pd_reader *r, struct pd_iter *it, struct pd_event *ev)
{
	return next(r, it, ev, true);
}

int pd_reader__next_time(struct pd_reader *r, struct pd_iter *it, struct pd_event *ev)
{
	return next(r, it, ev, false);
}
