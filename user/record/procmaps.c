// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "procmaps.h"

/* "start-end perms offset maj:min inode   path" */
int procmaps_parse_line(const char *line, struct procmap *m)
{
	unsigned long long start, end, off, ino;
	unsigned int maj, min;
	char perms[8];
	int n = 0;
	const char *p;
	size_t len;

	memset(m, 0, sizeof(*m));
	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu%n", &start, &end, perms, &off, &maj, &min,
		   &ino, &n) != 7 || strlen(perms) != 4 || end <= start)
		return -EINVAL;
	m->start = start;
	m->end = end;
	m->pgoff = off;
	m->maj = maj;
	m->min = min;
	m->ino = ino;
	m->prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
		  (perms[2] == 'x' ? PROT_EXEC : 0);
	m->flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
	p = line + n;
	while (*p == ' ' || *p == '\t')
		p++;
	len = strcspn(p, "\n");
	if (len >= sizeof(m->path))
		return -ENAMETOOLONG;
	memcpy(m->path, p, len);
	m->path[len] = 0;
	/* perf's name for anonymous executable memory, where JITs put code. */
	if (!len)
		strcpy(m->path, "//anon");
	return 0;
}

int procmaps_next(FILE *f, char **line, size_t *cap, struct procmap *m, unsigned long *cut)
{
	ssize_t len;

	/*
	 * Whole lines, whatever their length: a path of escaped newlines (\012,
	 * four bytes each) made lines longer than a fixed buffer, and the tail,
	 * which the process wrote, read as a mapping of its own.  A line without
	 * its newline is cut: dropped and counted.
	 */
	while ((len = getline(line, cap, f)) > 0) {
		if ((*line)[len - 1] != '\n') {
			if (cut)
				(*cut)++;
			continue;
		}
		if (!procmaps_parse_line(*line, m))
			return 1;
	}
	return 0;
}

/*
 * The ioctl's argument as Linux 6.11 defines it (linux/fs.h), spelled here
 * because the headers this builds with may be older; the size, which the
 * request number carries, is the kernel's (104 bytes).
 */
struct sp_procmap_query {
	__u64 size;
	__u64 query_flags;
	__u64 query_addr;
	__u64 vma_start;
	__u64 vma_end;
	__u64 vma_flags;
	__u64 vma_page_size;
	__u64 vma_offset;
	__u64 inode;
	__u32 dev_major;
	__u32 dev_minor;
	__u32 vma_name_size;
	__u32 build_id_size;
	__u64 vma_name_addr;
	__u64 build_id_addr;
};

#define SP_PROCMAP_QUERY _IOWR('f', 17, struct sp_procmap_query)
#define SP_PQ_READABLE 0x01
#define SP_PQ_WRITABLE 0x02
#define SP_PQ_EXECUTABLE 0x04
#define SP_PQ_SHARED 0x08
#define SP_PQ_COVERING_OR_NEXT 0x10
#define SP_PQ_FILE_BACKED 0x20

/* Set once a real maps file refused the ioctl: the kernel has none, and never will in this run. */
static int no_query;

static int to_text(struct procmaps *pm)
{
	pm->f = fdopen(pm->fd, "re");
	if (!pm->f)
		return -errno;
	pm->fd = -1;
	return 0;
}

int procmaps_open_fd(struct procmaps *pm, int fd, unsigned int want)
{
	memset(pm, 0, sizeof(*pm));
	pm->fd = fd;
	pm->want = want;
	return 0;
}

int procmaps_open(struct procmaps *pm, __u32 pid, unsigned int want)
{
	char path[64];
	int fd, err;

	memset(pm, 0, sizeof(*pm));
	pm->fd = -1;
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	procmaps_open_fd(pm, fd, want);
	pm->probe = true;
	if (__atomic_load_n(&no_query, __ATOMIC_RELAXED) && (err = to_text(pm))) {
		close(fd);
		pm->fd = -1;
		return err;
	}
	return 0;
}

static int read_text(struct procmaps *pm, struct procmap *m)
{
	while (procmaps_next(pm->f, &pm->line, &pm->cap, m, &pm->cut))
		if ((!(pm->want & PROCMAPS_CODE) || (m->prot & PROT_EXEC)) && (!(pm->want & PROCMAPS_FILES) || m->ino))
			return 1;
	return 0;
}

int procmaps_read(struct procmaps *pm, struct procmap *m)
{
	struct sp_procmap_query q;
	int err;

	if (pm->f)
		return read_text(pm, m);
	if (pm->fd < 0)
		return 0;
again:
	memset(m, 0, sizeof(*m));
	q = (struct sp_procmap_query){
		.size = sizeof(q),
		.query_flags = SP_PQ_COVERING_OR_NEXT | (pm->want & PROCMAPS_CODE ? SP_PQ_EXECUTABLE : 0) |
			       (pm->want & PROCMAPS_FILES ? SP_PQ_FILE_BACKED : 0),
		.query_addr = pm->addr,
		.vma_name_size = sizeof(m->path),
		.vma_name_addr = (__u64)(unsigned long)m->path,
	};
	if (ioctl(pm->fd, SP_PROCMAP_QUERY, &q)) {
		err = errno;
		/* ENOTTY: no ioctl on this file; EINVAL: none for maps (before 6.11), or flags it does not know. */
		if ((err == ENOTTY || err == EINVAL) && !pm->addr) {
			if (pm->probe)
				__atomic_store_n(&no_query, 1, __ATOMIC_RELAXED);
			return to_text(pm) ? 0 : read_text(pm, m);
		}
		/*
		 * A name longer than the buffer (a path deeper than PATH_MAX, which
		 * the process chose): that mapping is skipped, as the text parse
		 * skips its line, and the walk goes on past it.
		 */
		if (err == ENAMETOOLONG) {
			q.vma_name_size = 0;
			q.vma_name_addr = 0;
			if (!ioctl(pm->fd, SP_PROCMAP_QUERY, &q) && q.vma_end > q.vma_start && q.vma_start >= pm->addr) {
				pm->addr = q.vma_end;
				goto again;
			}
		}
		/* ENOENT: nothing at or above addr; ESRCH: the process let its mm go; anything else ends it too. */
		close(pm->fd);
		pm->fd = -1;
		return 0;
	}
	/* The kernel answers in ascending order; an answer that does not move on would loop. */
	if (q.vma_end <= q.vma_start || q.vma_start < pm->addr) {
		close(pm->fd);
		pm->fd = -1;
		return 0;
	}
	pm->addr = q.vma_end;
	m->start = q.vma_start;
	m->end = q.vma_end;
	m->pgoff = q.vma_offset;
	m->ino = q.inode;
	m->maj = q.dev_major;
	m->min = q.dev_minor;
	m->prot = (q.vma_flags & SP_PQ_READABLE ? PROT_READ : 0) | (q.vma_flags & SP_PQ_WRITABLE ? PROT_WRITE : 0) |
		  (q.vma_flags & SP_PQ_EXECUTABLE ? PROT_EXEC : 0);
	m->flags = q.vma_flags & SP_PQ_SHARED ? MAP_SHARED : MAP_PRIVATE;
	/* No name: the kernel says 0 bytes; perf's name for anonymous memory, as the text parse gives. */
	if (!q.vma_name_size || !m->path[0])
		strcpy(m->path, "//anon");
	else
		m->path[sizeof(m->path) - 1] = 0;
	return 1;
}

bool procmaps_by_query(const struct procmaps *pm)
{
	return pm && !pm->f;
}

void procmaps_close(struct procmaps *pm)
{
	if (!pm)
		return;
	if (pm->f)
		fclose(pm->f);
	else if (pm->fd >= 0)
		close(pm->fd);
	free(pm->line);
	memset(pm, 0, sizeof(*pm));
	pm->fd = -1;
}
