// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <bpf/bpf.h>

#include "buildid.h"
#include "debuginfo.h"
#include "ehcache.h"
#include "ehframe.h"
#include "ehtables.h"
#include "fileio.h"
#include "hash.h"
#include "procmaps.h"
#include "sideband.h"
#include "spanperf_abi.h"
#include "util.h"

/* An eh_files entry as written, kept here too (eh_tables.known). */
struct eh_known {
	struct sp_eh_file_key key;
	struct sp_eh_file file;
};

/* A file's table by its build id: another inode with the same build takes it. */
struct eh_bid {
	__u8 id[BUILD_ID_MAX];
	__u8 size;
	struct sp_eh_file file;
};

/* Elements [first, first + n) of an mmapable array, mapped (page-aligned) for one copy. */
struct eh_win {
	void *map, *p;
	size_t len;
};

/* A window kept open across the files of a batch (chunk_at). */
struct eh_chunk {
	struct eh_win w;
	int fd;		   /* of the array mapped */
	size_t first, n;   /* elements [first, first + n) are at w.p */
	size_t next_bytes; /* the size of the next window mapped */
	bool open;
};

struct eh_tables {
	eh_code_fn scan_fn; /* eh_tables__scan's, while it runs */
	void *scan_ctx;
	/*
	 * The mmapable eh_rows, eh_pages and eh_maps, each mapped only around
	 * a copy into it (struct eh_win): mapped whole, their 45 MiB were
	 * resident in the recorder from its start, the kernel's own pages
	 * counted a second time in its RSS (a host with a ClickHouse server
	 * fills eh_rows), where the tables need them only while written.
	 */
	int rows_fd, pages_fd, maps_fd;
	struct eh_chunk rows_win, pages_win; /* the windows rows and page entries are written through */
	/*
	 * eh_rows' chunks, made as the rows fill them (-1: not yet); used is
	 * the next free row's index across them (SP_EH_CHUNK_SHIFT).
	 */
	int chunk_fds[SP_EH_CHUNKS];
	size_t max_rows, used;
	size_t max_pages, pages_used;
	/*
	 * eh_maps, in two halves: slices are added to one until it is full,
	 * then every live process's slice is made again in the other, whose
	 * old slices no walk can still be reading by then.
	 */
	size_t max_maps, maps_used, half;
	__u32 gen;
	int files_fd, procs_fd;
	bool switching;
	struct u64_map dirty;	   /* pid whose mappings changed since its last build -> when last seen (ns) */
	struct u64_map next_build; /* pid -> when it may be built again (ns) */
	struct u64_map execd;	   /* pid -> when its last exec was seen (ns) */
	struct u64_map kthreads;   /* pid -> 1: a kernel thread at the scan (catch_up_one skips it) */
	struct sp_eh_map *scratch; /* one process's mappings being gathered */
	size_t scratch_cap;
	__u32 *slots; /* their indexes in eh_maps, for a batch update */
	size_t slots_cap;
	bool no_batch; /* the kernel refused a batch update of eh_maps: the window copy instead */
	struct eh_tables_stats st;
	struct eh_bid *bids;
	size_t nr_bids, cap_bids;
	struct u64_map bid_idx; /* hash of a build id -> index in bids + 1 */
	struct sp_eh_file vdso; /* the vDSO's rows, if have_vdso */
	bool have_vdso;
	struct eh_new_file *new_files; /* mapped since the last flush: their tables first */
	size_t nr_new_files, cap_new_files;
	struct eh_cache *cache; /* tables kept on disk; NULL: off */
	/*
	 * What eh_files holds, by the hash of its key: entries are only ever
	 * added, and only here, so a lookup of every code mapping of every
	 * process built (a syscall each, 5% of an agent's CPU) is a hash probe.
	 */
	struct eh_known *known;
	size_t nr_known, cap_known;
	struct u64_map known_idx; /* hash of a key -> index in known + 1 */
};

/* A file a process just mapped (an MMAP2), whose table is built at the next flush. */
struct eh_new_file {
	__u32 pid, maj, min;
	__u64 start, end, ino;
	char *path;
};

static int win_open(struct eh_win *w, int fd, size_t elem, size_t first, size_t n)
{
	size_t pg = sysconf(_SC_PAGESIZE), lo = first * elem, base = lo & ~(pg - 1);

	w->len = lo + (n ? n : 1) * elem - base;
	w->map = mmap(NULL, w->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, base);
	if (w->map == MAP_FAILED)
		return -errno;
	w->p = (char *)w->map + (lo - base);
	return 0;
}

static void win_close(struct eh_win *w)
{
	munmap(w->map, w->len);
}

/*
 * The window that rows (or page entries) are written through, kept open
 * from one file to the next of a batch of builds and mapped again, twice
 * the size, when a file falls past it: an mmap per file (which maps every
 * page of it at once) and an munmap (which flushes every CPU's TLB) were
 * 2.6% of record -a -g -d 0.2's CPU for its 45 files.  Closed when the
 * batch is done (chunks_release), so between batches the recorder holds
 * none of the kernel's pages, and a drain that adds one small file maps
 * no more than before.
 */
#define EH_CHUNK_MIN (64u << 10)
#define EH_CHUNK_MAX (4u << 20)

/* Elements [first, first + n) of the array at fd (of max), mapped: NULL where it cannot be. */
static void *chunk_at(struct eh_chunk *c, int fd, size_t elem, size_t max, size_t first, size_t n)
{
	size_t bytes = c->next_bytes ? c->next_bytes : EH_CHUNK_MIN, want;

	if (c->open && c->fd == fd && first >= c->first && n <= c->n && first - c->first <= c->n - n)
		return (char *)c->w.p + (first - c->first) * elem;
	if (c->open) {
		win_close(&c->w);
		c->open = false;
	}
	c->next_bytes = SP_MIN(2 * bytes, EH_CHUNK_MAX);
	want = SP_MIN(SP_MAX(n, bytes / elem), max - first);
	if (n > want || win_open(&c->w, fd, elem, first, want))
		return NULL;
	c->open = true;
	c->fd = fd;
	c->first = first;
	c->n = want;
	return c->w.p;
}

static void chunk_release(struct eh_chunk *c)
{
	if (c->open)
		win_close(&c->w);
	memset(c, 0, sizeof(*c));
}

/* A batch of builds is done: its windows closed. */
static void chunks_release(struct eh_tables *t)
{
	chunk_release(&t->rows_win);
	chunk_release(&t->pages_win);
}

/* n elements from src into the array at first; 0 or -errno. */
static int win_write(int fd, size_t elem, size_t first, const void *src, size_t n)
{
	struct eh_win w;
	int e = win_open(&w, fd, elem, first, n);

	if (e)
		return e;
	memcpy(w.p, src, n * elem);
	win_close(&w);
	return 0;
}

#ifndef ENOTSUPP
#define ENOTSUPP 524 /* the kernel's own "not supported", which bpf() may return */
#endif

/*
 * A slice into eh_maps by one batch update: mapping a window around each
 * slice and unmapping it (a TLB shootdown on every CPU) was a tenth of a
 * process's build.  Where the kernel refuses batches on this map, the
 * window copy.
 */
static int slice_write(struct eh_tables *t, size_t first, const struct sp_eh_map *src, size_t n)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u32 count = n;

	if (!t->no_batch && !array_reserve((void **)&t->slots, &t->slots_cap, n - 1, sizeof(*t->slots))) {
		for (size_t i = 0; i < n; i++)
			t->slots[i] = first + i;
		if (!bpf_map_update_batch(t->maps_fd, t->slots, src, &count, &opts))
			return 0;
		if (errno != EINVAL && errno != ENOTSUPP && errno != EOPNOTSUPP)
			return -errno;
		t->no_batch = true;
	}
	return win_write(t->maps_fd, sizeof(*src), first, src, n);
}

int eh_tables_chunk_new(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_MMAPABLE);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "eh_rows", sizeof(__u32), sizeof(struct sp_eh_row),
				SP_EH_CHUNK_ROWS, &opts);

	return fd < 0 ? -errno : fd;
}

/*
 * Chunk c's fd, made and put in eh_rows first if it is not there: -errno
 * where it cannot be.  A chunk is in eh_rows before any file's rows in it
 * are in eh_files, so a walk that finds a file finds its chunk.  The update
 * waits for an RCU grace period (the kernel's, for map-in-map updates: 6-19
 * ms here, asleep, not CPU), once per chunk.
 */
static int rows_chunk(struct eh_tables *t, size_t c)
{
	__u32 k = c;
	int fd;

	if (c >= SP_EH_CHUNKS)
		return -E2BIG;
	if (t->chunk_fds[c] >= 0)
		return t->chunk_fds[c];
	fd = eh_tables_chunk_new();
	if (fd < 0)
		return fd;
	if (bpf_map_update_elem(t->rows_fd, &k, &fd, BPF_ANY)) {
		int e = -errno;

		close(fd);
		return e;
	}
	t->chunk_fds[c] = fd;
	return fd;
}

/*
 * The most rows one file may have now: a chunk's, while another chunk can
 * be made, else what the last one has left.
 */
static size_t rows_room(const struct eh_tables *t)
{
	size_t c = t->used >> SP_EH_CHUNK_SHIFT;

	if (c >= SP_EH_CHUNKS)
		return 0;
	return c + 1 < SP_EH_CHUNKS ? SP_EH_CHUNK_ROWS : SP_EH_CHUNK_ROWS - (t->used & (SP_EH_CHUNK_ROWS - 1));
}

/*
 * Where nr rows go: at t->used if its chunk holds them, else at the start
 * of the next chunk (made now; the last one's rest stays unused, at most a
 * file's rows).  The index, or -errno.
 */
static long rows_first(struct eh_tables *t, size_t nr)
{
	size_t first = t->used, c = first >> SP_EH_CHUNK_SHIFT;
	int fd;

	if (!nr || nr > SP_EH_CHUNK_ROWS)
		return -E2BIG;
	if (c < SP_EH_CHUNKS && nr > SP_EH_CHUNK_ROWS - (first & (SP_EH_CHUNK_ROWS - 1)))
		first = ++c << SP_EH_CHUNK_SHIFT;
	fd = rows_chunk(t, c);
	return fd < 0 ? fd : (long)first;
}

/* A window on nr rows at index first (one chunk's, placed by rows_first): NULL where it cannot be mapped. */
static struct sp_eh_row *rows_at(struct eh_tables *t, size_t first, size_t nr)
{
	int fd = rows_chunk(t, first >> SP_EH_CHUNK_SHIFT);

	if (fd < 0)
		return NULL;
	return chunk_at(&t->rows_win, fd, sizeof(struct sp_eh_row), SP_EH_CHUNK_ROWS,
			first & (SP_EH_CHUNK_ROWS - 1), nr);
}

static void vdso_table(struct eh_tables *t);

int eh_tables__new(struct eh_tables **out, const struct eh_tables_fds *fds)
{
	struct eh_tables *t = calloc(1, sizeof(*t));
	struct eh_win w;
	__u32 zero = 0;
	int e;

	*out = NULL;
	if (!t) {
		if (fds->chunk0_fd >= 0)
			close(fds->chunk0_fd);
		return -ENOMEM;
	}
	for (int i = 0; i < SP_EH_CHUNKS; i++)
		t->chunk_fds[i] = -1;
	t->chunk_fds[0] = fds->chunk0_fd;
	if (fds->chunk0_fd < 0) {
		e = fds->chunk0_fd;
		goto cleanup;
	}
	if (bpf_map_update_elem(fds->rows_fd, &zero, &fds->chunk0_fd, BPF_ANY)) {
		e = -errno;
		goto cleanup;
	}
	/* Each can be mapped, as every copy will map it: said now rather than at the first table. */
	if ((e = win_open(&w, fds->chunk0_fd, sizeof(struct sp_eh_row), SP_EH_CHUNK_ROWS - 1, 1)) ||
	    (win_close(&w), e = win_open(&w, fds->maps_fd, sizeof(struct sp_eh_map), fds->max_maps - 1, 1)) ||
	    (win_close(&w), e = win_open(&w, fds->pages_fd, sizeof(struct sp_eh_page), fds->max_pages - 1, 1)))
		goto cleanup;
	win_close(&w);
	t->rows_fd = fds->rows_fd;
	t->maps_fd = fds->maps_fd;
	t->pages_fd = fds->pages_fd;
	t->max_rows = (size_t)SP_EH_CHUNKS << SP_EH_CHUNK_SHIFT;
	t->max_maps = fds->max_maps;
	t->max_pages = fds->max_pages;
	t->files_fd = fds->files_fd;
	t->procs_fd = fds->procs_fd;
	t->cache = eh_cache__new(EH_CACHE_MAX_BYTES);
	vdso_table(t);
	chunks_release(t);
	*out = t;
	return 0;
cleanup:
	if (t->chunk_fds[0] >= 0)
		close(t->chunk_fds[0]);
	free(t);
	return e;
}

/* Linux's MKDEV, as vm_file->f_inode->i_sb->s_dev holds it. */
static __u64 kernel_dev(__u32 maj, __u32 min)
{
	return ((__u64)maj << 20) | min;
}

/*
 * The file behind the mapping, checked to be the inode the kernel maps.
 * map_files (root only) gives that very inode whatever the mount namespace,
 * but needs the mapping to still exist.  The path is the fallback for an
 * MMAP2 read after its process went, and a path is whatever the process
 * made it: it counts only if it names a regular file of the same device and
 * inode, checked before the open (no device or FIFO is ever opened) and
 * again on what was opened.
 */
static int open_mapped(__u32 pid, __u64 start, __u64 end, __u32 maj, __u32 min, __u64 ino, const char *path)
{
	char mf[64];
	struct stat st;
	int pfd, fd;

	/*
	 * O_PATH first, as everywhere a name is another process's (fileio.h):
	 * a mapping of a device must not have its driver's open run.
	 */
	snprintf(mf, sizeof(mf), "/proc/%u/map_files/%llx-%llx", pid, (unsigned long long)start,
		 (unsigned long long)end);
	pfd = open(mf, O_PATH | O_CLOEXEC);
	if (pfd < 0) {
		if (!path || path[0] != '/')
			return -ENOENT;
		pfd = open(path, O_PATH | O_CLOEXEC | O_NOFOLLOW);
		if (pfd < 0)
			return -ENOENT;
	}
	if (fstat(pfd, &st) || !S_ISREG(st.st_mode) || st.st_ino != ino || major(st.st_dev) != maj ||
	    minor(st.st_dev) != min) {
		close(pfd);
		return -ESTALE;
	}
	fd = open_regular_fd(pfd);
	close(pfd);
	return fd < 0 ? -ESTALE : fd;
}

/* The entry of a build id; with add, a new one (its file to be filled in). NULL: none, or no memory. */
static struct eh_bid *by_build_id(struct eh_tables *t, const __u8 *id, __u8 size, bool add)
{
	uint64_t h = 0, *v;

	for (int i = 0; i < size; i++)
		h = hash_mix(h, id[i]);
	v = u64_map_get(&t->bid_idx, h, add);
	if (!v)
		return NULL;
	if (*v) {
		struct eh_bid *b = &t->bids[*v - 1];

		/* Another id with the same hash: neither is shared, the first keeps the slot. */
		return !add && b->size == size && !memcmp(b->id, id, size) ? b : NULL;
	}
	if (!add || array_reserve((void **)&t->bids, &t->cap_bids, t->nr_bids, sizeof(*t->bids)))
		return NULL;
	t->bids[t->nr_bids] = (struct eh_bid){ .size = size };
	memcpy(t->bids[t->nr_bids].id, id, size);
	*v = ++t->nr_bids;
	return &t->bids[*v - 1];
}

/*
 * A stripped file's separate debug file, found by its build id where the
 * symbolizer finds it (debuginfo_local_path: the host's /usr/lib/debug, or
 * what debuginfod served), for its .debug_frame: an fd, or -ENOENT.  Both
 * places are root's, never the recorded process's to choose.
 */
static int debug_file(const __u8 *id, __u8 size)
{
	char hex[2 * BUILD_ID_MAX + 1], path[PATH_MAX];

	if (!size)
		return -ENOENT;
	buildid_hex(id, size, hex);
	if (debuginfo_local_path(hex, path, sizeof(path)))
		return -ENOENT;
	return open_regular(path);
}

/* Whether the table file holds exactly tab's rows (a mapping that fails: not the same). */
static bool rows_equal(struct eh_tables *t, const struct sp_eh_file *file, const struct ehtab *tab)
{
	struct eh_win w;
	bool same;

	if (t->chunk_fds[file->first >> SP_EH_CHUNK_SHIFT] < 0 ||
	    win_open(&w, t->chunk_fds[file->first >> SP_EH_CHUNK_SHIFT], sizeof(*tab->rows),
		     file->first & (SP_EH_CHUNK_ROWS - 1), file->nr))
		return false;
	same = !memcmp(w.p, tab->rows, tab->nr * sizeof(*tab->rows));
	win_close(&w);
	return same;
}

/* Where a kept table's rows are read (eh_cache__load_at): eh_rows itself, past the rows in use. */
struct row_place {
	struct eh_tables *t;
	struct sp_eh_row *rows; /* where they went, or NULL */
	size_t first;		/* their index (rows_first) */
};

/*
 * A window on eh_rows for nr rows where rows_first puts them: rows read there are not read
 * into fresh heap pages (a page fault each) and copied again (record -a -g
 * -d 0.2 read 6 MB of rows so).  No walk reads past t->used, so what lies
 * there is unseen until add_rows counts it, and overwritten if it does not.
 */
static struct sp_eh_row *place_rows(void *ctx, size_t nr)
{
	struct row_place *pl = ctx;
	struct eh_tables *t = pl->t;
	long first;

	if (pl->rows || (first = rows_first(t, nr)) < 0)
		return NULL;
	pl->first = first;
	pl->rows = rows_at(t, first, nr);
	return pl->rows;
}

/* The cache's key of fd's table (with its debug file dfd, if >= 0); hashed: never a memo's digest. */
static int key_for(struct eh_tables *t, int fd, int dfd, const __u8 *id, __u8 id_size, bool hashed,
		   struct eh_cache_key *k)
{
	if (dfd >= 0)
		return hashed ? eh_cache__key_debug_hashed(t->cache, fd, dfd, id, id_size, k)
			      : eh_cache__key_debug(t->cache, fd, dfd, id, id_size, k);
	return hashed ? eh_cache__key_hashed(t->cache, fd, id, id_size, k) : eh_cache__key(t->cache, fd, id, id_size, k);
}

/*
 * The rows of the ELF file fd, else of its debug file, into the tables, and
 * *file saying where (or why not).  Where same (the table of a file with the
 * same build id) holds exactly these rows, they are not added again and *file
 * is same: a build id is a note any program can forge, so it says which table
 * to compare with, never which rows a file has.
 */
static void add_rows(struct eh_tables *t, int fd, const __u8 *id, __u8 id_size, const struct sp_eh_file *same,
		     struct sp_eh_file *file)
{
	struct ehtab tab = {};
	size_t room = rows_room(t);
	struct row_place pl = { .t = t };
	bool in_place = false;
	int dfd = debug_file(id, id_size), e;

	/*
	 * Where a debug file is found, its .debug_frame adds to the file's own
	 * CFI: a file stripped of it, or built without unwind tables (whose
	 * .eh_frame covers only the start-up code).
	 */
	if (!id) {
		e = ehtab_from_fd(fd, room, &tab); /* the vDSO: our own copy, nothing to keep */
	} else {
		/*
		 * A table kept on disk for exactly these inputs (ehcache.h): read,
		 * not parsed.  Refused or absent, parsed and kept for next time.  A
		 * debug file's rows are keyed by both files' bytes: parsed at every
		 * start before, 1.1% of record -a -g -d 0.2's CPU here (libc's).
		 */
		struct eh_cache_key key;
		bool keyed = !key_for(t, fd, dfd, id, id_size, false, &key);

		if (!keyed || eh_cache__load_at(t->cache, &key, room, place_rows, &pl, &tab)) {
			struct eh_cache_key after;
			bool storable = keyed && eh_cache__storable(fd) && (dfd < 0 || eh_cache__storable(dfd));

			e = dfd >= 0 ? ehtab_from_fds(fd, dfd, room, &tab) : ehtab_from_fd(fd, room, &tab);
			/*
			 * Kept only if the bytes were no one else's to change and were the
			 * same after the parse as before: the key names the bytes parsed.
			 * Kept under a digest hashed from the bytes after the parse, never
			 * a memo's (eh_cache__key_hashed): a stale memo names other bytes,
			 * and two keys from it would agree whatever was parsed.  Where the
			 * key before was a memo's, the two agree only if the memo was true
			 * of the bytes there after the parse (else nothing is kept this
			 * time, and the hash has made the memo true): one hash per miss.
			 */
			if (!e && storable && !key_for(t, fd, dfd, id, id_size, true, &after) &&
			    !memcmp(after.digest, key.digest, sizeof(key.digest)))
				eh_cache__store(t->cache, &after, &tab);
		} else {
			e = 0;
			in_place = pl.rows && tab.rows == pl.rows;
		}
		if (!e && dfd >= 0 && tab.from_debug_frame)
			t->st.from_debug++;
	}
	if (dfd >= 0)
		close(dfd);

	memset(file, 0, sizeof(*file));
	if (!e && same && same->state == SP_EH_FILE_OK && same->nr == tab.nr && rows_equal(t, same, &tab)) {
		*file = *same;
		t->st.shared++;
		goto done;
	}
	if (same && !e)
		t->st.bid_other_rows++;
	if (!e) {
		/* The page index: the rows below each page of the file's code and below the next. */
		__u32 page0 = tab.rows[0].pc >> SP_EH_PAGE_SHIFT, last = tab.rows[tab.nr - 1].pc >> SP_EH_PAGE_SHIFT;
		size_t np = (size_t)last - page0 + 1, k = 0;
		struct sp_eh_page *pages;
		struct sp_eh_row *rows = in_place ? tab.rows : NULL;
		long first = in_place ? (long)pl.first : rows_first(t, tab.nr);

		if (np > t->max_pages - t->pages_used || first < 0) {
			e = first < 0 ? (int)first : -E2BIG;
			goto done;
		}
		/* The rows' window first: the page entries' is another chunk, which cannot move it. */
		if (!rows)
			rows = rows_at(t, first, tab.nr);
		pages = chunk_at(&t->pages_win, t->pages_fd, sizeof(*pages), t->max_pages, t->pages_used, np);
		if (!rows || !pages) {
			e = -ENOMEM;
			goto done;
		}
		for (size_t i = 0; i <= np; i++) {
			__u64 start = (__u64)(page0 + i) << SP_EH_PAGE_SHIFT;

			while (k < tab.nr && tab.rows[k].pc < start)
				k++;
			if (i < np)
				pages[i].lo = k;
			if (i)
				pages[i - 1].hi = k;
		}
		if (!in_place)
			memcpy(rows, tab.rows, tab.nr * sizeof(*tab.rows));
		file->pages = t->pages_used;
		file->page0 = page0;
		file->npages = np;
		t->pages_used += np;
		file->first = first;
		file->nr = tab.nr;
		file->state = SP_EH_FILE_OK;
		t->used = first + tab.nr;
		t->st.rows += tab.nr;
		t->st.files++;
	}
done:
	/* Rows read in place are eh_rows', not tab's. */
	if (in_place)
		tab.rows = NULL;
	ehtab_free(&tab);
	if (e == -E2BIG) {
		file->state = SP_EH_FILE_TOO_LARGE;
		t->st.too_large++;
	} else if (e == -ENOENT) {
		file->state = SP_EH_FILE_NOCFI;
		t->st.nocfi++;
	} else if (e) {
		file->state = SP_EH_FILE_NOCFI;
		t->st.failed++;
	}
}

static uint64_t known_hash(const struct sp_eh_file_key *k)
{
	return hash_mix(hash_mix(0, k->dev), k->ino);
}

/* eh_files' entry for key, if it has one; the map itself where two keys share a hash. */
static bool known_get(struct eh_tables *t, const struct sp_eh_file_key *key, struct sp_eh_file *file)
{
	uint64_t *v = u64_map_get(&t->known_idx, known_hash(key), false);

	if (v && *v) {
		const struct eh_known *k = &t->known[*v - 1];

		if (k->key.dev == key->dev && k->key.ino == key->ino) {
			*file = k->file;
			return true;
		}
	}
	return !bpf_map_lookup_elem(t->files_fd, key, file);
}

/* An entry eh_files now holds, kept (the first of a hash; out of memory, not kept: the map is asked). */
static void known_add(struct eh_tables *t, const struct sp_eh_file_key *key, const struct sp_eh_file *file)
{
	uint64_t *v = u64_map_get(&t->known_idx, known_hash(key), true);

	if (!v || *v || array_reserve((void **)&t->known, &t->cap_known, t->nr_known, sizeof(*t->known)))
		return;
	t->known[t->nr_known] = (struct eh_known){ .key = *key, .file = *file };
	*v = ++t->nr_known;
}

/* The file's rows (built now if it has none yet) into *file; -1 if it cannot be read now. */
static int file_table(struct eh_tables *t, __u32 pid, __u64 start, __u64 end, __u32 maj, __u32 min, __u64 ino,
		      const char *path, struct sp_eh_file *file_out)
{
	struct sp_eh_file_key key = { .dev = kernel_dev(maj, min), .ino = ino };
	struct sp_eh_file file = {};
	struct eh_bid *shared;
	__u8 id[BUILD_ID_MAX], id_size;
	__u64 t0;
	int fd;

	/* The map (or what it was given) says whether the file was tried: exact. */
	if (known_get(t, &key, &file)) {
		*file_out = file;
		return 0;
	}
	t0 = now_ns(CLOCK_MONOTONIC);
	fd = open_mapped(pid, start, end, maj, min, ino, path);
	if (fd < 0) {
		/* Not remembered: another process's mapping of it may be readable. */
		t->st.unreadable++;
		return -1;
	}
	/*
	 * The same build in another inode (a container's copy of libc, a copied
	 * program) has the same rows: the first file's table serves it, once the
	 * rows are seen to be the same (add_rows).
	 */
	if (buildid_from_fd(fd, id, &id_size))
		id_size = 0;
	shared = id_size ? by_build_id(t, id, id_size, false) : NULL;
	add_rows(t, fd, id, id_size, shared ? &shared->file : NULL, &file);
	if (!shared && id_size && (shared = by_build_id(t, id, id_size, true)))
		shared->file = file;
	close(fd);
	/* After the rows: the sampling program never sees a file whose rows are not all there. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	if (bpf_map_update_elem(t->files_fd, &key, &file, BPF_ANY))
		t->st.failed++;
	else
		known_add(t, &key, &file);
	t->st.build_ns += now_ns(CLOCK_MONOTONIC) - t0;
	*file_out = file;
	return 0;
}

/*
 * The vDSO's rows, from our own copy of it: the kernel maps the same image
 * into every 64-bit process.  Without them a sample in clock_gettime's
 * fallback syscall, or in the vDSO itself, ended its chain there.  Its
 * mapping starts at the image's offset 0, as a file's would.
 */
static void vdso_table(struct eh_tables *t)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	char line[PATH_MAX + 128];
	struct procmap m;
	size_t len = 0;
	FILE *f;
	int fd;

	if (!base)
		return;
	f = fopen("/proc/self/maps", "re");
	while (f && fgets(line, sizeof(line), f))
		if (!procmaps_parse_line(line, &m) && m.start == base && !strcmp(m.path, "[vdso]"))
			len = m.end - m.start;
	if (f)
		fclose(f);
	fd = len ? memfd_create("spanperf-vdso", MFD_CLOEXEC) : -1;
	if (fd < 0)
		return;
	if (!write_all(fd, (const void *)base, len)) {
		add_rows(t, fd, NULL, 0, NULL, &t->vdso);
		t->have_vdso = t->vdso.state == SP_EH_FILE_OK;
	}
	close(fd);
	/* Also where BPF finds a process's vDSO before its mappings are here (no file: key 0, 0). */
	if (t->have_vdso)
		bpf_map_update_elem(t->files_fd, &(struct sp_eh_file_key){ 0, 0 }, &t->vdso, BPF_ANY);
}

static int cmp_map(const void *a, const void *b)
{
	const struct sp_eh_map *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

static int proc_build(struct eh_tables *t, __u32 pid);

static size_t half_end(const struct eh_tables *t)
{
	return (t->half + 1) * (t->max_maps / 2);
}

/* The other half: every process that has a slice gets a new one there. */
static void switch_half(struct eh_tables *t)
{
	__u32 key, next, *prev = NULL;
	__u32 *pids = NULL;
	size_t n = 0, cap = 0;

	t->half ^= 1;
	t->maps_used = t->half * (t->max_maps / 2);
	t->st.half_switches++;
	while (!bpf_map_get_next_key(t->procs_fd, prev, &next)) {
		key = next;
		prev = &key;
		if (array_reserve((void **)&pids, &cap, n, sizeof(*pids)))
			break;
		pids[n++] = key;
	}
	t->switching = true;
	/* One left pointing into the half being reused would read other slices: gone instead. */
	for (size_t i = 0; i < n; i++)
		if (proc_build(t, pids[i]))
			bpf_map_delete_elem(t->procs_fd, &pids[i]);
	t->switching = false;
	free(pids);
}

/*
 * 0, or -1 when the process could not be read or its slice found no room.
 * Its code mappings only, by PROCMAP_QUERY where the kernel has it
 * (procmaps.h): a new process was built again and again while ld.so
 * mapped its libraries, and the kernel formatting every mapping as text
 * and the parse here were 30% of an agent's CPU on a host that execs often.
 */
/* The kernel's PF_KTHREAD, in /proc/PID/stat's flags. */
#define SP_PF_KTHREAD 0x00200000ull

static int proc_build(struct eh_tables *t, __u32 pid)
{
	struct sp_eh_proc proc = {};
	__u64 flags = 0;
	struct procmaps pm;
	struct procmap m;
	size_t n = 0;
	__u64 t0;

	if (!pid)
		return -1;
	t0 = now_ns(CLOCK_MONOTONIC);
	/* Read before the maps: a stamp from after an exec would vouch for the maps before it. */
	if (proc_start_stack_flags(pid, &proc.start_stack, &flags))
		return -1;
	/*
	 * No stack, no mm: a kernel thread (64 of this host's 85 pids), or gone,
	 * whose maps hold nothing (n stays 0 below): not opened.  A kernel thread
	 * is noted for the catch-up, which then need not read its stat again.
	 */
	if (!proc.start_stack) {
		uint64_t *k = (flags & SP_PF_KTHREAD) ? u64_map_get(&t->kthreads, pid, true) : NULL;

		if (k)
			*k = 1;
		return -1;
	}
	if (procmaps_open(&pm, pid, PROCMAPS_CODE))
		return -1;
	while (procmaps_read(&pm, &m) > 0) {
		struct sp_eh_map *e;
		struct sp_eh_file file;

		if (!(m.prot & PROT_EXEC))
			continue;
		if (array_reserve((void **)&t->scratch, &t->scratch_cap, n, sizeof(*t->scratch)))
			break;
		e = &t->scratch[n];
		*e = (struct sp_eh_map){ .start = m.start, .end = m.end, .pgoff = m.pgoff, .table = SP_EH_T_ANON };
		if (m.ino) {
			/* Not again for the processes a half switch rebuilds (switch_half): told once each. */
			if (t->scan_fn && !t->switching)
				t->scan_fn(t->scan_ctx, pid, m.path);
			e->table = SP_EH_T_MISSING;
			if (!file_table(t, pid, m.start, m.end, m.maj, m.min, m.ino, m.path, &file)) {
				e->table = file.state == SP_EH_FILE_OK	      ? SP_EH_T_ROWS
					   : file.state == SP_EH_FILE_TOO_LARGE ? SP_EH_T_TOO_LARGE
										: SP_EH_T_NOCFI;
				e->first = file.first;
				e->nr = file.nr;
				e->pages = file.pages;
				e->page0 = file.page0;
				e->npages = file.npages;
			}
		} else if (t->have_vdso && !strcmp(m.path, "[vdso]")) {
			e->table = SP_EH_T_ROWS;
			e->first = t->vdso.first;
			e->nr = t->vdso.nr;
			e->pages = t->vdso.pages;
			e->page0 = t->vdso.page0;
			e->npages = t->vdso.npages;
		} else if (m.path[0] == '[') {
			continue; /* [vsyscall], or a vDSO without rows: the kernel's */
		}
		n++;
	}
	procmaps_close(&pm);
	if (n > half_end(t) - t->maps_used && !t->switching) {
		switch_half(t);
		if (n > half_end(t) - t->maps_used)
			n = 0; /* still no room */
	}
	if (!n)
		return -1; /* no code mapped (a kernel thread, or gone): nothing to keep */
	if (n > half_end(t) - t->maps_used) {
		t->st.maps_full++;
		return -1;
	}
	sort_n(t->scratch, n, sizeof(*t->scratch), cmp_map);
	if (slice_write(t, t->maps_used, t->scratch, n)) {
		t->st.maps_full++;
		return -1;
	}
	proc.first = t->maps_used;
	proc.nr = n;
	proc.gen = ++t->gen;
	t->maps_used += n;
	/* The slice is whole before the process points at it. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	if (bpf_map_update_elem(t->procs_fd, &pid, &proc, BPF_ANY)) {
		t->st.procs_full++;
		return -1;
	}
	t->st.procs++;
	t->st.build_ns += now_ns(CLOCK_MONOTONIC) - t0;
	return 0;
}

void eh_tables__proc(struct eh_tables *t, __u32 pid)
{
	if (!t)
		return;
	proc_build(t, pid);
	chunks_release(t);
}



void eh_tables__mark(struct eh_tables *t, __u32 pid)
{
	uint64_t *v;

	if (!t)
		return;
	v = u64_map_get(&t->dirty, pid, true);
	if (v)
		*v = now_ns(CLOCK_MONOTONIC);
}

void eh_tables__mark_exec(struct eh_tables *t, __u32 pid)
{
	uint64_t *v;

	if (!t)
		return;
	eh_tables__mark(t, pid);
	v = u64_map_get(&t->execd, pid, true);
	if (v)
		*v = now_ns(CLOCK_MONOTONIC);
}

/*
 * A process that maps code again and again (dlopen in a loop, a JIT) would
 * have its whole slice made again at every drain, /proc/PID/maps read each
 * time: quadratic in its mappings.  So a process waits ten times what its
 * last build took before the next, and a flush stops after FLUSH_BUDGET_NS
 * (the rest stay marked): the recording's drain is never held up for long.
 */
#define FLUSH_BUDGET_NS 20000000ull
/*
 * Except in a process's first YOUNG_NS after its exec: then ld.so maps its
 * libraries one by one, each an MMAP2, and the process unwinds by frame
 * pointer until the build after the last; waiting ten builds' time between
 * them cost its first 10 to 40 ms of chains.  One build's time, then: a
 * small process is built again within a fraction of a ms, and one that
 * maps thousands of times at its start still spends at most half its
 * recorder's time on it.
 */
#define YOUNG_NS 100000000ull
/*
 * But not in the pass that saw its last mapping: ld.so may not have mapped
 * every library yet, and a slice without one ends every chain through it (a
 * gap), where a process without a slice has its frames' mappings looked up
 * in the kernel's vmas.  So a young process is built once a pass has seen
 * none of its mappings.  Woken at the exec itself (ehsource.c), building at
 * once had cut the complete chains of a new process's first 5 ms from 80%
 * to 50% under two CPU hogs.
 */
#define SETTLE_NS 1000000ull

void eh_tables__mmap(struct eh_tables *t, __u32 pid, __u64 start, __u64 len, __u32 maj, __u32 min, __u64 ino,
		     const char *path)
{
	struct eh_new_file *f;

	if (!t || !ino || !path || path[0] != '/' ||
	    array_reserve((void **)&t->new_files, &t->cap_new_files, t->nr_new_files, sizeof(*t->new_files)))
		return;
	f = &t->new_files[t->nr_new_files];
	*f = (struct eh_new_file){ .pid = pid, .maj = maj, .min = min, .start = start, .end = start + len, .ino = ino,
				   .path = strdup(path) };
	if (f->path)
		t->nr_new_files++;
}

/*
 * The tables of files mapped since the last flush, before any process's
 * mappings are made again: a process whose slice lacks a new mapping finds
 * it among the kernel's vmas, and its rows by inode (ehframe.bpf.h), from
 * the first flush on, where its slice waits for its mappings to settle (a
 * Python program importing its extensions maps for hundreds of ms).
 */
static void flush_files(struct eh_tables *t)
{
	struct sp_eh_file file;

	for (size_t i = 0; i < t->nr_new_files; i++) {
		struct eh_new_file *f = &t->new_files[i];

		file_table(t, f->pid, f->start, f->end, f->maj, f->min, f->ino, f->path, &file);
		free(f->path);
	}
	t->nr_new_files = 0;
}

void eh_tables__flush(struct eh_tables *t)
{
	struct u64_map keep = {};
	__u64 start, now, b0;
	uint64_t *exec_ns;
	bool young;

	if (t && t->nr_new_files)
		flush_files(t);
	if (!t || !t->dirty.n) {
		if (t)
			chunks_release(t);
		return;
	}
	start = now = now_ns(CLOCK_MONOTONIC);
	for (size_t i = 0; i < t->dirty.cap; i++) {
		__u32 pid = t->dirty.slot[i].key;
		uint64_t *next, *k;

		if (!t->dirty.used[i])
			continue;
		next = u64_map_get(&t->next_build, pid, true);
		exec_ns = u64_map_get(&t->execd, pid, false);
		young = exec_ns && now - *exec_ns < YOUNG_NS;
		if (now - start > FLUSH_BUDGET_NS || (next && now < *next) ||
		    (young && now - t->dirty.slot[i].val < SETTLE_NS)) {
			k = u64_map_get(&keep, pid, true);
			if (k)
				*k = t->dirty.slot[i].val;
			continue;
		}
		b0 = now;
		proc_build(t, pid);
		t->st.flush_builds++;
		now = now_ns(CLOCK_MONOTONIC);
		if (next)
			*next = now + (young ? 1 : 10) * (now - b0);
	}
	u64_map_free(&t->dirty);
	t->dirty = keep;
	chunks_release(t);
}

bool eh_tables__pending(const struct eh_tables *t)
{
	return t && t->dirty.n;
}

void eh_tables__fork(struct eh_tables *t, __u32 ppid, __u32 pid, bool copied)
{
	struct sp_eh_proc proc;

	if (!t)
		return;
	/*
	 * BPF copied the parent's entry as the child was made (sample.bpf.c,
	 * eh_fork): a lookup instead of a lookup and a write.  Copied still when
	 * the child has none: its parent had no slice yet then and may have one
	 * now, -p left the fork to here, or an exit read since took a reused
	 * pid's entry out.
	 */
	if (copied && !bpf_map_lookup_elem(t->procs_fd, &pid, &proc))
		return;
	/* Slices never change: the child shares its parent's until it maps something of its own. */
	if (!bpf_map_lookup_elem(t->procs_fd, &ppid, &proc))
		bpf_map_update_elem(t->procs_fd, &pid, &proc, BPF_ANY);
}

void eh_tables__exit(struct eh_tables *t, __u32 pid)
{
	if (!t)
		return;
	bpf_map_delete_elem(t->procs_fd, &pid);
	/*
	 * Its build, if one is pending, would read a /proc entry that is gone;
	 * and its times kept would grow the maps by every pid the host ever
	 * ran (up to pid_max: 4M where systemd sets it, some 17-68 bytes a pid
	 * in each map, hundreds of MB).
	 */
	u64_map_del(&t->dirty, pid);
	u64_map_del(&t->next_build, pid);
	u64_map_del(&t->execd, pid);
}

static int scan_one(void *t, __u32 pid)
{
	proc_build(t, pid);
	return 0;
}

void eh_tables__scan(struct eh_tables *t, const struct int_list *pids, eh_code_fn fn, void *ctx)
{
	if (!t)
		return;
	t->scan_fn = fn;
	t->scan_ctx = ctx;
	sideband_each_pid(pids, scan_one, t);
	t->scan_fn = NULL;
	chunks_release(t);
}

/* Marked if it has no slice, or one made before its last exec. */
static int catch_up_one(void *ctx, __u32 pid)
{
	struct eh_tables *t = ctx;
	struct sp_eh_proc proc;
	__u64 ss;

	/*
	 * A kernel thread at the scan is one still: a PF_KTHREAD task cannot
	 * exec (kernel_execve refuses it), and its pid is not another's until
	 * the kernel's pids wrap around, not in the ms since the scan.
	 */
	if (eh_tables__kthread(t, pid))
		return 0;
	if (proc_start_stack(pid, &ss) || !ss)
		return 0; /* gone, or a kernel thread: no user stack */
	if (bpf_map_lookup_elem(t->procs_fd, &pid, &proc) || ss != proc.start_stack) {
		eh_tables__mark(t, pid);
		t->st.caught_up++;
	}
	return 0;
}

bool eh_tables__kthread(void *ctx, __u32 pid)
{
	struct eh_tables *t = ctx;
	uint64_t *k = t ? u64_map_get(&t->kthreads, pid, false) : NULL;

	return k && *k;
}

void eh_tables__catch_up(struct eh_tables *t, const struct int_list *pids)
{
	if (t)
		sideband_each_pid(pids, catch_up_one, t);
}

void eh_tables__stats(const struct eh_tables *t, struct eh_tables_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!t)
		return;
	*st = t->st;
	st->max_rows = t->max_rows;
	for (int i = 0; i < SP_EH_CHUNKS; i++)
		st->chunks += t->chunk_fds[i] >= 0;
	st->maps = t->maps_used;
	st->max_maps = t->max_maps;
	st->pages = t->pages_used;
	eh_cache__stats(t->cache, &st->cache);
}

void eh_tables__free(struct eh_tables *t)
{
	if (!t)
		return;
	u64_map_free(&t->dirty);
	u64_map_free(&t->next_build);
	u64_map_free(&t->execd);
	u64_map_free(&t->kthreads);
	u64_map_free(&t->bid_idx);
	u64_map_free(&t->known_idx);
	chunks_release(t);
	for (int i = 0; i < SP_EH_CHUNKS; i++)
		if (t->chunk_fds[i] >= 0)
			close(t->chunk_fds[i]);
	free(t->known);
	eh_cache__free(t->cache);
	free(t->bids);
	free(t->scratch);
	free(t->slots);
	for (size_t i = 0; i < t->nr_new_files; i++)
		free(t->new_files[i].path);
	free(t->new_files);
	free(t);
}
