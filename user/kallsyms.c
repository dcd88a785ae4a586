// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "kallsyms.h"
#include "util.h"

int kallsyms_read_proc(char **text, size_t *len)
{
	return read_file_all("/proc/kallsyms", text, len);
}

static int cache_path(const char *build_id, char *out, size_t len)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");

	if (!build_id || !*build_id || strchr(build_id, '/'))
		return -EINVAL;
	if (xdg && *xdg)
		snprintf(out, len, "%s/spanperf/kallsyms/%s", xdg, build_id);
	else if (home && *home)
		snprintf(out, len, "%s/.cache/spanperf/kallsyms/%s", home, build_id);
	else
		return -ENOENT;
	return 0;
}

int kallsyms_read_cache(const char *build_id, char **text, size_t *len)
{
	char path[PATH_MAX];
	int e = cache_path(build_id, path, sizeof(path));

	return e ? e : read_file_all(path, text, len);
}

static int mkdirs(char *path)
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

int kallsyms_store_cache(const char *build_id, const char *text, size_t len)
{
	char path[PATH_MAX], tmp[PATH_MAX + 16];
	int fd, e = cache_path(build_id, path, sizeof(path));

	if (e)
		return e;
	if (!access(path, F_OK))
		return 0;
	e = mkdirs(path);
	if (e)
		return e;
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
	/* Kernel addresses are not for everyone: the copy is the owner's only. */
	fd = mkstemp(tmp);
	if (fd < 0)
		return -errno;
	e = write_all(fd, text, len);
	if (close(fd) && !e)
		e = -errno;
	if (!e && rename(tmp, path))
		e = -errno;
	if (e)
		unlink(tmp);
	return e;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int kallsyms_parse(const char *text, size_t len, kallsyms_fn fn, void *ctx)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p), *le = nl ? nl : end, *name;
		__u64 addr = 0;
		int digits = 0, h, r;
		char type;

		/* "ffffffff81000000 T _text\t[module]" */
		while (p < le && (h = hexval(*p)) >= 0 && digits < 16) {
			addr = addr << 4 | h;
			p++;
			digits++;
		}
		if (digits && p + 2 < le && p[0] == ' ' && p[2] == ' ') {
			type = p[1];
			name = p + 3;
			r = fn(ctx, addr, type, name, strcspn(name, "\t \n") < (size_t)(le - name)
							? strcspn(name, "\t \n")
							: (size_t)(le - name));
			if (r)
				return r;
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}

struct range {
	__u64 start, end;
};

static int find_text(void *ctx, __u64 addr, char type, const char *name, size_t n)
{
	struct range *r = ctx;

	(void)type;
	if (n == 5 && !memcmp(name, "_text", 5))
		r->start = addr;
	else if (n == 6 && !memcmp(name, "_etext", 6))
		r->end = addr;
	return r->start && r->end;
}

int kallsyms_text_range(const char *text, size_t len, __u64 *start, __u64 *end)
{
	struct range r = {};

	kallsyms_parse(text, len, find_text, &r);
	*start = r.start;
	*end = r.end;
	/* kptr_restrict hides addresses as zeros from the unprivileged. */
	return r.start && r.end > r.start ? 0 : -EPERM;
}
