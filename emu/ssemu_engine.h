/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Discrete-event engine: an integer-picosecond clock and a priority queue of
 * events ordered by (time, key): the key is the scheduling sequence, so
 * events at equal times run in the order they were scheduled, or one the
 * caller gives, and a run is deterministic.  Cancellation is
 * deferred: a cancelled event stays queued, marked, and is reaped when it
 * comes up (as ae.c does with its timers).
 *
 * The queue has three parts, by how far an event is from the current bucket
 * window (the buckets are SSEMU_ENGINE_BUCKET_PS wide; "base" is the bucket
 * the window is at), and each holds the events themselves (time, key, type
 * and arguments: 32 bytes), not references to a pool, so that taking the
 * next event reads the entries in a row rather than chasing one line an
 * event:
 *  - near: every pending event of bucket <= base, as a sorted run popped
 *    from its end when the bucket brought few events (the common case),
 *    else a binary min-heap; pops come from here;
 *  - wheel: events of buckets base+1 .. base+NB-1 (a few microseconds, where
 *    nearly all of a fabric's events fall), each appended to its bucket's
 *    chunks (SSEMU_ENGINE_CHUNK events each, in a row), with a two-level
 *    bitmap of the non-empty buckets;
 *  - far: a second binary min-heap for the events beyond the wheel.
 * Before all three, a few events may be held apart, in a small heap in
 * the control block, while nothing is queued: a keyed event scheduled then
 * joins them, and they go to the queue when they are too many or an event
 * needs the queue (an id wanted, no key); a queue that has shrunk to a few
 * events comes back to be held when near runs dry.  A lone message
 * through an idle fabric keeps its few events there and never pays for
 * the wheel, its bitmap or a refill.
 * When near runs dry, the window moves straight to the next non-empty
 * bucket (by the bitmap) or to the far heap's top, whichever is earlier,
 * and that bucket's events, and the far events of it, go into near.  Near
 * compares full (time, key), and holds every event earlier than the end of
 * the window, so the order is exactly the one a single heap gives; near
 * only ever holds about one bucket's worth of events, which keeps it small
 * and in cache, and scheduling into the wheel is O(1).
 * An event scheduled with an id (to be cancelled) keeps its arguments in
 * a slot of its own (struct ssemu_ev, with the generation that makes a
 * stale id fail); its queue entry names the slot.
 *
 * The engine is position independent: the heaps, the buckets, their chunks
 * and the id slots follow the control block in one allocation, addressed by
 * offset and index, so it can live in a shared-memory segment and be run by
 * whichever process holds the fabric lock.  It does not dispatch:
 * ssemu_engine_pop hands the caller the next event and the caller (the
 * fabric) looks up the handler by type.
 */
#ifndef SSEMU_ENGINE_H
#define SSEMU_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <slingshot_emu/ssemu.h>

#define SSEMU_EV_NONE UINT32_MAX

/*
 * Bucket width (512 ps) and number of buckets (a 4.2 us horizon): a
 * fabric's serialisation, pipeline and link delays land in the wheel, a
 * bucket holds a handful of events (about 14 in bench_fabric's model on
 * shandy at 0.5 load, so sorting one is cheap; 1024 ps cost 1% more
 * instructions there; 256 ps, the same horizon, 1.6% fewer there, 0.4%
 * more on 2group and 0.3% more for a lone message), and only long timers
 * go to the far heap.
 */
#define SSEMU_ENGINE_BUCKET_SHIFT 9
#define SSEMU_ENGINE_BUCKET_PS (1ull << SSEMU_ENGINE_BUCKET_SHIFT)
#define SSEMU_ENGINE_WIDE 8
#define SSEMU_ENGINE_NBUCKETS 8192u

/*
 * Events fire in (time, key) order.  ssemu_engine_schedule keys an event
 * by its scheduling sequence number (the high 40 bits), so ties fire in
 * scheduling order.
 * ssemu_engine_schedule_key takes the caller's key instead: a caller that
 * keys each event by what it is (the model does, ssemu_model_int.h) gets
 * a tie order that does not depend on when or in which order the events
 * were scheduled.  At most 2^24 pending events and 2^40 events scheduled
 * in the life of an engine (over a day at 10 M events/s; schedule fails
 * with -EOVERFLOW after).
 */
#define SSEMU_ENGINE_MAX_CAP (1u << 24)
#define SSEMU_ENGINE_IDX_BITS 24

/*
 * The events held apart from the queue: at most SSEMU_ENGINE_HELD_MAX (a
 * lone 1 MiB message keeps 8-10 pending through one switch, 27-30 across
 * three), and a queue of at most SSEMU_ENGINE_HELD_BACK events is taken
 * back (half as many: a count that hovers at the most held does not move
 * its events to and fro at every event).
 */
#define SSEMU_ENGINE_HELD_MAX 32u
#define SSEMU_ENGINE_HELD_BACK 16u

/* An event as queued (32 bytes): held, in near, far or a wheel chunk. */
struct ssemu_ent {
	ssemu_time_t time;
	uint64_t key;		/* the order key */
	uint32_t type;		/* | SSEMU_EV_IDD: a is its id slot */
	uint32_t a, b, c;
};

/* ssemu_ent.type: the event has an id, and its arguments are in id slot
 * a (struct ssemu_ev) */
#define SSEMU_EV_IDD 0x80000000u

/*
 * A bucket's events lie in chunks of SSEMU_ENGINE_CHUNK (256 bytes): the
 * newest chunk first (its n events), each linked to the one before
 * (chunk_next), which is full.  Chunks come from a free list, then a
 * high-water mark; cap / SSEMU_ENGINE_CHUNK + NB + 1 of them are always
 * enough (every bucket's first chunk partly full, the rest full).
 */
#define SSEMU_ENGINE_CHUNK 8u

struct ssemu_chunk {
	struct ssemu_ent ent[SSEMU_ENGINE_CHUNK];
};

struct ssemu_bucket {
	uint32_t chunk;		/* the newest chunk (SSEMU_EV_NONE: none) */
	uint32_t n;		/* events in it, 1 .. SSEMU_ENGINE_CHUNK */
};

/* ssemu_ev.state */
#define SSEMU_EV_FREE 0
#define SSEMU_EV_LIVE 1
#define SSEMU_EV_CANCELLED 2

/* An id slot: an event scheduled with an id, its state and arguments. */
struct ssemu_ev {
	uint32_t gen;		/* bumped on every reuse: stale ids fail */
	uint32_t state;
	uint32_t next;		/* free list */
	uint32_t a, b, c;	/* handler arguments */
};

struct ssemu_engine {
	ssemu_time_t now;
	uint64_t seq;
	/* events handed out (not counting cancelled); written under the
	 * fabric lock, read without it (relaxed atomics) */
	uint64_t executed;
	uint32_t cap;
	uint32_t nnear;		/* entries in near */
	uint32_t nfar;		/* entries of the far heap */
	uint32_t nwheel;	/* events in the buckets' chunks */
	uint32_t free_head;	/* id slots' free list */
	uint32_t nlive;		/* scheduled and not cancelled (as executed) */
	uint32_t ncancelled;	/* cancelled, still queued */
	uint32_t near_sorted;	/* near is a sorted run, not a heap */
	/* an index or count read from the engine's memory was out of range
	 * (the memory is corrupt): SSEMU_ENGINE_BAD_*, and every call fails
	 * from then on */
	uint32_t bad;
	/* the id slots' high-water mark: slots [hwm, cap) were never used
	 * (nothing of them written, so their pages cost nothing until they
	 * are needed); released ones are on free_head's list */
	uint32_t hwm;
	/* events held apart from the queue: held_ev[0 .. held), a binary
	 * min-heap by (time, key); while any is held, nothing is queued
	 * (near, the wheel and far are empty).  A chain of events a few at
	 * a time, a lone message's through an idle fabric, so costs no
	 * queue at all */
	uint32_t held;
	/* an id was handed out once: the queue's events are never taken
	 * back into the held events (a held event cannot be cancelled) */
	uint32_t ids_out;
	uint64_t base;		/* bucket of the window: near holds all <= it */
	/* the next bucket's chunks, asked for a chunk per pop ahead of its
	 * refill so that the refill finds its events in the cache: the
	 * chunk to ask for next (a hint: checked, never trusted) */
	uint32_t pf_chunk;
	/* bits added to the buckets' width (SSEMU_ENGINE_BUCKET_SHIFT):
	 * 0, or SSEMU_ENGINE_WIDE for group windows' encoded times, which
	 * run a window's groups one after the other */
	uint32_t bucket_wide;
	/* the wheel's chunks: the free list, and the high-water mark (chunks
	 * [chunk_hwm, nchunks) were never used) */
	uint32_t chunk_free;
	uint32_t chunk_hwm;
	/* (the first held event in the second line, with the count: an
	 * event alone costs the engine two lines) */
	struct ssemu_ent held_ev[SSEMU_ENGINE_HELD_MAX];
	/* relative to the engine: */
	uint64_t heads_off;	/* the buckets (struct ssemu_bucket) */
	uint64_t next_off;	/* each chunk's link to the one before */
	uint64_t heap_off;	/* near heap from the front, far from the back */
	uint64_t chunks_off;
	uint64_t ids_off;
	/* bit w % 64 of word w / 64: bits[w] is not zero */
	uint64_t summary[SSEMU_ENGINE_NBUCKETS / 4096];
	uint64_t bits[SSEMU_ENGINE_NBUCKETS / 64];	/* non-empty buckets */
};
_Static_assert(offsetof(struct ssemu_engine, held) / 64 ==
		       offsetof(struct ssemu_engine, held_ev) / 64 &&
	       (offsetof(struct ssemu_engine, held_ev) +
		sizeof(struct ssemu_ent) - 1) / 64 ==
		       offsetof(struct ssemu_engine, held_ev) / 64,
	       "the held count and the first held event share a line");

/* An event handed to the caller. */
struct ssemu_fired {
	ssemu_time_t time;
	uint32_t type;
	uint32_t a, b, c;
	/* from ssemu_engine_pop only: the event the next pop will most
	 * likely take, as ssemu_engine_peek would give it now (a hint;
	 * next_type SSEMU_EV_NO_HINT: none at hand) */
	uint32_t next_type, next_a, next_b, next_c;
};

#define SSEMU_EV_NO_HINT UINT32_MAX

/* Event ids carry the generation so a stale id cannot cancel a reuse. */
typedef uint64_t ssemu_evid_t;
#define SSEMU_EVID_NONE UINT64_MAX

/* ssemu_engine.bad: what was found wrong (ssemu_engine_why) */
enum {
	SSEMU_ENGINE_OK = 0,
	SSEMU_ENGINE_BAD_GEOMETRY,	/* cap, offsets or counts */
	SSEMU_ENGINE_BAD_FREE,		/* a free list */
	SSEMU_ENGINE_BAD_BUCKET,	/* a bucket list or the bitmap */
	SSEMU_ENGINE_BAD_HEAP,		/* a heap entry */
};

size_t ssemu_engine_bytes(uint32_t cap);

/**
 * Is @e an engine of @cap events as ssemu_engine_init made it, with its
 * counts in range?  Checks the control block only (the rest is checked as
 * it is used: an engine whose memory is found corrupt sets bad, and
 * schedule then fails with -EIO and pop returns false).
 */
bool ssemu_engine_geometry_ok(const struct ssemu_engine *e, uint32_t cap);

/** The quick check before every use of an engine whose geometry was
 * checked once (ssemu_engine_geometry_ok): the size everything else is
 * computed from. */
static inline bool ssemu_engine_cap_ok(const struct ssemu_engine *e,
				       uint32_t cap)
{
	return e->cap == cap;
}

/** What ssemu_engine.bad says, in words. */
const char *ssemu_engine_why(uint32_t bad);
void ssemu_engine_init(struct ssemu_engine *e, uint32_t cap);

/**
 * Schedule an event at absolute time @t (>= now).
 * @return 0, -EINVAL for a time in the past, -ENOSPC when cap events are
 * queued (cancelled ones among them until their time comes), -EIO when
 * the engine's memory was found corrupt.  Only an event scheduled
 * with an id (@id not NULL) can be cancelled.
 */
int ssemu_engine_schedule(struct ssemu_engine *e, ssemu_time_t t,
			  uint32_t type, uint32_t a, uint32_t b, uint32_t c,
			  ssemu_evid_t *id);

/**
 * As ssemu_engine_schedule, with order key @key: events at equal times
 * fire in @key order (equal keys: in no particular order).
 */
int ssemu_engine_schedule_key(struct ssemu_engine *e, ssemu_time_t t,
			      uint64_t key, uint32_t type, uint32_t a,
			      uint32_t b, uint32_t c, ssemu_evid_t *id);

/** Cancel a pending event.  @return 0, or -ENOENT if it already ran. */
int ssemu_engine_cancel(struct ssemu_engine *e, ssemu_evid_t id);

/* Buckets 2^SSEMU_ENGINE_WIDE times wider (@wide) or not: only while
 * nothing is queued.  @return 0, or -EBUSY. */
int ssemu_engine_set_wide(struct ssemu_engine *e, bool wide);

/**
 * Take the next live event with time <= @limit, advancing the clock to it.
 * @return true if one was taken.
 */
bool ssemu_engine_pop(struct ssemu_engine *e, ssemu_time_t limit,
		      struct ssemu_fired *out);

/**
 * The event the next pop will most likely take (the first queued; one
 * scheduled meanwhile may come before it, and it may have been
 * cancelled): a hint, for the caller to ask for the memory that event
 * will touch while it handles the one it has.  @return false if none is
 * at hand (nothing queued in the window).
 */
bool ssemu_engine_peek(struct ssemu_engine *e, struct ssemu_fired *out);

/** Time of the next live event, or UINT64_MAX. */
ssemu_time_t ssemu_engine_next_time(struct ssemu_engine *e);

/** Call @fn for every live event (scheduled, neither fired nor cancelled),
 * in no particular order, until it returns false.  For consistency checks:
 * it reads the whole queue. */
void ssemu_engine_foreach(struct ssemu_engine *e,
			  bool (*fn)(void *arg, const struct ssemu_fired *ev),
			  void *arg);

static inline uint32_t ssemu_engine_pending(const struct ssemu_engine *e)
{
	return __atomic_load_n(&e->nlive, __ATOMIC_RELAXED);
}

#endif
