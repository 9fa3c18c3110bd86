/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of emu/ssemu_check.c's CRC: against a bit-at-a-time
 * reference (CRC-32C where the CPU has the instruction, zlib's CRC-32
 * otherwise), for lengths around the interleaved path's block boundaries
 * and every length the folding path takes apart (its 256, 64 and 16-byte
 * steps and the bytes after them), at every alignment, and continued from
 * a seed as one buffer in pieces; a copy with its CRC; a message's head
 * in one call; each both with the folding path (where the CPU has it) and
 * without.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <setjmp.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "ssemu_check.h"
#include "ssemu_msg.h"

static bool have_hw(void)
{
#if defined(__x86_64__)
	return __builtin_cpu_supports("sse4.2");
#else
	return false;
#endif
}

/* The reference: one bit at a time, reflected CRC-32C. */
static uint32_t crc32c_ref(uint32_t seed, const uint8_t *p, size_t n)
{
	uint32_t crc = ~seed;
	int k;

	while (n--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
	}
	return ~crc;
}

static uint32_t ref(uint32_t seed, const uint8_t *p, size_t n)
{
	if (have_hw())
		return crc32c_ref(seed, p, n);
	return (uint32_t)crc32(seed, p, (uInt)n);
}

static uint8_t *random_bytes(size_t n, uint64_t s)
{
	uint8_t *b = malloc(n);
	size_t i;

	assert_non_null(b);
	for (i = 0; i < n; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		b[i] = (uint8_t)s;
	}
	return b;
}

static void test_crc_known(void **state)
{
	(void)state;
	/* the check value of "123456789" */
	assert_int_equal(ssemu_crc(0, "123456789", 9),
			 have_hw() ? 0xe3069283u : 0xcbf43926u);
	assert_int_equal(ssemu_crc(0, NULL, 0), 0);
}

static void test_crc_lengths(void **state)
{
	const size_t block = 8192, max = 7 * block + 64, sh = 256;
	uint8_t *b = random_bytes(max + 8, 42);
	/* (the long and the short blocks' rounds, at and around their
	 * thresholds, and a packet's payload) */
	size_t lens[] = { 0, 1, 7, 8, 9, 63, 3 * sh - 1, 3 * sh, 3 * sh + 1,
			  6 * sh + 5, 2048, 2048 + 64, 3 * block - 1,
			  3 * block, 3 * block + 1, 3 * block + 7,
			  3 * block + 3 * sh + 9, 6 * block - 8,
			  6 * block, 6 * block + 13, 7 * block + 64 };
	size_t i, a;

	(void)state;
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		for (a = 0; a < 8; a++)
			assert_int_equal(ssemu_crc(0x1234u, b + a, lens[i]),
					 ref(0x1234u, b + a, lens[i]));
	free(b);
}

/* Every length up to 1,100 bytes and those around 16 KiB, at an
 * alignment and a seed of their own. */
static void test_crc_every_length(void **state)
{
	const size_t max = 16384 + 600;
	uint8_t *b = random_bytes(max + 64, 9);
	size_t n;

	(void)state;
	for (n = 0; n <= max; n = n == 1100 ? 16384 - 300 : n + 1)
		assert_int_equal(ssemu_crc((uint32_t)n * 2654435761u,
					   b + n % 61, n),
				 ref((uint32_t)n * 2654435761u, b + n % 61,
				     n));
	free(b);
}

/* A copy with its CRC: the bytes, nothing past them, the CRC of what
 * was copied, for every length the CRC's paths take apart. */
static void test_crc_copy(void **state)
{
	const size_t max = 16384 + 600;
	uint8_t *b = random_bytes(max + 64, 11), *d = malloc(max + 128);
	size_t n, a;

	(void)state;
	assert_non_null(d);
	for (n = 0; n <= max; n = n == 1100 ? 16384 - 300 : n + 1) {
		a = n % 7;
		memset(d, 0xa5, max + 128);
		assert_int_equal(ssemu_crc_copy(0x77u + (uint32_t)n, d + a,
						b + n % 61, n),
				 ref(0x77u + (uint32_t)n, b + n % 61, n));
		assert_memory_equal(d + a, b + n % 61, n);
		assert_int_equal(d[a + n], 0xa5);
		if (a)
			assert_int_equal(d[a - 1], 0xa5);
	}
	free(d);
	free(b);
}

static void test_crc_pieces(void **state)
{
	const size_t n = 100000;
	uint8_t *b = random_bytes(n, 7);
	uint32_t whole = ssemu_crc(0, b, n), crc = 0;
	size_t off = 0, k = 1;

	(void)state;
	assert_int_equal(whole, ref(0, b, n));
	/* pieces of growing sizes, each continuing from the last */
	while (off < n) {
		size_t len = k < n - off ? k : n - off;

		crc = ssemu_crc(crc, b + off, len);
		off += len;
		k = k * 3 + 1;
	}
	assert_int_equal(crc, whole);
	/* one changed bit changes it */
	b[n / 2] ^= 0x20;
	assert_int_not_equal(ssemu_crc(0, b, n), whole);
	free(b);
}

/* A message's head (source, header words, length) in one call: the CRC of
 * each field continued from the one before, and the reference's over
 * the three in a row. */
static void test_crc_msg_head(void **state)
{
	uint64_t hdr[SSEMU_HDR_WORDS], len = 0x123456789abcULL;
	ssemu_addr_t src = 0xa5a5f00d;
	uint8_t row[sizeof(src) + sizeof(hdr) + sizeof(len)];
	uint32_t crc;
	unsigned i;

	(void)state;
	for (i = 0; i < SSEMU_HDR_WORDS; i++)
		hdr[i] = 0x0102030405060708ULL * (i + 1);
	crc = ssemu_crc(0, &src, sizeof(src));
	crc = ssemu_crc(crc, hdr, sizeof(hdr));
	crc = ssemu_crc(crc, &len, sizeof(len));
	assert_int_equal(ssemu_msg_crc_head(src, hdr, len), crc);
	memcpy(row, &src, sizeof(src));
	memcpy(row + sizeof(src), hdr, sizeof(hdr));
	memcpy(row + sizeof(src) + sizeof(hdr), &len, sizeof(len));
	assert_int_equal(ssemu_msg_crc_head(src, hdr, len),
			 ref(0, row, sizeof(row)));
	hdr[2] ^= 1;
	assert_int_not_equal(ssemu_msg_crc_head(src, hdr, len), crc);
}

static int fold_on(void **state)
{
	(void)state;
	ssemu_crc_fold = 1;
	return 0;
}

static int fold_off(void **state)
{
	(void)state;
	ssemu_crc_fold = 0;
	return 0;
}

#define BOTH(t) cmocka_unit_test_setup(t, fold_on), \
		cmocka_unit_test_setup(t, fold_off)

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_crc_known),
		BOTH(test_crc_lengths),
		BOTH(test_crc_every_length),
		BOTH(test_crc_copy),
		BOTH(test_crc_pieces),
		BOTH(test_crc_msg_head),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
