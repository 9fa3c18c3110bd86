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

/* x^(8 @bytes) modulo the polynomial: the operator of a shift by @bytes
 * zero bytes. */
static uint32_t crc_shift_op(uint64_t bytes)
{
	uint32_t x2k = 1u << 30;	/* x^1, then x^2, x^4, ... */
	uint32_t p = 1u << 31;		/* x^0 */
	uint64_t n = bytes * 8;

	for (; n; n >>= 1) {
		if (n & 1)
			p = crc_mulmod(x2k, p);
		x2k = crc_mulmod(x2k, x2k);
	}
	return p;
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

__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw(uint32_t seed, const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t crc = ~seed & 0xffffffffu;

	if (n >= 3 * CRC_SHORT) {
		pthread_once(&crc_tab_once, crc_tabs_make);
		crc = crc32c_rounds(crc, &b, &n, CRC_LONG, crc_long_tab);
		crc = crc32c_rounds(crc, &b, &n, CRC_SHORT, crc_short_tab);
	}
	return ~(uint32_t)crc32c_run(crc, b, n);
}
#endif

/*
 * Where the CPU has it (every process of a fabric runs on one host, so
 * all of them choose alike), CRC-32C in hardware; else zlib's CRC-32.
 */
uint32_t ssemu_crc(uint32_t seed, const void *p, size_t n)
{
	uLong crc = seed;

#if defined(__x86_64__)
	static int hw_cache = -1;
	int hw = ssemu_load_relaxed(&hw_cache);

	if (unlikely(hw < 0)) {
		hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
		ssemu_store_relaxed(&hw_cache, hw);
	}
	if (hw)
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
