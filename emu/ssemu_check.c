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
/* CRC-32C with the SSE4.2 instruction: several times zlib's speed. */
__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw(uint32_t seed, const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t crc = ~seed & 0xffffffffu, v;

	for (; n >= 8; n -= 8, b += 8) {
		memcpy(&v, b, sizeof(v));
		crc = __builtin_ia32_crc32di(crc, v);
	}
	for (; n; n--, b++)
		crc = __builtin_ia32_crc32qi((uint32_t)crc, *b);
	return ~(uint32_t)crc;
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
