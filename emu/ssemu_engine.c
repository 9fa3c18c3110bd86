/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Discrete-event engine: near (a sorted run or a heap), a bucket wheel and
 * a far heap, firing in (time, key) order, with deferred cancel.  See
 * ssemu_engine.h for the model.
 *
 * Invariants, with base the window's bucket and B(t) = t >> BUCKET_SHIFT:
 *  - near holds every queued event with B(t) <= base (and only those);
 *  - bucket list s holds the events with base < B(t) < base + NB and
 *    B(t) % NB == s: one absolute bucket per list;
 *  - far holds events with B(t) > base, each of which had B(t) >= base + NB
 *    when it was scheduled (the window has moved since, so far events may
 *    now be within the wheel's reach: they stay in far and join near when
 *    the window reaches their bucket).
 * So near's top, when near is not empty, is the earliest event of all, and
 * when near is empty the next window is the earlier of the first non-empty
 * bucket after base and the far top's bucket.  The window never moves
 * backwards and does not depend on now (which the fabric moves on its own
 * in realtime mode and after a recovery).
 */
#include <errno.h>
#include <string.h>

#include "ssemu_engine.h"
#include "ssemu_atomic.h"
#include "ssemu_compiler.h"

#define NB SSEMU_ENGINE_NBUCKETS
#define NWORDS (NB / 64)

_Static_assert((NB & (NB - 1)) == 0 && NB >= 4096,
	       "the bucket bitmap's summary is whole 64-bit words");

/*
 * Where the bucket heads, the heaps and the pool are: computed, not read
 * from the offsets in the control block (which may live in a shared
 * segment and be written under us; they are kept, and checked by
 * ssemu_engine_geometry_ok, for the layout's sake).
 */
#define HEADS_OFF SSEMU_ALIGN_UP(sizeof(struct ssemu_engine), 64)
#define HEAP_OFF (HEADS_OFF + SSEMU_ALIGN_UP(NB * sizeof(uint32_t), 64))

static inline uint32_t *heads(struct ssemu_engine *e)
{
	return (uint32_t *)((char *)e + HEADS_OFF);
}

static inline struct ssemu_heap_ent *heap(struct ssemu_engine *e)
{
	return (struct ssemu_heap_ent *)((char *)e + HEAP_OFF);
}

static inline struct ssemu_ev *pool(struct ssemu_engine *e)
{
	return (struct ssemu_ev *)((char *)e + HEAP_OFF +
				   (size_t)e->cap *
					   sizeof(struct ssemu_heap_ent));
}

static inline uint64_t bucket_of(const struct ssemu_engine *e,
				 ssemu_time_t t)
{
	/* (a width out of range from the engine's memory: the usual one) */
	return t >> (SSEMU_ENGINE_BUCKET_SHIFT +
		     (e->bucket_wide == SSEMU_ENGINE_WIDE ? SSEMU_ENGINE_WIDE :
							   0));
}

/*
 * Layout: engine | bucket heads | heap entries | pool.  The near and far
 * heaps share the cap heap entries (near grows up from the first, far down
 * from the last): between them they never hold more than cap events.
 */
size_t ssemu_engine_bytes(uint32_t cap)
{
	return SSEMU_ALIGN_UP(sizeof(struct ssemu_engine), 64) +
	       SSEMU_ALIGN_UP(NB * sizeof(uint32_t), 64) +
	       (size_t)cap * sizeof(struct ssemu_heap_ent) +
	       (size_t)cap * sizeof(struct ssemu_ev);
}

bool ssemu_engine_geometry_ok(const struct ssemu_engine *e, uint32_t cap)
{
	uint64_t heads_off = SSEMU_ALIGN_UP(sizeof(struct ssemu_engine), 64);
	uint64_t heap_off = heads_off + SSEMU_ALIGN_UP(NB * sizeof(uint32_t),
						       64);

	return e->cap == cap && cap <= SSEMU_ENGINE_MAX_CAP &&
	       e->heads_off == heads_off && e->heap_off == heap_off &&
	       e->pool_off == heap_off +
				      (uint64_t)cap *
					      sizeof(struct ssemu_heap_ent) &&
	       e->nnear <= cap && e->nfar <= cap - e->nnear &&
	       e->nwheel <= cap && e->near_sorted <= 1 && e->hwm <= cap &&
	       e->held <= SSEMU_ENGINE_HELD_MAX && e->held <= cap &&
	       e->ids_out <= 1 &&
	       (!e->bucket_wide || e->bucket_wide == SSEMU_ENGINE_WIDE) &&
	       (!e->held || (!e->nnear && !e->nwheel && !e->nfar)) &&
	       (e->free_head < e->hwm || e->free_head == SSEMU_EV_NONE);
}

const char *ssemu_engine_why(uint32_t bad)
{
	static const char *const why[] = {
		[SSEMU_ENGINE_OK] = "no fault",
		[SSEMU_ENGINE_BAD_GEOMETRY] = "its size, offsets or counts",
		[SSEMU_ENGINE_BAD_FREE] = "a free event list link",
		[SSEMU_ENGINE_BAD_BUCKET] = "a bucket list link or its bitmap",
		[SSEMU_ENGINE_BAD_HEAP] = "a queued event's index or time",
	};

	return bad < ARRAY_SIZE(why) ? why[bad] : "an unknown fault";
}

/* Mark the engine corrupt (the first fault found is kept). */
static bool __attribute__((cold)) corrupt(struct ssemu_engine *e,
					  uint32_t why)
{
	if (!e->bad)
		e->bad = why;
	return false;
}

/* (the pool is not written: an event is set up when first taken, from
 * the high-water mark) */
void ssemu_engine_init(struct ssemu_engine *e, uint32_t cap)
{
	uint32_t *hd;
	uint32_t i;

	assert(cap <= SSEMU_ENGINE_MAX_CAP);
	memset(e, 0, sizeof(*e));
	e->cap = cap;
	e->heads_off = SSEMU_ALIGN_UP(sizeof(struct ssemu_engine), 64);
	e->heap_off = e->heads_off + SSEMU_ALIGN_UP(NB * sizeof(uint32_t), 64);
	e->pool_off = e->heap_off + (uint64_t)cap * sizeof(struct ssemu_heap_ent);
	hd = heads(e);
	for (i = 0; i < NB; i++)
		hd[i] = SSEMU_EV_NONE;
	e->free_head = SSEMU_EV_NONE;
	e->hwm = 0;
	e->pf_idx = SSEMU_EV_NONE;
}

static inline bool ent_less(const struct ssemu_heap_ent *x,
			    const struct ssemu_heap_ent *y)
{
	return x->time < y->time ||
	       (x->time == y->time &&
		(x->key < y->key || (x->key == y->key && x->idx < y->idx)));
}

static inline uint32_t ent_ev(const struct ssemu_heap_ent *x)
{
	return x->idx;
}

/*
 * The heaps.  Near is h[0], h[1], ...; far is h[cap-1], h[cap-2], ...: @d
 * is +1 or -1 and is a constant wherever these are inlined.
 */
#define H(h, d, i) ((h)[(ptrdiff_t)(d) * (ptrdiff_t)(i)])

static inline __attribute__((always_inline)) void
sift_up(struct ssemu_heap_ent *h, int d, uint32_t i)
{
	struct ssemu_heap_ent v = H(h, d, i);

	while (i > 0) {
		uint32_t parent = (i - 1) / 2;

		if (!ent_less(&v, &H(h, d, parent)))
			break;
		H(h, d, i) = H(h, d, parent);
		i = parent;
	}
	H(h, d, i) = v;
}

static inline __attribute__((always_inline)) void
sift_down(struct ssemu_heap_ent *h, int d, uint32_t n, uint32_t i)
{
	struct ssemu_heap_ent v = H(h, d, i);

	for (;;) {
		uint32_t l = 2 * i + 1, m;

		if (l >= n)
			break;
		m = l;
		if (l + 1 < n && ent_less(&H(h, d, l + 1), &H(h, d, l)))
			m = l + 1;
		if (!ent_less(&H(h, d, m), &v))
			break;
		H(h, d, i) = H(h, d, m);
		i = m;
	}
	H(h, d, i) = v;
}

static inline struct ssemu_heap_ent *far_heap(struct ssemu_engine *e)
{
	return heap(e) + e->cap - 1;
}

/*
 * Near is either a run sorted in descending order, popped from its end (a
 * refill of at most NEAR_SORT_MAX events: the common case, where a pop is
 * O(1)), or a min-heap.  An event scheduled into the window goes into the
 * run by insertion, unless that means moving more than NEAR_SHIFT_MAX
 * entries: then the run, reversed, becomes the heap (an ascending array is
 * one), so a burst of events at the same instant stays O(log n) each.
 */
#define NEAR_SORT_MAX 64
#define NEAR_SHIFT_MAX 32

static inline struct ssemu_heap_ent *near_top(struct ssemu_engine *e)
{
	struct ssemu_heap_ent *h = heap(e);

	return e->near_sorted ? &h[e->nnear - 1] : h;
}

static inline __attribute__((always_inline)) void
near_remove_top(struct ssemu_engine *e)
{
	struct ssemu_heap_ent *h = heap(e);

	e->nnear--;
	if (!e->near_sorted && e->nnear) {
		h[0] = h[e->nnear];
		sift_down(h, 1, e->nnear, 0);
	}
}

static void near_push(struct ssemu_engine *e, ssemu_time_t t, uint64_t key,
		      uint32_t idx)
{
	struct ssemu_heap_ent *h = heap(e);
	struct ssemu_heap_ent v = { t, key, idx, 0 };
	uint32_t n = e->nnear, j, lo, k;

	if (e->near_sorted) {
		/* the entries that come before v are at the end */
		lo = n > NEAR_SHIFT_MAX ? n - NEAR_SHIFT_MAX : 0;
		for (j = n; j > lo && ent_less(&h[j - 1], &v); j--)
			;
		if (j > lo || !lo || !ent_less(&h[j - 1], &v)) {
			memmove(&h[j + 1], &h[j], (n - j) * sizeof(*h));
			h[j] = v;
			e->nnear++;
			return;
		}
		for (k = 0; k < n / 2; k++) {
			struct ssemu_heap_ent x = h[k];

			h[k] = h[n - 1 - k];
			h[n - 1 - k] = x;
		}
		e->near_sorted = 0;
	}
	h[n] = v;
	sift_up(h, 1, n);
	e->nnear++;
}

static void far_push(struct ssemu_engine *e, ssemu_time_t t, uint64_t key,
		     uint32_t idx)
{
	struct ssemu_heap_ent *f = far_heap(e);

	H(f, -1, e->nfar).time = t;
	H(f, -1, e->nfar).key = key;
	H(f, -1, e->nfar).idx = idx;
	H(f, -1, e->nfar).pad = 0;
	sift_up(f, -1, e->nfar);
	e->nfar++;
}

static void far_pop(struct ssemu_engine *e)
{
	struct ssemu_heap_ent *f = far_heap(e);

	e->nfar--;
	if (e->nfar) {
		f[0] = H(f, -1, e->nfar);
		sift_down(f, -1, e->nfar, 0);
	}
}

/* The held events' count as read from the engine's memory is sound (out
 * of range: the engine is corrupt, see corrupt). */
static inline bool held_ok(const struct ssemu_engine *e)
{
	return e->held <= SSEMU_ENGINE_HELD_MAX;
}

static inline bool held_less(const struct ssemu_held_ent *x,
			     const struct ssemu_held_ent *y)
{
	return x->time < y->time || (x->time == y->time && x->key < y->key);
}

/* The first held event (held_ok, e->held > 0) into @out as the caller is
 * handed it. */
static inline void held_event(const struct ssemu_engine *e,
			      struct ssemu_fired *out)
{
	const struct ssemu_held_ent *h = &e->held_ev[0];

	out->time = h->time;
	out->type = h->type;
	out->a = h->a;
	out->b = h->b;
	out->c = h->c;
	out->next_type = SSEMU_EV_NO_HINT;
}

/* Event (@t, @key, ...) joins the held events (held_ok, with room for
 * it): sifted up from the end (a new event is usually among the latest: a
 * step or two). */
static inline void held_push(struct ssemu_engine *e, ssemu_time_t t,
			     uint64_t key, uint32_t type, uint32_t a,
			     uint32_t b, uint32_t c)
{
	struct ssemu_held_ent *h = e->held_ev;
	uint32_t i = e->held;

	while (i > 0) {
		uint32_t parent = (i - 1) / 2;

		/* (held_less's order on the new event's fields, written
		 * out: a helper shared with held_less compiled to 0.7%
		 * more instructions for a lone stream) */
		if (t > h[parent].time ||
		    (t == h[parent].time && key >= h[parent].key))
			break;
		h[i] = h[parent];
		i = parent;
	}
	h[i].time = t;
	h[i].key = key;
	h[i].type = type;
	h[i].a = a;
	h[i].b = b;
	h[i].c = c;
	e->held = e->held + 1;
}

/* The first held event leaves (held_ok, e->held > 1). */
static inline void held_remove_top(struct ssemu_engine *e)
{
	struct ssemu_held_ent *h = e->held_ev, v;
	uint32_t n = --e->held, i = 0;

	v = h[n];
	for (;;) {
		uint32_t l = 2 * i + 1, m;

		if (l >= n)
			break;
		m = l;
		if (l + 1 < n && held_less(&h[l + 1], &h[l]))
			m = l + 1;
		if (!held_less(&h[m], &v))
			break;
		h[i] = h[m];
		i = m;
	}
	h[i] = v;
}

static int schedule(struct ssemu_engine *e, ssemu_time_t t, bool keyed,
		    uint64_t key, uint32_t type, uint32_t a, uint32_t b,
		    uint32_t c, ssemu_evid_t *id);

/*
 * The held events cannot take another (they are as many as may be held,
 * or the event needs the queue): they join the queue first, as they would
 * have when they were scheduled (nothing else is queued: the pool has room
 * for them, at most cap being held; the first, the earliest, moves the
 * window to its bucket).  They were counted pending and in the sequence
 * then.
 */
static int __attribute__((noinline, cold)) spill_held(struct ssemu_engine *e)
{
	uint64_t seq = e->seq, nlive = e->nlive;
	uint32_t n = e->held, i;
	int ret = 0;

	if (unlikely(!held_ok(e) || n > e->cap || e->nnear || e->nwheel ||
		     e->nfar || e->held_ev[0].time < e->now)) {
		corrupt(e, SSEMU_ENGINE_BAD_HEAP);
		return -EIO;
	}
	e->held = 0;
	for (i = 0; i < n && !ret; i++) {
		const struct ssemu_held_ent *h = &e->held_ev[i];

		/* (each as the sequence stood: the sequence's end refuses
		 * them all or none) */
		e->seq = seq;
		ret = schedule(e, h->time, true, h->key, h->type, h->a, h->b,
			       h->c, NULL);
	}
	e->seq = seq;
	ssemu_store_relaxed(&e->nlive, (uint32_t)nlive);
	return ret;
}

static inline __attribute__((always_inline)) int
schedule(struct ssemu_engine *e, ssemu_time_t t, bool keyed, uint64_t key,
	 uint32_t type, uint32_t a, uint32_t b, uint32_t c, ssemu_evid_t *id)
{
	struct ssemu_ev *ev;
	uint64_t bk;
	uint32_t idx;

	if (unlikely(e->bad))
		return -EIO;
	if (t < e->now)
		return -EINVAL;
	/* every index and count from the engine's memory is checked: a
	 * corrupt one stops the engine rather than write out of bounds */
	if (unlikely(e->hwm > e->cap)) {
		corrupt(e, SSEMU_ENGINE_BAD_FREE);
		return -EIO;
	}
	if (e->free_head == SSEMU_EV_NONE && e->hwm == e->cap)
		return -ENOSPC;
	if (e->seq >> (64 - SSEMU_ENGINE_IDX_BITS))
		return -EOVERFLOW;
	/* (a released event is below the mark) */
	if (unlikely(e->free_head != SSEMU_EV_NONE &&
		     e->free_head >= e->hwm)) {
		corrupt(e, SSEMU_ENGINE_BAD_FREE);
		return -EIO;
	}
	if (unlikely(e->nnear + (uint64_t)e->nfar >= e->cap ||
		     e->nwheel >= e->cap)) {
		corrupt(e, SSEMU_ENGINE_BAD_GEOMETRY);
		return -EIO;
	}
	if (unlikely(e->held)) {
		int ret = spill_held(e);

		if (ret)
			return ret;
		if (e->free_head == SSEMU_EV_NONE && e->hwm == e->cap)
			return -ENOSPC;
	}
	/* the most recently released event first, else a never-used one:
	 * the order a list of the whole pool made at the start would give */
	if (e->free_head != SSEMU_EV_NONE) {
		idx = e->free_head;
		ev = &pool(e)[idx];
		e->free_head = ev->next;
	} else {
		idx = e->hwm++;
		ev = &pool(e)[idx];
		ev->gen = 0;
	}
	if (!keyed)
		key = (e->seq << SSEMU_ENGINE_IDX_BITS) | idx;
	e->seq++;
	ev->time = t;
	ev->key = key;
	ev->type = (uint16_t)type;
	ev->state = SSEMU_EV_LIVE;
	ev->gen++;
	ev->a = a;
	ev->b = b;
	ev->c = c;
	ssemu_store_relaxed(&e->nlive, e->nlive + 1);
	if (id) {
		*id = ((uint64_t)ev->gen << 32) | idx;
		e->ids_out = 1;
	}

	bk = bucket_of(e, t);
	/* nothing queued anywhere (a quiet fabric, a ping-pong): the window
	 * may move up to the event's bucket at once, which saves the trip
	 * through the wheel and a refill; near then holds all of it */
	if (bk > e->base && !e->nnear && !e->nwheel && !e->nfar)
		e->base = bk;
	if (bk <= e->base) {
		ev->next = SSEMU_EV_NONE;
		near_push(e, t, key, idx);
	} else if (likely(bk - e->base < NB)) {
		uint32_t s = (uint32_t)bk & (NB - 1);
		uint32_t *hd = heads(e);

		ev->next = hd[s];
		hd[s] = idx;
		e->bits[s / 64] |= 1ull << (s % 64);
		e->summary[s / 4096] |= 1ull << (s / 64 % 64);
		e->nwheel++;
	} else {
		ev->next = SSEMU_EV_NONE;
		far_push(e, t, key, idx);
	}
	return 0;
}

int ssemu_engine_schedule(struct ssemu_engine *e, ssemu_time_t t,
			  uint32_t type, uint32_t a, uint32_t b, uint32_t c,
			  ssemu_evid_t *id)
{
	return schedule(e, t, false, 0, type, a, b, c, id);
}

SSEMU_HOT
int ssemu_engine_schedule_key(struct ssemu_engine *e, ssemu_time_t t,
			      uint64_t key, uint32_t type, uint32_t a,
			      uint32_t b, uint32_t c, ssemu_evid_t *id)
{
	/* nothing queued (no id wanted, room among the held and in the
	 * pool, the engine sound): held apart, no pool entry, no queue */
	if (!e->nnear && !e->nwheel && !e->nfar && !id &&
	    e->held < SSEMU_ENGINE_HELD_MAX && e->held < e->cap &&
	    likely(!e->bad) && t >= e->now &&
	    !(e->seq >> (64 - SSEMU_ENGINE_IDX_BITS))) {
		held_push(e, t, key, type, a, b, c);
		e->seq++;
		ssemu_store_relaxed(&e->nlive, e->nlive + 1);
		return 0;
	}
	return schedule(e, t, true, key, type, a, b, c, id);
}

int ssemu_engine_cancel(struct ssemu_engine *e, ssemu_evid_t id)
{
	uint32_t idx = (uint32_t)id;
	struct ssemu_ev *ev;

	if (id == SSEMU_EVID_NONE || idx >= e->cap || idx >= e->hwm)
		return -ENOENT;
	ev = &pool(e)[idx];
	if (ev->gen != (uint32_t)(id >> 32) || ev->state != SSEMU_EV_LIVE)
		return -ENOENT;
	ev->state = SSEMU_EV_CANCELLED;
	ssemu_store_relaxed(&e->nlive, e->nlive - 1);
	e->ncancelled++;
	return 0;
}

int ssemu_engine_set_wide(struct ssemu_engine *e, bool wide)
{
	if (e->held || e->nnear || e->nwheel || e->nfar)
		return -EBUSY;
	e->bucket_wide = wide ? SSEMU_ENGINE_WIDE : 0;
	return 0;
}

static inline void release(struct ssemu_engine *e, struct ssemu_ev *ev,
			   uint32_t idx)
{
	ev->state = SSEMU_EV_FREE;
	ev->next = e->free_head;
	e->free_head = idx;
}

/* The first non-empty bucket after base (the wheel is not empty), or
 * UINT64_MAX if the bitmap says there is none (it is corrupt). */
static inline __attribute__((always_inline)) uint64_t
next_bucket(struct ssemu_engine *e)
{
	uint32_t p = (uint32_t)(e->base + 1) & (NB - 1);
	uint32_t w = p / 64, s, x, turns = 0;
	uint64_t word = e->bits[w] & (~0ull << (p % 64)), sm = 0;

	if (!word) {
		/* the next word with a bit set, round from after w (once
		 * round at most: the bitmap may be corrupt) */
		for (x = w + 1; turns <= NWORDS / 64 + 1;
		     x = (x / 64 + 1) * 64, turns++) {
			if (x >= NWORDS)
				x = 0;
			sm = e->summary[x / 64] & (~0ull << (x % 64));
			if (sm)
				break;
		}
		if (unlikely(!sm))
			return corrupt(e, SSEMU_ENGINE_BAD_BUCKET), UINT64_MAX;
		w = x / 64 * 64 + (uint32_t)__builtin_ctzll(sm);
		word = e->bits[w];
		if (unlikely(!word))
			return corrupt(e, SSEMU_ENGINE_BAD_BUCKET), UINT64_MAX;
	}
	s = w * 64 + (uint32_t)__builtin_ctzll(word);
	return e->base + 1 + ((s - p) & (NB - 1));
}

/*
 * A refill walks its bucket's list, one pool entry after another, each
 * far from the caches on a large fabric.  So the list of the next bucket
 * is walked ahead of its refill, a step per pop: its first entry asked
 * for by the refill before (walk_start), each next one by a pop once the
 * one before it has come (walk_step).  Only the bitmap's word after base
 * is looked at (the next bucket is usually near): otherwise, no walk.
 */
static inline void walk_start(struct ssemu_engine *e)
{
	uint32_t p = (uint32_t)(e->base + 1) & (NB - 1), s, idx;
	uint64_t word = e->bits[p / 64] & (~0ull << (p % 64));

	e->pf_idx = SSEMU_EV_NONE;
	if (!word || !e->nwheel)
		return;
	s = p / 64 * 64 + (uint32_t)__builtin_ctzll(word);
	idx = heads(e)[s];
	if (idx >= e->cap)
		return;
	e->pf_bucket = e->base + 1 + (s - p);
	e->pf_idx = idx;
	__builtin_prefetch(&pool(e)[idx]);
}

static inline void walk_step(struct ssemu_engine *e)
{
	const struct ssemu_ev *ev;
	uint32_t next;

	if (e->pf_idx >= e->cap)
		return;
	ev = &pool(e)[e->pf_idx];
	next = ev->next;
	/* (an event of another bucket: the list was refilled meanwhile) */
	if (bucket_of(e, ev->time) != e->pf_bucket || next >= e->cap) {
		e->pf_idx = SSEMU_EV_NONE;
		return;
	}
	e->pf_idx = next;
	__builtin_prefetch(&pool(e)[next]);
}

/*
 * Near is empty: move the window to the next bucket holding anything and
 * bring that bucket's events, from the wheel and the far heap, into near.
 * Cancelled ones are reaped on the way.  @return false if nothing is queued.
 */
SSEMU_HOT
static bool refill(struct ssemu_engine *e)
{
	struct ssemu_heap_ent *h = heap(e), *f;
	struct ssemu_ev *p = pool(e), *ev;
	uint64_t bw = UINT64_MAX, bf = UINT64_MAX;
	uint32_t n = 0, idx, next, i, j, room;

	/* (what this reads as a count or a bound: the far heap's count,
	 * which places its entries and limits near's, and the wheel's; the
	 * rest of the geometry is each user's to check, and the whole of it
	 * with every liveness check, ssemu_fabric_image_bad) */
	if (unlikely(e->bad || e->nfar > e->cap || e->nwheel > e->cap))
		return corrupt(e, SSEMU_ENGINE_BAD_GEOMETRY);
	if (e->nwheel)
		bw = next_bucket(e);
	if (unlikely(e->bad))
		return false;
	if (e->nfar)
		bf = bucket_of(e, far_heap(e)->time);
	if (bw == UINT64_MAX && bf == UINT64_MAX)
		return false;
	e->base = SSEMU_MIN(bw, bf);
	/* near's entries must not run into far's */
	room = e->cap - e->nfar;

	if (bw == e->base) {
		uint32_t s = (uint32_t)bw & (NB - 1);
		uint32_t *hd = heads(e);

		for (idx = hd[s]; idx != SSEMU_EV_NONE; idx = next) {
			if (unlikely(idx >= e->cap || !e->nwheel || n >= room))
				return corrupt(e, SSEMU_ENGINE_BAD_BUCKET);
			ev = &p[idx];
			/* every event of a bucket's list is of that bucket: one
			 * of an earlier lap was left behind by a bitmap that
			 * lost its bit, and would run in the past */
			if (unlikely(bucket_of(e, ev->time) != bw))
				return corrupt(e, SSEMU_ENGINE_BAD_BUCKET);
			next = ev->next;
			e->nwheel--;
			if (unlikely(ev->state == SSEMU_EV_CANCELLED)) {
				release(e, ev, idx);
				e->ncancelled--;
				continue;
			}
			h[n].time = ev->time;
			h[n].key = ev->key;
			h[n].idx = idx;
			h[n].pad = 0;
			n++;
		}
		hd[s] = SSEMU_EV_NONE;
		e->bits[s / 64] &= ~(1ull << (s % 64));
		if (!e->bits[s / 64])
			e->summary[s / 4096] &= ~(1ull << (s / 64 % 64));
	}

	f = far_heap(e);
	while (e->nfar && bucket_of(e, f->time) <= e->base) {
		/* take it out of far first: with the pool full, near's next
		 * entry is far's last */
		struct ssemu_heap_ent v = *f;

		far_pop(e);
		idx = ent_ev(&v);
		if (unlikely(idx >= e->cap || n >= e->cap - e->nfar))
			return corrupt(e, SSEMU_ENGINE_BAD_HEAP);
		ev = &p[idx];
		if (ev->state == SSEMU_EV_CANCELLED) {
			release(e, ev, idx);
			e->ncancelled--;
		} else {
			h[n++] = v;
		}
	}

	walk_start(e);

	/* near was empty: sort what came in, or heapify it, bottom up */
	e->nnear = n;
	if (n <= NEAR_SORT_MAX) {
		e->near_sorted = 1;
		for (i = 1; i < n; i++) {
			struct ssemu_heap_ent v = h[i];

			for (j = i; j > 0 && ent_less(&h[j - 1], &v); j--)
				h[j] = h[j - 1];
			h[j] = v;
		}
	} else {
		e->near_sorted = 0;
		for (i = n / 2; i-- > 0;)
			sift_down(h, 1, n, i);
	}
	return true;
}

/*
 * Reap cancelled events at the top of near, refilling it as it runs dry.
 * @return the top entry, a live event, or NULL if nothing is queued.
 */
static inline struct ssemu_heap_ent *top(struct ssemu_engine *e)
{
	struct ssemu_heap_ent *t;
	struct ssemu_ev *ev;
	uint32_t idx;

	if (unlikely(e->bad))
		return NULL;
	for (;;) {
		if (unlikely(!e->nnear)) {
			/* a refill can bring nothing but cancelled events */
			if (!refill(e))
				return NULL;
			continue;
		}
		if (unlikely(e->nnear > e->cap - e->nfar))
			return corrupt(e, SSEMU_ENGINE_BAD_GEOMETRY), NULL;
		t = near_top(e);
		if (unlikely(ent_ev(t) >= e->cap))
			return corrupt(e, SSEMU_ENGINE_BAD_HEAP), NULL;
		if (likely(!e->ncancelled))
			return t;
		idx = ent_ev(t);
		ev = &pool(e)[idx];
		if (ev->state != SSEMU_EV_CANCELLED)
			return t;
		near_remove_top(e);
		release(e, ev, idx);
		e->ncancelled--;
	}
}

void ssemu_engine_foreach(struct ssemu_engine *e,
			  bool (*fn)(void *arg, const struct ssemu_fired *ev),
			  void *arg)
{
	struct ssemu_ev *p = pool(e);
	struct ssemu_fired f;
	uint32_t i, n = e->hwm < e->cap ? e->hwm : e->cap;

	if (held_ok(e)) {
		for (i = 0; i < e->held; i++) {
			const struct ssemu_held_ent *h = &e->held_ev[i];

			f = (struct ssemu_fired){ .time = h->time,
						  .type = h->type, .a = h->a,
						  .b = h->b, .c = h->c };
			if (!fn(arg, &f))
				return;
		}
	}
	/* (the events from the high-water mark up were never used) */
	for (i = 0; i < n; i++) {
		if (p[i].state != SSEMU_EV_LIVE)
			continue;
		f = (struct ssemu_fired){ .time = p[i].time, .type = p[i].type,
					  .a = p[i].a, .b = p[i].b,
					  .c = p[i].c };
		if (!fn(arg, &f))
			return;
	}
}

ssemu_time_t ssemu_engine_next_time(struct ssemu_engine *e)
{
	struct ssemu_heap_ent *t;

	if (e->held && !e->bad)
		return held_ok(e) ? e->held_ev[0].time :
				    (corrupt(e, SSEMU_ENGINE_BAD_HEAP),
				     UINT64_MAX);
	t = top(e);

	return t ? t->time : UINT64_MAX;
}

bool ssemu_engine_peek(struct ssemu_engine *e, struct ssemu_fired *out)
{
	const struct ssemu_heap_ent *t;
	const struct ssemu_ev *ev;

	if (e->held) {
		if (!held_ok(e))
			return false;
		held_event(e, out);
		return true;
	}
	/* (near's entries are among the cap the heaps share) */
	if (!e->nnear || e->nnear > e->cap)
		return false;
	t = e->near_sorted ? &heap(e)[e->nnear - 1] : heap(e);
	if (t->idx >= e->cap)
		return false;
	ev = &pool(e)[t->idx];
	out->time = t->time;
	out->type = ev->type;
	out->a = ev->a;
	out->b = ev->b;
	out->c = ev->c;
	return true;
}

/* Event @out handed out: the clock moves to it, and it counts as run. */
static inline void handed_out(struct ssemu_engine *e,
			      const struct ssemu_fired *out)
{
	e->now = out->time;
	ssemu_store_relaxed(&e->nlive, e->nlive - 1);
	ssemu_store_relaxed(&e->executed, e->executed + 1);
}

/* The first held event handed out (by ssemu_engine_pop). */
static inline __attribute__((always_inline)) bool
pop_held(struct ssemu_engine *e, ssemu_time_t limit, struct ssemu_fired *out)
{
	const struct ssemu_held_ent *h = &e->held_ev[0];

	if (unlikely(e->bad))
		return false;
	/* (the model's clock never runs back; nothing else is queued) */
	if (unlikely(!held_ok(e) || e->nnear || e->nwheel || e->nfar))
		return corrupt(e, SSEMU_ENGINE_BAD_HEAP);
	if (h->time > limit)
		return false;
	if (unlikely(h->time < e->now))
		return corrupt(e, SSEMU_ENGINE_BAD_HEAP);
	held_event(e, out);
	if (e->held == 1) {
		e->held = 0;
	} else {
		held_remove_top(e);
		/* the next one, for the caller to ask for its memory */
		out->next_type = h->type;
		out->next_a = h->a;
		out->next_b = h->b;
		out->next_c = h->c;
	}
	handed_out(e, out);
	return true;
}

/*
 * Near is empty and the queue holds few events (none cancelled, no id ever
 * handed out): hold them all again, and give their pool entries back.  The
 * window stays where it is (the queue is empty after).  @return false if
 * the engine was found corrupt (it is marked so).
 */
static bool __attribute__((noinline)) take_back(struct ssemu_engine *e)
{
	struct ssemu_ev *p = pool(e), *ev;
	uint32_t *hd = heads(e), idx, next, s;
	uint64_t bw;

	if (unlikely(e->held || !held_ok(e) || e->nwheel + e->nfar > e->cap))
		return corrupt(e, SSEMU_ENGINE_BAD_GEOMETRY);
	while (e->nwheel) {
		/* the buckets in order; each one's list in any order */
		bw = next_bucket(e);
		if (unlikely(e->bad))
			return false;
		if (unlikely(bw - e->base >= NB))
			return corrupt(e, SSEMU_ENGINE_BAD_BUCKET);
		s = (uint32_t)bw & (NB - 1);
		for (idx = hd[s]; idx != SSEMU_EV_NONE; idx = next) {
			if (unlikely(idx >= e->cap || !e->nwheel ||
				     e->held >= SSEMU_ENGINE_HELD_MAX))
				return corrupt(e, SSEMU_ENGINE_BAD_BUCKET);
			ev = &p[idx];
			if (unlikely(bucket_of(e, ev->time) != bw ||
				     ev->state != SSEMU_EV_LIVE ||
				     ev->time < e->now))
				return corrupt(e, SSEMU_ENGINE_BAD_BUCKET);
			next = ev->next;
			e->nwheel--;
			held_push(e, ev->time, ev->key, ev->type, ev->a,
				  ev->b, ev->c);
			release(e, ev, idx);
		}
		hd[s] = SSEMU_EV_NONE;
		e->bits[s / 64] &= ~(1ull << (s % 64));
		if (!e->bits[s / 64])
			e->summary[s / 4096] &= ~(1ull << (s / 64 % 64));
	}
	while (e->nfar) {
		struct ssemu_heap_ent v = *far_heap(e);

		far_pop(e);
		if (unlikely(v.idx >= e->cap ||
			     e->held >= SSEMU_ENGINE_HELD_MAX))
			return corrupt(e, SSEMU_ENGINE_BAD_HEAP);
		ev = &p[v.idx];
		if (unlikely(ev->state != SSEMU_EV_LIVE || ev->time < e->now))
			return corrupt(e, SSEMU_ENGINE_BAD_HEAP);
		held_push(e, ev->time, ev->key, ev->type, ev->a, ev->b, ev->c);
		release(e, ev, v.idx);
	}
	e->pf_idx = SSEMU_EV_NONE;
	return true;
}

SSEMU_HOT
bool ssemu_engine_pop(struct ssemu_engine *e, ssemu_time_t limit,
		      struct ssemu_fired *out)
{
	struct ssemu_heap_ent *t;
	struct ssemu_ev *ev;
	uint32_t idx;

	if (e->held)
		return pop_held(e, limit, out);
	/* a queue down to a few events, a lone message's: held from here */
	if (!e->nnear && e->nwheel + e->nfar <= SSEMU_ENGINE_HELD_BACK &&
	    (e->nwheel | e->nfar) && !e->ncancelled && !e->ids_out &&
	    e->nwheel + e->nfar <= e->cap) {
		if (!take_back(e))
			return false;
		return pop_held(e, limit, out);
	}
	t = top(e);

	if (!t || t->time > limit)
		return false;
	/* (the model's clock never runs back) */
	if (unlikely(t->time < e->now))
		return corrupt(e, SSEMU_ENGINE_BAD_HEAP);
	out->time = t->time;
	idx = ent_ev(t);
	near_remove_top(e);
	walk_step(e);
	/* the event after the next one: its pool entry is asked for now, so
	 * that ssemu_engine_peek finds it in the cache next time */
	if (e->near_sorted && e->nnear >= 2 &&
	    heap(e)[e->nnear - 2].idx < e->cap)
		__builtin_prefetch(&pool(e)[heap(e)[e->nnear - 2].idx]);
	ev = &pool(e)[idx];
	out->type = ev->type;
	out->a = ev->a;
	out->b = ev->b;
	out->c = ev->c;
	out->next_type = SSEMU_EV_NO_HINT;
	if (e->nnear) {
		/* (near's entries are among the cap the heaps share) */
		const struct ssemu_heap_ent *n =
			e->near_sorted ? &heap(e)[e->nnear - 1] : heap(e);

		if (e->nnear <= e->cap && n->idx < e->cap) {
			const struct ssemu_ev *nx = &pool(e)[n->idx];

			out->next_type = nx->type;
			out->next_a = nx->a;
			out->next_b = nx->b;
			out->next_c = nx->c;
		}
	}
	handed_out(e, out);
	release(e, ev, idx);
	return true;
}
