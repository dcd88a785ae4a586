// SPDX-License-Identifier: GPL-2.0
/* The agent's bounded spool of windows not yet sent (ch_spool.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "ch_spool.h"
#include "fileio.h"
#include "log.h"
#include "util.h"

#define SPOOL_MAGIC "SPANPERF-CH-WINDOW-1\n"

struct spooled {
	uint64_t seq, size;
};

struct ch_spool {
	int dfd;
	char *dir;
	uint64_t max, bytes, dropped, next_seq;
	struct spooled *f; /* oldest first */
	size_t nr, cap;
};

static void name_of(uint64_t seq, char *buf, size_t len)
{
	snprintf(buf, len, "%020" PRIu64 ".win", seq);
}

static int cmp_seq(const void *a, const void *b)
{
	const struct spooled *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int push(struct ch_spool *s, uint64_t seq, uint64_t size)
{
	if (s->nr == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		struct spooled *f = realloc(s->f, cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		s->f = f;
		s->cap = cap;
	}
	s->f[s->nr++] = (struct spooled){ seq, size };
	s->bytes += size;
	return 0;
}

/* The files a run before left, oldest first; stray temporaries removed. */
static int scan(struct ch_spool *s)
{
	DIR *d = opendir(s->dir);
	struct dirent *de;
	int e = 0;

	if (!d)
		return -errno;
	while (!e && (de = readdir(d))) {
		char want[32];
		uint64_t seq;
		struct stat st;

		if (!strncmp(de->d_name, ".tmp-", 5)) {
			unlinkat(s->dfd, de->d_name, 0);
			continue;
		}
		if (sscanf(de->d_name, "%20" SCNu64 ".win", &seq) != 1)
			continue;
		name_of(seq, want, sizeof(want));
		if (strcmp(want, de->d_name) || fstatat(s->dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		e = push(s, seq, st.st_size);
		if (seq >= s->next_seq)
			s->next_seq = seq + 1;
	}
	closedir(d);
	/* sort_n: an empty spool has no array yet, which qsort may not be given (UBSan, make check). */
	sort_n(s->f, s->nr, sizeof(*s->f), cmp_seq);
	return e;
}

int ch_spool__open(struct ch_spool **out, const char *dir, uint64_t max)
{
	struct ch_spool *s = calloc(1, sizeof(*s));
	int e;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->max = max;
	s->dir = strdup(dir);
	if (mkdir(dir, 0700) && errno != EEXIST) {
		e = -errno;
		pr_err("--spool '%s' cannot be made: %s", dir, strerror(-e));
		goto fail;
	}
	s->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (s->dfd < 0 || !s->dir) {
		e = s->dir ? -errno : -ENOMEM;
		pr_err("--spool '%s' is not a directory that can be opened: %s", dir, strerror(-e));
		goto fail;
	}
	e = scan(s);
	if (e) {
		pr_err("--spool '%s' cannot be read: %s", dir, strerror(-e));
		goto fail;
	}
	if (s->nr)
		pr_info("--spool '%s': %zu windows (%" PRIu64 " bytes) from before, sent first", dir, s->nr, s->bytes);
	*out = s;
	return 0;
fail:
	if (s->dfd > 0)
		close(s->dfd);
	free(s->dir);
	free(s);
	return e;
}

void ch_spool__free(struct ch_spool *s)
{
	if (!s)
		return;
	close(s->dfd);
	free(s->dir);
	free(s->f);
	free(s);
}

static void drop_oldest(struct ch_spool *s)
{
	ch_spool__pop(s);
	s->dropped++;
}

void ch_spool__pop(struct ch_spool *s)
{
	char name[32];

	if (!s->nr)
		return;
	name_of(s->f[0].seq, name, sizeof(name));
	unlinkat(s->dfd, name, 0);
	s->bytes -= s->f[0].size;
	memmove(s->f, s->f + 1, (s->nr - 1) * sizeof(*s->f));
	s->nr--;
}

/* A spooled file, whole, into *p (at most max bytes). */
static int read_at(int dfd, const char *name, char **p, size_t *n, uint64_t max)
{
	int fd = open_regular_at(dfd, name, true);
	struct stat st;
	ssize_t r = 0;
	size_t at = 0;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) || (uint64_t)st.st_size > max || !(*p = malloc(st.st_size + 1))) {
		close(fd);
		return -EFBIG;
	}
	while (at < (size_t)st.st_size && (r = read(fd, *p + at, st.st_size - at)) > 0)
		at += r;
	close(fd);
	*n = at;
	if (r < 0 || at != (size_t)st.st_size) {
		free(*p);
		*p = NULL;
		return -EIO;
	}
	return 0;
}

int ch_spool__put(struct ch_spool *s, const struct ch_window *w)
{
	uint64_t size = sizeof(SPOOL_MAGIC) - 1 + sizeof(w->token) + CH_NR_TABLES * sizeof(uint64_t);
	char tmp[48], name[32];
	int fd, e = 0;

	for (int i = 0; i < CH_NR_TABLES; i++)
		size += w->len[i];
	if (size > s->max) {
		s->dropped++;
		return 0;
	}
	while (s->nr && s->bytes + size > s->max)
		drop_oldest(s);
	snprintf(tmp, sizeof(tmp), ".tmp-%" PRIu64, s->next_seq);
	fd = openat(s->dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	e = write_all(fd, SPOOL_MAGIC, sizeof(SPOOL_MAGIC) - 1) ?: write_all(fd, w->token, sizeof(w->token));
	for (int i = 0; !e && i < CH_NR_TABLES; i++) {
		uint64_t n = w->len[i];

		e = write_all(fd, &n, sizeof(n)) ?: write_all(fd, w->body[i], w->len[i]);
	}
	if (close(fd) && !e)
		e = -errno;
	name_of(s->next_seq, name, sizeof(name));
	if (!e && renameat(s->dfd, tmp, s->dfd, name))
		e = -errno;
	if (e) {
		unlinkat(s->dfd, tmp, 0);
		return e;
	}
	return push(s, s->next_seq++, size);
}

int ch_spool__oldest(struct ch_spool *s, struct ch_window *w, void **buf)
{
	char name[32];
	size_t n = 0, at;
	char *p = NULL;
	int e;

	*buf = NULL;
	if (!s->nr)
		return -ENOENT;
	name_of(s->f[0].seq, name, sizeof(name));
	e = read_at(s->dfd, name, &p, &n, s->max + 1);
	at = sizeof(SPOOL_MAGIC) - 1;
	if (!e && (n < at + sizeof(w->token) || memcmp(p, SPOOL_MAGIC, at)))
		e = -EBADMSG;
	if (!e) {
		memcpy(w->token, p + at, sizeof(w->token));
		w->token[sizeof(w->token) - 1] = 0;
		at += sizeof(w->token);
	}
	for (int i = 0; !e && i < CH_NR_TABLES; i++) {
		uint64_t len;

		if (n - at < sizeof(len)) {
			e = -EBADMSG;
			break;
		}
		memcpy(&len, p + at, sizeof(len));
		at += sizeof(len);
		if (len > n - at) {
			e = -EBADMSG;
			break;
		}
		w->body[i] = p + at;
		w->len[i] = len;
		at += len;
	}
	if (e) {
		pr_warn("spooled window %s cannot be read (%s): dropped", name, strerror(-e));
		free(p);
		drop_oldest(s);
		return e;
	}
	*buf = p;
	return 0;
}

uint64_t ch_spool__nr(const struct ch_spool *s) { return s ? s->nr : 0; }
uint64_t ch_spool__bytes(const struct ch_spool *s) { return s ? s->bytes : 0; }
uint64_t ch_spool__dropped(const struct ch_spool *s) { return s ? s->dropped : 0; }
