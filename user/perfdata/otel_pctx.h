/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The OTEP 4719 process context, from bytes copied out of a process, and
 * the record spanperf keeps of it in a perf.data.
 *
 * A process publishes a 32-byte header in a mapping named
 * [anon_shmem:OTEL_CTX], [anon:OTEL_CTX] or /memfd:OTEL_CTX:
 *   char[8] "OTEL_CTX" @0, u32 version (2) @8, u32 payload size @12,
 *   u64 published-at ns @16 (0 while being updated), u64 payload pointer @24.
 * The payload is a protobuf ProcessContext (opentelemetry.proto.profiles.
 * v1development): { Resource resource = 1; repeated KeyValue
 * extra_attributes = 2; }.  Early writers (the OTEP's first reference
 * implementation) published a bare Resource instead; both are read.
 * OTEP 4947 puts `threadlocal.attribute_key_map` there, an array of strings
 * whose position is the key_index of a thread record's attributes.
 *
 * Everything in it is the process's to write: every length is checked and a
 * malformed payload is an error, never a crash.
 */
#ifndef SP_OTEL_PCTX_H
#define SP_OTEL_PCTX_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "names.h"
#include "perf_data.h"
#include "sbuf.h"
#include "spanperf_abi.h"

#define OTEL_PCTX_SIGNATURE "OTEL_CTX"
#define OTEL_PCTX_HEADER 32
#define OTEL_PCTX_VERSION 2
#define OTEL_PCTX_MAX_PAYLOAD (1u << 20) /* far above what any writer publishes */
#define OTEL_PCTX_MAX_KEYS 256		 /* key_index is a u8 */
/*
 * A key or service.name is cut to this many bytes as it is decoded, as the
 * file record keeps it (a u8 length): a process's 1 MiB key costs no more
 * than a short one.
 */
#define OTEL_PCTX_MAX_STR 255
#define OTEL_PCTX_KEY_MAP "threadlocal.attribute_key_map"

struct otel_pctx_header {
	__u32 version, payload_size;
	__u64 published_at; /* 0: an update is under way, read again */
	__u64 payload;	    /* an address in the process */
};

/*
 * 0, or: -EINVAL the signature is not OTEL_CTX; -EPROTONOSUPPORT another
 * version; -EAGAIN published-at is 0; -E2BIG the payload size is 0 or over
 * OTEL_PCTX_MAX_PAYLOAD, or the pointer is NULL.
 */
int otel_pctx_header_parse(const void *buf, size_t len, struct otel_pctx_header *h);

/* What report needs of a process context. */
struct otel_pctx {
	char *service_name; /* NULL if not published */
	char *keys[OTEL_PCTX_MAX_KEYS];
	int nkeys;
};

/*
 * Decodes a ProcessContext (or a bare Resource): 0, -EINVAL if malformed,
 * -ENOMEM.  What it keeps is bounded whatever the payload holds:
 * OTEL_PCTX_MAX_KEYS keys of OTEL_PCTX_MAX_STR bytes, and service.name.
 */
int otel_pctx_decode(const void *pb, size_t len, struct otel_pctx *out);
void otel_pctx_clear(struct otel_pctx *p);

/*
 * The attr of the perf.data records that carry process contexts: a SAMPLE
 * per process and version read, the context in RAW (magic "OPCX", versioned
 * as span records are).  Named spanperf-*, so readers that do not know it
 * skip it, and perf script lists it as one more event.
 */
#define OTEL_PCTX_REC_MAGIC 0x5843504fu /* "OPCX" in a little-endian file */
#define OTEL_PCTX_REC_VERSION 1

/* The SAMPLE record of pid's context at time t, appended to b; 0 or -ENOMEM/-E2BIG. */
int otel_pctx_rec_write(struct sbuf *b, const struct perf_event_attr *attr, __u64 id, __u32 pid, __u64 t,
			const struct otel_pctx *p);
/* A record's RAW back: 0 with *pid and *out filled, -EINVAL, or -ENOMEM. */
int otel_pctx_rec_decode(const void *raw, size_t len, __u32 *pid, struct otel_pctx *out);

/*
 * The name of attribute key idx as report prints it: the process's key, or
 * "attr.IDX" where there is no process context or no such key.
 */
const char *otel_pctx_key(const struct otel_pctx *p, unsigned idx, char buf[16]);
/*
 * An attribute value as a C string for output: NUL bytes become U+FFFD (a
 * value is bytes, and JSON and pprof want text).  buf holds 3 * 255 + 1.
 */
#define OTEL_ATTR_VALUE_MAX (3 * 255 + 1)
const char *otel_attr_value(const __u8 *val, size_t len, char *buf);

#endif
