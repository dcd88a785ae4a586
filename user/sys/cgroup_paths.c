// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <fts.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <linux/types.h>

#include "cgroup_paths.h"

const char *cgroup2_root(void)
{
	static const char *const roots[] = { "/sys/fs/cgroup/unified", "/sys/fs/cgroup" };
	struct statfs st;

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		if (!statfs(roots[i], &st) && st.f_type == CGROUP2_SUPER_MAGIC)
			return roots[i];
	return NULL;
}

void cgroup_paths__init(struct cgroup_paths *c, const char *root, size_t max)
{
	memset(c, 0, sizeof(*c));
	c->root = root;
	c->max = max;
}

/* A cgroup's id is its kernfs inode, which name_to_handle_at gives as an 8-byte handle. */
static void note(struct cgroup_paths *c, const char *path, const char *rel)
{
	struct {
		struct file_handle fh;
		__u64 id;
	} h = { .fh.handle_bytes = sizeof(__u64) };
	uint64_t *slot;
	size_t id;
	int mnt;

	if (name_to_handle_at(AT_FDCWD, path, &h.fh, &mnt, 0) || h.fh.handle_bytes != sizeof(__u64))
		return;
	slot = u64_map_get(&c->by_id, h.id, true);
	if (slot && !*slot && strpool_intern(&c->names, *rel ? rel : "/", &id))
		*slot = id + 1;
}

int cgroup_paths__walk(struct cgroup_paths *c)
{
	const char *root = c->root ? c->root : cgroup2_root();
	char *paths[2] = { (char *)root, NULL };
	size_t root_len;
	dev_t dev = 0;
	FTSENT *e;
	FTS *fts;

	if (!root)
		return -ENOENT;
	root_len = strlen(root);
	/* Physical: a cgroup file system has no links, and a walk must not follow any. */
	fts = fts_open(paths, FTS_PHYSICAL | FTS_NOCHDIR | FTS_XDEV, NULL);
	if (!fts)
		return -errno;
	while ((e = fts_read(fts)) && c->names.n < c->max) {
		if (e->fts_info != FTS_D)
			continue;
		/* FTS_XDEV still shows a mount point before it declines to enter: it is not ours either. */
		if (e->fts_level == 0) {
			dev = e->fts_statp->st_dev;
		} else if (e->fts_statp->st_dev != dev) {
			fts_set(fts, e, FTS_SKIP);
			continue;
		}
		note(c, e->fts_path, e->fts_path + root_len);
	}
	fts_close(fts);
	return 0;
}

const char *cgroup_paths__get(struct cgroup_paths *c, uint64_t id)
{
	uint64_t *slot = u64_map_get(&c->by_id, id, false);

	return slot && *slot ? c->names.str[*slot - 1] : NULL;
}

bool cgroup_paths__full(const struct cgroup_paths *c)
{
	return c->names.n >= c->max;
}

void cgroup_paths__clear(struct cgroup_paths *c)
{
	if (!c)
		return;
	u64_map_free(&c->by_id);
	strpool_free(&c->names);
}
