/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The checks every file of the emulator makes, declared apart from the
 * region's layout so that their file (ssemu_check.c) depends on nothing of
 * the emulator but the log: a segment found corrupt (ssemu_fail), the CRC
 * that payloads and events carry (ssemu_crc), and the log itself
 * (ssemu_log.c).
 */
#ifndef SSEMU_CHECK_H
#define SSEMU_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <slingshot_emu/ssemu.h>

struct ssemu_region;

/*
 * What a segment says of itself once the model found it corrupt: set once,
 * read on every call.  It opens the region's shared part (struct
 * ssemu_region's verdict, SSEMU_VERDICT_OFF bytes in: ssemu_region.h
 * asserts it), on a line of its own, away from the lock's.
 */
#define SSEMU_VERDICT_OFF 4096
struct ssemu_verdict {
	uint32_t broken;
	char why[156];
};

/*
 * A corrupt segment.  ssemu_fail marks the fabric broken (the first caller
 * logs what was wrong, once), after which every participant's calls fail
 * with -EIO and later attaches are refused; it returns true, so that
 *	if (SSEMU_BAD(r, idx >= n, "what %u", idx)) return;
 * reads as the check it is.  Everything the model reads from the segment
 * and uses as an index or an offset goes through such a check first.
 */
bool ssemu_fail(struct ssemu_region *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), cold));
#define SSEMU_BAD(r, cond, ...) \
	(unlikely(cond) ? ssemu_fail((r), __VA_ARGS__) : false)

/* The CRC every packet and message payload carries (CRC-32C where the CPU
 * has the instruction, else zlib's CRC-32), of @n bytes at @p, continuing
 * from @seed (0 to start). */
uint32_t ssemu_crc(uint32_t seed, const void *p, size_t n);
/* @n bytes from @src copied to @dst, and the CRC (ssemu_crc's, from @seed)
 * of what was copied: each byte read once, so the CRC covers exactly what
 * @dst received though @src may change meanwhile. */
uint32_t ssemu_crc_copy(uint32_t seed, void *dst, const void *src, size_t n);
/* 1 (the default): long buffers folded by carry-less multiplication where
 * the CPU has it; 0: the crc32 instruction's streams alone (the tests
 * check both ways against each other). */
extern int ssemu_crc_fold;

/* ssemu_log.c */
void ssemu_log(enum ssemu_log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
