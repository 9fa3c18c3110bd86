/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Discrete-event engine: near (a sorted run or a heap), a bucket wheel and
 * a far heap, firing in (time, key) order, with deferred cancel.  See
 * ssemu_engine.h for the model.
 *
 * Invariants, with base the window's bucket and B(t) = t >> BUCKET_SHIFT:
 *  - near holds every queued event with B(t) <= base (and only those);
 *  - bucket s's chunks hold the events with base < B(t) < base + NB and
 *    B(t) % NB == s: one absolute bucket per list of chunks; a bucket's
 *    head (chunk, n) means something only while its bit is set;
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
 * Where the buckets, the heaps, the chunks and the id slots are:
 * computed, not read from the offsets in the control block (which may
 * live in a shared segment and be written under us; they are kept, and
 * checked by ssemu_engine_geometry_ok, for the layout's sake).
 */
#define CH SSEMU_ENGINE_CHUNK
#define HEADS_OFF SSEMU_ALIGN_UP(sizeof(struct ssemu_engine), 64)
#define HEAP_OFF (HEADS_OFF + SSEMU_ALIGN_UP(NB * sizeof(struct ssemu_bucket), \
					     64))

/* Chunks enough for @cap events on the wheel: every bucket's newest chunk
 * partly full, the rest full. */
static inline uint32_t chunks_for(uint32_t cap)
{
	return cap / CH + NB + 1;
}

struct layout {
	uint64_t heads, heap, chunks, next, ids, end;
};

/* (the heaps at a fixed place, the rest after them) */
static inline struct layout layout_of(uint32_t cap)
{
	struct layout l;

	l.heads = HEADS_OFF;
	l.heap = HEAP_OFF;
	l.chunks = l.heap + SSEMU_ALIGN_UP((uint64_t)cap *
						   sizeof(struct ssemu_ent),
					   64);
	l.next = l.chunks + (uint64_t)chunks_for(cap) *
				    sizeof(struct ssemu_chunk);
	l.ids = l.next + SSEMU_ALIGN_UP((uint64_t)chunks_for(cap) *
						sizeof(uint32_t), 64);
	l.end = l.ids + (uint64_t)cap * sizeof(struct ssemu_ev);
	return l;
}

static inline struct ssemu_bucket *heads(struct ssemu_engine *e)
{
	return (struct ssemu_bucket *)((char *)e + HEADS_OFF);
}

static inline struct ssemu_ent *heap(struct ssemu_engine *e)
{
	return (struct ssemu_ent *)((char *)e + HEAP_OFF);
}

static inline struct ssemu_chunk *chunks(struct ssemu_engine *e)
{
	return (struct ssemu_chunk *)((char *)e + HEAP_OFF +
				      SSEMU_ALIGN_UP((size_t)e->cap *
							     sizeof(struct ssemu_ent),
						     64));
}

static inline uint32_t *chunk_next(struct ssemu_engine *e)
{
	return (uint32_t *)(chunks(e) + chunks_for(e->cap));
}

static inline struct ssemu_ev *ids(struct ssemu_engine *e)
{
	return (struct ssemu_ev *)((char *)chunk_next(e) +
				   SSEMU_ALIGN_UP((size_t)chunks_for(e->cap) *
							  sizeof(uint32_t),
						  64));
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
 * Layout: engine | buckets | heap entries | chunks | chunk links | id
 * slots.  The near and far heaps share the cap heap entries (near grows up
 * from the first, far down from the last): between them they never hold
 * more than cap events.
 */
size_t ssemu_engine_bytes(uint32_t cap)
{
	return layout_of(cap).end;
}

bool ssemu_engine_geometry_ok(const struct ssemu_engine *e, uint32_t cap)
{
	struct layout l = layout_of(cap);

	return e->cap == cap && cap <= SSEMU_ENGINE_MAX_CAP &&
	       e->heads_off == l.heads && e->next_off == l.next &&
	       e->heap_off == l.heap && e->chunks_off == l.chunks &&
	       e->ids_off == l.ids && e->nnear <= cap &&
	       e->nfar <= cap - e->nnear && e->nwheel <= cap &&
	       (uint64_t)e->nnear + e->nfar + e->nwheel <= cap &&
	       e->near_sorted <= 1 && e->hwm <= cap &&
	       e->held <= SSEMU_ENGINE_HELD_MAX && e->held <= cap &&
	       e->ids_out <= 1 &&
	       (!e->bucket_wide || e->bucket_wide == SSEMU_ENGINE_WIDE) &&
	       (!e->held || (!e->nnear && !e->nwheel && !e->nfar)) &&
	       (e->free_head < e->hwm || e->free_head == SSEMU_EV_NONE) &&
	       e->chunk_hwm <= chunks_for(cap) &&
	       (e->chunk_free < e->chunk_hwm ||
		e->chunk_free == SSEMU_EV_NONE);
}

const char *ssemu_engine_why(uint32_t bad)
{
	static const char *const why[] = {
		[SSEMU_ENGINE_OK] = "no fault",
		[SSEMU_ENGINE_BAD_GEOMETRY] = "its size, offsets or counts",
		[SSEMU_ENGINE_BAD_FREE] = "a free id slot or chunk list link",
		[SSEMU_ENGINE_BAD_BUCKET] = "a bucket's chunks or its bitmap",
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

/* (neither the chunks nor the id slots are written: each is set up when
 * first taken, from its high-water mark) */
void ssemu_engine_init(struct ssemu_engine *e, uint32_t cap)
{
	struct layout l = layout_of(cap);
	struct ssemu_bucket *hd;
	uint32_t i;

	assert(cap <= SSEMU_ENGINE_MAX_CAP);
	memset(e, 0, sizeof(*e));
	e->cap = cap;
	e->heads_off = l.heads;
	e->next_off = l.next;
	e->heap_off = l.heap;
	e->chunks_off = l.chunks;
	e->ids_off = l.ids;
	hd = heads(e);
	for (i = 0; i < NB; i++) {
		hd[i].chunk = SSEMU_EV_NONE;
		hd[i].n = 0;
	}
	e->free_head = SSEMU_EV_NONE;
	e->hwm = 0;
	e->chunk_free = SSEMU_EV_NONE;
	e->chunk_hwm = 0;
	e->pf_chunk = SSEMU_EV_NONE;
}

static inline bool ent_less(const struct ssemu_ent *x,
			    const struct ssemu_ent *y)
{
	return x->time < y->time || (x->time == y->time && x->key < y->key);
}

/*
 * The heaps.  Near is h[0], h[1], ...; far is h[cap-1], h[cap-2], ...: @d
 * is +1 or -1 and is a constant wherever these are inlined.
 */
#define H(h, d, i) ((h)[(ptrdiff_t)(d) * (ptrdiff_t)(i)])

static inline __attribute__((always_inline)) void
sift_up(struct ssemu_ent *h, int d, uint32_t i)
{
	struct ssemu_ent v = H(h, d, i);

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
sift_down(struct ssemu_ent *h, int d, uint32_t n, uint32_t i)
{
	struct ssemu_ent v = H(h, d, i);

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

static inline struct ssemu_ent *far_heap(struct ssemu_engine *e)
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

static inline struct ssemu_ent *near_top(struct ssemu_engine *e)
{
	struct ssemu_ent *h = heap(e);

	return e->near_sorted ? &h[e->nnear - 1] : h;
}

static inline __attribute__((always_inline)) void
near_remove_top(struct ssemu_engine *e)
{
	struct ssemu_ent *h = heap(e);

	e->nnear--;
	if (!e->near_sorted && e->nnear) {
		h[0] = h[e->nnear];
		sift_down(h, 1, e->nnear, 0);
	}
}

static void near_push(struct ssemu_engine *e, const struct ssemu_ent *x)
{
	struct ssemu_ent *h = heap(e);
	struct ssemu_ent v = *x;
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
			struct ssemu_ent x = h[k];

			h[k] = h[n - 1 - k];
			h[n - 1 - k] = x;
		}
		e->near_sorted = 0;
	}
	h[n] = v;
	sift_up(h, 1, n);
	e->nnear++;
}

static void far_push(struct ssemu_engine *e, const struct ssemu_ent *x)
{
	struct ssemu_ent *f = far_heap(e);

	H(f, -1, e->nfar) = *x;
	sift_up(f, -1, e->nfar);
	e->nfar++;
}

static void far_pop(struct ssemu_engine *e)
{
	struct ssemu_ent *f = far_heap(e);

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


/* The first held event (held_ok, e->held > 0) into @out as the caller is
 * handed it. */
static inline void held_event(const struct ssemu_engine *e,
			      struct ssemu_fired *out)
{
	const struct ssemu_ent *h = &e->held_ev[0];

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
	struct ssemu_ent *h = e->held_ev;
	uint32_t i = e->held;

	while (i > 0) {
		uint32_t parent = (i - 1) / 2;

		/* (ent_less's order on the new event's fields, written
		 * out: a helper shared with ent_less compiled to 0.7%
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
	struct ssemu_ent *h = e->held_ev, v;
	uint32_t n = --e->held, i = 0;

	v = h[n];
	for (;;) {
		uint32_t l = 2 * i + 1, m;

		if (l >= n)
			break;
		m = l;
		if (l + 1 < n && ent_less(&h[l + 1], &h[l]))
			m = l + 1;
		if (!ent_less(&h[m], &v))
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
 * have when they were scheduled (nothing else is queued: there is room
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
		const struct ssemu_ent *h = &e->held_ev[i];

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

/* Id slot @slot given back (in range). */
static inline void release(struct ssemu_engine *e, struct ssemu_ev *ev,
			   uint32_t slot)
{
	ev->state = SSEMU_EV_FREE;
	ev->next = e->free_head;
	e->free_head = slot;
}

/* The id slot an entry with SSEMU_EV_IDD names, or NULL if it is out of
 * range (the engine is then marked corrupt). */
static struct ssemu_ev *idd_slot(struct ssemu_engine *e,
				 const struct ssemu_ent *x)
{
	if (unlikely(x->a >= e->hwm || e->hwm > e->cap))
		return corrupt(e, SSEMU_ENGINE_BAD_HEAP), NULL;
	return &ids(e)[x->a];
}

/* A new chunk for the wheel, or SSEMU_EV_NONE if the free list or the
 * mark is corrupt (the engine is then marked so). */
static inline uint32_t chunk_take(struct ssemu_engine *e)
{
	uint32_t ci = e->chunk_free;

	if (ci != SSEMU_EV_NONE) {
		if (unlikely(ci >= e->chunk_hwm ||
			     e->chunk_hwm > chunks_for(e->cap)))
			return corrupt(e, SSEMU_ENGINE_BAD_FREE), SSEMU_EV_NONE;
		e->chunk_free = chunk_next(e)[ci];
		return ci;
	}
	if (unlikely(e->chunk_hwm >= chunks_for(e->cap)))
		return corrupt(e, SSEMU_ENGINE_BAD_FREE), SSEMU_EV_NONE;
	return e->chunk_hwm++;
}

static inline void chunk_give(struct ssemu_engine *e, uint32_t ci)
{
	chunk_next(e)[ci] = e->chunk_free;
	e->chunk_free = ci;
}

/*
 * Reading bucket @s's events (refill, take_back): its newest chunk's
 * count in *@cnt (bucket_first), each chunk's events checked
 * (chunk_ents: at most @most more wanted), each chunk given back once
 * read (chunk_done, which returns the next one), the bucket emptied at
 * the end (bucket_clear).  A fault found marks the engine corrupt.
 */
static inline uint32_t bucket_first(struct ssemu_engine *e, uint32_t s,
				    uint32_t *cnt)
{
	*cnt = heads(e)[s].n;
	if (unlikely(!*cnt || *cnt > CH))
		return corrupt(e, SSEMU_ENGINE_BAD_BUCKET), SSEMU_EV_NONE;
	return heads(e)[s].chunk;
}

static inline const struct ssemu_ent *
chunk_ents(struct ssemu_engine *e, uint32_t ci, uint32_t cnt, uint32_t most)
{
	if (unlikely(ci >= e->chunk_hwm || e->chunk_hwm > chunks_for(e->cap) ||
		     cnt > e->nwheel || cnt > most))
		return corrupt(e, SSEMU_ENGINE_BAD_BUCKET), NULL;
	return chunks(e)[ci].ent;
}

static inline uint32_t chunk_done(struct ssemu_engine *e, uint32_t ci,
				  uint32_t cnt)
{
	uint32_t next = chunk_next(e)[ci];

	e->nwheel -= cnt;
	chunk_give(e, ci);
	return next;
}

static inline void bucket_clear(struct ssemu_engine *e, uint32_t s)
{
	heads(e)[s].chunk = SSEMU_EV_NONE;
	heads(e)[s].n = 0;
	e->bits[s / 64] &= ~(1ull << (s % 64));
	if (!e->bits[s / 64])
		e->summary[s / 4096] &= ~(1ull << (s / 64 % 64));
}

/* Event @x onto absolute bucket @bk of the wheel (base < bk < base + NB).
 * @return false if the engine was found corrupt. */
static inline __attribute__((always_inline)) bool
wheel_push(struct ssemu_engine *e, uint64_t bk, const struct ssemu_ent *x)
{
	uint32_t s = (uint32_t)bk & (NB - 1), ci, n;
	struct ssemu_bucket *hb = &heads(e)[s];
	uint64_t bit = 1ull << (s % 64);

	if (e->bits[s / 64] & bit) {
		ci = hb->chunk;
		n = hb->n;
		/* (a chunk out of range: corrupt; a full one, or a count
		 * past full: a new chunk) */
		if (unlikely(ci >= e->chunk_hwm ||
			     e->chunk_hwm > chunks_for(e->cap)))
			return corrupt(e, SSEMU_ENGINE_BAD_BUCKET);
	} else {
		/* (an empty bucket's head is reset as its bit is cleared:
		 * one that names a chunk lost its bit, and its events) */
		if (unlikely(hb->chunk != SSEMU_EV_NONE))
			return corrupt(e, SSEMU_ENGINE_BAD_BUCKET);
		ci = SSEMU_EV_NONE;
		n = CH;
	}
	if (n >= CH) {
		uint32_t nc = chunk_take(e);

		if (unlikely(nc == SSEMU_EV_NONE))
			return false;
		chunk_next(e)[nc] = ci;
		ci = nc;
		n = 0;
		hb->chunk = ci;
	}
	chunks(e)[ci].ent[n] = *x;
	hb->n = n + 1;
	e->bits[s / 64] |= bit;
	e->summary[s / 4096] |= 1ull << (s / 64 % 64);
	e->nwheel++;
	return true;
}

static inline __attribute__((always_inline)) int
schedule(struct ssemu_engine *e, ssemu_time_t t, bool keyed, uint64_t key,
	 uint32_t type, uint32_t a, uint32_t b, uint32_t c, ssemu_evid_t *id)
{
	struct ssemu_ent x;
	uint64_t bk;

	if (unlikely(e->bad))
		return -EIO;
	if (t < e->now)
		return -EINVAL;
	if (e->seq >> (64 - SSEMU_ENGINE_IDX_BITS))
		return -EOVERFLOW;
	/* every index and count from the engine's memory is checked: a
	 * corrupt one stops the engine rather than write out of bounds */
	if (unlikely(e->nnear + (uint64_t)e->nfar + e->nwheel > e->cap)) {
		corrupt(e, SSEMU_ENGINE_BAD_GEOMETRY);
		return -EIO;
	}
	if (unlikely(e->held)) {
		int ret = spill_held(e);

		if (ret)
			return ret;
	}
	if (e->nnear + (uint64_t)e->nfar + e->nwheel == e->cap)
		return -ENOSPC;
	x.time = t;
	x.key = keyed ? key : e->seq << SSEMU_ENGINE_IDX_BITS;
	x.type = (uint16_t)type;
	x.a = a;
	x.b = b;
	x.c = c;
	if (unlikely(id)) {
		/* an id slot: the most recently released first, else a
		 * never-used one (a queued event holds one at most, and
		 * fewer than cap are queued: there is one) */
		struct ssemu_ev *ev;
		uint32_t slot;

		if (unlikely(e->hwm > e->cap ||
			     (e->free_head != SSEMU_EV_NONE &&
			      e->free_head >= e->hwm) ||
			     (e->free_head == SSEMU_EV_NONE &&
			      e->hwm == e->cap))) {
			corrupt(e, SSEMU_ENGINE_BAD_FREE);
			return -EIO;
		}
		if (e->free_head != SSEMU_EV_NONE) {
			slot = e->free_head;
			ev = &ids(e)[slot];
			e->free_head = ev->next;
		} else {
			slot = e->hwm++;
			ev = &ids(e)[slot];
			ev->gen = 0;
		}
		ev->gen++;
		ev->state = SSEMU_EV_LIVE;
		ev->a = a;
		ev->b = b;
		ev->c = c;
		*id = ((uint64_t)ev->gen << 32) | slot;
		e->ids_out = 1;
		x.type |= SSEMU_EV_IDD;
		x.a = slot;
	}
	e->seq++;
	ssemu_store_relaxed(&e->nlive, e->nlive + 1);

	bk = bucket_of(e, t);
	/* nothing queued anywhere (a quiet fabric, a ping-pong): the window
	 * may move up to the event's bucket at once, which saves the trip
	 * through the wheel and a refill; near then holds all of it */
	if (bk > e->base && !e->nnear && !e->nwheel && !e->nfar)
		e->base = bk;
	if (bk <= e->base) {
		near_push(e, &x);
	} else if (likely(bk - e->base < NB)) {
		if (unlikely(!wheel_push(e, bk, &x))) {
			ssemu_store_relaxed(&e->nlive, e->nlive - 1);
			return -EIO;
		}
	} else {
		far_push(e, &x);
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
	/* nothing queued (no id wanted, room among the held, the engine
	 * sound): held apart, no queue */
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
	uint32_t slot = (uint32_t)id;
	struct ssemu_ev *ev;

	if (id == SSEMU_EVID_NONE || slot >= e->cap || slot >= e->hwm)
		return -ENOENT;
	ev = &ids(e)[slot];
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

/*
 * Entry @x, taken from the queue, was cancelled: its slot is given back.
 * @return true if so (or if its slot is out of range: the engine is then
 * corrupt, and nothing more fires).
 */
static inline bool reap_cancelled(struct ssemu_engine *e,
				  const struct ssemu_ent *x)
{
	struct ssemu_ev *ev;

	if (likely(!(x->type & SSEMU_EV_IDD)))
		return false;
	ev = idd_slot(e, x);
	if (!ev)
		return true;
	if (ev->state != SSEMU_EV_CANCELLED)
		return false;
	release(e, ev, x->a);
	e->ncancelled--;
	return true;
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

/* Chunk @ci's first @n events asked for. */
static SSEMU_PREFETCH_FN void chunk_prefetch(struct ssemu_engine *e,
					    uint32_t ci, uint32_t n)
{
	const struct ssemu_ent *x = chunks(e)[ci].ent;
	uint32_t k;

	for (k = 0; k < n; k += 2)
		__builtin_prefetch(&x[k]);
}

/*
 * A refill reads its bucket's chunks, far from the caches on a large
 * fabric.  So the next bucket's chunks are asked for ahead of its refill,
 * a chunk per pop: its newest by the refill before (walk_start), each
 * next one by a pop (walk_step).  Only the bitmap's word after base is
 * looked at (the next bucket is usually near): otherwise, no walk.
 */
static inline void walk_start(struct ssemu_engine *e)
{
	uint32_t p = (uint32_t)(e->base + 1) & (NB - 1), s, ci, n;
	uint64_t word = e->bits[p / 64] & (~0ull << (p % 64));

	e->pf_chunk = SSEMU_EV_NONE;
	if (!word || !e->nwheel)
		return;
	s = p / 64 * 64 + (uint32_t)__builtin_ctzll(word);
	ci = heads(e)[s].chunk;
	n = heads(e)[s].n;
	if (ci >= e->chunk_hwm || ci >= chunks_for(e->cap))
		return;
	chunk_prefetch(e, ci, n < CH ? n : CH);
	e->pf_chunk = chunk_next(e)[ci];
}

static inline void walk_step(struct ssemu_engine *e)
{
	uint32_t ci = e->pf_chunk;

	if (ci >= e->chunk_hwm || ci >= chunks_for(e->cap))
		return;
	chunk_prefetch(e, ci, CH);
	e->pf_chunk = chunk_next(e)[ci];
}

/*
 * Near is empty: move the window to the next bucket holding anything and
 * bring that bucket's events, from the wheel and the far heap, into near.
 * Cancelled ones are reaped on the way.  @return false if nothing is queued.
 */
SSEMU_HOT
static bool refill(struct ssemu_engine *e)
{
	struct ssemu_ent *h = heap(e), *f;
	uint64_t bw = UINT64_MAX, bf = UINT64_MAX;
	uint32_t n = 0, i, j, room;

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
		uint32_t s = (uint32_t)bw & (NB - 1), ci, cnt, k;

		for (ci = bucket_first(e, s, &cnt); ci != SSEMU_EV_NONE;
		     ci = chunk_done(e, ci, cnt), cnt = CH) {
			const struct ssemu_ent *x = chunk_ents(e, ci, cnt,
							       room - n);

			if (!x)
				return false;
			/* (the latest scheduled first: their times tend to
			 * be the latest, and near is sorted latest first) */
			x += cnt - 1;
			for (k = 0; k < cnt; k++, x--) {
				/* every event of a bucket is of that bucket: one
				 * of an earlier lap was left behind by a bitmap
				 * that lost its bit, and would run in the past */
				if (unlikely(bucket_of(e, x->time) != bw))
					return corrupt(e,
						       SSEMU_ENGINE_BAD_BUCKET);
				h[n] = *x;
				n += !(e->ncancelled && reap_cancelled(e, x));
			}
		}
		if (unlikely(e->bad))
			return false;
		bucket_clear(e, s);
	}

	f = far_heap(e);
	while (e->nfar && bucket_of(e, f->time) <= e->base) {
		/* take it out of far first: with the heaps full, near's next
		 * entry is far's last */
		struct ssemu_ent v = *f;

		far_pop(e);
		if (unlikely(n >= e->cap - e->nfar))
			return corrupt(e, SSEMU_ENGINE_BAD_HEAP);
		if (!(e->ncancelled && reap_cancelled(e, &v)))
			h[n++] = v;
		if (unlikely(e->bad))
			return false;
	}

	walk_start(e);

	/* near was empty: sort what came in, or heapify it, bottom up */
	e->nnear = n;
	if (n <= NEAR_SORT_MAX) {
		e->near_sorted = 1;
		for (i = 1; i < n; i++) {
			struct ssemu_ent v = h[i];

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
static inline struct ssemu_ent *top(struct ssemu_engine *e)
{
	struct ssemu_ent *t;

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
		if (likely(!e->ncancelled) || !reap_cancelled(e, t))
			return t;
		if (unlikely(e->bad))
			return NULL;
		near_remove_top(e);
	}
}

/* Entry @x as the caller sees it (its id slot's arguments, if it has
 * one), into @f.  @return false if it is cancelled or its slot is out of
 * range. */
static bool ent_seen(struct ssemu_engine *e, const struct ssemu_ent *x,
		     struct ssemu_fired *f)
{
	*f = (struct ssemu_fired){ .time = x->time, .type = x->type,
				   .a = x->a, .b = x->b, .c = x->c };
	if (x->type & SSEMU_EV_IDD) {
		const struct ssemu_ev *ev;

		if (x->a >= e->hwm || e->hwm > e->cap)
			return false;
		ev = &ids(e)[x->a];
		if (ev->state != SSEMU_EV_LIVE)
			return false;
		f->type = x->type & ~SSEMU_EV_IDD;
		f->a = ev->a;
		f->b = ev->b;
		f->c = ev->c;
	}
	return true;
}

void ssemu_engine_foreach(struct ssemu_engine *e,
			  bool (*fn)(void *arg, const struct ssemu_fired *ev),
			  void *arg)
{
	struct ssemu_ent *h = heap(e);
	struct ssemu_fired f;
	uint32_t i, w, s, ci, cnt, k, walked, seen = 0;
	uint64_t word;

	if (held_ok(e)) {
		for (i = 0; i < e->held; i++) {
			ent_seen(e, &e->held_ev[i], &f);
			if (!fn(arg, &f))
				return;
		}
	}
	/* (every count and index checked: this reads a possibly corrupt
	 * engine, to report on it) */
	if (e->nnear > e->cap || e->nfar > e->cap - e->nnear)
		return;
	for (i = 0; i < e->nnear; i++)
		if (ent_seen(e, &h[i], &f) && !fn(arg, &f))
			return;
	for (i = 0; i < e->nfar; i++)
		if (ent_seen(e, &h[e->cap - 1 - i], &f) && !fn(arg, &f))
			return;
	for (w = 0; w < NWORDS; w++) {
		for (word = e->bits[w]; word; word &= word - 1) {
			s = w * 64 + (uint32_t)__builtin_ctzll(word);
			ci = heads(e)[s].chunk;
			cnt = heads(e)[s].n;
			for (walked = 0; ci < e->chunk_hwm &&
					 e->chunk_hwm <= chunks_for(e->cap) &&
					 cnt <= CH && walked < e->chunk_hwm &&
					 seen + cnt <= e->nwheel;
			     walked++) {
				const struct ssemu_ent *x = chunks(e)[ci].ent;

				for (k = 0; k < cnt; k++)
					if (ent_seen(e, &x[k], &f) &&
					    !fn(arg, &f))
						return;
				seen += cnt;
				ci = chunk_next(e)[ci];
				cnt = CH;
			}
		}
	}
}

ssemu_time_t ssemu_engine_next_time(struct ssemu_engine *e)
{
	struct ssemu_ent *t;

	if (e->held && !e->bad)
		return held_ok(e) ? e->held_ev[0].time :
				    (corrupt(e, SSEMU_ENGINE_BAD_HEAP),
				     UINT64_MAX);
	t = top(e);

	return t ? t->time : UINT64_MAX;
}

bool ssemu_engine_peek(struct ssemu_engine *e, struct ssemu_fired *out)
{
	const struct ssemu_ent *t;

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
	return ent_seen(e, t, out);
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
	const struct ssemu_ent *h = &e->held_ev[0];

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
 * handed out): hold them all again, and give their chunks back.  The
 * window stays where it is (the queue is empty after).  @return false if
 * the engine was found corrupt (it is marked so).
 */
static bool __attribute__((noinline)) take_back(struct ssemu_engine *e)
{
	uint32_t ci, cnt, k, s;
	uint64_t bw;

	if (unlikely(e->held || !held_ok(e) || e->nwheel + e->nfar > e->cap))
		return corrupt(e, SSEMU_ENGINE_BAD_GEOMETRY);
	while (e->nwheel) {
		/* the buckets in order; each one's events in any order */
		bw = next_bucket(e);
		if (unlikely(e->bad))
			return false;
		if (unlikely(bw - e->base >= NB))
			return corrupt(e, SSEMU_ENGINE_BAD_BUCKET);
		s = (uint32_t)bw & (NB - 1);
		for (ci = bucket_first(e, s, &cnt); ci != SSEMU_EV_NONE;
		     ci = chunk_done(e, ci, cnt), cnt = CH) {
			const struct ssemu_ent *x = chunk_ents(
				e, ci, cnt, SSEMU_ENGINE_HELD_MAX - e->held);

			if (!x)
				return false;
			for (k = 0; k < cnt; k++, x++) {
				if (unlikely(bucket_of(e, x->time) != bw ||
					     (x->type & SSEMU_EV_IDD) ||
					     x->time < e->now))
					return corrupt(e,
						       SSEMU_ENGINE_BAD_BUCKET);
				held_push(e, x->time, x->key, x->type, x->a,
					  x->b, x->c);
			}
		}
		if (unlikely(e->bad))
			return false;
		bucket_clear(e, s);
	}
	while (e->nfar) {
		struct ssemu_ent v = *far_heap(e);

		far_pop(e);
		if (unlikely(e->held >= SSEMU_ENGINE_HELD_MAX ||
			     (v.type & SSEMU_EV_IDD) || v.time < e->now))
			return corrupt(e, SSEMU_ENGINE_BAD_HEAP);
		held_push(e, v.time, v.key, v.type, v.a, v.b, v.c);
	}
	e->pf_chunk = SSEMU_EV_NONE;
	return true;
}

SSEMU_HOT
bool ssemu_engine_pop(struct ssemu_engine *e, ssemu_time_t limit,
		      struct ssemu_fired *out)
{
	const struct ssemu_ent *t;

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
	out->type = t->type;
	out->a = t->a;
	out->b = t->b;
	out->c = t->c;
	if (unlikely(t->type & SSEMU_EV_IDD)) {
		/* (top reaped it if it was cancelled) */
		struct ssemu_ev *ev = idd_slot(e, t);

		if (!ev || ev->state != SSEMU_EV_LIVE)
			return corrupt(e, SSEMU_ENGINE_BAD_HEAP);
		out->type &= ~SSEMU_EV_IDD;
		out->a = ev->a;
		out->b = ev->b;
		out->c = ev->c;
		release(e, ev, t->a);
	}
	near_remove_top(e);
	walk_step(e);
	out->next_type = SSEMU_EV_NO_HINT;
	if (e->nnear) {
		/* (near's entries are among the cap the heaps share) */
		const struct ssemu_ent *n =
			e->near_sorted ? &heap(e)[e->nnear - 1] : heap(e);

		if (e->nnear <= e->cap && !(n->type & SSEMU_EV_IDD)) {
			out->next_type = n->type;
			out->next_a = n->a;
			out->next_b = n->b;
			out->next_c = n->c;
		}
	}
	handed_out(e, out);
	return true;
}
