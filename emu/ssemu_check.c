/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The checks the whole emulator makes on what it reads from a segment: the
 * verdict that marks a fabric broken (ssemu_fail) and the CRC of payloads
 * and events (ssemu_crc).  A leaf: it calls nothing of the emulator but the
 * log, so that the model and the store both use it without a circle.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ssemu_compiler.h"
#include "ssemu_atomic.h"
#include "ssemu_check.h"

bool ssemu_fail(struct ssemu_region *r, const char *fmt, ...)
{
	struct ssemu_verdict *v =
		(struct ssemu_verdict *)((char *)r + SSEMU_VERDICT_OFF);
	uint32_t zero = 0;
	va_list ap;

	if (!ssemu_cas(&v->broken, &zero, 1))
		return true;	/* said once already */
	va_start(ap, fmt);
	vsnprintf(v->why, sizeof(v->why), fmt, ap);
	va_end(ap);
	v->why[sizeof(v->why) - 1] = 0;
	ssemu_log(SSEMU_LOG_WARN, "the fabric segment is corrupt (%s): the "
		  "fabric is marked broken, every call on it now fails with "
		  "EIO; `slingshot-emu clean` removes it", v->why);
	return true;
}

/* 1: fold where the CPU can (tests set 0 to check the streams' path) */
int ssemu_crc_fold = 1;

#if defined(__x86_64__)
/*
 * CRC-32C with the SSE4.2 instruction.  One crc32 instruction takes three
 * cycles but a new one may start every cycle, so a buffer is taken as
 * three interleaved streams, each a block of CRC_LONG bytes (then
 * CRC_SHORT, for what is left: a packet's payload is a few KiB), and the
 * three register values are joined as one: the CRC register is linear,
 * raw(r, A B) = shift(raw(r, A), |B|) ^ raw(0, B), where shift multiplies
 * by x^(8 |B|) modulo the polynomial (as zlib's crc32_combine does).  A
 * shift by a block's length is linear in the register's 32 bits: four
 * table lookups, one per byte, from tables made once.
 */
#define CRC32C_POLY 0x82f63b78u	/* reflected */
#define CRC_LONG 8192u		/* bytes per stream and round */
#define CRC_SHORT 256u

/* a * b modulo the polynomial, bit-reflected. */
static uint32_t crc_mulmod(uint32_t a, uint32_t b)
{
	uint32_t m = 1u << 31, p = 0;

	for (;;) {
		if (a & m) {
			p ^= b;
			if (!(a & (m - 1)))
				break;
		}
		m >>= 1;
		b = b & 1 ? (b >> 1) ^ CRC32C_POLY : b >> 1;
	}
	return p;
}

/* x^@n modulo the polynomial, bit-reflected (x^d in bit 31 - d). */
static uint32_t crc_xpow(uint64_t n)
{
	uint32_t x2k = 1u << 30;	/* x^1, then x^2, x^4, ... */
	uint32_t p = 1u << 31;		/* x^0 */

	for (; n; n >>= 1) {
		if (n & 1)
			p = crc_mulmod(x2k, p);
		x2k = crc_mulmod(x2k, x2k);
	}
	return p;
}

/* x^(8 @bytes) modulo the polynomial: the operator of a shift by @bytes
 * zero bytes. */
static uint32_t crc_shift_op(uint64_t bytes)
{
	return crc_xpow(bytes * 8);
}

/* The shifts by CRC_LONG and CRC_SHORT bytes, by the register's bytes. */
static uint32_t crc_long_tab[4][256], crc_short_tab[4][256];
static pthread_once_t crc_tab_once = PTHREAD_ONCE_INIT;

static void crc_tab_make(uint32_t t[4][256], uint32_t op)
{
	uint32_t k, b;

	for (k = 0; k < 4; k++)
		for (b = 0; b < 256; b++)
			t[k][b] = crc_mulmod(op, b << (8 * k));
}

static void crc_tabs_make(void)
{
	crc_tab_make(crc_long_tab, crc_shift_op(CRC_LONG));
	crc_tab_make(crc_short_tab, crc_shift_op(CRC_SHORT));
}

static inline uint32_t crc_shift(const uint32_t t[4][256], uint32_t c)
{
	return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^
	       t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
}

__attribute__((target("sse4.2"))) static inline uint64_t
crc32c_run(uint64_t crc, const uint8_t *b, size_t n)
{
	uint64_t v;

	for (; n >= 8; n -= 8, b += 8) {
		memcpy(&v, b, sizeof(v));
		crc = __builtin_ia32_crc32di(crc, v);
	}
	for (; n; n--, b++)
		crc = __builtin_ia32_crc32qi((uint32_t)crc, *b);
	return crc;
}

/* Rounds of three interleaved blocks of @block bytes, @t its shift, while
 * @*n allows; the register @crc goes on from them. */
__attribute__((target("sse4.2"))) static inline uint64_t
crc32c_rounds(uint64_t crc, const uint8_t **b, size_t *n, size_t block,
	      const uint32_t t[4][256])
{
	const uint8_t *p = *b;
	uint64_t c1, c2, v;
	size_t i;

	for (; *n >= 3 * block; *n -= 3 * block, p += 3 * block) {
		c1 = c2 = 0;
		for (i = 0; i < block; i += 8) {
			memcpy(&v, p + i, sizeof(v));
			crc = __builtin_ia32_crc32di(crc, v);
			memcpy(&v, p + block + i, sizeof(v));
			c1 = __builtin_ia32_crc32di(c1, v);
			memcpy(&v, p + 2 * block + i, sizeof(v));
			c2 = __builtin_ia32_crc32di(c2, v);
		}
		crc = crc_shift(t, (uint32_t)crc) ^ (uint32_t)c1;
		crc = crc_shift(t, (uint32_t)crc) ^ (uint32_t)c2;
	}
	*b = p;
	return crc;
}

/*
 * Long buffers by folding, where the CPU multiplies carry-less on 512-bit
 * registers (VPCLMULQDQ): 256 bytes a step as sixteen 128-bit chunks, each
 * carried forward over the 2048 bits to the next step's chunk in its place
 * and added to it, then the chunks folded into one, which the crc32
 * instruction finishes with the bytes left.  Carrying a chunk C of two
 * 64-bit halves A (first in memory) and B forward by D bits is
 *	C x^D = A x^(64+D) + B x^D = A K1 + B K2  (mod P),
 * with K1 = x^(63+D) and K2 = x^(D-1) mod P: in the reflected bit order
 * a 64 by 64 bit product comes out one bit short, hence the -1.  The
 * register's value goes in by xor over the first four bytes, as the
 * instruction's own would.  Four to five times the three streams' speed
 * on 512 bytes to 16 KiB, twice on 256 (benchmarks/README.md); below
 * CRC_FOLD_MIN a step would not fill.
 */
#define CRC_FOLD_MIN 256u

/* Carry-less multipliers: K1, K2 for distances 2048, 512, 384, 256, 128. */
enum { FOLD_2048, FOLD_512, FOLD_384, FOLD_256, FOLD_128, FOLD_N };
static uint64_t crc_fold_k[FOLD_N][2];
static pthread_once_t crc_fold_once = PTHREAD_ONCE_INIT;

/* x^@n mod P, in the reflected order of a 64-bit multiplier (the
 * coefficient of x^d in bit 63 - d): crc_xpow's in the high half. */
static uint64_t crc_fold_const(uint32_t n)
{
	return (uint64_t)crc_xpow(n) << 32;
}

static void crc_fold_make(void)
{
	static const uint32_t d[FOLD_N] = { 2048, 512, 384, 256, 128 };
	unsigned i;

	for (i = 0; i < FOLD_N; i++) {
		crc_fold_k[i][0] = crc_fold_const(63 + d[i]);
		crc_fold_k[i][1] = crc_fold_const(d[i] - 1);
	}
}

#define FOLD_TARGET "sse4.2,pclmul,avx512f,avx512vl,vpclmulqdq"

/* The chunks of @x carried forward over the distance of @k's pair (one
 * pair in every 128-bit lane). */
__attribute__((target(FOLD_TARGET))) static inline __m512i
fold512(__m512i x, __m512i k)
{
	return _mm512_xor_si512(_mm512_clmulepi64_epi128(x, k, 0x00),
				_mm512_clmulepi64_epi128(x, k, 0x11));
}

__attribute__((target(FOLD_TARGET))) static inline __m128i
fold128(__m128i x, __m128i k)
{
	return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
			     _mm_clmulepi64_si128(x, k, 0x11));
}

__attribute__((target(FOLD_TARGET))) static inline __m128i
fold_k128(unsigned which)
{
	return _mm_loadu_si128((const __m128i *)crc_fold_k[which]);
}

/* A 512-bit load from @b, stored to @d too (NULL: not). */
__attribute__((target(FOLD_TARGET))) static inline __m512i
load512(const uint8_t *b, uint8_t *d)
{
	__m512i z = _mm512_loadu_si512(b);

	if (d)
		_mm512_storeu_si512(d, z);
	return z;
}

__attribute__((target(FOLD_TARGET))) static inline __m128i
load128(const uint8_t *b, uint8_t *d)
{
	__m128i x = _mm_loadu_si128((const __m128i *)b);

	if (d)
		_mm_storeu_si128((__m128i *)d, x);
	return x;
}

/*
 * The register @crc (raw) gone on over @n >= CRC_FOLD_MIN bytes at @b;
 * with @d, each byte stored there as it is read (one read: what is stored
 * is what the CRC covers).
 */
__attribute__((target(FOLD_TARGET), always_inline)) static inline uint64_t
crc32c_fold_at(uint64_t crc, const uint8_t *b, uint8_t *d, size_t n)
{
	__m512i z0, z1, z2, z3, k;
	__m128i x, c0, c1, c2, c3;
	uint8_t tail[16];
	uint64_t lo, hi;

	z0 = load512(b, d);
	z1 = load512(b + 64, d ? d + 64 : NULL);
	z2 = load512(b + 128, d ? d + 128 : NULL);
	z3 = load512(b + 192, d ? d + 192 : NULL);
	z0 = _mm512_xor_si512(z0, _mm512_zextsi128_si512(
					  _mm_cvtsi32_si128((int)crc)));
	b += 256;
	d = d ? d + 256 : NULL;
	n -= 256;
	k = _mm512_broadcast_i32x4(fold_k128(FOLD_2048));
	for (; n >= 256; n -= 256, b += 256, d = d ? d + 256 : NULL) {
		z0 = _mm512_xor_si512(fold512(z0, k), load512(b, d));
		z1 = _mm512_xor_si512(fold512(z1, k),
				      load512(b + 64, d ? d + 64 : NULL));
		z2 = _mm512_xor_si512(fold512(z2, k),
				      load512(b + 128, d ? d + 128 : NULL));
		z3 = _mm512_xor_si512(fold512(z3, k),
				      load512(b + 192, d ? d + 192 : NULL));
	}
	/* the four registers into the last, 64 bytes apart */
	k = _mm512_broadcast_i32x4(fold_k128(FOLD_512));
	z1 = _mm512_xor_si512(z1, fold512(z0, k));
	z2 = _mm512_xor_si512(z2, fold512(z1, k));
	z3 = _mm512_xor_si512(z3, fold512(z2, k));
	for (; n >= 64; n -= 64, b += 64, d = d ? d + 64 : NULL)
		z3 = _mm512_xor_si512(fold512(z3, k), load512(b, d));
	/* its four chunks into one */
	c0 = _mm512_extracti32x4_epi32(z3, 0);
	c1 = _mm512_extracti32x4_epi32(z3, 1);
	c2 = _mm512_extracti32x4_epi32(z3, 2);
	c3 = _mm512_extracti32x4_epi32(z3, 3);
	x = _mm_xor_si128(
		_mm_xor_si128(fold128(c0, fold_k128(FOLD_384)),
			      fold128(c1, fold_k128(FOLD_256))),
		_mm_xor_si128(fold128(c2, fold_k128(FOLD_128)), c3));
	for (; n >= 16; n -= 16, b += 16, d = d ? d + 16 : NULL)
		x = _mm_xor_si128(fold128(x, fold_k128(FOLD_128)),
				  load128(b, d));
	/* the last chunk's CRC from zero, then the bytes left */
	lo = (uint64_t)_mm_cvtsi128_si64(x);
	hi = (uint64_t)_mm_extract_epi64(x, 1);
	crc = __builtin_ia32_crc32di(0, lo);
	crc = __builtin_ia32_crc32di(crc, hi);
	if (d && n) {
		memcpy(tail, b, n);
		memcpy(d, tail, n);
		b = tail;
	}
	return crc32c_run(crc, b, n);
}

__attribute__((target(FOLD_TARGET))) static uint64_t
crc32c_fold(uint64_t crc, const uint8_t *b, size_t n)
{
	return crc32c_fold_at(crc, b, NULL, n);
}

__attribute__((target(FOLD_TARGET))) static uint64_t
crc32c_fold_copy(uint64_t crc, uint8_t *d, const uint8_t *b, size_t n)
{
	return crc32c_fold_at(crc, b, d, n);
}

/* Fold (1) or not (0), decided once: the CPU's features.  (A thread
 * that reads 1 reads the multipliers made before it was stored.) */
static int crc_fold_ok(void)
{
	static int ok = -1;
	int v = ssemu_load_acquire(&ok);

	if (unlikely(v < 0)) {
		v = __builtin_cpu_supports("pclmul") &&
		    __builtin_cpu_supports("avx512f") &&
		    __builtin_cpu_supports("avx512vl") &&
		    __builtin_cpu_supports("vpclmulqdq");
		if (v)
			pthread_once(&crc_fold_once, crc_fold_make);
		ssemu_store_release(&ok, v);
	}
	return v && ssemu_load_relaxed(&ssemu_crc_fold);
}

SSEMU_HOT
__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw(uint32_t seed, const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t crc = ~seed & 0xffffffffu;

	if (n >= CRC_FOLD_MIN && crc_fold_ok())
		return ~(uint32_t)crc32c_fold(crc, b, n);
	if (n >= 3 * CRC_SHORT) {
		pthread_once(&crc_tab_once, crc_tabs_make);
		crc = crc32c_rounds(crc, &b, &n, CRC_LONG, crc_long_tab);
		crc = crc32c_rounds(crc, &b, &n, CRC_SHORT, crc_short_tab);
	}
	return ~(uint32_t)crc32c_run(crc, b, n);
}
#endif

#if defined(__x86_64__)
/* Has the CPU the crc32 instruction?  (Read once.) */
static inline int crc_hw(void)
{
	static int hw_cache = -1;
	int hw = ssemu_load_relaxed(&hw_cache);

	if (unlikely(hw < 0)) {
		hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
		ssemu_store_relaxed(&hw_cache, hw);
	}
	return hw;
}
#endif

/*
 * Where the CPU has it (every process of a fabric runs on one host, so
 * all of them choose alike), CRC-32C in hardware; else zlib's CRC-32.
 * Folded or in streams, CRC-32C is the same value.
 */
SSEMU_HOT
uint32_t ssemu_crc(uint32_t seed, const void *p, size_t n)
{
	uLong crc = seed;

#if defined(__x86_64__)
	if (crc_hw())
		return crc32c_hw(seed, p, n);
#endif

	/* (zlib takes at most UINT_MAX bytes at a time) */
	while (n) {
		uInt k = n > UINT32_MAX ? UINT32_MAX : (uInt)n;

		crc = crc32(crc, p, k);
		p = (const char *)p + k;
		n -= k;
	}
	return (uint32_t)crc;
}

/* Copied through a bounce of this size where the CRC is not folded. */
#define CRC_COPY_BOUNCE 4096

SSEMU_HOT
uint32_t ssemu_crc_copy(uint32_t seed, void *dst, const void *src, size_t n)
{
	uint8_t bounce[CRC_COPY_BOUNCE], *d = dst;
	const uint8_t *b = src;
	size_t k;

#if defined(__x86_64__)
	if (n >= CRC_FOLD_MIN && crc_hw() && crc_fold_ok())
		return ~(uint32_t)crc32c_fold_copy(~seed & 0xffffffffu, d, b,
						   n);
#endif
	for (; n; n -= k, b += k, d += k) {
		k = SSEMU_MIN(n, sizeof(bounce));
		memcpy(bounce, b, k);
		seed = ssemu_crc(seed, bounce, k);
		memcpy(d, bounce, k);
	}
	return seed;
}
