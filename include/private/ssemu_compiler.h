/* SPDX-License-Identifier: BSD-2-Clause */
/* Small compiler helpers shared by emu/, prov/, tests and benchmarks. */
#ifndef SSEMU_COMPILER_H
#define SSEMU_COMPILER_H

#include <assert.h>
#include <stddef.h>

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/*
 * On the path of every message (a send, its model events, its delivery,
 * its completion and the polls that find them): the compiler puts such
 * functions together (.text.hot), 18 pages of the provider's library
 * where the files would spread them over 41.  After a context switch
 * each code page a message touches costs about 30 ns at its first use on
 * this project's virtual machines, so fewer pages make a message cheaper
 * wherever ranks take turns on the cores (benchmarks/README.md, "Code
 * pages after a context switch").
 */
#define SSEMU_HOT __attribute__((hot))

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

#ifndef container_of
#define container_of(ptr, type, field) \
	((type *)((char *)(ptr) - offsetof(type, field)))
#endif

#define SSEMU_CACHELINE 64
#define SSEMU_CACHELINE_ALIGNED __attribute__((aligned(SSEMU_CACHELINE)))
#define SSEMU_ALIGN_UP(x, a) (((x) + ((a) - 1)) & ~((__typeof__(x))(a) - 1))
#define SSEMU_MIN(a, b) ((a) < (b) ? (a) : (b))
#define SSEMU_MAX(a, b) ((a) > (b) ? (a) : (b))

#endif
