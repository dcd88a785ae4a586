/* SPDX-License-Identifier: GPL-2.0 */
/*
 * perf.data files (PERFILE2, file mode) as perf 6.1 reads them:
 *   [header 104][ids][attrs + id sections][data records][feature table][features]
 * The writer writes the header last, once the offsets are known, to a
 * temporary name that it renames at the end.  The reader bounds-checks
 * every offset and size, so that no file can crash or hang it.
 */
#ifndef SP_PERF_DATA_H
#define SP_PERF_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/perf_event.h>

#include "perf_sample.h"

/* PERF_ATTR_SIZE_VER7: perf 6.1 rejects larger attrs as "incompatible". */
#define PD_ATTR_SIZE 128
#define PD_HEADER_SIZE 104
#define PD_MAX_ATTRS 4096

enum pd_feature {
	PD_FEAT_TRACING_DATA = 1,
	PD_FEAT_BUILD_ID = 2,
	PD_FEAT_HOSTNAME = 3,
	PD_FEAT_OSRELEASE = 4,
	PD_FEAT_VERSION = 5,
	PD_FEAT_ARCH = 6,
	PD_FEAT_NRCPUS = 7,
	PD_FEAT_CPUDESC = 8,
	PD_FEAT_CPUID = 9,
	PD_FEAT_TOTAL_MEM = 10,
	PD_FEAT_CMDLINE = 11,
	PD_FEAT_EVENT_DESC = 12,
	PD_FEAT_SAMPLE_TIME = 21,
	PD_FEAT_CLOCKID = 23,
	PD_FEAT_CLOCK_DATA = 29,
	/*
	 * spanperf's own, far above perf's (6.1 knows up to 31; newer perfs add
	 * from 32): perf reads only the bits it knows and skips the rest.
	 */
	PD_FEAT_SP_DIGESTS = 240,  /* the bytes of each build-id cache entry the recording relies on */
	PD_FEAT_SP_JIT_MAPS = 241, /* /tmp/perf-PID.map of containers' JITs, read while they ran */
	PD_FEAT_SP_UNWIND = 242,  /* --call-graph ehframe: why user chains ended */
	PD_FEAT_LAST, /* one past the highest id spanperf reads or writes */
	PD_FEAT_MAX = 256,
};

struct pd_build_id {
	__s32 pid;	   /* -1: the host, the only value perf 6.1 uses for lookups */
	__u16 misc;	   /* PERF_RECORD_MISC_KERNEL or _USER */
	__u8 size;	   /* bytes of id used, 20 for SHA-1 */
	__u8 id[20];
	char *filename;
};

/*
 * A build-id cache entry (buildid_cache.h) as the recording copied it: the
 * report uses an entry only if its bytes have this digest.
 */
struct pd_digest {
	__u8 size;	/* bytes of id used */
	__u8 id[20];
	__u8 sha256[32];
};

/* A JIT's perf map, its text as the process wrote it, under the pid the recording knows it by. */
struct pd_jit_map {
	__s32 pid;
	char *text;
	size_t len;
};

/* What goes into the feature sections. */
struct pd_meta {
	char *hostname, *osrelease, *version, *arch, *cpudesc, *cpuid;
	__u32 nr_cpus_avail, nr_cpus_online;
	__u64 total_mem_kb;
	int cmdline_argc;
	char **cmdline_argv;
	struct pd_build_id *build_ids;
	int nr_build_ids;
	int nr_host_build_ids; /* the first of build_ids: the host's files (not written; record's own use) */
	__u64 first_sample_ns, last_sample_ns; /* SAMPLE_TIME, if last != 0 */
	int clockid;			       /* -1: none */
	__u64 clockid_res_ns;
	__u64 clock_tod_ns, clock_ref_ns; /* CLOCK_DATA: the same instant on both clocks */
	struct pd_digest *digests;
	int nr_digests;
	bool digests_kept; /* the recorder keeps digests (the feature is there, rows or not) */
	struct pd_jit_map *jit_maps;
	int nr_jit_maps;
	/* SP_UNWIND: counts by key (names.h SP_EH_STAT_NAMES); keys the reader does not know are kept */
	struct pd_count { char *key; __u64 value; } *unwind;
	int nr_unwind;
};

void pd_meta_free(struct pd_meta *m);

/* ---- writer ---- */

struct pd_writer;
struct pd_attr;

/*
 * Where a writer's records go besides its file (or instead: a writer opened
 * without a path): the attrs once, at begin, then every record as written,
 * whole, FINISHED_ROUNDs included.  A nonzero return is the write's error.
 */
struct pd_sink {
	int (*begin)(void *arg, const struct pd_attr *attrs, int nr_attrs);
	int (*write)(void *arg, const void *p, size_t n);
	void *arg;
};

/*
 * Opens "<path>.tmp-XXXXXX" (mode 0600) next to path, an atomic_file, so that
 * an unwritable directory is reported before any recording starts.  path
 * NULL: no file; the records go to the sink alone (pd_writer__set_sink).
 */
int pd_writer__open(struct pd_writer **w, const char *path);
/*
 * Records written from now on go to sink too (NULL: no longer); its begin is
 * called at pd_writer__begin, if that is still to come.  sink must outlive
 * the writer.
 */
void pd_writer__set_sink(struct pd_writer *w, const struct pd_sink *sink);
int pd_writer__add_attr(struct pd_writer *w, const struct perf_event_attr *attr,
			const char *name, const __u64 *ids, int nr_ids);
/* Writes the provisional header, ids and attrs; data follows. */
int pd_writer__begin(struct pd_writer *w);
/* Appends to the data section (buffered). */
int pd_writer__write(struct pd_writer *w, const void *p, size_t n);
__u64 pd_writer__data_size(const struct pd_writer *w);
/*
 * A full disk (ENOSPC, EDQUOT) under the file stops the file, not the
 * writer: later records go to the sink alone, still counted in the data
 * size, and finish fails with that error (--switch-output drops the window
 * and goes on).  Without it, such a write fails as any other.
 */
void pd_writer__keep_going(struct pd_writer *w);
/* The full disk that stopped the file (keep_going), or 0. */
int pd_writer__file_error(const struct pd_writer *w);
/* Writes features and the final header, then renames: path -> path.old, tmp -> path (-EINVAL without a file). */
int pd_writer__finish(struct pd_writer *w, const struct pd_meta *meta);
/* The name finish renames to, if not open's path: one in the same directory. */
int pd_writer__retarget(struct pd_writer *w, const char *path);
/* Removes the temporary file unless finish succeeded; accepts NULL. */
void pd_writer__free(struct pd_writer *w);
const char *pd_writer__tmp_path(const struct pd_writer *w);

/* ---- reader ---- */

struct pd_attr {
	struct perf_event_attr attr;
	char *name; /* from EVENT_DESC, else NULL */
	__u64 *ids;
	__u32 nr_ids;
};

struct pd_reader {
	char *path; /* the file, or the name a reader in memory was given, for messages */
	const unsigned char *map;
	size_t size;
	bool map_copied; /* map is a heap copy: others may write the file */
	struct pd_attr *attrs;
	int nr_attrs;
	/*
	 * The records: positions (pd_iter.pos) from 0 to data_size; data holds
	 * those from base on, 8-byte aligned.  A file's are all there (base 0);
	 * a reader in memory (pd_reader__open_mem) is appended to and releases
	 * what was read, so its positions go on growing while data stays small.
	 */
	__u64 data_offset, data_size, base;
	const unsigned char *data;
	unsigned char *data_copy;  /* set when the file's data section was not aligned */
	bool in_memory;
	unsigned char *buf; /* in memory: data, cap bytes; [base, released) is still there but read */
	size_t cap;
	__u64 released;
	__u64 features[4];
	struct pd_meta meta; /* features found, decoded */
	bool have_sample_time;
	/* id -> attr, sorted for bsearch */
	struct { __u64 id; int attr; } *idx;
	size_t nr_idx; /* bounded by the file's size / 8 */
	char err[256];
};

struct pd_event {
	const struct perf_event_header *hdr;
	const struct pd_attr *attr; /* NULL for records without an id (user records) */
	struct pd_sample sample;     /* the sample, or the trailer of other kernel records */
	__u64 offset;		     /* file offset of the record */
};

struct pd_reader_opts {
	bool any_owner; /* report --force: files owned by other users than us and root are read too (perf's -f) */
};

/* o: NULL for the defaults.  On error, returns -errno and writes one sentence naming the file to err. */
int pd_reader__open(struct pd_reader **r, const char *path, const struct pd_reader_opts *o, char *err,
		    size_t errlen);
void pd_reader__free(struct pd_reader *r);
const struct pd_attr *pd_reader__attr_by_id(const struct pd_reader *r, __u64 id);
bool pd_reader__has_feature(const struct pd_reader *r, int feat);
/* The features found, as "# name : value" lines in the form of perf report --header-only. */
void pd_reader__print_features(const struct pd_reader *r, FILE *out);

/*
 * A reader of records that come as they are written (pd_sink), with the
 * attrs they were written under: no file, no features.  name is what its
 * messages call it.
 */
int pd_reader__open_mem(struct pd_reader **r, const struct pd_attr *attrs, int nr_attrs, const char *name,
			char *err, size_t errlen);
/* More records (or part of one) at the end; 0 or -ENOMEM. */
int pd_reader__append(struct pd_reader *r, const void *p, size_t n);
/*
 * Records before pos will not be read again: their memory may go.  Positions
 * stay as they were; a record before pos is read no more (-EINVAL).
 */
void pd_reader__release(struct pd_reader *r, __u64 pos);
/*
 * A mapped file's pages over positions [from, to) leave this process's
 * memory (whole pages inside the range only).  They stay in the page cache
 * and fault back unchanged when read again, so this is always safe; a pass
 * that calls it behind itself holds a window of the file, not all of it
 * (perf reads its files through a sliding mapping for the same reason).
 * Nothing for a file read into memory or a reader in memory.
 */
void pd_reader__evict(struct pd_reader *r, __u64 from, __u64 to);

struct pd_iter {
	__u64 pos; /* offset within the data section, or in the records appended */
};
/*
 * Returns 1 with the next record, 0 at the end (in memory: also before a
 * record not yet appended whole), or -EINVAL on a malformed record (r->err
 * says which and where).  ev points into r's memory until the next append
 * or release.
 */
int pd_reader__next(struct pd_reader *r, struct pd_iter *it, struct pd_event *ev);
/*
 * As pd_reader__next, but of a sample only its attr and time are read (for a
 * reader that queues samples by time and reads them later): its fields are
 * zero, and whether it is well formed is for pd_reader__next at the same
 * position to say.  Other records are read and checked whole.
 */
int pd_reader__next_time(struct pd_reader *r, struct pd_iter *it, struct pd_event *ev);

#endif
