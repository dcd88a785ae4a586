// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "atomic_file.h"
#include "fileio.h"
#include "kallsyms.h"

struct range {
	__u64 start, end;
};

static int find_text(void *ctx, __u64 addr, char type, const char *name, size_t n);

int kallsyms_read_proc(char **text, size_t *len)
{
	return read_file_all("/proc/kallsyms", text, len);
}

/*
 * A copy is only good for the layout it was read in.  KASLR moves the kernel
 * at every boot without changing its build id, so the key holds _text too;
 * and the modules loaded when it was read are kept beside it, so that record
 * can tell when they changed and read the kernel's list anew.
 */
static int cache_path(const char *build_id, __u64 text, const char *suffix, char *out, size_t len)
{
	char dir[PATH_MAX];
	int n;

	if (!build_id || !*build_id || strchr(build_id, '/') || !text)
		return -EINVAL;
	n = cache_home(dir, sizeof(dir));
	if (n)
		return n;
	n = snprintf(out, len, "%s/spanperf/kallsyms/%s-%llx%s", dir, build_id, (unsigned long long)text, suffix);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int kallsyms_read_cache(const char *build_id, __u64 text_addr, char **text, size_t *len)
{
	char path[PATH_MAX];
	int e = cache_path(build_id, text_addr, "", path, sizeof(path));

	*text = NULL;
	*len = 0;
	return e ? e : read_file_all(path, text, len);
}

int kallsyms_open_cache(const char *build_id, __u64 text_addr)
{
	char path[PATH_MAX];
	int e = cache_path(build_id, text_addr, "", path, sizeof(path));

	return e ? e : open_regular(path);
}

static int store(const char *path, const char *text, size_t len);

/*
 * _text and _etext of the copy, kept beside it ("START END", hex): finding
 * them in the copy faulted in and searched half its 5 MB at every start
 * (1.2% of record -a -g -d 0.2's CPU).  Written from the copy, before the
 * modules list that vouches for both (kallsyms_store_cache), or after a
 * search of a copy kept without it.
 */
static int read_range(const char *build_id, __u64 text_addr, __u64 *start, __u64 *end)
{
	char path[PATH_MAX], buf[64];
	unsigned long long s, e;
	int n = cache_path(build_id, text_addr, ".text", path, sizeof(path));

	if (n || read_file_str(path, buf, sizeof(buf)) || sscanf(buf, "%llx %llx", &s, &e) != 2 ||
	    s != text_addr || e <= s)
		return -ENOENT;
	*start = s;
	*end = e;
	return 0;
}

static void store_range(const char *build_id, __u64 text_addr, __u64 start, __u64 end)
{
	char path[PATH_MAX], buf[64];
	int n = snprintf(buf, sizeof(buf), "%llx %llx\n", (unsigned long long)start, (unsigned long long)end);

	if (!cache_path(build_id, text_addr, ".text", path, sizeof(path)))
		store(path, buf, n);
}

int kallsyms_cache_text_range(const char *build_id, __u64 text_addr, __u64 *start, __u64 *end)
{
	int fd, e;
	struct stat st;
	void *p;

	*start = *end = 0;
	if (!read_range(build_id, text_addr, start, end))
		return 0;
	fd = kallsyms_open_cache(build_id, text_addr);
	if (fd < 0)
		return fd;
	/* Mapped, not read into the heap: two lines of its 5 MB are wanted. */
	if (fstat(fd, &st) || !st.st_size) {
		e = -ENOENT;
		goto cleanup;
	}
	p = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		e = -errno;
		goto cleanup;
	}
	e = kallsyms_text_range(p, st.st_size, start, end);
	munmap(p, st.st_size);
	if (!e && *start == text_addr)
		store_range(build_id, text_addr, *start, *end);
cleanup:
	close(fd);
	return e;
}

/* An atomic_file: a reader never sees half a copy. */
static int store(const char *path, const char *text, size_t len)
{
	struct atomic_file af;
	/* Kernel addresses are not for everyone: the copy is the owner's only. */
	int e = atomic_file__open(&af, path, 0600, false);

	if (e)
		return e;
	e = write_all(af.fd, text, len) ?: atomic_file__commit(&af);
	atomic_file__release(&af);
	return e;
}

int kallsyms_store_cache(const char *build_id, __u64 text_addr, const char *text, size_t len,
			 const char *modules, size_t modules_len)
{
	char path[PATH_MAX], mpath[PATH_MAX];
	int e = cache_path(build_id, text_addr, "", path, sizeof(path));

	if (!e)
		e = cache_path(build_id, text_addr, ".modules", mpath, sizeof(mpath));
	if (!e)
		e = mkdir_parents(path);
	/* The copy, its range, then its modules: a list never vouches for a copy older than itself. */
	if (!e)
		e = store(path, text, len);
	if (!e) {
		__u64 start, end;
		char rpath[PATH_MAX];

		/* A range that cannot be kept is not left from an older copy either. */
		if (!kallsyms_text_range(text, len, &start, &end) && start == text_addr)
			store_range(build_id, text_addr, start, end);
		else if (!cache_path(build_id, text_addr, ".text", rpath, sizeof(rpath)))
			unlink(rpath);
	}
	if (!e)
		e = store(mpath, modules ? modules : "", modules ? modules_len : 0);
	return e;
}

bool kallsyms_cache_fresh(const char *build_id, __u64 text_addr, const char *modules, size_t modules_len)
{
	char path[PATH_MAX], *old;
	size_t len;
	bool fresh;

	if (cache_path(build_id, text_addr, ".modules", path, sizeof(path)) ||
	    read_file_all(path, &old, &len))
		return false;
	fresh = len == modules_len && (!len || !memcmp(old, modules, len));
	free(old);
	return fresh;
}

int kallsyms_text_start(__u64 *start)
{
	char buf[16384];
	size_t used = 0;
	ssize_t n;
	int fd, e = -ENOENT;

	*start = 0;
	fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* _text is among the first lines; the kernel formats only what is read. */
	while (used < sizeof(buf) - 1 && (n = read(fd, buf + used, sizeof(buf) - 1 - used)) > 0)
		used += n;
	close(fd);
	if (used) {
		char *last = memrchr(buf, '\n', used);
		struct range r = {};

		if (last) {
			kallsyms_parse(buf, last - buf + 1, find_text, &r);
			*start = r.start;
			e = r.start ? 0 : -ENOENT;
		}
	}
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

/* The line holding the name (" NAME\n", so not a module's), parsed into r; false if there is none. */
static bool find_line(const char *text, size_t len, const char *needle, size_t n, struct range *r)
{
	const char *at = memmem(text, len, needle, n), *line;

	if (!at)
		return false;
	line = memrchr(text, '\n', at - text);
	line = line ? line + 1 : text;
	kallsyms_parse(line, at + n - line, find_text, r);
	return true;
}

int kallsyms_text_range(const char *text, size_t len, __u64 *start, __u64 *end)
{
	struct range r = {};

	/*
	 * The two lines found by memmem, not every line parsed: the copy is 5 MB
	 * and record wants only these (the parse was 2-3% of its start).  The
	 * whole parse where either is not found so.
	 */
	if (!find_line(text, len, " _text\n", 7, &r) || !find_line(text, len, " _etext\n", 8, &r) || !r.start ||
	    !r.end)
		kallsyms_parse(text, len, find_text, &r);
	*start = r.start;
	*end = r.end;
	/* kptr_restrict hides addresses as zeros from the unprivileged. */
	return r.start && r.end > r.start ? 0 : -EPERM;
}
