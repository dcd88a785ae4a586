// SPDX-License-Identifier: GPL-2.0
/*
 * --pprof-dir: each window of the recording (one --switch-output file) is a
 * profile of the live session, written as a gzipped pprof beside the
 * others for pprof -http or an ingester watching the folder.  A profile
 * that cannot be made is said and skipped: the recording goes on.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "atomic_file.h"
#include "live_record.h"
#include "log.h"
#include "pprof_dir.h"
#include "profile.h"
#include "record.h"
#include "report_out.h"

struct pprof_dir {
	const char *dir;
	uint64_t max; /* --switch-max-files: the profiles kept, 0 all */
	char **kept;  /* the newest, oldest first */
	uint64_t nr;
	struct profile *cur; /* the window's */
};

int pprof_dir_check(const char *dir)
{
	struct stat st;

	if (stat(dir, &st) || !S_ISDIR(st.st_mode) || access(dir, W_OK | X_OK)) {
		pr_err("--pprof-dir '%s' is not a writable directory", dir);
		return -EINVAL;
	}
	return 0;
}

static int window_begin(void *arg, struct session *sess, char *err, size_t errlen)
{
	struct pprof_dir *pd = arg;
	struct profile_opts po = {};
	int e = profile__new(&pd->cur, sess, &po);

	if (e)
		set_errorf(err, errlen, e, "no pprof profiles from the recording: %s", strerror(-e));
	return e;
}

static void window_drop(void *arg, struct session *sess)
{
	struct pprof_dir *pd = arg;

	if (sess && pd->cur)
		profile__end(pd->cur, false);
	profile__free(pd->cur);
	pd->cur = NULL;
}

/* As record's --switch-max-files: the newest N profiles kept, the oldest deleted. */
static void keep(struct pprof_dir *pd, const char *path)
{
	if (!pd->max)
		return;
	if (pd->nr == pd->max) {
		unlink(pd->kept[0]);
		free(pd->kept[0]);
		memmove(pd->kept, pd->kept + 1, (pd->nr - 1) * sizeof(*pd->kept));
		pd->nr--;
	}
	pd->kept[pd->nr] = strdup(path);
	if (pd->kept[pd->nr])
		pd->nr++;
}

static int write_pprof(const struct profile *p, const char *out)
{
	struct atomic_file af;
	FILE *f;
	int e = atomic_file__open(&af, out, 0600, false);

	f = e ? NULL : atomic_file__stdio(&af);
	e = e ?: f ? report_pprof(p, f) : -errno;
	e = e ?: atomic_file__commit(&af);
	atomic_file__release(&af);
	return e;
}

/* The window's file is complete: its profile, as DIR/FILE.pb.gz. */
static int window_end(void *arg, struct session *sess, const char *path, char *err, size_t errlen)
{
	struct pprof_dir *pd = arg;
	const char *base = strrchr(path, '/');
	char out[PATH_MAX];
	int e = profile__end(pd->cur, true);

	(void)sess, (void)err, (void)errlen;
	base = base ? base + 1 : path;
	if (e)
		pr_warn("no pprof for %s: %s", path, strerror(-e));
	else if ((size_t)snprintf(out, sizeof(out), "%s/%s.pb.gz", pd->dir, base) >= sizeof(out))
		e = -ENAMETOOLONG;
	else if ((e = write_pprof(pd->cur, out)))
		pr_warn("cannot write %s: %s", out, strerror(-e));
	else
		keep(pd, out);
	window_drop(pd, NULL); /* ended above, finished or not */
	return 0;
}

int pprof_dir_record(struct record_opts *o, int argc, char **argv, int *exit_code)
{
	static const struct live_window_ops ops = { .begin = window_begin, .end = window_end, .drop = window_drop };
	struct pprof_dir pd = { .dir = o->pprof_dir, .max = o->switch_max_files };
	struct live_opts lo = { .ops = &ops, .arg = &pd, .wake_fd = -1, .file_first = true,
				.keep_tables = LIVE_KEPT_TABLES, .keep_syms = LIVE_KEPT_SYMS };
	char err[512];
	int e;

	if (pprof_dir_check(o->pprof_dir))
		return -EINVAL;
	pd.kept = pd.max ? calloc(pd.max, sizeof(*pd.kept)) : NULL;
	if (pd.max && !pd.kept)
		return -ENOMEM;
	e = live_record(o, &lo, argc, argv, exit_code, err, sizeof(err));
	if (e && err[0])
		pr_err("%s", err);
	window_drop(&pd, NULL);
	for (uint64_t i = 0; i < pd.nr; i++)
		free(pd.kept[i]);
	free(pd.kept);
	return e;
}
