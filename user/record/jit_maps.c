// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "hash.h"
#include "jit_maps.h"
#include "log.h"
#include "proc_file.h"
#include "stop.h"
#include "util.h"

/* perf maps are lines of text: a JIT's can grow large, but not past this (the rest is not read). */
#define MAX_MAP_BYTES (16u << 20)
/* Text kept for all of them: the recording carries it. */
#define MAX_TOTAL_BYTES (256u << 20)
/* Processes followed; more are counted, not read. */
#define MAX_JITS 4096
/* Their /tmp held open for a read at exit: the rest are read while they live only. */
#define MAX_HELD 256
#define POLL_NS 1000000000ull

/* Why a process's map was last refused. */
enum refusal { KEPT_OR_NONE, NOT_ITS_USERS, NOT_REGULAR };

struct jit {
	__u32 pid;
	bool gone;
	int tmp;		/* O_PATH of its /tmp, for the read at its exit; -1 */
	long nspid, euid;	/* as last read from its status, which is gone at its exit */
	enum refusal refused;
	__u64 last_ns;		/* when last read */
	struct timespec mtime;	/* of the text kept */
	off_t size;
	char *text;
	size_t len;
};

struct jit_maps {
	struct jit *v;
	size_t n, cap;
	struct u64_map by_pid; /* pid -> 1 + index, or 1<<32 for a pid of our own mount namespace */
	char our_ns[64];
	size_t bytes; /* text kept, all processes */
	unsigned truncated, over, over_total, held, at_exit;
};

struct jit_maps *jit_maps__new(void)
{
	struct jit_maps *j = calloc(1, sizeof(*j));
	ssize_t n;

	if (!j)
		return NULL;
	n = readlink("/proc/self/ns/mnt", j->our_ns, sizeof(j->our_ns) - 1);
	j->our_ns[n > 0 ? n : 0] = 0;
	return j;
}

void jit_maps__free(struct jit_maps *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->n; i++) {
		free(j->v[i].text);
		if (j->v[i].tmp >= 0)
			close(j->v[i].tmp);
	}
	free(j->v);
	u64_map_free(&j->by_pid);
	free(j);
}

/* The process's pid in its own pid namespace (the last of NSpid) and its effective uid, as the host sees them. */
static int ns_pid_euid(__u32 pid, long *nspid, long *euid)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		if (!strncmp(line, "Uid:", 4) && sscanf(line + 4, "%*d %ld", euid) == 1) {
			found |= 1;
		} else if (!strncmp(line, "NSpid:", 6)) {
			char *tok, *save = NULL;

			for (tok = strtok_r(line + 6, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save))
				*nspid = strtol(tok, NULL, 10);
			found |= 2;
		}
	}
	free(line);
	fclose(f);
	return found == 3 ? 0 : -ENOENT;
}

/*
 * perf's rule (the file is the process's user's or root's, a regular file
 * opened without following a symlink or blocking), reached inside the
 * process's root only.  -ENOENT while the JIT has written none.
 */
static int read_map(struct jit_maps *j, struct jit *e, __u64 now)
{
	char path[64], *text;
	long nspid = 0, euid = -1;
	struct stat st;
	ssize_t n;
	size_t len;
	int fd, err;

	e->last_ns = now;
	err = ns_pid_euid(e->pid, &nspid, &euid);
	if (err && (e->tmp < 0 || !e->nspid)) {
		e->gone = true;
		return err;
	}
	if (err) {
		/* Gone: its last map, from the /tmp held, by what its status said last. */
		nspid = e->nspid;
		euid = e->euid;
		e->gone = true;
	} else {
		e->nspid = nspid;
		e->euid = euid;
	}
	snprintf(path, sizeof(path), "/tmp/perf-%ld.map", nspid);
	if (e->tmp < 0 && !err && j->held < MAX_HELD) {
		e->tmp = proc_open_dir_in_root(e->pid, "/tmp");
		j->held += e->tmp >= 0;
	}
	fd = e->tmp >= 0 ? proc_open_in_dir(e->tmp, path + 5) : proc_open_in_root(e->pid, path);
	if (fd < 0) {
		if (fd == -EINVAL || fd == -ELOOP) {
			e->refused = NOT_REGULAR;
			pr_debug("pid %u: %s not read: not a regular file inside its root", e->pid, path);
		}
		if (fd == -ESRCH)
			e->gone = true;
		return fd;
	}
	if (fstat(fd, &st)) {
		err = -errno;
		goto cleanup;
	}
	if (st.st_uid != (uid_t)euid && st.st_uid != 0) {
		e->refused = NOT_ITS_USERS;
		pr_debug("pid %u: %s not read: owned by uid %u, the process runs as %ld", e->pid, path,
			 (unsigned)st.st_uid, euid);
		err = -EPERM;
		goto cleanup;
	}
	if (e->text && st.st_size == e->size && st.st_mtim.tv_sec == e->mtime.tv_sec &&
	    st.st_mtim.tv_nsec == e->mtime.tv_nsec) {
		err = 0; /* unchanged */
		goto cleanup;
	}
	len = st.st_size > MAX_MAP_BYTES ? MAX_MAP_BYTES : (size_t)st.st_size;
	if ((__u64)st.st_size > MAX_MAP_BYTES)
		j->truncated++;
	if (j->bytes - e->len + len > MAX_TOTAL_BYTES) {
		j->over_total++; /* what was kept of it stays */
		err = -ENOSPC;
		goto cleanup;
	}
	text = malloc(len + 1);
	if (!text) {
		err = -ENOMEM;
		goto cleanup;
	}
	/* No more than its size at fstat: it may grow while read. */
	for (size_t done = 0; done < len; done += n) {
		n = pread(fd, text + done, len - done, done);
		if (n < 0 && errno == EINTR) {
			n = 0;
			continue;
		}
		if (n <= 0) {
			len = done;
			break;
		}
	}
	/* Whole lines only: a line cut by the bound or by a write under way is left for the next read. */
	while (len && text[len - 1] != '\n')
		len--;
	text[len] = 0;
	j->bytes = j->bytes - e->len + len;
	free(e->text);
	e->refused = KEPT_OR_NONE;
	e->text = text;
	e->len = len;
	e->size = st.st_size;
	e->mtime = st.st_mtim;
	err = 0;
cleanup:
	close(fd);
	return err;
}

void jit_maps__exit(struct jit_maps *j, __u32 pid)
{
	uint64_t *v = j ? u64_map_get(&j->by_pid, pid, false) : NULL;
	struct jit *e;

	if (!v || !*v || *v > j->n)
		return;
	e = &j->v[*v - 1];
	if (e->gone || e->tmp < 0)
		return;
	/* By pid: a whole-host recording's count is every container's, which does not say whose map it was. */
	if (!read_map(j, e, now_ns(CLOCK_MONOTONIC))) {
		j->at_exit++;
		pr_debug("pid %u: its perf map read at its exit, %zu bytes kept", e->pid, e->len);
	}
	e->gone = true;
}

void jit_maps__note(struct jit_maps *j, __u32 pid)
{
	char link[64], theirs[64];
	uint64_t *v;
	ssize_t n;

	if (!j)
		return;
	v = u64_map_get(&j->by_pid, pid, true);
	if (!v || *v)
		return;
	snprintf(link, sizeof(link), "/proc/%u/ns/mnt", pid);
	n = readlink(link, theirs, sizeof(theirs) - 1);
	theirs[n > 0 ? n : 0] = 0;
	if (n <= 0 || !strcmp(theirs, j->our_ns)) {
		*v = 1ull << 32; /* ours, or gone: perf's /tmp/perf-PID.map at report time */
		return;
	}
	if (j->n >= MAX_JITS ||
	    array_reserve((void **)&j->v, &j->cap, j->n, sizeof(*j->v))) {
		*v = 1ull << 32;
		j->over++;
		return;
	}
	j->v[j->n] = (struct jit){ .pid = pid, .tmp = -1 };
	*v = ++j->n;
}

bool jit_maps__anon(const char *path)
{
	return !strcmp(path, "//anon") || !strncmp(path, "/dev/zero", 9) || !strncmp(path, "/anon_hugepage", 14);
}

void jit_maps__poll(struct jit_maps *j, __u64 now)
{
	for (size_t i = 0; j && i < j->n; i++)
		if (!j->v[i].gone && now - j->v[i].last_ns >= POLL_NS)
			read_map(j, &j->v[i], now);
}

int jit_maps__put(struct jit_maps *j, struct pd_meta *m)
{
	size_t n = 0;

	if (!j || !j->n)
		return 0;
	/* After a stop: what was read while they ran, once the time to finish is up (stop.h). */
	for (size_t i = 0; i < j->n && !stop_overdue(); i++)
		if (!j->v[i].gone)
			read_map(j, &j->v[i], now_ns(CLOCK_MONOTONIC));
	m->jit_maps = calloc(j->n, sizeof(*m->jit_maps));
	if (!m->jit_maps)
		return -ENOMEM;
	for (size_t i = 0; i < j->n; i++) {
		struct jit *e = &j->v[i];
		char *copy;

		if (!e->text)
			continue;
		copy = malloc(e->len + 1);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, e->text, e->len + 1);
		m->jit_maps[n++] = (struct pd_jit_map){ .pid = (__s32)e->pid, .text = copy, .len = e->len };
		m->nr_jit_maps = n;
	}
	return 0;
}

void jit_maps__report(const struct jit_maps *j)
{
	size_t kept = 0, owner = 0, type = 0;

	if (!j || !j->n)
		return;
	for (size_t i = 0; i < j->n; i++) {
		kept += j->v[i].text != NULL;
		owner += j->v[i].refused == NOT_ITS_USERS;
		type += j->v[i].refused == NOT_REGULAR;
	}
	pr_debug("JIT perf maps: %zu containers' processes ran anonymous code, %zu maps kept; %zu refused as "
		 "another user's, %zu as not a regular file in the process's root, %u reads cut at %u MiB, %u not "
		 "kept past %u MiB in all, %u processes past %u not followed; %u read at their exit",
		 j->n, kept, owner, type, j->truncated, MAX_MAP_BYTES >> 20, j->over_total, MAX_TOTAL_BYTES >> 20,
		 j->over, MAX_JITS, j->at_exit);
}
