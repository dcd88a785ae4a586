// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <linux/capability.h>
#include <sys/syscall.h>

#include "util.h"

int sp_verbose;
const char *sp_prog = "spanperf";
int sp_argc;
char **sp_argv;

static void vlog(const char *level, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: %s", sp_prog, level);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void pr_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("", fmt, ap);
	va_end(ap);
}

void pr_warn(const char *fmt, ...)
{
	va_list ap;

	if (sp_verbose < 0)
		return;
	va_start(ap, fmt);
	vlog("warning: ", fmt, ap);
	va_end(ap);
}

void pr_info(const char *fmt, ...)
{
	va_list ap;

	if (sp_verbose < 0)
		return;
	va_start(ap, fmt);
	vlog("", fmt, ap);
	va_end(ap);
}

void pr_debug(const char *fmt, ...)
{
	va_list ap;

	if (sp_verbose < 1)
		return;
	va_start(ap, fmt);
	vlog("", fmt, ap);
	va_end(ap);
}

int set_errorf(char *err, size_t len, int code, const char *fmt, ...)
{
	va_list ap;

	if (err && len) {
		va_start(ap, fmt);
		vsnprintf(err, len, fmt, ap);
		va_end(ap);
	}
	return code;
}

int parse_u64(const char *s, uint64_t *out, uint64_t min, uint64_t max)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (*end || end == s || errno)
		return -EINVAL;
	/* NaN fails both comparisons, so test for the good range. */
	if (!(v > 0 && v <= 365.0 * 86400))
		return -ERANGE;
	*out = v;
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

int int_list_parse(struct int_list *l, const char *s, bool ranges, int max)
{
	char *copy = NULL, *tok, *save = NULL;
	int err = 0, cap = 0, i, j;

	l->v = NULL;
	l->n = 0;
	if (!s || !*s)
		return -EINVAL;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t lo, hi;
		char *dash = ranges ? strchr(tok, '-') : NULL;

		if (dash)
			*dash = 0;
		err = parse_u64(tok, &lo, 0, max);
		if (!err)
			err = dash ? parse_u64(dash + 1, &hi, lo, max) : 0;
		if (err)
			goto cleanup;
		if (!dash)
			hi = lo;
		for (uint64_t x = lo; x <= hi; x++) {
			if (l->n == cap) {
				int *nv;

				cap = cap ? cap * 2 : 8;
				nv = realloc(l->v, cap * sizeof(*nv));
				if (!nv) {
					err = -ENOMEM;
					goto cleanup;
				}
				l->v = nv;
			}
			l->v[l->n++] = (int)x;
		}
	}
	if (!l->n) {
		err = -EINVAL;
		goto cleanup;
	}
	sort_n(l->v, l->n, sizeof(*l->v), cmp_int);
	for (i = 1, j = 1; i < l->n; i++)
		if (l->v[i] != l->v[j - 1])
			l->v[j++] = l->v[i];
	l->n = j;
cleanup:
	free(copy);
	if (err)
		int_list_free(l);
	return err;
}

bool int_list_has(const struct int_list *l, int x)
{
	return l->n && bsearch(&x, l->v, l->n, sizeof(int), cmp_int);
}

void int_list_free(struct int_list *l)
{
	if (!l)
		return;
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

uint64_t now_ns(int clockid)
{
	struct timespec ts;

	clock_gettime(clockid, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int sbuf_grow(struct sbuf *b, size_t n)
{
	size_t cap;
	char *p;

	if (b->err)
		return b->err;
	if (b->len + n <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + n)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p)
		return b->err = -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

int sbuf_add(struct sbuf *b, const void *p, size_t n)
{
	int err = sbuf_grow(b, n);

	if (err)
		return err;
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

int sbuf_zero(struct sbuf *b, size_t n)
{
	int err = sbuf_grow(b, n);

	if (err)
		return err;
	memset(b->p + b->len, 0, n);
	b->len += n;
	return 0;
}

int sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n, err;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return b->err = -EINVAL;
	err = sbuf_grow(b, n + 1);
	if (err)
		return err;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, n + 1, fmt, ap);
	va_end(ap);
	b->len += n;
	return 0;
}

/* Length of the valid UTF-8 sequence at s, or 0 if it is not one. */
static int utf8_len(const unsigned char *s)
{
	int n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;

	for (int i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

int sbuf_json_str(struct sbuf *b, const char *s)
{
	const unsigned char *c = (const unsigned char *)s;

	sbuf_add(b, "\"", 1);
	while (*c) {
		int n = *c >= 0x80 ? utf8_len(c) : 1;

		if (*c == '"' || *c == '\\')
			sbuf_printf(b, "\\%c", *c);
		else if (*c < 0x20 || *c == 0x7f)
			sbuf_printf(b, "\\u%04x", *c);
		else if (!n)
			sbuf_add(b, "\\ufffd", 6); /* names come from files: a stray byte must not break JSON */
		else
			sbuf_add(b, c, n);
		c += n ? n : 1;
	}
	return sbuf_add(b, "\"", 1);
}

void sbuf_free(struct sbuf *b)
{
	if (!b)
		return;
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
	b->err = 0;
}

int read_file_str(const char *path, char *buf, size_t size)
{
	int fd, err = 0;
	ssize_t n;

	if (!size)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0) {
		err = -errno;
		n = 0;
	}
	buf[n] = 0;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	close(fd);
	return err;
}

int read_file_all(const char *path, char **out, size_t *len)
{
	struct sbuf b = {};
	char tmp[65536];
	int fd, err = 0;
	ssize_t n;

	*out = NULL;
	*len = 0;
	fd = open_regular(path);
	if (fd < 0)
		return fd;
	while ((n = read(fd, tmp, sizeof(tmp))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto cleanup;
		}
		err = sbuf_add(&b, tmp, n);
		if (err)
			goto cleanup;
	}
	err = sbuf_zero(&b, 1); /* NUL-terminate text files for the caller */
	if (err)
		goto cleanup;
	*out = b.p;
	*len = b.len - 1;
	b.p = NULL;
cleanup:
	close(fd);
	sbuf_free(&b);
	return err;
}

int open_regular(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = write(fd, c, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		c += w;
		n -= w;
	}
	return 0;
}

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

bool have_bpf_privileges(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2] = {};
	uint64_t eff;

	if (geteuid() == 0)
		return true;
	if (syscall(SYS_capget, &hdr, data))
		return false;
	eff = data[0].effective | ((uint64_t)data[1].effective << 32);
	if (eff & (1ull << CAP_SYS_ADMIN))
		return true;
	return (eff & (1ull << CAP_BPF)) && (eff & (1ull << CAP_PERFMON));
}

static size_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static int u64_map_grow(struct u64_map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct u64_map n = { calloc(cap, sizeof(*m->slot)), calloc(cap, 1), cap, 0 };

	if (!n.slot || !n.used) {
		free(n.slot);
		free(n.used);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->used[i])
			*u64_map_get(&n, m->slot[i].key, true) = m->slot[i].val;
	free(m->slot);
	free(m->used);
	*m = n;
	return 0;
}

uint64_t *u64_map_get(struct u64_map *m, uint64_t key, bool insert)
{
	size_t i;

	if (insert && 2 * (m->n + 1) > m->cap && u64_map_grow(m))
		return NULL;
	if (!m->cap)
		return NULL;
	for (i = hash_u64(key) & (m->cap - 1); m->used[i]; i = (i + 1) & (m->cap - 1))
		if (m->slot[i].key == key)
			return &m->slot[i].val;
	if (!insert)
		return NULL;
	m->used[i] = 1;
	m->slot[i].key = key;
	m->slot[i].val = 0;
	m->n++;
	return &m->slot[i].val;
}

void u64_map_free(struct u64_map *m)
{
	if (!m)
		return;
	free(m->slot);
	free(m->used);
	memset(m, 0, sizeof(*m));
}

uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

uint64_t hash_mix(uint64_t h, uint64_t v)
{
	return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
}

long hindex_find(const struct hindex *m, uint64_t h, hindex_eq eq, const void *ctx)
{
	if (!m->cap)
		return -1;
	for (size_t i = hash_u64(h) & (m->cap - 1); m->slot[i]; i = (i + 1) & (m->cap - 1))
		if (m->hash[i] == h && eq(ctx, m->slot[i] - 1))
			return m->slot[i] - 1;
	return -1;
}

static int hindex_grow(struct hindex *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct hindex n = { calloc(cap, sizeof(*n.hash)), calloc(cap, sizeof(*n.slot)), cap, 0 };

	if (!n.hash || !n.slot) {
		hindex_free(&n);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->slot[i])
			hindex_add(&n, m->hash[i], m->slot[i] - 1);
	hindex_free(m);
	*m = n;
	return 0;
}

int hindex_add(struct hindex *m, uint64_t h, size_t idx)
{
	size_t i;

	if (idx >= UINT32_MAX)
		return -E2BIG;
	if (2 * (m->n + 1) > m->cap && hindex_grow(m))
		return -ENOMEM;
	for (i = hash_u64(h) & (m->cap - 1); m->slot[i]; i = (i + 1) & (m->cap - 1))
		;
	m->hash[i] = h;
	m->slot[i] = idx + 1;
	m->n++;
	return 0;
}

void hindex_free(struct hindex *m)
{
	if (!m)
		return;
	free(m->hash);
	free(m->slot);
	memset(m, 0, sizeof(*m));
}

static bool strpool_eq(const void *ctx, size_t idx)
{
	const void *const *c = ctx;

	return !strcmp(((const struct strpool *)c[0])->str[idx], c[1]);
}

const char *strpool_intern(struct strpool *p, const char *s, size_t *id)
{
	uint64_t h = hash_str(s);
	const void *ctx[2] = { p, s };
	long i = hindex_find(&p->idx, h, strpool_eq, ctx);

	if (i < 0) {
		if (p->n == p->cap) {
			size_t cap = p->cap ? p->cap * 2 : 64;
			char **n = realloc(p->str, cap * sizeof(*n));

			if (!n)
				return NULL;
			p->str = n;
			p->cap = cap;
		}
		p->str[p->n] = strdup(s);
		if (!p->str[p->n] || hindex_add(&p->idx, h, p->n)) {
			free(p->str[p->n]);
			return NULL;
		}
		i = p->n++;
	}
	if (id)
		*id = i;
	return p->str[i];
}

void strpool_free(struct strpool *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		free(p->str[i]);
	free(p->str);
	hindex_free(&p->idx);
	memset(p, 0, sizeof(*p));
}

int array_reserve(void **p, size_t *cap, size_t n, size_t elem)
{
	size_t c = *cap ? *cap * 2 : 256;
	void *np;

	if (n < *cap)
		return 0;
	if (c <= n)
		c = n + 1;
	np = realloc(*p, c * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = c;
	return 0;
}

int mkdir_parents(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0700) && errno != EEXIST) {
			*p = '/';
			return -errno;
		}
		*p = '/';
	}
	return 0;
}
