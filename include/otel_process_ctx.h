/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * otel_process_ctx.h: publish a process's OpenTelemetry context so that an
 * out-of-process profiler can read it (OTEP 4719, process context, header
 * version 2), with the thread-context reference data of OTEP 4947: the
 * `threadlocal.attribute_key_map` that names the key indexes of the
 * attributes otel_thread_ctx.h writes.  Header only, C99 or C++11, Linux.
 *
 *	static const char *const resource[] = { "service.name", "checkout", NULL };
 *	static const char *const keys[] = { "http.route", "user.id", NULL };
 *	otel_process_ctx_publish(resource, keys);   // key_index 0, 1
 *	...
 *	otel_thread_ctx_record_add_attr(&rec, 0, "/cart", 5);
 *
 * The payload is a protobuf ProcessContext { Resource resource = 1;
 * repeated KeyValue extra_attributes = 2; }: the resource attributes given
 * (string values), then in extra_attributes `threadlocal.schema_version`
 * and `threadlocal.attribute_key_map` (an array of strings; position =
 * key_index).  A reader finds the header in a mapping named
 * /memfd:OTEL_CTX, [anon_shmem:OTEL_CTX] or [anon:OTEL_CTX].
 *
 * Publishing again updates in place, as the OTEP's updating protocol says:
 * published-at is set to 0, the payload swapped, then published-at written
 * last.  Readers run on other CPUs at any time, so the fences here are real
 * ones, unlike otel_thread_ctx.h's.  Not thread-safe: publish from one
 * thread at a time, and from one translation unit (the state is static).
 * Returns 0 or -1 with errno set.
 */
#ifndef OTEL_PROCESS_CTX_H
#define OTEL_PROCESS_CTX_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41 /* Linux 5.17 */
#define PR_SET_VMA_ANON_NAME 0
#endif

#define OTEL_PROCESS_CTX_VERSION 2
#define OTEL_PROCESS_CTX_SCHEMA "tlsdesc_v1_dev"

/* The header readers find at the start of the mapping: 32 bytes, host byte order. */
struct otel_process_ctx_header {
	char signature[8];	  /* "OTEL_CTX", written last */
	uint32_t version;	  /* 2 */
	uint32_t payload_size;
	uint64_t published_at_ns; /* CLOCK_REALTIME; 0 while an update is under way */
	uint64_t payload;	  /* address of the protobuf payload */
};

#ifdef __cplusplus
static_assert(sizeof(otel_process_ctx_header) == 32, "OTEP 4719 header");
#else
_Static_assert(sizeof(struct otel_process_ctx_header) == 32, "OTEP 4719 header");
#endif

/* The one published context of the process; the payload lives as long as it is published. */
static struct {
	struct otel_process_ctx_header *hdr;
	size_t map_size;
	char *payload;
	pid_t pid; /* a forked child has no mapping (MADV_DONTFORK): it publishes its own */
} otel_process_ctx__state;

/* ---- a protobuf encoder: LEN fields and varints, all this payload needs ---- */

struct otel_pb {
	char *p;   /* NULL: only count */
	size_t n;
};

static inline void otel_pb__byte(struct otel_pb *b, uint8_t c)
{
	if (b->p)
		b->p[b->n] = (char)c;
	b->n++;
}

static inline void otel_pb__varint(struct otel_pb *b, uint64_t v)
{
	while (v >= 0x80) {
		otel_pb__byte(b, (uint8_t)(v | 0x80));
		v >>= 7;
	}
	otel_pb__byte(b, (uint8_t)v);
}

static inline size_t otel_pb__varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static inline void otel_pb__bytes(struct otel_pb *b, unsigned field, const void *p, size_t n)
{
	otel_pb__varint(b, (uint64_t)field << 3 | 2);
	otel_pb__varint(b, n);
	if (b->p)
		memcpy(b->p + b->n, p, n);
	b->n += n;
}

static inline size_t otel_pb__len_size(unsigned field, size_t n)
{
	return otel_pb__varint_size((uint64_t)field << 3 | 2) + otel_pb__varint_size(n) + n;
}

/* KeyValue { key = 1; AnyValue value = 2 { string_value = 1 } } as field `field` of its parent. */
static inline void otel_pb__kv_string(struct otel_pb *b, unsigned field, const char *key, const char *val)
{
	size_t any = otel_pb__len_size(1, strlen(val));
	size_t kv = otel_pb__len_size(1, strlen(key)) + otel_pb__len_size(2, any);

	otel_pb__varint(b, (uint64_t)field << 3 | 2);
	otel_pb__varint(b, kv);
	otel_pb__bytes(b, 1, key, strlen(key));
	otel_pb__varint(b, 2 << 3 | 2);
	otel_pb__varint(b, any);
	otel_pb__bytes(b, 1, val, strlen(val));
}

/* KeyValue { key; AnyValue { array_value = 5: ArrayValue { repeated AnyValue values = 1 } } }. */
static inline void otel_pb__kv_strings(struct otel_pb *b, unsigned field, const char *key,
				       const char *const *vals)
{
	size_t arr = 0, any, kv;

	for (size_t i = 0; vals[i]; i++)
		arr += otel_pb__len_size(1, otel_pb__len_size(1, strlen(vals[i])));
	any = otel_pb__len_size(5, arr);
	kv = otel_pb__len_size(1, strlen(key)) + otel_pb__len_size(2, any);
	otel_pb__varint(b, (uint64_t)field << 3 | 2);
	otel_pb__varint(b, kv);
	otel_pb__bytes(b, 1, key, strlen(key));
	otel_pb__varint(b, 2 << 3 | 2);
	otel_pb__varint(b, any);
	otel_pb__varint(b, 5 << 3 | 2);
	otel_pb__varint(b, arr);
	for (size_t i = 0; vals[i]; i++) {
		otel_pb__varint(b, 1 << 3 | 2);
		otel_pb__varint(b, otel_pb__len_size(1, strlen(vals[i])));
		otel_pb__bytes(b, 1, vals[i], strlen(vals[i]));
	}
}

/* ProcessContext; run once to count (b->p NULL), once to write. */
static inline void otel_pb__process_context(struct otel_pb *b, const char *const *resource,
					    const char *const *keys)
{
	size_t res = 0;

	for (size_t i = 0; resource && resource[i] && resource[i + 1]; i += 2) {
		struct otel_pb c = { NULL, 0 };

		otel_pb__kv_string(&c, 1, resource[i], resource[i + 1]);
		res += c.n;
	}
	otel_pb__varint(b, 1 << 3 | 2); /* resource */
	otel_pb__varint(b, res);
	for (size_t i = 0; resource && resource[i] && resource[i + 1]; i += 2)
		otel_pb__kv_string(b, 1, resource[i], resource[i + 1]);
	if (keys) {
		otel_pb__kv_string(b, 2, "threadlocal.schema_version", OTEL_PROCESS_CTX_SCHEMA);
		otel_pb__kv_strings(b, 2, "threadlocal.attribute_key_map", keys);
	}
}

static inline uint64_t otel_process_ctx__now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	/* Never 0: 0 means "being updated". */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + 1;
}

/*
 * Publishes (or updates) the process context: resource is "key", "value",
 * ..., NULL (string values; service.name among them, say), keys the
 * attribute key map, NULL-terminated (NULL: no thread-context reference
 * data).  Keys must not exceed 256: key_index is a u8.
 */
static inline int otel_process_ctx_publish(const char *const *resource, const char *const *keys)
{
	struct otel_pb count = { NULL, 0 }, w;
	struct otel_process_ctx_header *h = otel_process_ctx__state.hdr;
	char *old = otel_process_ctx__state.payload;
	size_t nkeys = 0;
	int fd;

	while (keys && keys[nkeys])
		nkeys++;
	if (nkeys > 256) {
		errno = EINVAL;
		return -1;
	}
	otel_pb__process_context(&count, resource, keys);
	w.p = (char *)malloc(count.n ? count.n : 1);
	w.n = 0;
	if (!w.p)
		return -1;
	otel_pb__process_context(&w, resource, keys);

	if (h && otel_process_ctx__state.pid == getpid()) {
		/* The OTEP's updating protocol: readers that see 0, or a new time, read again. */
		__atomic_store_n(&h->published_at_ns, 0, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		h->payload = (uint64_t)(uintptr_t)w.p;
		h->payload_size = (uint32_t)w.n;
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		__atomic_store_n(&h->published_at_ns, otel_process_ctx__now(), __ATOMIC_RELAXED);
		otel_process_ctx__state.payload = w.p;
		/* A reader still copying it sees published-at change and reads again. */
		free(old);
		prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)h, otel_process_ctx__state.map_size,
		      (unsigned long)"OTEL_CTX");
		return 0;
	}

	otel_process_ctx__state.map_size = (size_t)sysconf(_SC_PAGESIZE);
	/* A memfd names the mapping on any kernel (/memfd:OTEL_CTX); anonymous memory needs 5.17's prctl. */
	fd = (int)syscall(SYS_memfd_create, "OTEL_CTX", 1u /* MFD_CLOEXEC */);
	h = (struct otel_process_ctx_header *)MAP_FAILED;
	if (fd >= 0) {
		if (!ftruncate(fd, (off_t)otel_process_ctx__state.map_size))
			h = (struct otel_process_ctx_header *)mmap(NULL, otel_process_ctx__state.map_size,
								   PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
		close(fd);
	}
	if (h == MAP_FAILED)
		h = (struct otel_process_ctx_header *)mmap(NULL, otel_process_ctx__state.map_size,
							   PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (h == MAP_FAILED) {
		free(w.p);
		return -1;
	}
	/* A child must not show its parent's context as its own. */
	if (madvise(h, otel_process_ctx__state.map_size, MADV_DONTFORK)) {
		int e = errno;

		munmap(h, otel_process_ctx__state.map_size);
		free(w.p);
		errno = e;
		return -1;
	}
	h->version = OTEL_PROCESS_CTX_VERSION;
	h->payload_size = (uint32_t)w.n;
	h->payload = (uint64_t)(uintptr_t)w.p;
	h->published_at_ns = otel_process_ctx__now();
	/* Every field before the signature: a reader that sees OTEL_CTX sees them all. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	memcpy(h->signature, "OTEL_CTX", 8);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/* Fails before 5.17 or without CONFIG_ANON_VMA_NAME; the memfd's name is there anyway. */
	prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)h, otel_process_ctx__state.map_size,
	      (unsigned long)"OTEL_CTX");
	otel_process_ctx__state.hdr = h;
	otel_process_ctx__state.payload = w.p;
	otel_process_ctx__state.pid = getpid();
	free(old); /* an inherited payload: no reader can reach it */
	return 0;
}

/* The published header (NULL if none): for tests that play a writer stuck mid-update. */
static inline struct otel_process_ctx_header *otel_process_ctx_header(void)
{
	return otel_process_ctx__state.pid == getpid() ? otel_process_ctx__state.hdr : NULL;
}

/* Unpublishes: readers find no mapping afterwards. */
static inline int otel_process_ctx_drop(void)
{
	int r = 0;

	if (otel_process_ctx__state.hdr && otel_process_ctx__state.pid == getpid())
		r = munmap(otel_process_ctx__state.hdr, otel_process_ctx__state.map_size);
	otel_process_ctx__state.hdr = NULL;
	otel_process_ctx__state.pid = 0;
	/* Freed only now: a reader that raced the unmap read a mapping that is gone, not this. */
	free(otel_process_ctx__state.payload);
	otel_process_ctx__state.payload = NULL;
	return r;
}

#ifdef __cplusplus
}
#endif

#endif /* OTEL_PROCESS_CTX_H */
