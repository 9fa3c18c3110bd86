/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The model's invariants.  A debug build (-DSSEMU_DEBUG) checks them as it
 * runs: SSEMU_INVARIANT at the points where one could break, and the whole
 * model (ssemu_model_check) after a sample of the events and after every
 * endpoint close, NIC reset and recovery.  Otherwise SSEMU_INVARIANT
 * compiles to nothing and the whole-model check runs only when called.
 * A broken invariant marks the fabric broken (ssemu_fail): every call then
 * fails with -EIO, and the reason is logged and kept in the segment.
 */
#ifndef SSEMU_INVARIANT_H
#define SSEMU_INVARIANT_H

#include "ssemu_region.h"

/* Report a broken invariant (@fmt: what is wrong): the fabric is marked
 * broken.  @return true. */
bool ssemu_model_invariant_failed(struct ssemu_region *r, const char *fmt,
				  ...) __attribute__((format(printf, 2, 3)));

/*
 * Check the whole model (between events, never inside one):
 *  - packet conservation: the free list and the packets in use make up the
 *    pool, and every packet in use is in exactly one place -- a VOQ, a
 *    NIC's acknowledgement queue, or an event in flight (arriving at a
 *    switch or a NIC, or waiting to be sent again);
 *  - VOQ membership: an input's bit in an output's inmask is set iff its
 *    VOQ holds packets, the counts (per vclass, per class, per output) are
 *    those of the lists, and vclmask has the vclasses with any;
 *  - credit bounds: every credit counter, with the credits on their way
 *    back to it, lies between 0 and the buffer it counts.
 * @return true if they hold; else the fabric is marked broken.
 */
bool ssemu_model_check(struct ssemu_region *r);

#ifdef SSEMU_DEBUG
#define SSEMU_INVARIANT(r, cond, ...)                                   \
	do {                                                            \
		if (unlikely(!(cond)))                                  \
			ssemu_model_invariant_failed((r), __VA_ARGS__); \
	} while (0)
#else
#define SSEMU_INVARIANT(r, cond, ...) \
	do {                          \
		(void)sizeof(cond);   \
	} while (0)
#endif

#endif
