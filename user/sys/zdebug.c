// SPDX-License-Identifier: GPL-2.0
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <zlib.h>

#include "atomic_file.h"
#include "buildid.h"
#include "elf_budget.h"
#include "fileio.h"
#include "log.h"
#include "util.h"
#include "zdebug.h"

#define ZD_MAGIC "SPZDBG1"
#define ZD_VERSION 1
#define ZD_CHUNK (64u << 10)
/* deflate never shrinks data by more than about 1032:1: a claim past that is no zlib stream's. */
#define ZLIB_MAX_RATIO 1032
/* A section's alignment past a page is no real file's, and would only pad the copy. */
#define ZD_MAX_ALIGN 4096

/* The last bytes of a cache file: the source it was made from. */
struct zd_trailer {
	char magic[8];
	__u32 version, pad;
	__u64 dev, ino, size, mtime_ns, ctime_ns; /* the source's, at the copy */
	__u64 total;				   /* this file's size, the trailer included */
	char hex[48];				   /* the build id, NUL-padded */
};

/* The cache file of a source, worked out from the source's headers alone. */
struct zd_plan {
	Elf64_Ehdr eh;	  /* the source's, e_shoff moved */
	Elf64_Shdr *sh;	  /* the copy's section headers */
	__u64 *from;	  /* per section: where its zlib stream starts in the source, 0 if not compressed */
	__u64 *zlen;	  /* and its length */
	size_t nsh;
	unsigned ncomp;
	__u64 src_size, inflated, total;
};

static void plan_free(struct zd_plan *p)
{
	free(p->sh);
	free(p->from);
	free(p->zlen);
	memset(p, 0, sizeof(*p));
}

static __u64 round_up(__u64 v, __u64 a)
{
	return (v + a - 1) & ~(a - 1);
}

/*
 * Where each compressed section of the source goes in the copy, within max
 * bytes for the whole copy: 0, -ENOENT (none compressed), -ENOTSUP, -EFBIG
 * (*claim set: what the sections claim), -EBADMSG, -E2BIG, -ENOMEM.
 */
static int plan_make(int fd, __u64 src_size, __u64 max, struct zd_plan *p, __u64 *claim)
{
	Elf64_Shdr first;
	__u64 off = src_size;
	int e;

	memset(p, 0, sizeof(*p));
	p->src_size = src_size;
	*claim = 0;
	if (src_size < sizeof(p->eh) || pread_full(fd, &p->eh, sizeof(p->eh), 0) ||
	    memcmp(p->eh.e_ident, ELFMAG, SELFMAG))
		return -EBADMSG;
	if (p->eh.e_ident[EI_CLASS] != ELFCLASS64 || p->eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return -ENOTSUP;
	if (!p->eh.e_shoff || p->eh.e_shentsize != sizeof(Elf64_Shdr) || p->eh.e_shoff > src_size ||
	    src_size - p->eh.e_shoff < sizeof(first) || pread_full(fd, &first, sizeof(first), p->eh.e_shoff))
		return -EBADMSG;
	/* Extended numbering: section 0's size holds the count. */
	p->nsh = p->eh.e_shnum ? p->eh.e_shnum : first.sh_size;
	if (p->nsh > ELF_BUDGET_HEADERS)
		return -E2BIG;
	if (!p->nsh || (src_size - p->eh.e_shoff) / sizeof(first) < p->nsh)
		return -EBADMSG;
	p->sh = calloc(p->nsh, sizeof(*p->sh));
	p->from = calloc(p->nsh, sizeof(*p->from));
	p->zlen = calloc(p->nsh, sizeof(*p->zlen));
	if (!p->sh || !p->from || !p->zlen) {
		e = -ENOMEM;
		goto fail;
	}
	e = pread_full(fd, p->sh, p->nsh * sizeof(*p->sh), p->eh.e_shoff);
	if (e)
		goto fail;
	e = -EBADMSG;
	for (size_t i = 0; i < p->nsh; i++) {
		Elf64_Shdr *s = &p->sh[i];
		Elf64_Chdr ch;
		__u64 align;

		if (!(s->sh_flags & SHF_COMPRESSED) || s->sh_type == SHT_NOBITS)
			continue;
		if (s->sh_offset > src_size || src_size - s->sh_offset < s->sh_size || s->sh_size < sizeof(ch) ||
		    pread_full(fd, &ch, sizeof(ch), s->sh_offset))
			goto fail;
		if (ch.ch_type != ELFCOMPRESS_ZLIB) {
			e = -ENOTSUP;
			goto fail;
		}
		align = ch.ch_addralign ? ch.ch_addralign : 1;
		if (align > ZD_MAX_ALIGN || (align & (align - 1)))
			goto fail;
		/* Summed over every section before anything is written: a file's hundred modest claims are one large one. */
		*claim += ch.ch_size;
		if (ch.ch_size > (s->sh_size - sizeof(ch)) * ZLIB_MAX_RATIO + 64 || *claim > max) {
			e = -EFBIG;
			goto fail;
		}
		p->from[i] = s->sh_offset + sizeof(ch);
		p->zlen[i] = s->sh_size - sizeof(ch);
		off = round_up(off, align);
		s->sh_offset = off;
		s->sh_size = ch.ch_size;
		s->sh_addralign = ch.ch_addralign;
		s->sh_flags &= ~(__u64)SHF_COMPRESSED;
		off += ch.ch_size;
		p->inflated += ch.ch_size;
		p->ncomp++;
	}
	if (!p->ncomp) {
		e = -ENOENT;
		goto fail;
	}
	p->eh.e_shoff = round_up(off, 8);
	p->total = p->eh.e_shoff + p->nsh * sizeof(*p->sh) + sizeof(struct zd_trailer);
	if (p->total > max + src_size) {
		e = -EFBIG;
		goto fail;
	}
	return 0;
fail:
	plan_free(p);
	return e;
}

static void trailer_of(const struct stat *src, const char *hex, __u64 total, struct zd_trailer *t)
{
	memset(t, 0, sizeof(*t));
	memcpy(t->magic, ZD_MAGIC, sizeof(t->magic));
	t->version = ZD_VERSION;
	t->dev = src->st_dev;
	t->ino = src->st_ino;
	t->size = src->st_size;
	t->mtime_ns = (__u64)src->st_mtim.tv_sec * 1000000000ull + src->st_mtim.tv_nsec;
	t->ctime_ns = (__u64)src->st_ctim.tv_sec * 1000000000ull + src->st_ctim.tv_nsec;
	t->total = total;
	snprintf(t->hex, sizeof(t->hex), "%s", hex);
}

/*
 * Whether cfd is the copy this cache makes of the source now: ours alone,
 * of exactly the planned size, naming this source, with the planned
 * headers (what libdw will believe of the file).
 */
static bool entry_ok(int cfd, const struct stat *src, const char *hex, const struct zd_plan *p)
{
	struct zd_trailer want, got;
	Elf64_Ehdr eh;
	Elf64_Shdr *sh;
	struct stat st;
	bool ok;

	if (fstat(cfd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) ||
	    (__u64)st.st_size != p->total)
		return false;
	trailer_of(src, hex, p->total, &want);
	if (pread_full(cfd, &got, sizeof(got), p->total - sizeof(got)) || memcmp(&got, &want, sizeof(got)) ||
	    pread_full(cfd, &eh, sizeof(eh), 0) || memcmp(&eh, &p->eh, sizeof(eh)))
		return false;
	sh = malloc(p->nsh * sizeof(*sh));
	ok = sh && !pread_full(cfd, sh, p->nsh * sizeof(*sh), p->eh.e_shoff) &&
	     !memcmp(sh, p->sh, p->nsh * sizeof(*sh));
	free(sh);
	return ok;
}

/* One zlib stream of the source inflated to out at off: exactly want bytes, through two fixed buffers. */
static int inflate_section(int fd, __u64 from, __u64 zlen, int out, __u64 off, __u64 want, unsigned char *in,
			   unsigned char *buf)
{
	z_stream z = { 0 };
	__u64 done = 0;
	int zr = Z_OK, e = 0;

	if (inflateInit(&z) != Z_OK)
		return -ENOMEM;
	while (zr != Z_STREAM_END) {
		if (!z.avail_in) {
			unsigned n = (unsigned)SP_MIN(zlen, (__u64)ZD_CHUNK);

			if (!n) {
				e = -EBADMSG; /* the stream ends short of its end marker */
				break;
			}
			e = pread_full(fd, in, n, from);
			if (e)
				break;
			from += n;
			zlen -= n;
			z.next_in = in;
			z.avail_in = n;
		}
		z.next_out = buf;
		z.avail_out = ZD_CHUNK;
		zr = inflate(&z, Z_NO_FLUSH);
		if (zr != Z_OK && zr != Z_STREAM_END) {
			e = zr == Z_MEM_ERROR ? -ENOMEM : -EBADMSG;
			break;
		}
		/* Never a byte past the claim: a stream that inflates to more is refused here, not written. */
		if (ZD_CHUNK - z.avail_out > want - done) {
			e = -EBADMSG;
			break;
		}
		e = pwrite_full(out, buf, ZD_CHUNK - z.avail_out, off + done);
		if (e)
			break;
		done += ZD_CHUNK - z.avail_out;
	}
	inflateEnd(&z);
	return e ? e : done == want ? 0 : -EBADMSG;
}

/* The copy made under path: the source's bytes, the sections inflated, the headers, the trailer. */
static int entry_make(const char *path, int fd, const struct stat *src, const char *hex, const struct zd_plan *p)
{
	struct atomic_file af;
	struct zd_trailer t;
	unsigned char *in = malloc(ZD_CHUNK), *buf = malloc(ZD_CHUNK);
	int e = -ENOMEM;

	memset(&af, 0, sizeof(af));
	if (!in || !buf)
		goto cleanup;
	e = atomic_file__open(&af, path, 0600, false);
	if (e)
		goto cleanup;
	/* The source's size at its fstat bounds the copy, however it grows meanwhile; shrinking is a read error. */
	for (__u64 off = 0; off < p->src_size && !e;) {
		size_t n = (size_t)SP_MIN(p->src_size - off, (__u64)ZD_CHUNK);

		e = pread_full(fd, buf, n, off) ?: pwrite_full(af.fd, buf, n, off);
		off += n;
	}
	for (size_t i = 0; i < p->nsh && !e; i++)
		if (p->from[i])
			e = inflate_section(fd, p->from[i], p->zlen[i], af.fd, p->sh[i].sh_offset, p->sh[i].sh_size, in,
					    buf);
	trailer_of(src, hex, p->total, &t);
	if (!e)
		e = pwrite_full(af.fd, &p->eh, sizeof(p->eh), 0) ?:
			    pwrite_full(af.fd, p->sh, p->nsh * sizeof(*p->sh), p->eh.e_shoff) ?:
			    pwrite_full(af.fd, &t, sizeof(t), p->total - sizeof(t));
	if (!e)
		e = atomic_file__commit(&af);
cleanup:
	atomic_file__release(&af);
	free(in);
	free(buf);
	return e;
}

static bool hex_ok(const char *hex)
{
	size_t n = strspn(hex, "0123456789abcdef");

	return n >= 2 && n <= 2 * BUILD_ID_MAX && !hex[n];
}

static int open_entry(int dfd, const char *name, const struct stat *src, const char *hex, const struct zd_plan *p)
{
	/* O_NONBLOCK: whatever is there is opened without waiting (a FIFO is refused by entry_ok). */
	int cfd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (cfd < 0)
		return -errno;
	if (!entry_ok(cfd, src, hex, p)) {
		close(cfd);
		return -EBADMSG;
	}
	return cfd;
}

int zdebug_open_in(const char *dir, int fd, const char *hex, __u64 max)
{
	static bool said;
	char name[2 * BUILD_ID_MAX + 16], path[PATH_MAX];
	struct zd_plan p;
	struct stat src;
	__u64 claim;
	int e, dfd, cfd;

	if (!hex_ok(hex) || fstat(fd, &src) || !S_ISREG(src.st_mode))
		return -EINVAL;
	e = plan_make(fd, src.st_size, max, &p, &claim);
	if (e == -EFBIG && !said) {
		said = true;
		pr_warn("the debug file of build id %s: its compressed sections claim %llu bytes inflated, over what "
			"one file may inflate to (%llu MiB, or zlib's ratio); read as it is",
			hex, (unsigned long long)claim, (unsigned long long)(max >> 20));
	}
	if (e)
		return e;
	e = -EPERM;
	if (!file_is_fixed(fd))
		goto cleanup;
	dfd = cache_dir_open(dir);
	if (dfd < 0) {
		e = dfd;
		goto cleanup;
	}
	snprintf(name, sizeof(name), "%s.debug", hex);
	cfd = open_entry(dfd, name, &src, hex, &p);
	if (cfd >= 0) {
		/* Used now: the last the directory's bound removes. */
		futimens(cfd, NULL);
	} else {
		__u64 used = 0;
		bool measured = false;

		/* Not this cache's copy of this source (or none): made again, renamed over whatever is there. */
		if (cfd != -ENOENT)
			unlinkat(dfd, name, 0);
		dir_make_room(dfd, ZDEBUG_DIR_BYTES(max), p.total, &used, &measured);
		if (used + p.total > ZDEBUG_DIR_BYTES(max))
			e = -ENOSPC;
		else if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
			e = -ENAMETOOLONG;
		else
			e = entry_make(path, fd, &src, hex, &p);
		cfd = e ? e : open_entry(dfd, name, &src, hex, &p);
	}
	close(dfd);
	e = cfd;
cleanup:
	plan_free(&p);
	return e;
}

int zdebug_open(int fd, const char *hex)
{
	char home[PATH_MAX], dir[PATH_MAX + 32];

	if (getenv("SPANPERF_NO_ZDEBUG_CACHE") || cache_home(home, sizeof(home)))
		return -ENOENT;
	snprintf(dir, sizeof(dir), "%s/spanperf/zdebug", home);
	return zdebug_open_in(dir, fd, hex, ZDEBUG_MAX_BYTES);
}
