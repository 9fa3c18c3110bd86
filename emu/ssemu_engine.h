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
 * the window is at):
 *  - near: every pending event of bucket <= base, as (time, key) entries:
 *    a sorted run popped from its end when the bucket brought few events
 *    (the common case), else a binary min-heap; pops come from here;
 *  - wheel: events of buckets base+1 .. base+NB-1 (a few microseconds, where
 *    nearly all of a fabric's events fall), each pushed unsorted on its
 *    bucket's list, linked through the event pool, with a two-level bitmap
 *    of the non-empty buckets;
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
 *
 * The engine is position independent: the heaps, the bucket heads and the
 * event pool follow the control block in one allocation, addressed by
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
 * A heap entry is 24 bytes: the time, the order key and the event's pool
 * index; events fire in (time, key, index) order.  ssemu_engine_schedule
 * keys an event by its scheduling sequence number (high 40 bits) with its
 * pool index (low 24 bits), so ties fire in scheduling order.
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

/* A held event (32 bytes): what a heap entry and a pool entry say of it. */
struct ssemu_held_ent {
	ssemu_time_t time;
	uint64_t key;
	uint32_t type;
	uint32_t a, b, c;
};

struct ssemu_heap_ent {
	ssemu_time_t time;
	uint64_t key;		/* the order key */
	uint32_t idx;		/* pool index */
	uint32_t pad;
};

/* ssemu_ev.state */
#define SSEMU_EV_FREE 0
#define SSEMU_EV_LIVE 1
#define SSEMU_EV_CANCELLED 2

struct ssemu_ev {
	ssemu_time_t time;	/* and key: the heap entry's, for the wheel */
	uint64_t key;
	uint16_t type;
	uint16_t state;
	uint32_t gen;		/* bumped on every reuse: stale ids fail */
	uint32_t a, b, c;	/* handler arguments */
	uint32_t next;		/* free list, or the bucket's list */
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
	uint32_t nwheel;	/* events on the buckets' lists */
	uint32_t free_head;
	uint32_t nlive;		/* scheduled and not cancelled (as executed) */
	uint32_t ncancelled;	/* cancelled, still queued */
	uint32_t near_sorted;	/* near is a sorted run, not a heap */
	/* an index or count read from the engine's memory was out of range
	 * (the memory is corrupt): SSEMU_ENGINE_BAD_*, and every call fails
	 * from then on */
	uint32_t bad;
	/* the pool's high-water mark: events [hwm, cap) were never used
	 * (nothing of them written, so their pages cost nothing until a
	 * fabric needs that many); released ones are on free_head's list */
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
	/* the next bucket's list, walked a step per pop ahead of its refill
	 * so that the refill finds its events in the cache: the bucket, and
	 * the event to look at next (a hint: checked, never trusted) */
	uint64_t pf_bucket;
	uint32_t pf_idx;
	/* bits added to the buckets' width (SSEMU_ENGINE_BUCKET_SHIFT):
	 * 0, or SSEMU_ENGINE_WIDE for group windows' encoded times, which
	 * run a window's groups one after the other */
	uint32_t bucket_wide;
	/* (the first held event in the second line, with the count: an
	 * event alone costs the engine two lines) */
	struct ssemu_held_ent held_ev[SSEMU_ENGINE_HELD_MAX];
	uint64_t heads_off;	/* bucket list heads; relative to the engine */
	uint64_t heap_off;	/* near heap from the front, far from the back */
	uint64_t pool_off;
	/* bit w % 64 of word w / 64: bits[w] is not zero */
	uint64_t summary[SSEMU_ENGINE_NBUCKETS / 4096];
	uint64_t bits[SSEMU_ENGINE_NBUCKETS / 64];	/* non-empty buckets */
};
_Static_assert(offsetof(struct ssemu_engine, held) / 64 ==
		       offsetof(struct ssemu_engine, held_ev) / 64 &&
	       (offsetof(struct ssemu_engine, held_ev) +
		sizeof(struct ssemu_held_ent) - 1) / 64 ==
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
	SSEMU_ENGINE_BAD_FREE,		/* the free list */
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
 * @return 0, -EINVAL for a time in the past, -ENOSPC when the pool is full,
 * -EIO when the engine's memory was found corrupt.
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
 * it reads the whole pool. */
void ssemu_engine_foreach(struct ssemu_engine *e,
			  bool (*fn)(void *arg, const struct ssemu_fired *ev),
			  void *arg);

static inline uint32_t ssemu_engine_pending(const struct ssemu_engine *e)
{
	return __atomic_load_n(&e->nlive, __ATOMIC_RELAXED);
}

#endif
