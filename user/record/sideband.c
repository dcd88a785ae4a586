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
#include "procmaps.h"
#include "sideband.h"
#include "stop.h"

/* A record of ours, its trailer that of the tracking event, stamped at the start. */
static struct pd_sideband synthesized(const struct sideband *sb, __u32 type, __u16 misc, __u32 pid, __u32 tid)
{
	return (struct pd_sideband){ .type = type, .misc = misc,
				     .sample_id = { .pid = pid, .tid = tid, .time = sb->time, .id = sb->id } };
}

static int emit(struct sideband *sb, const struct pd_sideband *r, void *buf, size_t bufsz)
{
	long n = pd_sideband_write(buf, bufsz, sb->attr, r);

	return n < 0 ? n : pd_writer__write(sb->w, buf, n);
}

/* The kernel's and its modules' maps: pid -1, as perf writes them. */
static int emit_kernel_mmap(struct sideband *sb, __u64 start, __u64 len, __u64 pgoff, const char *name)
{
	struct pd_sideband r = synthesized(sb, PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL, -1, 0);
	char buf[256];

	r.mmap = (struct pd_mmap){ .pid = -1, .tid = 0, .start = start, .len = len, .pgoff = pgoff, .filename = name };
	return emit(sb, &r, buf, sizeof(buf));
}

int sideband_kernel_mmap(struct sideband *sb)
{
	if (!sb->ktext_start)
		return -ENOENT;
	/* perf's own convention: pgoff = _text, so ip - start + pgoff = ip. */
	return emit_kernel_mmap(sb, sb->ktext_start, sb->ktext_end - sb->ktext_start, sb->ktext_start,
				"[kernel.kallsyms]_text");
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
	char line[512], file[80];
	struct kmodule m;
	FILE *f = fopen("/proc/modules", "re");
	int e = 0;

	/* No module support in this kernel: nothing to describe. */
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof(line), f)) {
		if (kmodule_parse_line(line, &m))
			continue;
		snprintf(file, sizeof(file), "[%s]", m.name);
		e = emit_kernel_mmap(sb, m.start, m.size, 0, file);
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
	struct pd_sideband r = synthesized(sb, PERF_RECORD_COMM, 0, pid, tid);
	int e;

	snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", pid, tid);
	if (read_file_str(path, comm, sizeof(comm)))
		return 0; /* the thread exited meanwhile */
	r.comm = (struct pd_comm){ .pid = pid, .tid = tid, .comm = comm };
	e = emit(sb, &r, buf, sizeof(buf));
	sb->nr_comm += !e;
	return e;
}

/* m of pid as an MMAP2, if it is one record wants; 0 or -errno (the writer's). */
static int emit_map(struct sideband *sb, __u32 pid, struct procmap *m, char *buf, size_t size)
{
	struct pd_sideband r = synthesized(sb, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, pid, pid);
	struct pd_mmap *mm = &r.mmap;
	long n;
	int err;

	/*
	 * perf's DWARF unwinder reads a binary's read-only segments
	 * (.eh_frame_hdr) through the maps: with mmap_data, file-backed
	 * data maps too, marked as the kernel marks them.
	 */
	if (!(m->prot & PROT_EXEC)) {
		if (!sb->data_maps || m->path[0] != '/')
			return 0;
		r.misc |= PERF_RECORD_MISC_MMAP_DATA;
	}
	*mm = (struct pd_mmap){ .pid = pid, .tid = pid, .start = m->start, .len = m->end - m->start,
				.pgoff = m->pgoff, .maj = m->maj, .min = m->min, .ino = m->ino,
				.prot = m->prot, .flags = m->flags, .filename = m->path };
	if ((m->prot & PROT_EXEC) && jit_maps__anon(m->path))
		jit_maps__note(sb->jits, pid);
	/* A container's file: the build-id form, with the file kept (buildid_cache.h). */
	if ((m->prot & PROT_EXEC) &&
	    buildid_cache__note(sb->bcache, pid, m->start, m->end, m->path, m->maj, m->min, m->ino,
				mm->build_id, &mm->build_id_size) &&
	    sb->dsos)
		dso_set__add_foreign(sb->dsos, m->path, mm->build_id, mm->build_id_size);
	n = pd_sideband_write(buf, size, sb->attr, &r);
	if (n < 0)
		return 0;
	err = pd_writer__write(sb->w, buf, n);
	if (!err && sb->dsos && (m->prot & PROT_EXEC))
		err = dso_set__add(sb->dsos, m->path);
	if (!err)
		sb->nr_mmap++;
	return err;
}

/*
 * The vsyscall page as the maps text lists it, last, for every process
 * with an mm: not a mapping of the process (the kernel's one gate area),
 * so PROCMAP_QUERY never finds it.  Ours is everyone's; false: none here
 * (vsyscall=none).
 */
static bool vsyscall_gate(struct procmap *out)
{
	static struct procmap gate;
	static int known; /* 0: not read yet, 1: gate holds it, -1: none */
	char *line = NULL;
	size_t cap = 0;
	unsigned long cut = 0;
	FILE *f;

	if (!known) {
		known = -1;
		f = fopen("/proc/self/maps", "re");
		while (f && procmaps_next(f, &line, &cap, &gate, &cut))
			if (!strcmp(gate.path, "[vsyscall]")) {
				known = 1;
				break;
			}
		if (f)
			fclose(f);
		free(line);
	}
	if (known > 0)
		*out = gate;
	return known > 0;
}

/*
 * Only code mappings are written (and, with mmap_data, file-backed data
 * ones), so only those are asked for where the kernel has PROCMAP_QUERY
 * (procmaps.h): the kernel formatting every mapping as text and the parse
 * here were 1.7% of record -a -g -d 0.2's CPU, for a process's code being a
 * tenth of its mappings.
 */
static int emit_maps(struct sideband *sb, __u32 pid)
{
	char *buf = NULL;
	struct procmap *m = NULL;
	struct procmaps pm;
	size_t n = 0;
	int err = 0;

	if (procmaps_open(&pm, pid, sb->data_maps ? 0 : PROCMAPS_CODE))
		return 0; /* exited, or a kernel thread */
	m = malloc(sizeof(*m));
	buf = malloc(PATH_MAX + 256);
	if (!m || !buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	while (!err && procmaps_read(&pm, m) > 0) {
		err = emit_map(sb, pid, m, buf, PATH_MAX + 256);
		n++;
	}
	/* A kernel thread has no mappings, and no gate either. */
	if (!err && n && procmaps_by_query(&pm) && vsyscall_gate(m))
		err = emit_map(sb, pid, m, buf, PATH_MAX + 256);
cleanup:
	sb->nr_cut += pm.cut;
	procmaps_close(&pm);
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

int sideband_each_pid(const struct int_list *pids, int (*fn)(void *ctx, __u32 pid), void *ctx)
{
	struct dirent *de;
	DIR *d;
	int err = 0;

	if (pids) {
		for (int i = 0; i < pids->n && !err; i++)
			err = fn(ctx, pids->v[i]);
		return err;
	}
	d = opendir("/proc");
	if (!d)
		return -errno;
	while (!err && (de = readdir(d)))
		if (all_digits(de->d_name))
			err = fn(ctx, strtoul(de->d_name, NULL, 10));
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

int proc_start_stack_flags(__u32 pid, __u64 *out, __u64 *flags)
{
	char path[64], buf[1024], *p;
	unsigned long long v;
	int field = 2;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	if (read_file_str(path, buf, sizeof(buf)))
		return -1;
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	for (p++; *p && field < 28; p++)
		if (*p == ' ' && ++field == 9 && flags && sscanf(p + 1, "%llu", &v) == 1)
			*flags = v;
	if (field != 28 || sscanf(p, "%llu", &v) != 1)
		return -1;
	*out = v;
	return 0;
}

int proc_start_stack(__u32 pid, __u64 *out)
{
	return proc_start_stack_flags(pid, out, NULL);
}
