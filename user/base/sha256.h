/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SHA-256 (FIPS 180-4): what ties a build-id cache entry to the recording
 * that made it.  A build id is only a name its file claims for itself; the
 * digest of the bytes copied is what the report checks before using them.
 */
#ifndef SP_SHA256_H
#define SP_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHA256_SIZE 32

struct sha256 {
	uint32_t h[8];
	uint64_t len; /* bytes hashed */
	uint8_t buf[64];
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *p, size_t n);
void sha256_final(struct sha256 *s, uint8_t out[SHA256_SIZE]);
/* For tests: true (the default) uses the CPU's SHA extensions where it has them, false never. */
void sha256_use_cpu(bool yes);
/* 64 lower-case hex digits and a NUL. */
void sha256_hex(const uint8_t d[SHA256_SIZE], char out[2 * SHA256_SIZE + 1]);

#endif
