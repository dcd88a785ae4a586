/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * otel_thread_ctx.h: publish the active trace context of each thread so that
 * an out-of-process profiler can read it (OpenTelemetry OTEP 4947, thread
 * context for profilers, record version 1).  Header only, C99 or C++11.
 *
 * Exactly one translation unit of the process defines the TLS variable:
 *
 *	#define OTEL_THREAD_CTX_DEFINE
 *	#include "otel_thread_ctx.h"
 *
 * and the binary exports it in .dynsym, where readers look for it:
 *	executables:	 -Wl,--export-dynamic-symbol=otel_thread_ctx_v1 (or -rdynamic)
 *	shared objects:	 exported already (default visibility)
 * TLSDESC is the model the OTEP recommends for shared objects: build them with
 * -mtls-dialect=gnu2 on x86-64.  Executables are relaxed to local-exec by the
 * linker whatever the model.
 *
 * Writer protocol (OTEP 4947): a reader only ever reads a thread while it is
 * stopped or interrupted on its own CPU, so compiler fences suffice: a record
 * being changed in place has valid = 0 between the fences, and the pointer is
 * only swapped to a record already complete.
 *
 *	otel_thread_ctx_enter(trace_id, span_id, flags);   // this thread's record
 *	... work ...
 *	otel_thread_ctx_leave();                           // no active context
 *
 * or, for nested spans kept by the application, one record each:
 *
 *	struct otel_thread_ctx_record r;
 *	otel_thread_ctx_record_init(&r, trace_id, span_id, flags);
 *	struct otel_thread_ctx_record *prev = otel_thread_ctx_swap(&r);
 *	... work ...
 *	otel_thread_ctx_swap(prev);
 */
#ifndef OTEL_THREAD_CTX_H
#define OTEL_THREAD_CTX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The OTEP recommends at most 640 bytes for the whole record. */
#define OTEL_THREAD_CTX_MAX_SIZE 640
#define OTEL_THREAD_CTX_HEADER_SIZE 28
#define OTEL_THREAD_CTX_ATTRS_MAX (OTEL_THREAD_CTX_MAX_SIZE - OTEL_THREAD_CTX_HEADER_SIZE)

/* Packed, 2-byte aligned, host byte order: the layout readers expect. */
struct __attribute__((packed, aligned(2))) otel_thread_ctx_record {
	uint8_t trace_id[16];	/* W3C bytes; all zero: none */
	uint8_t span_id[8];
	uint8_t valid;		/* only 1 means valid */
	uint8_t trace_flags;
	uint16_t attrs_data_size;
	/* repeated { u8 key_index; u8 len; u8 val[len]; } */
	uint8_t attrs[OTEL_THREAD_CTX_ATTRS_MAX];
};

#ifdef __cplusplus
static_assert(offsetof(otel_thread_ctx_record, valid) == 24, "OTEP 4947 layout");
static_assert(offsetof(otel_thread_ctx_record, attrs) == OTEL_THREAD_CTX_HEADER_SIZE, "OTEP 4947 layout");
#else
_Static_assert(offsetof(struct otel_thread_ctx_record, valid) == 24, "OTEP 4947 layout");
_Static_assert(offsetof(struct otel_thread_ctx_record, attrs) == OTEL_THREAD_CTX_HEADER_SIZE,
	       "OTEP 4947 layout");
#endif

/*
 * The variable readers find by name.  Not static and default visibility, so
 * it reaches .dynsym; `used` keeps it in a binary that never reads it itself.
 */
#ifdef OTEL_THREAD_CTX_DEFINE
__attribute__((visibility("default"), used)) __thread struct otel_thread_ctx_record *otel_thread_ctx_v1;
#else
extern __thread struct otel_thread_ctx_record *otel_thread_ctx_v1;
#endif

/* Keeps the compiler from moving stores across it; no CPU fence is needed. */
#define OTEL_THREAD_CTX_BARRIER() __atomic_signal_fence(__ATOMIC_SEQ_CST)

static inline void otel_thread_ctx_record_init(struct otel_thread_ctx_record *r, const uint8_t trace_id[16],
					       const uint8_t span_id[8], uint8_t trace_flags)
{
	r->valid = 0;
	OTEL_THREAD_CTX_BARRIER();
	memcpy(r->trace_id, trace_id, 16);
	memcpy(r->span_id, span_id, 8);
	r->trace_flags = trace_flags;
	r->attrs_data_size = 0;
	OTEL_THREAD_CTX_BARRIER();
	r->valid = 1;
}

/*
 * Appends one attribute (key_index resolves through the process context's
 * threadlocal.attribute_key_map, OTEP 4719).  Returns 0, or -1 when the
 * record is full or the value longer than 255 bytes: the record is unchanged.
 */
static inline int otel_thread_ctx_record_add_attr(struct otel_thread_ctx_record *r, uint8_t key_index,
						  const void *val, size_t len)
{
	uint16_t at = r->attrs_data_size;

	if (len > 255 || (size_t)at + 2 + len > OTEL_THREAD_CTX_ATTRS_MAX)
		return -1;
	r->valid = 0;
	OTEL_THREAD_CTX_BARRIER();
	r->attrs[at] = key_index;
	r->attrs[at + 1] = (uint8_t)len;
	memcpy(&r->attrs[at + 2], val, len);
	r->attrs_data_size = (uint16_t)(at + 2 + len);
	OTEL_THREAD_CTX_BARRIER();
	r->valid = 1;
	return 0;
}

/* Publishes r (complete already, or NULL) and returns what was published. */
static inline struct otel_thread_ctx_record *otel_thread_ctx_swap(struct otel_thread_ctx_record *r)
{
	struct otel_thread_ctx_record *prev = otel_thread_ctx_v1;

	OTEL_THREAD_CTX_BARRIER();
	otel_thread_ctx_v1 = r;
	OTEL_THREAD_CTX_BARRIER();
	return prev;
}

/* The one record per thread that enter/leave rewrite in place. */
static inline struct otel_thread_ctx_record *otel_thread_ctx__own(void)
{
	static __thread struct otel_thread_ctx_record own;

	return &own;
}

/* Makes (trace_id, span_id) this thread's active context. */
static inline void otel_thread_ctx_enter(const uint8_t trace_id[16], const uint8_t span_id[8], uint8_t trace_flags)
{
	struct otel_thread_ctx_record *r = otel_thread_ctx__own();

	/* In place, toggling valid: the pointer may already point here. */
	otel_thread_ctx_record_init(r, trace_id, span_id, trace_flags);
	if (otel_thread_ctx_v1 != r)
		otel_thread_ctx_swap(r);
}

/* No active context on this thread. */
static inline void otel_thread_ctx_leave(void)
{
	otel_thread_ctx_swap(NULL);
}

#ifdef __cplusplus
}
#endif

#endif /* OTEL_THREAD_CTX_H */
