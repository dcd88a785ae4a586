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
#include "fileio.h"
#include "live_record.h"
#include "log.h"
#include "pprof_dir.h"
#include "profile.h"
#include "record.h"
#include "report_out.h"

/* A profile written, and the recording's file it is of. */
struct kept {
	char *data, *pprof;
};

struct pprof_dir {
	const char *dir;
	uint64_t max; /* --switch-max-files: profiles go with their files; 0 keeps all */
	struct kept *kept;
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

	live_window_drop(sess, &pd->cur, NULL);
}

/*
 * --switch-max-files: a profile goes when its recording's file goes, as
 * record deleted it (before this window's end), not by a count of its own:
 * one window with a file and no profile (or the other way round) would
 * leave a profile of a file long gone.
 */
static void keep(struct pprof_dir *pd, const char *data, const char *pprof)
{
	uint64_t n = 0;

	if (!pd->max)
		return;
	for (uint64_t i = 0; i < pd->nr; i++) {
		if (access(pd->kept[i].data, F_OK) && errno == ENOENT) {
			unlink(pd->kept[i].pprof);
			free(pd->kept[i].data);
			free(pd->kept[i].pprof);
		} else {
			pd->kept[n++] = pd->kept[i];
		}
	}
	pd->nr = n;
	if (pd->nr > pd->max) /* record could not delete its oldest files: this profile stays */
		return;
	pd->kept[pd->nr] = (struct kept){ strdup(data), strdup(pprof) };
	if (pd->kept[pd->nr].data && pd->kept[pd->nr].pprof)
		pd->nr++;
	else
		free(pd->kept[pd->nr].data), free(pd->kept[pd->nr].pprof);
}

static int write_pprof(const struct profile *p, const char *out)
{
	struct atomic_file af;
	FILE *f;
	int e = atomic_file__open(&af, out, 0600, false);

	f = e ? NULL : atomic_file__stdio(&af);
	e = e ?: f ? report_pprof(p, f) : -errno;
	/* report_pprof says -EIO of a failed fwrite: the stream knows it was ENOSPC. */
	e = e ? atomic_file__error(&af, e) : atomic_file__commit(&af);
	atomic_file__release(&af);
	return e;
}

/* The window's file is complete: its profile, as DIR/FILE.pb.gz. */
static int window_end(void *arg, struct session *sess, const char *path, char *err, size_t errlen)
{
	struct pprof_dir *pd = arg;
	const char *base;
	char out[PATH_MAX], why[PATH_MAX + 64];
	int e;

	(void)sess, (void)err, (void)errlen;
	if (!path) { /* the window's file was dropped (a full disk): no profile of it either */
		window_drop(pd, sess);
		return 0;
	}
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	e = profile__end(pd->cur, true);
	if (e)
		pr_warn("no pprof for %s: %s", path, strerror(-e));
	else if ((size_t)snprintf(out, sizeof(out), "%s/%s.pb.gz", pd->dir, base) >= sizeof(out))
		e = -ENAMETOOLONG;
	else if ((e = write_pprof(pd->cur, out)))
		pr_warn("cannot write %s: %s", out, write_strerror(e, out, why, sizeof(why)));
	else
		keep(pd, path, out);
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
	pd.kept = pd.max ? calloc(pd.max + 1, sizeof(*pd.kept)) : NULL;
	if (pd.max && !pd.kept)
		return -ENOMEM;
	e = live_record(o, &lo, argc, argv, exit_code, err, sizeof(err));
	if (e && err[0])
		pr_err("%s", err);
	window_drop(&pd, NULL);
	for (uint64_t i = 0; i < pd.nr; i++) {
		free(pd.kept[i].data);
		free(pd.kept[i].pprof);
	}
	free(pd.kept);
	return e;
}
