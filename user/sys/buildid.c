// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "buildid.h"
#include "elf_budget.h"
#include "fileio.h"
#include "hash.h"
#include "sha256.h"
#include "stop.h"
#include "util.h"

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

static __u32 align4(__u32 x)
{
	return (x + 3) & ~3u;
}

int buildid_from_notes(const void *buf, size_t len, __u8 id[BUILD_ID_MAX], __u8 *size)
{
	const unsigned char *p = buf, *end = p + len;

	while (end - p >= 12) {
		__u32 namesz, descsz, type;
		size_t need;

		memcpy(&namesz, p, 4);
		memcpy(&descsz, p + 4, 4);
		memcpy(&type, p + 8, 4);
		if (namesz > len || descsz > len)
			return -EINVAL;
		need = 12 + (size_t)align4(namesz) + align4(descsz);
		if (need > (size_t)(end - p))
			return -EINVAL;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(p + 12, "GNU", 4) && descsz) {
			*size = SP_MIN(descsz, BUILD_ID_MAX);
			memset(id, 0, BUILD_ID_MAX);
			memcpy(id, p + 12 + align4(namesz), *size);
			return 0;
		}
		p += need;
	}
	return -ENOENT;
}

int buildid_from_fd(int fd, __u8 id[BUILD_ID_MAX], __u8 *size)
{
	struct elf_budget b;
	Elf_Scn *scn = NULL;
	int err = -ENOENT;
	/* Read, not mapped: a file another process truncates meanwhile must not SIGBUS us. */
	Elf *elf = elf_budget_begin(&b, fd, false, ELF_BUDGET_NOTES, NULL);

	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = b.err ?: -EINVAL;
		goto cleanup;
	}
	/*
	 * Each note section into a buffer of ours, let go before the next:
	 * libelf would keep every one, and a file may declare thousands over
	 * one sparse hole.  The budget ends the scan of such a file.
	 */
	while (err == -ENOENT && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		size_t len;
		void *notes;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || !sh.sh_size)
			continue;
		notes = elf_budget_copy(&b, scn, ELF_T_NHDR, &len);
		if (notes && !buildid_from_notes(notes, len, id, size))
			err = 0;
		else if (b.err)
			err = b.err;
		free(notes);
	}
cleanup:
	elf_budget_end(&b);
	return err;
}

int buildid_from_file(const char *path, __u8 id[BUILD_ID_MAX], __u8 *size)
{
	int fd = open_regular(path), err;

	if (fd < 0)
		return fd;
	err = buildid_from_fd(fd, id, size);
	close(fd);
	return err;
}

int buildid_kernel(__u8 id[BUILD_ID_MAX], __u8 *size)
{
	char *buf;
	size_t len;
	int err = read_file_all("/sys/kernel/notes", &buf, &len);

	if (err)
		return err;
	err = buildid_from_notes(buf, len, id, size);
	free(buf);
	return err;
}

void buildid_hex(const __u8 *id, __u8 size, char *out)
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < size && i < BUILD_ID_MAX; i++) {
		*out++ = hex[id[i] >> 4];
		*out++ = hex[id[i] & 15];
	}
	*out = 0;
}

struct memo_entry {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
	int err; /* what buildid_from_fd gave: 0 with id and id_size, -ENOENT or -EINVAL */
	__u8 id[BUILD_ID_MAX], id_size;
};

struct buildid_memo {
	struct u64_map idx; /* hash of (dev, ino) -> index + 1 into v */
	struct memo_entry *v;
	size_t n, max;
};

struct buildid_memo *buildid_memo__new(size_t max)
{
	struct buildid_memo *m = calloc(1, sizeof(*m));

	if (m)
		m->max = max ? max : 1;
	return m;
}

void buildid_memo__free(struct buildid_memo *m)
{
	if (!m)
		return;
	u64_map_free(&m->idx);
	free(m->v);
	free(m);
}

static bool memo_same(const struct memo_entry *e, const struct stat *st)
{
	return e->dev == st->st_dev && e->ino == st->st_ino && e->size == st->st_size &&
	       e->mtime.tv_sec == st->st_mtim.tv_sec && e->mtime.tv_nsec == st->st_mtim.tv_nsec &&
	       e->ctime.tv_sec == st->st_ctim.tv_sec && e->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

/* fd's slot, a new one (index + 1 at 0) if its inode has none; NULL without memory. */
static uint64_t *memo_slot(struct buildid_memo *m, const struct stat *st)
{
	if (m->n == m->max && !u64_map_get(&m->idx, hash_mix(st->st_dev, st->st_ino), false)) {
		/* Full: forgotten whole rather than grown by every file a long-lived host ever had. */
		u64_map_free(&m->idx);
		m->n = 0;
	}
	if (!m->v && !(m->v = calloc(m->max, sizeof(*m->v))))
		return NULL;
	return u64_map_get(&m->idx, hash_mix(st->st_dev, st->st_ino), true);
}

int buildid_memo__fd(struct buildid_memo *m, int fd, __u8 id[BUILD_ID_MAX], __u8 *size)
{
	struct memo_entry *e;
	struct stat st;
	uint64_t *slot;
	int err;

	if (!m || fstat(fd, &st) || !(slot = memo_slot(m, &st)))
		return buildid_from_fd(fd, id, size);
	e = *slot ? &m->v[*slot - 1] : NULL;
	if (!e || !memo_same(e, &st)) {
		err = buildid_from_fd(fd, id, size);
		/* Only what the bytes decide is kept (an id, none, not ELF), never a failure that may pass. */
		if (err && err != -ENOENT && err != -EINVAL)
			return err;
		if (!e) {
			e = &m->v[m->n++];
			*slot = m->n;
		}
		/* Another inode with the same hash takes the slot: one of them is read each time, never mixed up. */
		*e = (struct memo_entry){ .dev = st.st_dev, .ino = st.st_ino, .size = st.st_size,
					  .mtime = st.st_mtim, .ctime = st.st_ctim, .err = err };
		if (!err) {
			memcpy(e->id, id, BUILD_ID_MAX);
			e->id_size = *size;
		}
		return err;
	}
	if (!e->err) {
		memcpy(id, e->id, BUILD_ID_MAX);
		*size = e->id_size;
	}
	return e->err;
}

/* Interned names: whole-host runs map the same libc thousands of times. */
struct dso_set {
	struct strpool names;
	struct strpool foreign; /* "HEX NAME" of files seen in other mount namespaces */
};

struct dso_set *dso_set__new(void)
{
	return calloc(1, sizeof(struct dso_set));
}

void dso_set__free(struct dso_set *s)
{
	if (!s)
		return;
	strpool_free(&s->names);
	strpool_free(&s->foreign);
	free(s);
}

int dso_set__add(struct dso_set *s, const char *filename)
{
	/* Only real files have build ids: skip [vdso], //anon, /memfd: and friends. */
	if (filename[0] != '/' || filename[1] == '/' || !strncmp(filename, "/memfd:", 7))
		return 0;
	return strpool_intern(&s->names, filename, NULL) ? 0 : -ENOMEM;
}

int dso_set__add_foreign(struct dso_set *s, const char *filename, const __u8 *id, __u8 size)
{
	char key[2 * BUILD_ID_MAX + 2 + PATH_MAX];

	if (!size || size > BUILD_ID_MAX || filename[0] != '/')
		return 0;
	buildid_hex(id, size, key);
	snprintf(key + 2 * size, sizeof(key) - 2 * size, " %s", filename);
	return strpool_intern(&s->foreign, key, NULL) ? 0 : -ENOMEM;
}

/* "HEX NAME" back to the id: 0, or -EINVAL for a key not of dso_set__add_foreign's making. */
static int parse_foreign(const char *key, __u8 *id, __u8 *size, const char **name)
{
	const char *sp = strchr(key, ' ');
	size_t n = sp ? (size_t)(sp - key) : 0;

	if (!n || n % 2 || n / 2 > BUILD_ID_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v;

		if (sscanf(key + 2 * i, "%2x", &v) != 1)
			return -EINVAL;
		id[i] = v;
	}
	*size = n / 2;
	*name = sp + 1;
	return 0;
}

int dso_set__count(const struct dso_set *s)
{
	return s ? (int)s->names.n : 0;
}

static int append(struct pd_meta *m, __u16 misc, const char *name, const __u8 *id, __u8 size)
{
	struct pd_build_id *nb = realloc(m->build_ids, (m->nr_build_ids + 1) * sizeof(*nb));

	if (!nb)
		return -ENOMEM;
	m->build_ids = nb;
	nb += m->nr_build_ids;
	memset(nb, 0, sizeof(*nb));
	nb->pid = -1;
	nb->misc = misc;
	nb->size = size;
	memcpy(nb->id, id, size);
	nb->filename = strdup(name);
	if (!nb->filename)
		return -ENOMEM;
	m->nr_build_ids++;
	return 0;
}

int dso_set__build_ids(const struct dso_set *s, struct pd_meta *m)
{
	struct strpool listed = {};
	__u8 id[BUILD_ID_MAX], size;
	int err = 0;

	if (!buildid_kernel(id, &size))
		err = append(m, PERF_RECORD_MISC_KERNEL, "[kernel.kallsyms]", id, size);
	/* Thousands of files on a busy host: cut short once the time to finish after a stop is up (stop.h). */
	for (size_t i = 0; s && i < s->names.n && !err && !stop_overdue(); i++) {
		const char *name = s->names.str[i];

		/* " (deleted)" files are gone; their old build id cannot be read. */
		if (strstr(name, " (deleted)"))
			continue;
		if (!buildid_from_file(name, id, &size))
			err = append(m, PERF_RECORD_MISC_USER, name, id, size);
	}
	/*
	 * Containers' files: the build id the process saw, which perf
	 * buildid-list and archive want; but only for a name the host has no
	 * file of.  perf gives a name's dso the last build id listed for it,
	 * and the host's processes map that dso: the container's id there
	 * would have perf read the container's copy for the host's file.  Their
	 * MMAP2 records carry the container's id either way.  The names listed
	 * are asked in constant time: 40k foreign names took 1.8 s scanned.
	 */
	m->nr_host_build_ids = m->nr_build_ids;
	for (int k = 0; k < m->nr_build_ids && !err; k++)
		if (!strpool_intern(&listed, m->build_ids[k].filename, NULL))
			err = -ENOMEM;
	for (size_t i = 0; s && i < s->foreign.n && !err; i++) {
		const char *name;
		size_t before = listed.n;

		if (parse_foreign(s->foreign.str[i], id, &size, &name))
			continue;
		if (!strpool_intern(&listed, name, NULL))
			err = -ENOMEM;
		else if (listed.n > before)
			err = append(m, PERF_RECORD_MISC_USER, name, id, size);
	}
	strpool_free(&listed);
	return err;
}

int buildid_cache_path(const char *hex, char *out, size_t len)
{
	char dir[PATH_MAX];
	int n;

	if (!hex || !*hex || strspn(hex, "0123456789abcdef") != strlen(hex))
		return -EINVAL;
	n = cache_home(dir, sizeof(dir));
	if (n)
		return n;
	n = snprintf(out, len, "%s/spanperf/buildid/%s", dir, hex);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int buildid_cache_entry(const char *hex, const __u8 sha256[SHA256_SIZE], char *out, size_t len)
{
	char sha[2 * SHA256_SIZE + 1];
	size_t n;
	int e = buildid_cache_path(hex, out, len);

	if (e)
		return e;
	sha256_hex(sha256, sha);
	n = strlen(out);
	if (n + 1 + strlen(sha) >= len)
		return -ENAMETOOLONG;
	out[n] = '.';
	strcpy(out + n + 1, sha);
	return 0;
}

int sha256_of_fd(int fd, __u64 max, __u8 out[SHA256_SIZE])
{
	char buf[65536];
	struct sha256 s;
	__u64 done = 0;

	sha256_init(&s);
	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			break;
		done += n;
		if (done > max)
			return -EFBIG;
		sha256_update(&s, buf, n);
	}
	sha256_final(&s, out);
	return 0;
}
