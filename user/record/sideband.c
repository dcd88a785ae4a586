// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "buildid.h"
#include "buildid_cache.h"
#include "jit_maps.h"
#include "fileio.h"
#include "host.h"
#include "sideband.h"
#include "stop.h"

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

static struct pd_sample trailer(const struct sideband *sb, __u32 pid, __u32 tid)
{
	return (struct pd_sample){ .pid = pid, .tid = tid, .time = sb->time, .id = sb->id };
}

int sideband_kernel_mmap(struct sideband *sb)
{
	struct pd_sample ts = trailer(sb, -1, 0);
	char buf[256];
	long n;

	if (!sb->ktext_start)
		return -ENOENT;
	/* perf's own convention: pgoff = _text, so ip - start + pgoff = ip. */
	n = pd_build_mmap(buf, sizeof(buf), sb->attr, &ts, PERF_RECORD_MISC_KERNEL, -1, 0,
			  sb->ktext_start, sb->ktext_end - sb->ktext_start, sb->ktext_start,
			  "[kernel.kallsyms]_text");
	if (n < 0)
		return n;
	return pd_writer__write(sb->w, buf, n);
}

int kmodule_parse_line(const char *line, struct kmodule *m)
{
	char name[64], state[16];
	unsigned long long size, addr;

	/* name size refcount deps state address [taint] */
	if (sscanf(line, "%63s %llu %*s %*s %15s %llx", name, &size, state, &addr) != 4)
		return -EINVAL;
	if (strcmp(state, "Live") || !addr || !size || addr + size < addr)
		return -EINVAL;
	snprintf(m->name, sizeof(m->name), "%s", name);
	m->start = addr;
	m->size = size;
	return 0;
}

int sideband_module_mmaps(struct sideband *sb)
{
	struct pd_sample ts = trailer(sb, -1, 0);
	char line[512], file[80], buf[256];
	struct kmodule m;
	FILE *f = fopen("/proc/modules", "re");
	int e = 0;

	/* No module support in this kernel: nothing to describe. */
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof(line), f)) {
		long n;

		if (kmodule_parse_line(line, &m))
			continue;
		snprintf(file, sizeof(file), "[%s]", m.name);
		n = pd_build_mmap(buf, sizeof(buf), sb->attr, &ts, PERF_RECORD_MISC_KERNEL, -1, 0, m.start, m.size, 0,
				  file);
		e = n < 0 ? n : pd_writer__write(sb->w, buf, n);
		if (e)
			break;
		sb->nr_modules++;
	}
	fclose(f);
	return e;
}

static int emit_comm(struct sideband *sb, __u32 pid, __u32 tid)
{
	char path[64], comm[32], buf[128];
	struct pd_sample ts = trailer(sb, pid, tid);
	long n;

	snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", pid, tid);
	if (read_file_str(path, comm, sizeof(comm)))
		return 0; /* the thread exited meanwhile */
	n = pd_build_comm(buf, sizeof(buf), sb->attr, &ts, pid, tid, comm, 0);
	if (n < 0)
		return n;
	sb->nr_comm++;
	return pd_writer__write(sb->w, buf, n);
}

static int emit_maps(struct sideband *sb, __u32 pid)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	char *buf = NULL;
	struct procmap *m = NULL;
	FILE *f;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return 0; /* exited, or a kernel thread */
	m = malloc(sizeof(*m));
	buf = malloc(PATH_MAX + 256);
	if (!m || !buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	while (procmaps_next(f, &line, &cap, m, &sb->nr_cut)) {
		struct pd_sample ts = trailer(sb, pid, pid);
		struct pd_mmap2_info info;
		__u16 misc = PERF_RECORD_MISC_USER;
		long n;

		/*
		 * perf's DWARF unwinder reads a binary's read-only segments
		 * (.eh_frame_hdr) through the maps: with mmap_data, file-backed
		 * data maps too, marked as the kernel marks them.
		 */
		if (!(m->prot & PROT_EXEC)) {
			if (!sb->data_maps || m->path[0] != '/')
				continue;
			misc |= PERF_RECORD_MISC_MMAP_DATA;
		}
		info = (struct pd_mmap2_info){ .maj = m->maj, .min = m->min, .ino = m->ino, .prot = m->prot, .flags = m->flags };
		if ((m->prot & PROT_EXEC) && jit_maps__anon(m->path))
			jit_maps__note(sb->jits, pid);
		/* A container's file: the build-id form, with the file kept (buildid_cache.h). */
		if ((m->prot & PROT_EXEC) &&
		    buildid_cache__note(sb->bcache, pid, m->start, m->end, m->path, info.build_id,
					&info.build_id_size) && sb->dsos)
			dso_set__add_foreign(sb->dsos, m->path, info.build_id, info.build_id_size);
		n = pd_build_mmap2(buf, PATH_MAX + 256, sb->attr, &ts, misc, pid, pid,
				   m->start, m->end - m->start, m->pgoff, &info, m->path);
		if (n < 0)
			continue;
		err = pd_writer__write(sb->w, buf, n);
		if (!err && sb->dsos && (m->prot & PROT_EXEC))
			err = dso_set__add(sb->dsos, m->path);
		if (err)
			goto cleanup;
		sb->nr_mmap++;
	}
cleanup:
	fclose(f);
	free(line);
	free(m);
	free(buf);
	return err;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* One process: a COMM per thread (or only `only_tid`), then its maps. */
static int synth_process(struct sideband *sb, __u32 pid, int only_tid)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)) && !err) {
		if (!all_digits(de->d_name))
			continue;
		if (only_tid >= 0 && atoi(de->d_name) != only_tid)
			continue;
		err = emit_comm(sb, pid, strtoul(de->d_name, NULL, 10));
	}
	closedir(d);
	if (!err)
		err = emit_maps(sb, pid);
	sb->nr_procs++;
	return err;
}

int sideband_synthesize(struct sideband *sb, const struct int_list *pids)
{
	struct dirent *de;
	DIR *d;
	int err = 0;

	if (pids) {
		for (int i = 0; i < pids->n && !err; i++)
			err = synth_process(sb, pids->v[i], -1);
		return err;
	}
	d = opendir("/proc");
	if (!d)
		return -errno;
	/* A stop signal ends the scan: the file gets what was read so far. */
	while ((de = readdir(d)) && !err && !stop_requested())
		if (all_digits(de->d_name))
			err = synth_process(sb, strtoul(de->d_name, NULL, 10), -1);
	closedir(d);
	return err;
}

/* The thread group of a tid, from /proc/TID/status. */
static int tgid_of(int tid)
{
	char path[64], *text = NULL, *p;
	size_t len;
	int tgid = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	if (read_file_all(path, &text, &len))
		return -1;
	p = strstr(text, "\nTgid:");
	if (p)
		tgid = atoi(p + 6);
	free(text);
	return tgid;
}

int sideband_synthesize_tids(struct sideband *sb, const struct int_list *tids)
{
	int err = 0;

	for (int i = 0; i < tids->n && !err; i++) {
		int tgid = tgid_of(tids->v[i]);

		if (tgid > 0)
			err = synth_process(sb, tgid, tids->v[i]);
	}
	return err;
}
