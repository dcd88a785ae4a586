// SPDX-License-Identifier: GPL-2.0
#include <stdbool.h>
#include <string.h>

#include "sha256.h"

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror(uint32_t x, int n)
{
	return (x >> n) | (x << (32 - n));
}

/* The compression function, in the usual eight rotating variables: no copies in the loop. */
static void block(struct sha256 *s, const uint8_t *p)
{
	uint32_t w[64], a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4], f = s->h[5],
			g = s->h[6], h = s->h[7];

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
		uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));

		h = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	s->h[0] += a;
	s->h[1] += b;
	s->h[2] += c;
	s->h[3] += d;
	s->h[4] += e;
	s->h[5] += f;
	s->h[6] += g;
	s->h[7] += h;
}

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

/*
 * The same on x86's SHA extensions (Goldmont, Zen, Ice Lake and later):
 * five to ten times the portable code, which matters because record hashes
 * every byte it copies within its time budget.  The state is kept in the
 * order sha256rnds2 takes it, ABEF and CDGH; the schedule in a ring of
 * four vectors of four words.
 */
__attribute__((target("sha,sse4.1,ssse3")))
static void blocks_ni(uint32_t h[8], const uint8_t *p, size_t n)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bll, 0x0405060700010203ll);
	__m128i abcd = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xb1); /* B A D C */
	__m128i efgh = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1b); /* H G F E */
	__m128i s0 = _mm_alignr_epi8(abcd, efgh, 8);	 /* F E B A: ABEF */
	__m128i s1 = _mm_blend_epi16(efgh, abcd, 0xf0); /* H G D C: CDGH */

	for (; n--; p += 64) {
		__m128i save0 = s0, save1 = s1, w[4], m;

		for (int i = 0; i < 16; i++) {
			if (i < 4)
				w[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), bswap);
			else /* w[i % 4] holds W(i-4); the others W(i-3), W(i-2), W(i-1) in turn */
				w[i % 4] = _mm_sha256msg2_epu32(
					_mm_add_epi32(_mm_sha256msg1_epu32(w[i % 4], w[(i + 1) % 4]),
						      _mm_alignr_epi8(w[(i + 3) % 4], w[(i + 2) % 4], 4)),
					w[(i + 3) % 4]);
			m = _mm_add_epi32(w[i % 4], _mm_loadu_si128((const __m128i *)&K[4 * i]));
			s1 = _mm_sha256rnds2_epu32(s1, s0, m);
			s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(m, 0x0e));
		}
		s0 = _mm_add_epi32(s0, save0);
		s1 = _mm_add_epi32(s1, save1);
	}
	abcd = _mm_shuffle_epi32(s0, 0x1b); /* A B E F */
	efgh = _mm_shuffle_epi32(s1, 0xb1); /* G H C D */
	_mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(abcd, efgh, 0xf0));
	_mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(efgh, abcd, 8));
}

static int have_ni = -1;

static bool cpu_has_ni(void)
{
	unsigned a, b, c, d;

	if (have_ni < 0) {
		have_ni = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSSE3) && (c & bit_SSE4_1) &&
			  __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_SHA);
	}
	return have_ni;
}

void sha256_use_cpu(bool yes)
{
	have_ni = yes ? -1 : 0;
}

static void blocks(struct sha256 *s, const uint8_t *p, size_t n)
{
	if (cpu_has_ni()) {
		blocks_ni(s->h, p, n);
		return;
	}
	for (; n--; p += 64)
		block(s, p);
}
#else
void sha256_use_cpu(bool yes)
{
	(void)yes;
}

static void blocks(struct sha256 *s, const uint8_t *p, size_t n)
{
	for (; n--; p += 64)
		block(s, p);
}
#endif

void sha256_init(struct sha256 *s)
{
	static const uint32_t h0[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
					0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };

	memcpy(s->h, h0, sizeof(h0));
	s->len = 0;
}

void sha256_update(struct sha256 *s, const void *data, size_t n)
{
	const uint8_t *p = data;
	size_t have = s->len % 64;

	s->len += n;
	if (have) {
		size_t take = n < 64 - have ? n : 64 - have;

		memcpy(s->buf + have, p, take);
		p += take;
		n -= take;
		if (have + take < 64)
			return;
		blocks(s, s->buf, 1);
	}
	blocks(s, p, n / 64);
	p += n / 64 * 64;
	memcpy(s->buf, p, n % 64);
}

void sha256_final(struct sha256 *s, uint8_t out[SHA256_SIZE])
{
	uint64_t bits = s->len * 8;
	uint8_t pad[72] = { 0x80 };
	size_t padlen = (s->len % 64 < 56 ? 56 : 120) - s->len % 64;

	for (int i = 0; i < 8; i++)
		pad[padlen + i] = bits >> (56 - 8 * i);
	sha256_update(s, pad, padlen + 8);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = s->h[i] >> 24;
		out[4 * i + 1] = s->h[i] >> 16;
		out[4 * i + 2] = s->h[i] >> 8;
		out[4 * i + 3] = s->h[i];
	}
}

void sha256_hex(const uint8_t d[SHA256_SIZE], char out[2 * SHA256_SIZE + 1])
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < SHA256_SIZE; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[2 * SHA256_SIZE] = 0;
}
