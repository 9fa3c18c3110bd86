/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The checks the whole emulator makes on what it reads from a segment: the
 * verdict that marks a fabric broken (ssemu_fail) and the CRC of payloads
 * and events (ssemu_crc).  A leaf: it calls nothing of the emulator but the
 * log, so that the model and the store both use it without a circle.
 */
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
 * cycles but a new one may start every cycle, so a long buffer is taken
 * as three interleaved streams, each a block of CRC_BLOCK bytes, and the
 * three register values are joined as one: the CRC register is linear,
 * raw(r, A B) = shift(raw(r, A), |B|) ^ raw(0, B), where shift multiplies
 * by x^(8 |B|) modulo the polynomial (as zlib's crc32_combine does).
 */
#define CRC32C_POLY 0x82f63b78u	/* reflected */
#define CRC_BLOCK 8192u		/* bytes per stream and round */

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

__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw(uint32_t seed, const void *p, size_t n)
{
	static uint32_t shift_op;	/* crc_shift_op(CRC_BLOCK), once */
	const uint8_t *b = p;
	uint64_t crc = ~seed & 0xffffffffu, c1, c2, v;
	uint32_t op;
	size_t i;

	if (n >= 3 * CRC_BLOCK) {
		op = ssemu_load_relaxed(&shift_op);
		if (unlikely(!op)) {
			op = crc_shift_op(CRC_BLOCK);
			ssemu_store_relaxed(&shift_op, op);
		}
		for (; n >= 3 * CRC_BLOCK; n -= 3 * CRC_BLOCK,
					   b += 3 * CRC_BLOCK) {
			c1 = c2 = 0;
			for (i = 0; i < CRC_BLOCK; i += 8) {
				memcpy(&v, b + i, sizeof(v));
				crc = __builtin_ia32_crc32di(crc, v);
				memcpy(&v, b + CRC_BLOCK + i, sizeof(v));
				c1 = __builtin_ia32_crc32di(c1, v);
				memcpy(&v, b + 2 * CRC_BLOCK + i, sizeof(v));
				c2 = __builtin_ia32_crc32di(c2, v);
			}
			crc = crc_mulmod(op, (uint32_t)crc) ^ (uint32_t)c1;
			crc = crc_mulmod(op, (uint32_t)crc) ^ (uint32_t)c2;
		}
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
