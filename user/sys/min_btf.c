// SPDX-License-Identifier: GPL-2.0
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <linux/bpf.h>
#include <bpf/btf.h>

#include "atomic_file.h"
#include "buildid.h"
#include "fileio.h"
#include "log.h"
#include "min_btf.h"
#include "sha256.h"
#include "util.h"

/* What an entry is for: the kernel build and the object; its file name abbreviates it. */
struct min_btf_key {
	__u8 build_id[BUILD_ID_MAX], build_id_size, pad[3];
	__u8 obj[SHA256_SIZE]; /* of the object's .BTF (its length first) and .BTF.ext */
};

/*
 * The cache file: this header, then the raw BTF that libbpf reads.  The key
 * is compared too: a sound entry of another kernel or build renamed onto
 * this name is not read.
 */
struct min_btf_hdr {
	char magic[8];
	__u32 version, size;
	struct min_btf_key key;
	__u8 sum[SHA256_SIZE]; /* of the BTF after the header */
};

#define MIN_BTF_MAGIC "SPMINBTF"
/* One entry per kernel and build: a few KB each, and old builds' go first. */
#define MIN_BTF_DIR_MAX (4u << 20)

/* Our own object (the skeleton's bytes), so a malformed one is a build fault: still checked, never trusted. */
static int elf_section(const void *obj, size_t sz, const char *want, const __u8 **data, __u32 *len)
{
	Elf64_Ehdr eh;
	Elf64_Shdr sh, strs;

	*data = NULL;
	*len = 0;
	if (sz < sizeof(eh))
		return -EINVAL;
	memcpy(&eh, obj, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > sz ||
	    (sz - eh.e_shoff) / sizeof(Elf64_Shdr) < eh.e_shnum || eh.e_shstrndx >= eh.e_shnum)
		return -EINVAL;
	memcpy(&strs, (const char *)obj + eh.e_shoff + eh.e_shstrndx * sizeof(sh), sizeof(strs));
	if (strs.sh_offset > sz || strs.sh_size > sz - strs.sh_offset)
		return -EINVAL;
	for (unsigned i = 1; i < eh.e_shnum; i++) {
		size_t n = strlen(want) + 1;

		memcpy(&sh, (const char *)obj + eh.e_shoff + i * sizeof(sh), sizeof(sh));
		if (sh.sh_name >= strs.sh_size || strs.sh_size - sh.sh_name < n ||
		    memcmp((const char *)obj + strs.sh_offset + sh.sh_name, want, n))
			continue;
		if (sh.sh_offset > sz || sh.sh_size > sz - sh.sh_offset || sh.sh_size > UINT32_MAX)
			return -EINVAL;
		*data = (const __u8 *)obj + sh.sh_offset;
		*len = sh.sh_size;
		return 0;
	}
	return -ENOENT;
}

/* libbpf's "essential" name: a local flavour (task_struct___old) matches the kernel's task_struct. */
static size_t essence_len(const char *name)
{
	const char *p = strstr(name, "___");

	return p ? (size_t)(p - name) : strlen(name);
}

struct names {
	const char **v;
	size_t n, cap;
};

static int names_add(struct names *ns, const char *name)
{
	size_t len = essence_len(name);

	for (size_t i = 0; i < ns->n; i++)
		if (essence_len(ns->v[i]) == len && !strncmp(ns->v[i], name, len))
			return 0;
	if (ns->n == ns->cap) {
		size_t cap = ns->cap ? 2 * ns->cap : 64;
		const char **v = realloc(ns->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ns->v = v;
		ns->cap = cap;
	}
	ns->v[ns->n++] = name;
	return 0;
}

static bool names_has(const struct names *ns, const char *name)
{
	size_t len = essence_len(name);

	for (size_t i = 0; i < ns->n; i++)
		if (essence_len(ns->v[i]) == len && !strncmp(ns->v[i], name, len))
			return true;
	return false;
}

/* The .BTF.ext header as far as its CO-RE part (libbpf's struct btf_ext_header). */
struct ext_hdr {
	__u16 magic;
	__u8 version, flags;
	__u32 hdr_len;
	__u32 func_info_off, func_info_len, line_info_off, line_info_len;
	__u32 core_relo_off, core_relo_len;
};

/*
 * The names of the root types of obj's CO-RE relocations, in local's
 * strings.  Kinds whose answer is a target type id (the id in a cut is not
 * the kernel's) or a whole-type match are refused: the object is then
 * relocated against the kernel's BTF as before.
 */
static int relo_roots(const struct btf *local, const __u8 *ext, __u32 ext_len, struct names *ns)
{
	struct ext_hdr h = {};
	__u32 rec_size, off, end;
	int e = 0;

	if (ext_len < offsetof(struct ext_hdr, core_relo_off))
		return -EINVAL;
	memcpy(&h, ext, ext_len < sizeof(h) ? ext_len : sizeof(h));
	if (h.magic != 0xeB9F || h.hdr_len > ext_len)
		return -EINVAL;
	if (h.hdr_len < sizeof(h) || !h.core_relo_len)
		return 0;
	if (h.core_relo_off > ext_len - h.hdr_len || h.core_relo_len > ext_len - h.hdr_len - h.core_relo_off ||
	    h.core_relo_len < 4)
		return -EINVAL;
	off = h.hdr_len + h.core_relo_off;
	end = off + h.core_relo_len;
	memcpy(&rec_size, ext + off, 4);
	off += 4;
	if (rec_size < 16)
		return -EINVAL;
	while (off < end && !e) {
		__u32 sec[2];

		if (end - off < sizeof(sec))
			return -EINVAL;
		memcpy(sec, ext + off, sizeof(sec));
		off += sizeof(sec);
		if (sec[1] > (end - off) / rec_size)
			return -EINVAL;
		for (__u32 i = 0; i < sec[1] && !e; i++, off += rec_size) {
			__u32 r[4]; /* insn_off, type_id, access_str_off, kind */
			const struct btf_type *t;
			const char *name;

			memcpy(r, ext + off, sizeof(r));
			if (r[3] == BPF_CORE_TYPE_ID_LOCAL)
				continue;
			if (r[3] == BPF_CORE_TYPE_ID_TARGET || r[3] > BPF_CORE_ENUMVAL_VALUE)
				return -EOPNOTSUPP;
			t = btf__type_by_id(local, r[1]);
			name = t ? btf__name_by_offset(local, t->name_off) : NULL;
			if (!name || !*name)
				return -EINVAL;
			e = names_add(ns, name);
		}
	}
	return e;
}

/* What a type is kept for: reached behind a pointer (a struct then kept empty), or as itself. */
enum { BY_PTR = 1, DIRECT = 2 };

struct cut {
	const struct btf *k;
	__u8 *how;
	__u32 *stack, n, cap;
};

static int reach(struct cut *c, __u32 id, bool by_ptr)
{
	__u8 bit = by_ptr ? BY_PTR : DIRECT;

	if (!id || (c->how[id] & bit))
		return 0;
	if (c->n == c->cap) {
		__u32 cap = c->cap ? 2 * c->cap : 1024, *s = realloc(c->stack, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		c->stack = s;
		c->cap = cap;
	}
	c->how[id] |= bit;
	/* The bit rides along: which of the two visits this is. */
	c->stack[c->n++] = id << 1 | by_ptr;
	return 0;
}

/* What id (visited as by_ptr says) needs kept for libbpf's matching to see what it sees in the whole BTF. */
static int visit(struct cut *c, __u32 id, bool by_ptr)
{
	const struct btf_type *t = btf__type_by_id(c->k, id);
	int e = 0;

	if (!t)
		return -EINVAL;
	switch (btf_kind(t)) {
	case BTF_KIND_INT:
	case BTF_KIND_FLOAT:
	case BTF_KIND_FWD:
	case BTF_KIND_ENUM:
	case BTF_KIND_ENUM64:
		return 0;
	case BTF_KIND_PTR:
		return reach(c, t->type, true);
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_TYPE_TAG:
		return reach(c, t->type, by_ptr);
	case BTF_KIND_ARRAY:
		return reach(c, btf_array(t)->type, by_ptr) ?: reach(c, btf_array(t)->index_type, false);
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		/* Embedded: a field access may go through it, so all of it, and what it embeds. */
		for (__u16 i = 0; !by_ptr && i < btf_vlen(t) && !e; i++)
			e = reach(c, btf_members(t)[i].type, false);
		return e;
	case BTF_KIND_FUNC_PROTO:
		e = reach(c, t->type, true);
		for (__u16 i = 0; i < btf_vlen(t) && !e; i++)
			e = reach(c, btf_params(t)[i].type, true);
		return e;
	default:
		/* FUNC, VAR, DATASEC, DECL_TAG: never a member's type; not a kernel BTF we know. */
		return -EOPNOTSUPP;
	}
}

/* The kept types, renumbered in the kernel's order; structs reached only by pointer, empty. */
static int emit(const struct cut *c, __u32 nr, struct btf *out)
{
	__u32 *map = calloc(nr, sizeof(*map)), next = 1;
	int e = 0;

	if (!map)
		return -ENOMEM;
	for (__u32 id = 1; id < nr; id++)
		if (c->how[id])
			map[id] = next++;
	for (__u32 id = 1; id < nr && !e; id++) {
		const struct btf_type *t = btf__type_by_id(c->k, id);
		const char *name = btf__name_by_offset(c->k, t->name_off);
		struct btf_type *n;
		int nid;

		if (!c->how[id])
			continue;
		if (btf_is_composite(t) && !(c->how[id] & DIRECT))
			nid = btf_is_struct(t) ? btf__add_struct(out, name, t->size) : btf__add_union(out, name, t->size);
		else
			nid = btf__add_type(out, c->k, t);
		if (nid < 0) {
			e = nid;
			break;
		}
		if ((__u32)nid != map[id]) {
			e = -EINVAL;
			break;
		}
		/* btf__add_type keeps the kernel's ids: each one the type refers to is renumbered here. */
		n = (struct btf_type *)btf__type_by_id(out, nid);
		switch (btf_kind(n)) {
		case BTF_KIND_PTR:
		case BTF_KIND_TYPEDEF:
		case BTF_KIND_VOLATILE:
		case BTF_KIND_CONST:
		case BTF_KIND_RESTRICT:
		case BTF_KIND_TYPE_TAG:
		case BTF_KIND_FUNC_PROTO:
			n->type = map[n->type];
			for (__u16 i = 0; btf_is_func_proto(n) && i < btf_vlen(n); i++)
				btf_params(n)[i].type = map[btf_params(n)[i].type];
			break;
		case BTF_KIND_ARRAY:
			btf_array(n)->type = map[btf_array(n)->type];
			btf_array(n)->index_type = map[btf_array(n)->index_type];
			break;
		case BTF_KIND_STRUCT:
		case BTF_KIND_UNION:
			for (__u16 i = 0; i < btf_vlen(n); i++)
				btf_members(n)[i].type = map[btf_members(n)[i].type];
			break;
		default:
			break;
		}
	}
	free(map);
	return e;
}

int min_btf__cut(const struct btf *kern, const void *obj, size_t obj_sz, struct btf **out)
{
	const __u8 *bdata, *edata;
	__u32 blen, elen, nr = btf__type_cnt(kern);
	struct btf *local = NULL, *cut_btf = NULL;
	struct names ns = {};
	struct cut c = { .k = kern };
	int e;

	*out = NULL;
	e = elf_section(obj, obj_sz, ".BTF", &bdata, &blen) ?: elf_section(obj, obj_sz, ".BTF.ext", &edata, &elen);
	if (e)
		return e;
	local = btf__new(bdata, blen);
	if (!local)
		return -errno;
	e = relo_roots(local, edata, elen, &ns);
	c.how = calloc(nr, 1);
	if (!e && !c.how)
		e = -ENOMEM;
	/* Every kernel type a root's name may match: libbpf tries each candidate. */
	for (__u32 id = 1; id < nr && !e; id++) {
		const struct btf_type *t = btf__type_by_id(kern, id);
		const char *name = btf__name_by_offset(kern, t->name_off);

		if (name && *name && names_has(&ns, name))
			e = reach(&c, id, false);
	}
	while (c.n && !e) {
		__u32 v = c.stack[--c.n];

		e = visit(&c, v >> 1, v & 1);
	}
	if (!e) {
		cut_btf = btf__new_empty();
		e = cut_btf ? emit(&c, nr, cut_btf) : -errno;
	}
	if (!e) {
		*out = cut_btf;
		cut_btf = NULL;
	}
	btf__free(cut_btf);
	btf__free(local);
	free(c.how);
	free(c.stack);
	free(ns.v);
	return e;
}

static int entry_name(const void *obj, size_t obj_sz, struct min_btf_key *k, char *out, size_t len)
{
	const __u8 *bdata, *edata;
	__u32 blen, elen;
	char hex[2 * BUILD_ID_MAX + 1], shex[2 * SHA256_SIZE + 1];
	struct sha256 s;
	int e, n;

	memset(k, 0, sizeof(*k));
	/* A kernel without a build id could not be told from the next one built: no cut kept for it. */
	e = buildid_kernel(k->build_id, &k->build_id_size) ?: elf_section(obj, obj_sz, ".BTF", &bdata, &blen) ?:
		elf_section(obj, obj_sz, ".BTF.ext", &edata, &elen);
	if (e)
		return e;
	if (!k->build_id_size)
		return -ENOENT;
	buildid_hex(k->build_id, k->build_id_size, hex);
	/* The object's types and relocations: a new build with other relocations never reads an old cut. */
	sha256_init(&s);
	sha256_update(&s, &blen, sizeof(blen));
	sha256_update(&s, bdata, blen);
	sha256_update(&s, edata, elen);
	sha256_final(&s, k->obj);
	sha256_hex(k->obj, shex);
	n = snprintf(out, len, "%s-%.32s-v%d", hex, shex, MIN_BTF_VERSION);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The entry's BTF bytes, or -EBADMSG for a file that is not one we wrote whole, for key. */
static int read_entry(int dfd, const char *name, const struct min_btf_key *k, __u8 **btf, __u32 *size)
{
	struct min_btf_hdr h;
	__u8 sum[SHA256_SIZE];
	struct sha256 s;
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	int fd, e;

	*btf = NULL;
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	/*
	 * A symlink (ELOOP with O_NOFOLLOW) is never one we wrote; another
	 * failure (EMFILE, EACCES) says nothing of the file: left as it is.
	 */
	if (fd < 0)
		return errno == ELOOP ? -EBADMSG : -errno;
	/* Root's or ours, no one else's to write or read, a regular file of a sane size. */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (st.st_mode & 077) || !file_is_fixed(fd) ||
	    st.st_size < (off_t)sizeof(h) || st.st_size > (off_t)(sizeof(h) + MIN_BTF_MAX)) {
		e = -EBADMSG;
		goto cleanup;
	}
	e = read_fd_all(fd, &buf, &len);
	if (e)
		goto cleanup;
	e = -EBADMSG;
	if (len < sizeof(h))
		goto cleanup;
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, MIN_BTF_MAGIC, sizeof(h.magic)) || h.version != MIN_BTF_VERSION ||
	    memcmp(&h.key, k, sizeof(*k)) || h.size != len - sizeof(h))
		goto cleanup;
	sha256_init(&s);
	sha256_update(&s, buf + sizeof(h), h.size);
	sha256_final(&s, sum);
	if (memcmp(sum, h.sum, sizeof(sum)))
		goto cleanup;
	*btf = malloc(h.size ? h.size : 1);
	e = *btf ? 0 : -ENOMEM;
	if (!e) {
		memcpy(*btf, buf + sizeof(h), h.size);
		*size = h.size;
	}
cleanup:
	free(buf);
	close(fd);
	return e;
}

static int store_entry(const char *dir, int dfd, const char *name, const struct min_btf_key *k, const void *btf,
		       __u32 size)
{
	struct min_btf_hdr h = { .version = MIN_BTF_VERSION, .size = size, .key = *k };
	char path[PATH_MAX];
	struct atomic_file af;
	struct sha256 s;
	__u64 used = 0;
	bool measured = false;
	int e;

	memcpy(h.magic, MIN_BTF_MAGIC, sizeof(h.magic));
	sha256_init(&s);
	sha256_update(&s, btf, size);
	sha256_final(&s, h.sum);
	dir_make_room(dfd, MIN_BTF_DIR_MAX, sizeof(h) + size, &used, &measured);
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	/* A temporary renamed over the name: a reader sees a whole entry or none. */
	e = atomic_file__open(&af, path, 0600, false);
	if (e)
		return e;
	e = write_all(af.fd, &h, sizeof(h)) ?: write_all(af.fd, btf, size) ?: atomic_file__commit(&af);
	atomic_file__release(&af);
	return e;
}

/* The bytes libbpf will read, in a memfd: the file checked cannot be swapped between check and read. */
static int to_memfd(struct min_btf *m, const void *btf, __u32 size)
{
	int fd = memfd_create("spanperf-btf", MFD_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (write_all(fd, btf, size)) {
		close(fd);
		return -EIO;
	}
	m->fd = fd;
	m->size = size;
	snprintf(m->path, sizeof(m->path), "/proc/self/fd/%d", fd);
	/* libbpf opens the path at load, when a failure could no longer fall back: without /proc, now. */
	fd = open(m->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* The cut cache's directory, when root may keep and remove cuts there: its descriptor, or -errno. */
static int open_cache(char *dir, size_t len)
{
	char home[PATH_MAX];
	int n, dfd;

	dir[0] = '\0';
	if (cache_home(home, sizeof(home)))
		return -ENOENT;
	n = snprintf(dir, len, "%s/spanperf/btf", home);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	dfd = cache_dir_open(dir);
	if (dfd == -EPERM)
		pr_debug("the kernel BTF cut is not kept in %s: it, or a directory above it, is someone else's, "
			 "writable by others, or a symlink", dir);
	else if (dfd < 0)
		pr_debug("the kernel BTF cut is not kept in %s: %s", dir, strerror(-dfd));
	return dfd;
}

int min_btf__get(struct min_btf *m, const void *obj, size_t obj_sz)
{
	char dir[PATH_MAX], name[2 * BUILD_ID_MAX + 64];
	__u64 t0 = now_ns(CLOCK_MONOTONIC);
	struct btf *kern = NULL, *cut = NULL;
	struct min_btf_key key;
	__u8 *bytes = NULL;
	const void *raw;
	__u32 size = 0;
	int dfd = -1, e;

	memset(m, 0, sizeof(*m));
	m->fd = -1;
	if (getenv("SPANPERF_NO_BTF_CACHE"))
		return -ENOENT;
	e = entry_name(obj, obj_sz, &key, name, sizeof(name));
	if (e)
		goto cleanup;
	/* No directory of ours: cut here and not kept, nothing read, written or removed there. */
	dfd = open_cache(dir, sizeof(dir));
	e = dfd >= 0 ? read_entry(dfd, name, &key, &bytes, &size) : -ENOENT;
	if (!e) {
		m->hit = true;
		struct btf *b = btf__new(bytes, size);

		if (!b) {
			e = -EBADMSG;
		} else {
			m->nr_types = btf__type_cnt(b) - 1;
			btf__free(b);
		}
	}
	if (e == -EBADMSG) {
		/* Planted, cut short, from another build of the format or for another name: gone, and cut anew below. */
		pr_debug("the kernel BTF cut %s/%s is not sound: removed", dir, name);
		unlinkat(dfd, name, 0);
		m->hit = false;
	}
	if (e) {
		kern = btf__load_vmlinux_btf();
		e = kern ? min_btf__cut(kern, obj, obj_sz, &cut) : -errno;
		raw = e ? NULL : btf__raw_data(cut, &size);
		if (!e && !raw)
			e = -ENOMEM;
		if (e)
			goto cleanup;
		m->nr_types = btf__type_cnt(cut) - 1;
		m->stored = dfd >= 0 && !store_entry(dir, dfd, name, &key, raw, size);
		e = to_memfd(m, raw, size);
	} else {
		e = to_memfd(m, bytes, size);
	}
cleanup:
	m->ns = now_ns(CLOCK_MONOTONIC) - t0;
	/* Half a cut is none: the caller tells by fd. */
	if (e)
		min_btf__release(m);
	if (dfd >= 0)
		close(dfd);
	btf__free(cut);
	btf__free(kern);
	free(bytes);
	return e;
}

void min_btf__release(struct min_btf *m)
{
	/* A zeroed struct (min_btf__get never ran) holds no fd, not fd 0. */
	if (!m || !m->path[0])
		return;
	if (m->fd >= 0)
		close(m->fd);
	m->fd = -1;
	m->path[0] = '\0';
}
