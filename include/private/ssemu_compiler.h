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

/*
 * A function whose only effect is to ask for cache lines
 * (__builtin_prefetch): GCC takes it for a function without side effects
 * and drops every call to it, prefetches and all, unless it is inlined
 * before that analysis (GCC 12 at -O1 and above).  Every such helper is
 * declared with this.
 */
#define SSEMU_PREFETCH_FN inline __attribute__((always_inline))

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
