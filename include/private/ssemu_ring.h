/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Single-producer single-consumer ring of fixed-size entries, usable across
 * processes: the control block and the entries live in one shared region and
 * are addressed by offset, never by pointer.  Capacity is a power of two;
 * head and tail are free-running 32-bit counters masked on access (as in
 * rte_ring and liburing).  Producer and consumer indices sit on separate
 * cache lines.
 */
#ifndef SSEMU_RING_H
#define SSEMU_RING_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ssemu_atomic.h"
#include "ssemu_compiler.h"

struct ssemu_ring {
	uint32_t mask;		/* capacity - 1 */
	uint32_t esize;		/* bytes per entry */
	uint64_t data_off;	/* entries, relative to the ring itself */
	uint8_t pad0[SSEMU_CACHELINE - 16];
	uint32_t tail SSEMU_CACHELINE_ALIGNED;	/* written by the producer */
	/* the head a producer whose process changes (the engine's runner)
	 * last read, beside the tail: never past the real head
	 * (ssemu_ring_push_seen; ssemu_ring_init clears it with the rest) */
	uint32_t head_seen;
	uint8_t pad1[SSEMU_CACHELINE - 8];
	uint32_t head SSEMU_CACHELINE_ALIGNED;	/* written by the consumer */
	uint8_t pad2[SSEMU_CACHELINE - 4];
};

_Static_assert(sizeof(struct ssemu_ring) == 3 * SSEMU_CACHELINE,
	       "ring control block layout");

static inline size_t ssemu_ring_bytes(uint32_t cap, uint32_t esize)
{
	return sizeof(struct ssemu_ring) + (size_t)cap * esize;
}

/* @cap must be a power of two; entries follow the control block. */
static inline void ssemu_ring_init(struct ssemu_ring *r, uint32_t cap,
				   uint32_t esize)
{
	memset(r, 0, sizeof(*r));
	r->mask = cap - 1;
	r->esize = esize;
	r->data_off = sizeof(*r);
}

static inline void *ssemu_ring_slot(struct ssemu_ring *r, uint32_t idx)
{
	return (char *)r + r->data_off + (size_t)(idx & r->mask) * r->esize;
}

static inline uint32_t ssemu_ring_count(struct ssemu_ring *r)
{
	/* pairs with the releases in push and pop */
	return ssemu_load_acquire(&r->tail) - ssemu_load_acquire(&r->head);
}

/* Full, by the head the producer last read (@head_seen), which is read
 * again from the ring only when it says so? */
static inline bool ssemu_ring_full_cached(struct ssemu_ring *r,
					  uint32_t tail, uint32_t *head_seen)
{
	if (tail - *head_seen > r->mask) {
		/* pairs with the releases of head in ssemu_ring_pop and
		 * ssemu_ring_advance */
		*head_seen = ssemu_load_acquire(&r->head);
		if (tail - *head_seen > r->mask)
			return true;
	}
	return false;
}

/*
 * Producer side, for a producer that keeps, in its own memory, the head
 * it last read (@head_seen: never past the real one, which only grows):
 * the consumer's line is read only when that copy says the ring is full,
 * so a push does not take it from the consumer's core every time.
 * Returns 0 or -1 when full.
 */
static inline int ssemu_ring_push_cached(struct ssemu_ring *r, const void *e,
					 uint32_t *head_seen)
{
	uint32_t tail = ssemu_load_relaxed(&r->tail);

	if (ssemu_ring_full_cached(r, tail, head_seen))
		return -1;
	memcpy(ssemu_ring_slot(r, tail), e, r->esize);
	/* publish the entry; pairs with the acquire of tail in pop */
	ssemu_store_release(&r->tail, tail + 1);
	return 0;
}

/*
 * The same, for a producer whose process changes (the engine's pushes
 * into an endpoint's event ring, made by whichever process runs it): the
 * head it last read is kept in the ring's own tail line, which only the
 * producer writes and which the consumer reads with the tail anyway.  So
 * the consumer's head line stays in the consumer's cache until the ring
 * looks full.  (A head_seen past the tail, as a corrupt one can be, makes
 * the ring look full and is read again.)
 */
static inline int ssemu_ring_push_seen(struct ssemu_ring *r, const void *e)
{
	uint32_t seen = ssemu_load_relaxed(&r->head_seen);
	int ret = ssemu_ring_push_cached(r, e, &seen);

	ssemu_store_relaxed(&r->head_seen, seen);
	return ret;
}

/* Producer side.  Returns 0 or -1 when full. */
static inline int ssemu_ring_push(struct ssemu_ring *r, const void *e)
{
	/* pairs with the release of head in ssemu_ring_pop */
	uint32_t head = ssemu_load_acquire(&r->head);

	return ssemu_ring_push_cached(r, e, &head);
}

static inline uint32_t ssemu_ring_space(struct ssemu_ring *r)
{
	return r->mask + 1 - (ssemu_load_relaxed(&r->tail) -
			      ssemu_load_acquire(&r->head));
}

/* Consumer side.  Returns 0 or -1 when empty. */
static inline int ssemu_ring_pop(struct ssemu_ring *r, void *e)
{
	uint32_t head = ssemu_load_relaxed(&r->head);
	/* pairs with the release of tail in ssemu_ring_push */
	uint32_t tail = ssemu_load_acquire(&r->tail);

	if (head == tail)
		return -1;
	memcpy(e, ssemu_ring_slot(r, head), r->esize);
	/* free the slot; pairs with the acquire of head in push */
	ssemu_store_release(&r->head, head + 1);
	return 0;
}

/*
 * Consumer side in two steps, for a consumer that may die in between:
 * look at the oldest entry, act on it, and only then free it, so an entry
 * is never both gone from the ring and not yet acted on.
 * ssemu_ring_peek returns 0 or -1 when empty.
 */
static inline int ssemu_ring_peek(struct ssemu_ring *r, void *e)
{
	uint32_t head = ssemu_load_relaxed(&r->head);
	/* pairs with the release of tail in ssemu_ring_push */
	uint32_t tail = ssemu_load_acquire(&r->tail);

	if (head == tail)
		return -1;
	memcpy(e, ssemu_ring_slot(r, head), r->esize);
	return 0;
}

static inline void ssemu_ring_advance(struct ssemu_ring *r)
{
	/* pairs with the acquire of head in push */
	ssemu_store_release(&r->head, ssemu_load_relaxed(&r->head) + 1);
}

/*
 * Tagged entries: a ring of 32-bit entries (esize 4), each a 16-bit value
 * and, above it, the lap of the ring it was written in, plus one (entry i
 * of a ring of cap holds (i / cap + 1) << 16 | value, the lap kept to 16
 * bits).  The consumer reads the entry at its head, not the tail: when the
 * producer is another core, that is the one line that has to come from
 * it, and the producer's tail line stays in its cache between pushes.
 * An entry left from the lap before carries that lap's tag, and one never
 * written carries 0, which no lap before the 65,535th expects (by then
 * every entry has been written).  The producer still advances the tail
 * after each entry, for the ring's count and for readers that go by it
 * (a close, recovery, a check).
 *
 * ssemu_ring_init_tagged makes one empty, its entries zeroed too, so that
 * none left by the ring's last user carries a tag the first laps expect.
 */
static inline void ssemu_ring_init_tagged(struct ssemu_ring *r, uint32_t cap)
{
	ssemu_ring_init(r, cap, sizeof(uint32_t));
	memset(ssemu_ring_slot(r, 0), 0, (size_t)cap * sizeof(uint32_t));
}

static inline uint32_t ssemu_ring_tag(const struct ssemu_ring *r, uint32_t idx)
{
	return ((idx >> __builtin_ctz(r->mask + 1)) + 1) & 0xffff;
}

/* Producer side (ssemu_ring_push_cached's rules) of value @v (< 65,536).
 * Returns 0 or -1 when full. */
static inline int ssemu_ring_push_tagged(struct ssemu_ring *r, uint32_t v,
					 uint32_t *head_seen)
{
	uint32_t tail = ssemu_load_relaxed(&r->tail);

	if (ssemu_ring_full_cached(r, tail, head_seen))
		return -1;
	/* the entry, then the tail; pairs with the acquires in
	 * ssemu_ring_peek_tagged and of tail in the readers that go by it */
	ssemu_store_release((uint32_t *)ssemu_ring_slot(r, tail),
			    ssemu_ring_tag(r, tail) << 16 | (v & 0xffff));
	ssemu_store_release(&r->tail, tail + 1);
	return 0;
}

/*
 * Consumer side: the value of the entry at the head, if it carries the
 * head's lap (then ssemu_ring_advance frees it).  Returns 0, or -1 if the
 * producer has not written it yet, or its tag is not the lap's (a damaged
 * entry looks like an empty ring here: a reader that suspects that
 * compares with the tail, ssemu_ring_tagged_stuck).
 */
static inline int ssemu_ring_peek_tagged(struct ssemu_ring *r, uint32_t *v)
{
	uint32_t head = ssemu_load_relaxed(&r->head);
	uint32_t e = ssemu_load_acquire((uint32_t *)ssemu_ring_slot(r, head));

	if (e >> 16 != ssemu_ring_tag(r, head))
		return -1;
	*v = e & 0xffff;
	return 0;
}

/*
 * The entries from the head up to the tail, for the readers that go by
 * the tail: at most the ring's capacity, and 0 when the head is past the
 * tail (the consumer took an entry whose producer has not yet counted it
 * in the tail: it is between its two stores, or died there).
 */
static inline uint32_t ssemu_ring_tagged_pending(struct ssemu_ring *r)
{
	uint32_t n = ssemu_load_acquire(&r->tail) -
		     ssemu_load_relaxed(&r->head);

	if ((int32_t)n <= 0)
		return 0;
	return n > r->mask + 1 ? r->mask + 1 : n;
}

/*
 * Does the tail say there is an entry at the head that
 * ssemu_ring_peek_tagged does not take (its tag damaged)?  The tail is
 * read first: an entry is written before the tail that counts it.
 */
static inline bool ssemu_ring_tagged_stuck(struct ssemu_ring *r)
{
	uint32_t v;

	return ssemu_ring_tagged_pending(r) && ssemu_ring_peek_tagged(r, &v);
}

/* The value of the entry at @idx, whatever its tag (for readers that go
 * from the head to the tail and check the value themselves). */
static inline uint32_t ssemu_ring_tagged_value(struct ssemu_ring *r,
					       uint32_t idx)
{
	return ssemu_load_acquire((uint32_t *)ssemu_ring_slot(r, idx)) &
	       0xffff;
}

#endif
