/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Acquire/release wrappers for fields shared between processes.  Every
 * cross-process field is read and written only through these; each barrier
 * names its partner at the call site.
 */
#ifndef SSEMU_ATOMIC_H
#define SSEMU_ATOMIC_H

#include <stdint.h>

#define ssemu_load_relaxed(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define ssemu_load_acquire(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define ssemu_store_relaxed(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define ssemu_store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define ssemu_fetch_add(p, v) __atomic_fetch_add((p), (v), __ATOMIC_ACQ_REL)
#define ssemu_fetch_or(p, v) __atomic_fetch_or((p), (v), __ATOMIC_ACQ_REL)
#define ssemu_cas(p, expp, v) \
	__atomic_compare_exchange_n((p), (expp), (v), 0, __ATOMIC_ACQ_REL, \
				    __ATOMIC_ACQUIRE)

static inline void ssemu_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

#endif
