// SPDX-License-Identifier: GPL-2.0
#include <stdbool.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "perf_buildid.h"

/* A path that stays under the cache directory once appended: absolute, no "." or ".." part. */
static bool plain_path(const char *path)
{
	if (path[0] != '/')
		return false;
	for (const char *p = path; *p; p++)
		if (p[0] == '/' && p[1] == '.' && (p[2] == '/' || !p[2] || (p[2] == '.' && (p[3] == '/' || !p[3]))))
			return false;
	return true;
}

int perf_buildid_link(const char *hex, const char *path, const char *copy)
{
	char home[PATH_MAX], elf[PATH_MAX], lnk[PATH_MAX], target[PATH_MAX], abs[PATH_MAX];
	int n, e;

	if (home_dir(home, sizeof(home)))
		return -ENOENT;
	if (!plain_path(path) || strlen(hex) < 3 || strchr(hex, '/'))
		return -EINVAL;
	n = snprintf(elf, sizeof(elf), "%s/.debug%s/%s/elf", home, path, hex);
	if (n < 0 || (size_t)n >= sizeof(elf))
		return -ENAMETOOLONG;
	n = snprintf(lnk, sizeof(lnk), "%s/.debug/.build-id/%.2s/%s", home, hex, hex + 2);
	if (n < 0 || (size_t)n >= sizeof(lnk))
		return -ENAMETOOLONG;
	/* perf's own relative link, so that the directory can move with HOME. */
	n = snprintf(target, sizeof(target), "../..%s/%s", path, hex);
	if (n < 0 || (size_t)n >= sizeof(target))
		return -ENAMETOOLONG;
	if (access(elf, R_OK)) {
		e = mkdir_parents(elf);
		if (e)
			return e;
		/* The same bytes twice for nothing: a hard link, else a symbolic one across file systems. */
		if (link(copy, elf) && errno != EEXIST) {
			if (errno != EXDEV && errno != EPERM)
				return -errno;
			if (!realpath(copy, abs))
				return -errno;
			if (symlink(abs, elf) && errno != EEXIST)
				return -errno;
		}
	}
	e = mkdir_parents(lnk);
	if (e)
		return e;
	if (symlink(target, lnk) && errno != EEXIST)
		return -errno;
	return 0;
}
