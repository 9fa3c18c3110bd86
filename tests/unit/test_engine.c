/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the discrete-event engine (emu/ssemu_engine.c): (time, seq)
 * ordering, FIFO tie-break, a full engine and its -ENOSPC recovery, deferred
 * cancellation and stale ids, pop limits, determinism, position independence,
 * randomized runs checked against a naive reference model (one of them
 * aimed at the near heap / bucket wheel / far heap split), and the wheel's
 * edges: bucket boundaries, far events coming in, jumps to the end of time.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ssemu_compiler.h"
#include "ssemu_engine.h"

/* Small deterministic PRNG for the tests (xorshift64*). */
static uint64_t test_rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static struct ssemu_engine *engine_new(uint32_t cap)
{
	struct ssemu_engine *e = malloc(ssemu_engine_bytes(cap));

	assert_non_null(e);
	ssemu_engine_init(e, cap);
	return e;
}

static int setup_engine64(void **state)
{
	*state = engine_new(64);
	return 0;
}

static int teardown_engine(void **state)
{
	free(*state);
	return 0;
}

static void sched_ok(struct ssemu_engine *e, ssemu_time_t t, uint32_t a,
		     ssemu_evid_t *id)
{
	assert_int_equal(ssemu_engine_schedule(e, t, 1, a, ~a, a * 3u, id), 0);
}

static void test_engine_init_empty(void **state)
{
	struct ssemu_engine *e = *state;
	struct ssemu_fired f;

	assert_int_equal(ssemu_engine_pending(e), 0);
	assert_true(ssemu_engine_next_time(e) == UINT64_MAX);
	assert_false(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_true(e->now == 0);
	assert_true(e->executed == 0);
	assert_true(ssemu_engine_bytes(64) >=
		    64 * (sizeof(struct ssemu_ev) + sizeof(struct ssemu_ent)) +
			    SSEMU_ENGINE_NBUCKETS *
				    sizeof(struct ssemu_bucket));
}

static void test_engine_order_by_time(void **state)
{
	static const ssemu_time_t times[] = {
		500, 20, 999999, 7, 300, 300000000000ULL, 1, 42, 0, 8000,
	};
	struct ssemu_engine *e = *state;
	ssemu_time_t prev = 0;
	struct ssemu_fired f;
	uint32_t i, n = 0;

	for (i = 0; i < ARRAY_SIZE(times); i++)
		assert_int_equal(ssemu_engine_schedule(e, times[i], 7 + i, i,
						       100 + i, 200 + i, NULL),
				 0);
	assert_int_equal(ssemu_engine_pending(e), ARRAY_SIZE(times));

	while (ssemu_engine_pop(e, UINT64_MAX, &f)) {
		assert_true(f.time >= prev);
		/* the payload travels with its event */
		assert_true(f.time == times[f.a]);
		assert_int_equal(f.type, 7 + f.a);
		assert_int_equal(f.b, 100 + f.a);
		assert_int_equal(f.c, 200 + f.a);
		assert_true(e->now == f.time);
		prev = f.time;
		n++;
	}
	assert_int_equal(n, ARRAY_SIZE(times));
	assert_int_equal(ssemu_engine_pending(e), 0);
	assert_true(e->executed == ARRAY_SIZE(times));
	assert_true(e->now == 300000000000ULL);
}

static void test_engine_fifo_tie_break(void **state)
{
	struct ssemu_engine *e = *state;
	struct ssemu_fired f;
	uint32_t i, next_at_10 = 0, next_at_5 = 1000;

	/* interleave two equal-time groups and some later events */
	for (i = 0; i < 20; i++) {
		sched_ok(e, 10, i, NULL);
		sched_ok(e, 5, 1000 + i, NULL);
		if (i % 4 == 0)
			sched_ok(e, 11 + i, 5000 + i, NULL);
	}
	for (i = 0; i < 20; i++) {
		assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
		assert_true(f.time == 5);
		assert_int_equal(f.a, next_at_5++);
	}
	for (i = 0; i < 20; i++) {
		assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
		assert_true(f.time == 10);
		assert_int_equal(f.a, next_at_10++);
	}
	/* scheduled at now: runs after those already queued at now */
	sched_ok(e, 11, 9999, NULL);
	assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_int_equal(f.a, 5000);
	assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_int_equal(f.a, 9999);
}

/*
 * Keyed events fire in (time, key) order whatever order they were
 * scheduled in: the same set of events, at times in near, the wheel and
 * the far heap, scheduled in two different orders (with unrelated events
 * and cancels mixed in, which take other id slots), fires alike.
 */
static void keyed_run(uint64_t seed, uint32_t *out, uint32_t n)
{
	struct ssemu_engine *e = engine_new(4096);
	uint32_t order[512], i, j, x, k = 0;
	uint64_t s = seed;
	ssemu_evid_t id;
	struct ssemu_fired f;

	assert_true(n <= 512);
	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = n; i > 1; i--) {
		j = (uint32_t)(test_rng_next(&s) % i);
		x = order[i - 1];
		order[i - 1] = order[j];
		order[j] = x;
	}
	for (i = 0; i < n; i++) {
		x = order[i];
		/* four times (many ties), near to far; keys in no order of
		 * x */
		assert_int_equal(ssemu_engine_schedule_key(e,
				 (ssemu_time_t[]){ 7, 3000, 900000,
						   60000000 }[x % 4],
				 (x * 0x9e3779b97f4a7c15ULL) >> 8, 1, x, 0, 0,
				 NULL), 0);
		if (test_rng_next(&s) % 3 == 0) {
			assert_int_equal(ssemu_engine_schedule_key(e, 5 + x,
					 0, 2, x, 0, 0, &id), 0);
			assert_int_equal(ssemu_engine_cancel(e, id), 0);
		}
	}
	while (ssemu_engine_pop(e, UINT64_MAX, &f)) {
		assert_int_equal(f.type, 1);
		assert_true(k < n);
		out[k++] = f.a;
	}
	assert_int_equal(k, n);
	free(e);
}

static void test_engine_keyed_order(void **state)
{
	uint32_t a[500], b[500], i;

	(void)state;
	keyed_run(1, a, 500);
	keyed_run(2, b, 500);
	for (i = 0; i < 500; i++)
		assert_int_equal(a[i], b[i]);
	/* and it is (time, key) order */
	for (i = 1; i < 500; i++)
		if (a[i] % 4 == a[i - 1] % 4)
			assert_true((a[i] * 0x9e3779b97f4a7c15ULL) >> 8 >
				    (a[i - 1] * 0x9e3779b97f4a7c15ULL) >> 8);
		else
			assert_true(a[i] % 4 > a[i - 1] % 4);
}

static bool count_cb(void *arg, const struct ssemu_fired *ev)
{
	(void)ev;
	(*(uint32_t *)arg)++;
	return true;
}

/*
 * An event scheduled (keyed, no id) while nothing is queued is held apart
 * from the queue; one that wants an id or has no key puts the held ones in
 * the queue first.  Either way the order is (time, key), peek,
 * next_time and foreach see the held events, and a pool of one still holds
 * at most one event.
 */
static void test_engine_held(void **state)
{
	struct ssemu_engine *e = engine_new(8), *one = engine_new(1);
	struct ssemu_fired f;
	uint32_t seen = 0;

	(void)state;
	/* a chain one at a time: never in the queue */
	assert_int_equal(ssemu_engine_schedule_key(e, 100, 5, 1, 10, 11, 12,
						   NULL), 0);
	assert_int_equal(e->held, 1);
	assert_int_equal(ssemu_engine_pending(e), 1);
	assert_true(ssemu_engine_next_time(e) == 100);
	assert_true(ssemu_engine_peek(e, &f));
	assert_true(f.time == 100 && f.a == 10 && f.b == 11 && f.c == 12);
	assert_false(ssemu_engine_pop(e, 99, &f));
	assert_true(ssemu_engine_pop(e, 100, &f));
	assert_true(f.time == 100 && f.type == 1 && f.a == 10 && f.c == 12);
	assert_int_equal(f.next_type, SSEMU_EV_NO_HINT);
	assert_int_equal(e->held, 0);
	assert_true(e->now == 100 && e->executed == 1);
	assert_int_equal(ssemu_engine_pending(e), 0);
	assert_int_equal(e->hwm, 0);	/* no id slot taken */

	/* a second event, earlier, then one of equal time and lower key:
	 * all held, and they fire in (time, key) order, each naming the
	 * next as its hint */
	assert_int_equal(ssemu_engine_schedule_key(e, 500, 9, 1, 1, 0, 0,
						   NULL), 0);
	assert_int_equal(e->held, 1);
	assert_int_equal(ssemu_engine_schedule_key(e, 300, 9, 2, 2, 0, 0,
						   NULL), 0);
	assert_int_equal(e->held, 2);
	assert_int_equal(ssemu_engine_schedule_key(e, 500, 3, 3, 3, 0, 0,
						   NULL), 0);
	assert_int_equal(e->held, 3);
	assert_int_equal(ssemu_engine_pending(e), 3);
	assert_true(ssemu_engine_next_time(e) == 300);
	assert_true(ssemu_engine_pop(e, UINT64_MAX, &f) && f.a == 2);
	assert_true(f.next_type == 3 && f.next_a == 3);
	assert_true(ssemu_engine_pop(e, UINT64_MAX, &f) && f.a == 3);
	assert_true(f.next_type == 1 && f.next_a == 1);
	assert_true(ssemu_engine_pop(e, UINT64_MAX, &f) && f.a == 1);
	assert_int_equal(f.next_type, SSEMU_EV_NO_HINT);
	assert_false(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_int_equal(e->hwm, 0);

	/* an id wanted, or an unkeyed event: in the queue, cancellable,
	 * the held ones before it */
	{
		ssemu_evid_t id;

		assert_int_equal(ssemu_engine_schedule_key(e, 650, 1, 1, 10,
							   0, 0, NULL), 0);
		assert_int_equal(e->held, 1);
		assert_int_equal(ssemu_engine_schedule_key(e, 600, 1, 1, 4, 0,
							   0, &id), 0);
		assert_int_equal(e->held, 0);
		assert_int_equal(ssemu_engine_pending(e), 2);
		assert_int_equal(ssemu_engine_cancel(e, id), 0);
		assert_true(ssemu_engine_pop(e, UINT64_MAX, &f) && f.a == 10);
		assert_false(ssemu_engine_pop(e, UINT64_MAX, &f));
		sched_ok(e, 700, 5, NULL);
		assert_int_equal(e->held, 0);
		assert_true(ssemu_engine_pop(e, UINT64_MAX, &f) && f.a == 5);
	}

	/* foreach counts the held event */
	assert_int_equal(ssemu_engine_schedule_key(e, 800, 1, 1, 6, 0, 0,
						   NULL), 0);
	ssemu_engine_foreach(e, count_cb, &seen);
	assert_int_equal(seen, 1);
	assert_true(ssemu_engine_pop(e, UINT64_MAX, &f) && f.a == 6);

	/* a pool of one: held, and a second is refused, the first kept */
	assert_int_equal(ssemu_engine_schedule_key(one, 10, 1, 1, 7, 0, 0,
						   NULL), 0);
	assert_int_equal(ssemu_engine_schedule_key(one, 20, 1, 1, 8, 0, 0,
						   NULL), -ENOSPC);
	assert_int_equal(ssemu_engine_pending(one), 1);
	assert_true(ssemu_engine_pop(one, UINT64_MAX, &f) && f.a == 7);
	assert_false(ssemu_engine_pop(one, UINT64_MAX, &f));
	free(one);

	/* the held events' state read from the engine's memory: a count out
	 * of range, more held than the pool holds, or held events beside
	 * queued ones, is a corrupt engine */
	assert_true(ssemu_engine_geometry_ok(e, 8));
	assert_int_equal(ssemu_engine_schedule_key(e, 900, 1, 1, 9, 0, 0,
						   NULL), 0);
	e->held = SSEMU_ENGINE_HELD_MAX + 1;
	assert_false(ssemu_engine_geometry_ok(e, 8));
	assert_false(ssemu_engine_peek(e, &f));
	e->held = 9;
	assert_false(ssemu_engine_geometry_ok(e, 8));
	e->held = 1;
	assert_true(ssemu_engine_geometry_ok(e, 8));
	e->nwheel = 1;
	assert_false(ssemu_engine_geometry_ok(e, 8));
	assert_false(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_int_equal(e->bad, SSEMU_ENGINE_BAD_HEAP);
	free(e);
}

/*
 * Keyed events, from one or two pending at a time to more than may be held
 * (the held events, their spill into the queue and the queue held again),
 * against a reference: the same (time, key) order.
 */
static void test_engine_held_vs_reference(void **state)
{
	const uint32_t cap = 64, steps = 200000;
	struct ssemu_engine *e = engine_new(cap);
	struct { ssemu_time_t time; uint64_t key; uint32_t a; } ref[64];
	static const uint32_t want[] = { 1, 2, 9, 2, 30, 33, 1, 45, 12, 60 };
	uint32_t nref = 0, i, j, best, held_seen = 0, fired = 0, queued = 0;
	uint64_t s = 0x5eedULL;
	struct ssemu_fired f;

	(void)state;
	for (i = 0; i < steps; i++) {
		uint64_t r = test_rng_next(&s);

		/* schedule while fewer than the phase wants are pending (one
		 * more now and then), else pop */
		if (nref < want[i / 5000 % 10] + (r & 1) && nref < cap) {
			ssemu_time_t t = e->now + (r >> 8) % (r & 6 ? 2000 :
							      r & 8 ? 400000 :
							      9000000);
			uint64_t key = (r >> 20) % 16;

			assert_int_equal(ssemu_engine_schedule_key(e, t, key, 1,
						i, 0, 0, NULL), 0);
			held_seen += e->held != 0;
			queued += e->held == 0;
			ref[nref].time = t;
			ref[nref].key = key;
			ref[nref++].a = i;
			continue;
		}
		best = 0;
		for (j = 1; j < nref; j++)
			if (ref[j].time < ref[best].time ||
			    (ref[j].time == ref[best].time &&
			     ref[j].key < ref[best].key))
				best = j;
		assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
		assert_true(f.time == ref[best].time);
		/* (equal time and key: either may come first) */
		if (f.a != ref[best].a) {
			for (j = 0; j < nref; j++)
				if (ref[j].a == f.a)
					break;
			assert_true(j < nref && ref[j].time == f.time &&
				    ref[j].key == ref[best].key);
			best = j;
		}
		ref[best] = ref[--nref];
		fired++;
		assert_int_equal(ssemu_engine_pending(e), nref);
	}
	assert_true(held_seen > 1000 && queued > 1000 && fired > 50000);
	free(e);
}

/*
 * As many held as may be: the next keyed event puts them in the queue, and
 * every event fires in order.  A queue down to SSEMU_ENGINE_HELD_BACK
 * events, near empty, is held again at the next pop (the
 * wheel's and the far heap's events both), unless an event was cancelled
 * or an id handed out: those stay in the queue.
 */
static void test_engine_held_run(void **state)
{
	const uint32_t n = SSEMU_ENGINE_HELD_MAX + 8;
	struct ssemu_engine *e = engine_new(256);
	struct ssemu_fired f;
	ssemu_time_t last = 0;
	uint32_t i, took_back = 0;
	uint64_t s = 0x4e1dULL;
	ssemu_evid_t id;

	(void)state;
	for (i = 0; i < n; i++) {
		uint64_t r = test_rng_next(&s);
		/* within the wheel, and beyond it (the far heap) */
		ssemu_time_t t = 1000 + (r >> 8) % (i % 5 ? 3000000 :
							    30000000);

		assert_int_equal(ssemu_engine_schedule_key(e, t, r >> 40, 1, i,
							   0, 0, NULL), 0);
		if (i < SSEMU_ENGINE_HELD_MAX)
			assert_int_equal(e->held, i + 1);
		else
			assert_int_equal(e->held, 0);
	}
	assert_true(e->nwheel > 0 && e->nfar > 0);
	assert_int_equal(ssemu_engine_pending(e), n);
	for (i = 0; i < n; i++) {
		uint32_t queued = e->nnear + e->nwheel + e->nfar;

		assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
		assert_true(f.time >= last);
		last = f.time;
		if (queued && e->held) {
			/* held again: the queue was short, near empty */
			assert_true(queued <= SSEMU_ENGINE_HELD_BACK);
			assert_int_equal(e->nwheel + e->nfar + e->nnear, 0);
			took_back++;
		}
	}
	assert_int_equal(took_back, 1);
	assert_false(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_int_equal(ssemu_engine_pending(e), 0);
	assert_true(ssemu_engine_geometry_ok(e, 256));

	/* a cancelled event queued: nothing held again */
	for (i = 0; i < SSEMU_ENGINE_HELD_MAX + 1; i++)
		assert_int_equal(ssemu_engine_schedule_key(e, last + 1000 +
							   i * 700, i, 1, i,
							   0, 0, NULL), 0);
	assert_int_equal(e->held, 0);
	assert_int_equal(ssemu_engine_schedule_key(e, last + 500000, 0, 1,
						   99, 0, 0, &id), 0);
	assert_int_equal(ssemu_engine_cancel(e, id), 0);
	for (i = 0; i < SSEMU_ENGINE_HELD_MAX + 1; i++) {
		assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
		assert_int_equal(f.a, i);
		assert_int_equal(e->held, 0);
	}
	assert_false(ssemu_engine_pop(e, UINT64_MAX, &f));
	/* near the sequence's end: the held events go to the queue each as
	 * the sequence stood, none lost, and the end refuses the next */
	e->seq = (1ull << (64 - SSEMU_ENGINE_IDX_BITS)) - 3;
	assert_int_equal(ssemu_engine_schedule_key(e, e->now + 10, 1, 1, 1,
						   0, 0, NULL), 0);
	assert_int_equal(ssemu_engine_schedule_key(e, e->now + 5, 1, 1, 2,
						   0, 0, NULL), 0);
	assert_int_equal(e->held, 2);
	assert_int_equal(ssemu_engine_schedule_key(e, e->now + 20, 1, 1, 3,
						   0, 0, &id), 0);
	assert_int_equal(ssemu_engine_pending(e), 3);
	assert_int_equal(ssemu_engine_schedule_key(e, e->now + 30, 1, 1, 4,
						   0, 0, NULL), -EOVERFLOW);
	assert_true(ssemu_engine_pop(e, UINT64_MAX, &f) && f.a == 2);
	assert_true(ssemu_engine_pop(e, UINT64_MAX, &f) && f.a == 1);
	assert_true(ssemu_engine_pop(e, UINT64_MAX, &f) && f.a == 3);
	assert_false(ssemu_engine_pop(e, UINT64_MAX, &f));
	e->seq = 0;

	/* an id handed out once: never held again */
	assert_int_equal(e->ids_out, 1);
	for (i = 0; i < SSEMU_ENGINE_HELD_MAX + 1; i++)
		assert_int_equal(ssemu_engine_schedule_key(e, e->now + 1000 +
							   i * 700, i, 1, i,
							   0, 0, NULL), 0);
	for (i = 0; i < SSEMU_ENGINE_HELD_MAX + 1; i++) {
		assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
		assert_int_equal(f.a, i);
		assert_int_equal(e->held, 0);
	}
	free(e);
}

/* An engine of 64 whose queue is down to a few events, near empty: the
 * next pop holds them again. */
static struct ssemu_engine *short_queue(void)
{
	struct ssemu_engine *e = engine_new(64);
	struct ssemu_fired f;
	uint32_t i;

	for (i = 0; i < SSEMU_ENGINE_HELD_MAX + 1; i++)
		assert_int_equal(ssemu_engine_schedule_key(e, 1000 + i * 5000,
							   i, 1, i, 0, 0,
							   NULL), 0);
	while (e->nwheel + e->nfar > SSEMU_ENGINE_HELD_BACK || e->nnear)
		assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_int_equal(e->held, 0);
	return e;
}

/* A queued event found broken as it is held again: the engine is corrupt,
 * nothing fires. */
static void test_engine_take_back_corrupt(void **state)
{
	struct ssemu_engine *e = short_queue();
	struct ssemu_bucket *hd =
		(struct ssemu_bucket *)((char *)e + e->heads_off);
	struct ssemu_chunk *ch =
		(struct ssemu_chunk *)((char *)e + e->chunks_off);
	struct ssemu_fired f;
	uint32_t i, s;

	(void)state;
	/* an event of the first bucket's a lap later: not of that bucket */
	for (i = 0; i < SSEMU_ENGINE_NBUCKETS / 64; i++)
		if (e->bits[i])
			break;
	assert_true(i < SSEMU_ENGINE_NBUCKETS / 64);
	s = i * 64 + (uint32_t)__builtin_ctzll(e->bits[i]);
	assert_true(hd[s].chunk < e->chunk_hwm && hd[s].n > 0);
	ch[hd[s].chunk].ent[0].time +=
		SSEMU_ENGINE_BUCKET_PS * SSEMU_ENGINE_NBUCKETS;
	assert_false(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_int_equal(e->bad, SSEMU_ENGINE_BAD_BUCKET);
	free(e);

	/* a bucket's count out of range */
	e = short_queue();
	hd = (struct ssemu_bucket *)((char *)e + e->heads_off);
	for (i = 0; i < SSEMU_ENGINE_NBUCKETS / 64; i++)
		if (e->bits[i])
			break;
	s = i * 64 + (uint32_t)__builtin_ctzll(e->bits[i]);
	hd[s].n = SSEMU_ENGINE_CHUNK + 1;
	assert_false(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_int_equal(e->bad, SSEMU_ENGINE_BAD_BUCKET);
	free(e);

	/* a bucket whose bit the bitmap lost: the wheel counts an event no
	 * bucket has, found as the queue is held again */
	e = short_queue();
	for (i = 0; i < SSEMU_ENGINE_NBUCKETS / 64; i++)
		if (e->bits[i]) {
			e->bits[i] &= e->bits[i] - 1;	/* the first bucket's */
			break;
		}
	assert_false(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_int_equal(e->bad, SSEMU_ENGINE_BAD_BUCKET);
	free(e);
}

static void test_engine_schedule_in_past(void **state)
{
	struct ssemu_engine *e = *state;
	struct ssemu_fired f;
	ssemu_evid_t id = 12345;

	sched_ok(e, 100, 1, NULL);
	assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_true(e->now == 100);

	assert_int_equal(ssemu_engine_schedule(e, 99, 1, 0, 0, 0, &id),
			 -EINVAL);
	assert_int_equal(ssemu_engine_schedule(e, 0, 1, 0, 0, 0, NULL),
			 -EINVAL);
	assert_true(id == 12345);
	assert_int_equal(ssemu_engine_pending(e), 0);
	assert_true(ssemu_engine_next_time(e) == UINT64_MAX);

	/* "now" itself is not the past */
	sched_ok(e, 100, 2, NULL);
	assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_int_equal(f.a, 2);
}

static void test_engine_full(void **state)
{
	struct ssemu_engine *e = engine_new(8);
	struct ssemu_fired f;
	uint32_t i;

	(void)state;
	for (i = 0; i < 8; i++)
		sched_ok(e, 10 + i, i, NULL);
	assert_int_equal(ssemu_engine_schedule(e, 50, 1, 0, 0, 0, NULL),
			 -ENOSPC);
	assert_int_equal(ssemu_engine_pending(e), 8);

	for (i = 0; i < 3; i++) {
		assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
		assert_int_equal(f.a, i);
	}
	for (i = 0; i < 3; i++)
		sched_ok(e, 100 + i, 100 + i, NULL);
	assert_int_equal(ssemu_engine_schedule(e, 50, 1, 0, 0, 0, NULL),
			 -ENOSPC);
	assert_int_equal(ssemu_engine_pending(e), 8);

	/* everything still comes out, in order */
	for (i = 3; i < 8; i++) {
		assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
		assert_int_equal(f.a, i);
	}
	for (i = 0; i < 3; i++) {
		assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
		assert_int_equal(f.a, 100 + i);
	}
	assert_false(ssemu_engine_pop(e, UINT64_MAX, &f));

	/* a drained engine is fully usable again */
	for (i = 0; i < 8; i++)
		sched_ok(e, 1000, i, NULL);
	assert_int_equal(ssemu_engine_pending(e), 8);
	free(e);
}

static void test_engine_zero_cap(void **state)
{
	struct ssemu_engine *e = engine_new(0);
	struct ssemu_fired f;

	(void)state;
	assert_int_equal(ssemu_engine_schedule(e, 1, 1, 0, 0, 0, NULL),
			 -ENOSPC);
	assert_false(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_int_equal(ssemu_engine_cancel(e, 0), -ENOENT);
	free(e);
}

static void test_engine_cancel(void **state)
{
	struct ssemu_engine *e = *state;
	ssemu_evid_t id[6];
	struct ssemu_fired f;
	uint32_t i, seen = 0;

	for (i = 0; i < 6; i++)
		sched_ok(e, 10 * (i + 1), i, &id[i]);
	assert_int_equal(ssemu_engine_pending(e), 6);

	/* cancel the head, one in the middle and the tail */
	assert_int_equal(ssemu_engine_cancel(e, id[0]), 0);
	assert_int_equal(ssemu_engine_cancel(e, id[3]), 0);
	assert_int_equal(ssemu_engine_cancel(e, id[5]), 0);
	assert_int_equal(ssemu_engine_pending(e), 3);
	/* twice is an error and does not change the count */
	assert_int_equal(ssemu_engine_cancel(e, id[3]), -ENOENT);
	assert_int_equal(ssemu_engine_pending(e), 3);

	/* next_time skips the cancelled head */
	assert_true(ssemu_engine_next_time(e) == 20);

	while (ssemu_engine_pop(e, UINT64_MAX, &f)) {
		assert_true(f.a == 1 || f.a == 2 || f.a == 4);
		seen |= 1u << f.a;
	}
	assert_int_equal(seen, (1u << 1) | (1u << 2) | (1u << 4));
	assert_int_equal(ssemu_engine_pending(e), 0);
	assert_true(e->executed == 3);
	/* the clock never visited the cancelled tail at 60 */
	assert_true(e->now == 50);

	/* fired events cannot be cancelled */
	assert_int_equal(ssemu_engine_cancel(e, id[1]), -ENOENT);
	assert_int_equal(ssemu_engine_cancel(e, id[4]), -ENOENT);
	/* nor can garbage */
	assert_int_equal(ssemu_engine_cancel(e, SSEMU_EVID_NONE), -ENOENT);
	assert_int_equal(ssemu_engine_cancel(e, 64), -ENOENT);
	assert_int_equal(ssemu_engine_cancel(e, 0xffffffffULL), -ENOENT);
}

static void test_engine_cancel_stale_id(void **state)
{
	struct ssemu_engine *e = engine_new(1);
	ssemu_evid_t old, cur, reaped;
	struct ssemu_fired f;

	(void)state;
	/* the only slot: fire it, then reuse it */
	sched_ok(e, 5, 1, &old);
	assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
	sched_ok(e, 6, 2, &cur);
	assert_true(old != cur);
	assert_true((uint32_t)old == (uint32_t)cur);	/* same slot */
	assert_int_equal(ssemu_engine_cancel(e, old), -ENOENT);
	assert_int_equal(ssemu_engine_pending(e), 1);

	/* a cancelled slot reaped and reused: the old id stays dead */
	assert_int_equal(ssemu_engine_cancel(e, cur), 0);
	assert_int_equal(ssemu_engine_pending(e), 0);
	assert_false(ssemu_engine_pop(e, UINT64_MAX, &f));	/* reaps */
	reaped = cur;
	sched_ok(e, 7, 3, &cur);
	assert_int_equal(ssemu_engine_cancel(e, reaped), -ENOENT);
	assert_int_equal(ssemu_engine_cancel(e, old), -ENOENT);
	assert_int_equal(ssemu_engine_pending(e), 1);
	assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_int_equal(f.a, 3);
	free(e);
}

static void test_engine_cancel_frees_its_place(void **state)
{
	struct ssemu_engine *e = engine_new(4);
	ssemu_evid_t id[4];
	struct ssemu_fired f;
	uint32_t i;

	(void)state;
	for (i = 0; i < 4; i++)
		sched_ok(e, 10 + i, i, &id[i]);
	assert_int_equal(ssemu_engine_cancel(e, id[0]), 0);
	assert_int_equal(ssemu_engine_cancel(e, id[1]), 0);
	/* reaping the cancelled head gives the slots back */
	assert_true(ssemu_engine_next_time(e) == 12);
	sched_ok(e, 20, 20, NULL);
	sched_ok(e, 21, 21, NULL);
	assert_int_equal(ssemu_engine_schedule(e, 22, 1, 0, 0, 0, NULL),
			 -ENOSPC);
	assert_int_equal(ssemu_engine_pending(e), 4);
	for (i = 0; i < 4; i++)
		assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_int_equal(f.a, 21);
	free(e);
}

static void test_engine_pop_limit(void **state)
{
	struct ssemu_engine *e = *state;
	struct ssemu_fired f;

	sched_ok(e, 10, 1, NULL);
	sched_ok(e, 20, 2, NULL);
	sched_ok(e, 30, 3, NULL);

	assert_false(ssemu_engine_pop(e, 9, &f));
	assert_true(e->now == 0);
	assert_true(ssemu_engine_pop(e, 15, &f));
	assert_int_equal(f.a, 1);
	assert_false(ssemu_engine_pop(e, 15, &f));
	/* a refused pop does not move time */
	assert_true(e->now == 10);
	assert_int_equal(ssemu_engine_pending(e), 2);
	/* the limit is inclusive */
	assert_true(ssemu_engine_pop(e, 20, &f));
	assert_int_equal(f.a, 2);
	assert_false(ssemu_engine_pop(e, 0, &f));	/* a limit behind now */
	assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_int_equal(f.a, 3);
	assert_false(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_true(e->executed == 3);
}

static void test_engine_next_time(void **state)
{
	struct ssemu_engine *e = *state;
	ssemu_evid_t a, b, c;
	struct ssemu_fired f;

	assert_true(ssemu_engine_next_time(e) == UINT64_MAX);
	sched_ok(e, 300, 3, &c);
	assert_true(ssemu_engine_next_time(e) == 300);
	sched_ok(e, 100, 1, &a);
	sched_ok(e, 200, 2, &b);
	assert_true(ssemu_engine_next_time(e) == 100);
	/* peeking neither fires nor moves time */
	assert_true(ssemu_engine_next_time(e) == 100);
	assert_int_equal(ssemu_engine_pending(e), 3);
	assert_true(e->now == 0);

	assert_int_equal(ssemu_engine_cancel(e, a), 0);
	assert_true(ssemu_engine_next_time(e) == 200);
	assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_true(f.time == 200);
	assert_true(ssemu_engine_next_time(e) == 300);
	assert_int_equal(ssemu_engine_cancel(e, c), 0);
	assert_true(ssemu_engine_next_time(e) == UINT64_MAX);
	(void)b;
}

/*
 * ssemu_engine_peek names the event the next pop takes (nothing scheduled
 * or cancelled in between), in the sorted window and in the heap it turns
 * into under a burst; it fires nothing, moves no time and changes no
 * count; with nothing in the window (empty, or all of it in the wheel)
 * it says so; a corrupt count makes it say nothing rather than read out
 * of bounds.  A pop's hint (next_type ...) is what a peek gives right
 * after it.
 */
static void test_engine_peek(void **state)
{
	struct ssemu_engine *e = engine_new(1024);
	struct ssemu_fired f, p, q;
	uint64_t seed = 7;
	uint32_t i, n, peeked = 0, hinted = 0, sorted_seen = 0, heap_seen = 0;
	uint32_t nnear;

	(void)state;
	assert_false(ssemu_engine_peek(e, &p));
	/* a burst in one bucket: the run, then (moves past NEAR_SHIFT_MAX)
	 * the heap; and later buckets, in the wheel */
	for (i = 0; i < 600; i++)
		assert_int_equal(ssemu_engine_schedule(e,
				 test_rng_next(&seed) % SSEMU_ENGINE_BUCKET_PS,
				 1 + i % 5, i, ~i, i * 3u, NULL), 0);
	for (i = 0; i < 300; i++)
		assert_int_equal(ssemu_engine_schedule(e,
				 SSEMU_ENGINE_BUCKET_PS * (2 + i % 40) +
				 test_rng_next(&seed) % 97,
				 2, 1000 + i, i, i, NULL), 0);
	n = ssemu_engine_pending(e);
	for (;;) {
		bool ok = ssemu_engine_peek(e, &p);

		assert_int_equal(ssemu_engine_pending(e), n);
		if (ok) {
			ssemu_time_t now = e->now;

			/* (a second look says the same) */
			assert_true(ssemu_engine_peek(e, &f));
			assert_true(f.time == p.time && f.a == p.a);
			assert_true(e->now == now);
			if (e->near_sorted)
				sorted_seen++;
			else
				heap_seen++;
		}
		if (!ssemu_engine_pop(e, UINT64_MAX, &f))
			break;
		n--;
		/* the pop's hint is what a peek says right after it */
		if (ssemu_engine_peek(e, &q)) {
			hinted++;
			assert_int_equal(f.next_type, q.type);
			assert_int_equal(f.next_a, q.a);
			assert_int_equal(f.next_b, q.b);
			assert_int_equal(f.next_c, q.c);
		} else {
			assert_int_equal(f.next_type, SSEMU_EV_NO_HINT);
		}
		if (!ok)
			continue;
		peeked++;
		assert_true(f.time == p.time);
		assert_int_equal(f.type, p.type);
		assert_int_equal(f.a, p.a);
		assert_int_equal(f.b, p.b);
		assert_int_equal(f.c, p.c);
	}
	assert_int_equal(n, 0);
	assert_false(ssemu_engine_peek(e, &p));
	/* every event but the first of each refill was peeked at, and
	 * hinted at by the pop before it */
	assert_true(peeked >= 850);
	assert_true(hinted >= 850);
	assert_true(sorted_seen > 0 && heap_seen > 0);

	/* a count out of range: nothing, and no read past the heap */
	sched_ok(e, e->now + 1, 1, NULL);
	nnear = e->nnear;
	assert_int_equal(nnear, 1);
	e->nnear = e->cap + 1;
	assert_false(ssemu_engine_peek(e, &p));
	e->nnear = nnear;
	assert_true(ssemu_engine_peek(e, &p));
	free(e);
}

/*
 * The walk ahead of the next refill (pf_chunk) is a hint read
 * from the engine's memory: whatever it holds, events fire in the same
 * order, and nothing is read out of bounds.
 */
static void test_engine_walk_hint_untrusted(void **state)
{
	struct ssemu_engine *a = engine_new(512), *b = engine_new(512);
	uint64_t seed = 11, junk = 99;
	struct ssemu_fired fa, fb;
	uint32_t i, n = 0;

	(void)state;
	for (i = 0; i < 400; i++) {
		/* (20 a bucket: most pops take from the window without a
		 * refill, which would start the walk afresh) */
		ssemu_time_t t = test_rng_next(&seed) %
				 (SSEMU_ENGINE_BUCKET_PS * 20);

		assert_int_equal(ssemu_engine_schedule(a, t, 1, i, 0, 0, NULL),
				 0);
		assert_int_equal(ssemu_engine_schedule(b, t, 1, i, 0, 0, NULL),
				 0);
	}
	for (;;) {
		/* b's hint: garbage, a chunk of another bucket or a free
		 * one, or out of range */
		switch (test_rng_next(&junk) % 4) {
		case 0:
			b->pf_chunk = (uint32_t)test_rng_next(&junk);
			break;
		case 1:
			b->pf_chunk = (uint32_t)(test_rng_next(&junk) % 60);
			break;
		case 2:
			b->pf_chunk = b->chunk_hwm +
				      (uint32_t)(test_rng_next(&junk) % 4);
			break;
		default:
			break;
		}
		if (!ssemu_engine_pop(a, UINT64_MAX, &fa)) {
			assert_false(ssemu_engine_pop(b, UINT64_MAX, &fb));
			break;
		}
		assert_true(ssemu_engine_pop(b, UINT64_MAX, &fb));
		assert_true(fa.time == fb.time);
		assert_int_equal(fa.a, fb.a);
		n++;
	}
	assert_int_equal(n, 400);
	assert_int_equal(b->bad, 0);
	free(a);
	free(b);
}

/*
 * A scripted mixed workload; every fired event is appended to @out.
 * Returns the number of fired events.
 */
static uint32_t run_script(struct ssemu_engine *e, uint64_t seed,
			   struct ssemu_fired *out, uint32_t max_out,
			   uint32_t steps)
{
	ssemu_evid_t *ids = calloc(steps, sizeof(*ids));
	uint32_t nids = 0, nout = 0, i;
	struct ssemu_fired f;
	uint64_t s = seed;

	assert_non_null(ids);
	for (i = 0; i < steps; i++) {
		uint64_t r = test_rng_next(&s);

		switch (r % 4) {
		case 0:
		case 1:
			if (ssemu_engine_schedule(e, e->now + (r >> 8) % 1000,
						  (uint32_t)(r >> 40) % 16, i,
						  (uint32_t)r, 0,
						  &ids[nids]) == 0)
				nids++;
			break;
		case 2:
			if (nids)
				(void)ssemu_engine_cancel(e,
							  ids[(r >> 8) % nids]);
			break;
		default:
			while (nout < max_out &&
			       ssemu_engine_pop(e, e->now + (r >> 8) % 300,
						&f))
				out[nout++] = f;
			break;
		}
	}
	while (nout < max_out && ssemu_engine_pop(e, UINT64_MAX, &f))
		out[nout++] = f;
	free(ids);
	return nout;
}

static void test_engine_determinism(void **state)
{
	const uint32_t steps = 20000, cap = 4096;
	struct ssemu_engine *e1 = engine_new(cap), *e2 = engine_new(cap);
	struct ssemu_fired *o1 = calloc(steps, sizeof(*o1));
	struct ssemu_fired *o2 = calloc(steps, sizeof(*o2));
	uint32_t n1, n2;

	(void)state;
	assert_non_null(o1);
	assert_non_null(o2);
	n1 = run_script(e1, 0x5eed5eedULL, o1, steps, steps);
	n2 = run_script(e2, 0x5eed5eedULL, o2, steps, steps);
	assert_true(n1 > steps / 8);	/* a non-trivial run */
	assert_int_equal(n1, n2);
	assert_memory_equal(o1, o2, (size_t)n1 * sizeof(*o1));
	assert_true(e1->now == e2->now);
	assert_true(e1->executed == e2->executed);
	assert_true(e1->executed == n1);

	/* and a different seed gives a different run */
	ssemu_engine_init(e2, cap);
	n2 = run_script(e2, 0x5eed5eeeULL, o2, steps, steps);
	assert_false(n1 == n2 &&
		     memcmp(o1, o2, (size_t)n1 * sizeof(*o1)) == 0);
	free(o1);
	free(o2);
	free(e1);
	free(e2);
}

static void test_engine_position_independent(void **state)
{
	const uint32_t cap = 256;
	size_t bytes = ssemu_engine_bytes(cap);
	struct ssemu_engine *e = engine_new(cap), *copy = malloc(bytes);
	struct ssemu_fired f1, f2;
	ssemu_evid_t id;
	uint64_t s = 99;
	uint32_t i;

	(void)state;
	assert_non_null(copy);
	/* in near, on the wheel and (one in four) in the far heap */
	for (i = 0; i < 200; i++)
		sched_ok(e, test_rng_next(&s) % (i % 4 ? 100000 : 100000000),
			 i, &id);
	assert_int_equal(ssemu_engine_cancel(e, id), 0);
	for (i = 0; i < 50; i++)
		assert_true(ssemu_engine_pop(e, UINT64_MAX, &f1));

	/* move the whole engine, as a remapped shared segment would */
	memcpy(copy, e, bytes);
	memset(e, 0xa5, bytes);
	/* the original no longer holds anything */
	ssemu_engine_init(e, cap);
	assert_int_equal(ssemu_engine_pending(copy), 149);
	assert_int_equal(ssemu_engine_cancel(copy, id), -ENOENT);
	i = 0;
	while (ssemu_engine_pop(copy, UINT64_MAX, &f2)) {
		assert_true(f2.time >= f1.time);
		f1 = f2;
		i++;
	}
	assert_int_equal(i, 149);
	free(copy);
	free(e);
}

/* Reference model: an unsorted array scanned for the minimum (time, seq). */
struct ref_ev {
	ssemu_time_t time;
	uint64_t seq;
	uint32_t a;
	ssemu_evid_t id;
};

static int ref_cmp(const void *x, const void *y)
{
	const struct ref_ev *p = x, *q = y;

	if (p->time != q->time)
		return p->time < q->time ? -1 : 1;
	return p->seq < q->seq ? -1 : p->seq > q->seq;
}

static void test_engine_stress_vs_reference(void **state)
{
	const uint32_t cap = 1024, steps = 60000;
	struct ssemu_engine *e = engine_new(cap);
	struct ref_ev *ref = calloc(cap + 1, sizeof(*ref));
	uint32_t nref = 0, i, j, fired = 0, cancelled = 0, full = 0;
	uint64_t s = 0xdecafbadULL, seq = 0;
	struct ssemu_fired f;

	(void)state;
	assert_non_null(ref);
	for (i = 0; i < steps; i++) {
		uint64_t r = test_rng_next(&s);
		uint32_t op = r % 10;

		if (op < 4) {
			/* small delays make many equal-time ties */
			ssemu_time_t span = op < 2 ? 8 : 5000;
			ssemu_time_t t = e->now + (r >> 16) % span;
			ssemu_evid_t id;
			int ret = ssemu_engine_schedule(e, t, 0, i, 0, 0, &id);

			if (nref == cap) {
				assert_int_equal(ret, -ENOSPC);
				full++;
				continue;
			}
			/* cancelled events may still be queued */
			if (ret == -ENOSPC) {
				full++;
				continue;
			}
			assert_int_equal(ret, 0);
			ref[nref++] = (struct ref_ev){ t, seq++, i, id };
		} else if (op < 6) {
			if (!nref)
				continue;
			j = (uint32_t)((r >> 16) % nref);
			assert_int_equal(ssemu_engine_cancel(e, ref[j].id), 0);
			assert_int_equal(ssemu_engine_cancel(e, ref[j].id),
					 -ENOENT);
			ref[j] = ref[--nref];
			cancelled++;
		} else {
			ssemu_time_t limit = e->now + (r >> 16) % 3000;
			uint32_t best = UINT32_MAX;
			bool got;

			for (j = 0; j < nref; j++)
				if (ref[j].time <= limit &&
				    (best == UINT32_MAX ||
				     ref_cmp(&ref[j], &ref[best]) < 0))
					best = j;
			got = ssemu_engine_pop(e, limit, &f);
			assert_int_equal(got, best != UINT32_MAX);
			if (got) {
				assert_true(f.time == ref[best].time);
				assert_int_equal(f.a, ref[best].a);
				assert_int_equal(ssemu_engine_cancel(e,
							ref[best].id),
						 -ENOENT);
				ref[best] = ref[--nref];
				fired++;
			}
		}
		assert_int_equal(ssemu_engine_pending(e), nref);
	}

	/* drain: the engine's order is the reference order, sorted */
	qsort(ref, nref, sizeof(*ref), ref_cmp);
	for (j = 0; j < nref; j++) {
		assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
		assert_true(f.time == ref[j].time);
		assert_int_equal(f.a, ref[j].a);
	}
	assert_false(ssemu_engine_pop(e, UINT64_MAX, &f));
	fired += nref;
	assert_true(e->executed == fired);
	/* the run exercised every path */
	assert_true(fired > 1000);
	assert_true(cancelled > 1000);
	free(ref);
	free(e);
	(void)full;
}

static void test_engine_bulk_vs_sort(void **state)
{
	const uint32_t n = 100000;
	struct ssemu_engine *e = engine_new(n);
	struct ref_ev *ref = calloc(n, sizeof(*ref));
	struct ssemu_fired f;
	uint64_t s = 7;
	uint32_t i;

	(void)state;
	assert_non_null(ref);
	for (i = 0; i < n; i++) {
		/* 1/4 of the times collide on a coarse grid */
		uint64_t r = test_rng_next(&s);
		ssemu_time_t t = r % 4 ? r >> 20 : (r >> 20) % 64;

		ref[i] = (struct ref_ev){ t, i, i, 0 };
		sched_ok(e, t, i, NULL);
	}
	assert_int_equal(ssemu_engine_schedule(e, 0, 0, 0, 0, 0, NULL),
			 -ENOSPC);
	qsort(ref, n, sizeof(*ref), ref_cmp);
	for (i = 0; i < n; i++) {
		assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
		if (f.a != ref[i].a || f.time != ref[i].time)
			fail_msg("event %u: got a=%u t=%llu, want a=%u t=%llu",
				 i, f.a, (unsigned long long)f.time, ref[i].a,
				 (unsigned long long)ref[i].time);
	}
	assert_false(ssemu_engine_pop(e, UINT64_MAX, &f));
	free(ref);
	free(e);
}

/*
 * Differential test of the wheel against a reference with the same (time,
 * seq) order: every structure of the engine (near heap, wheel buckets, far
 * heap) gets events, cancels and ties; the clock wraps round the wheel many
 * times and jumps far ahead; the caller moves now on its own as the realtime
 * fabric does.
 */
#define WHEEL_SPAN (SSEMU_ENGINE_BUCKET_PS * SSEMU_ENGINE_NBUCKETS)

struct diff_ref {
	struct ref_ev *live;	/* pending, not cancelled */
	struct ref_ev *dead;	/* cancelled, maybe still holding a slot */
	uint32_t nlive, ndead, cap;
	uint64_t seq;
	ssemu_time_t hot[4];	/* recent times, reused for ties */
};

/* A delay from the mix of the fabric's and worse. */
static ssemu_time_t diff_delay(uint64_t r, ssemu_time_t now)
{
	uint64_t x = r >> 8;

	switch (r % 16) {
	case 0:
	case 1:
		return 0;
	case 2:
	case 3:
	case 4:
		return x % SSEMU_ENGINE_BUCKET_PS;
	case 5:
	case 6:
	case 7:
	case 8:
		return x % (64 * SSEMU_ENGINE_BUCKET_PS);
	case 9:
	case 10:
		/* either side of the wheel's horizon */
		return x % (2 * WHEEL_SPAN);
	case 11:
	case 12:
		return WHEEL_SPAN * (1 + x % 50) + (x >> 20) % 1000;
	case 13:
		return x % (1ULL << 40);
	default: {
		/* on and next to bucket boundaries */
		ssemu_time_t b = ((now >> SSEMU_ENGINE_BUCKET_SHIFT) +
				  x % 8 + 1) << SSEMU_ENGINE_BUCKET_SHIFT;

		return b - now - (x >> 8) % 2;
	}
	}
}

/* Drop the cancelled events that the engine must have reaped by now: all
 * that order before (t, seq). */
static void diff_forget_dead(struct diff_ref *ref, ssemu_time_t t,
			     uint64_t seq)
{
	struct ref_ev key = { t, seq, 0, 0 };
	uint32_t j;

	for (j = 0; j < ref->ndead;) {
		if (ref_cmp(&ref->dead[j], &key) < 0)
			ref->dead[j] = ref->dead[--ref->ndead];
		else
			j++;
	}
}

static uint32_t diff_min(const struct diff_ref *ref, ssemu_time_t limit)
{
	uint32_t j, best = UINT32_MAX;

	for (j = 0; j < ref->nlive; j++)
		if (ref->live[j].time <= limit &&
		    (best == UINT32_MAX ||
		     ref_cmp(&ref->live[j], &ref->live[best]) < 0))
			best = j;
	return best;
}

static void diff_schedule(struct ssemu_engine *e, struct diff_ref *ref,
			  ssemu_time_t t, uint32_t a, uint32_t *full)
{
	ssemu_evid_t id = SSEMU_EVID_NONE;
	int ret = ssemu_engine_schedule(e, t, a % 7, a, ~a, a * 3u, &id);

	if (ref->nlive == ref->cap) {
		assert_int_equal(ret, -ENOSPC);
		(*full)++;
		return;
	}
	if (ret == -ENOSPC) {
		/* only cancelled events not yet reaped may hold the rest */
		assert_true(ref->nlive + ref->ndead >= ref->cap);
		(*full)++;
		return;
	}
	assert_int_equal(ret, 0);
	ref->live[ref->nlive++] = (struct ref_ev){ t, ref->seq++, a, id };
	ref->hot[a % 4] = t;
}

/* Pop with @limit on both and compare. */
static bool diff_pop(struct ssemu_engine *e, struct diff_ref *ref,
		     ssemu_time_t limit)
{
	uint32_t best = diff_min(ref, limit);
	ssemu_time_t before = e->now;
	struct ssemu_fired f;
	bool got = ssemu_engine_pop(e, limit, &f);

	assert_int_equal(got, best != UINT32_MAX);
	if (!got) {
		/* a refused pop does not move time */
		assert_true(e->now == before);
		return false;
	}
	if (f.time != ref->live[best].time || f.a != ref->live[best].a)
		fail_msg("popped a=%u t=%llu, want a=%u t=%llu", f.a,
			 (unsigned long long)f.time, ref->live[best].a,
			 (unsigned long long)ref->live[best].time);
	assert_int_equal(f.type, f.a % 7);
	assert_int_equal(f.b, ~f.a);
	assert_int_equal(f.c, f.a * 3u);
	assert_true(e->now == f.time);
	assert_int_equal(ssemu_engine_cancel(e, ref->live[best].id), -ENOENT);
	diff_forget_dead(ref, f.time, ref->live[best].seq);
	ref->live[best] = ref->live[--ref->nlive];
	return true;
}

static void diff_run(uint32_t cap, uint32_t steps, uint64_t seed)
{
	struct ssemu_engine *e = engine_new(cap);
	struct diff_ref ref = { 0 };
	uint32_t i, j, fired = 0, cancelled = 0, full = 0, jumps = 0;
	uint32_t moved = 0, peeks = 0, most = 0;
	uint64_t s = seed;
	struct ssemu_fired f;

	ref.cap = cap;
	ref.live = calloc(cap + 1, sizeof(*ref.live));
	ref.dead = calloc(steps + 1, sizeof(*ref.dead));
	assert_non_null(ref.live);
	assert_non_null(ref.dead);
	for (i = 0; i < steps; i++) {
		uint64_t r = test_rng_next(&s);
		uint64_t r2 = test_rng_next(&s);
		uint32_t op = r % 100;
		ssemu_time_t t, limit;

		/* phases that fill the pool, and phases that drain it */
		if ((i / 4096) % 4 == 1 && op >= 52 && op < 90)
			op = 0;
		if (op < 40) {
			/* schedule; one in eight at a recent time (a tie) */
			t = e->now + diff_delay(r2, e->now);
			if (r % 8 == 0 && ref.hot[r2 % 4] >= e->now)
				t = ref.hot[r2 % 4];
			if (t < e->now)	/* wrapped past the end of time */
				t = UINT64_MAX - (r2 % 3);
			diff_schedule(e, &ref, t, i, &full);
		} else if (op < 52) {
			if (!ref.nlive)
				continue;
			j = (uint32_t)(r2 % ref.nlive);
			assert_int_equal(ssemu_engine_cancel(e, ref.live[j].id),
					 0);
			assert_int_equal(ssemu_engine_cancel(e, ref.live[j].id),
					 -ENOENT);
			ref.dead[ref.ndead++] = ref.live[j];
			ref.live[j] = ref.live[--ref.nlive];
			cancelled++;
		} else if (op < 90) {
			switch (r2 % 8) {
			case 0:
				limit = UINT64_MAX;
				break;
			case 1:
				/* behind now */
				limit = e->now ? e->now - 1 : 0;
				break;
			case 2:
				limit = e->now;
				break;
			default:
				limit = e->now + diff_delay(r2 >> 3, e->now);
				if (limit < e->now)
					limit = UINT64_MAX;
				break;
			}
			/* sometimes a run of pops, as the fabric does */
			for (j = 0; j < (r2 % 16 == 3 ? 64u : 1u); j++) {
				if (!diff_pop(e, &ref, limit))
					break;
				fired++;
			}
		} else if (op < 95) {
			j = diff_min(&ref, UINT64_MAX);
			t = ssemu_engine_next_time(e);
			if (j == UINT32_MAX) {
				assert_true(t == UINT64_MAX);
			} else {
				assert_true(t == ref.live[j].time);
				diff_forget_dead(&ref, t, ref.live[j].seq);
			}
			peeks++;
		} else if (op < 99) {
			/*
			 * The realtime fabric: nothing due by the limit, so
			 * now moves up to it without an event.
			 */
			limit = e->now + diff_delay(r2, e->now);
			if (limit < e->now)
				continue;
			t = ssemu_engine_next_time(e);
			if (t > limit) {
				j = diff_min(&ref, UINT64_MAX);
				assert_true(j == UINT32_MAX ||
					    ref.live[j].time > limit);
				e->now = limit;
				moved++;
			}
		} else if (r2 % 16 == 0 && e->now < (1ULL << 62)) {
			/* drain, then one event far beyond everything */
			while (diff_pop(e, &ref, UINT64_MAX))
				fired++;
			assert_int_equal(ssemu_engine_pending(e), 0);
			assert_true(ssemu_engine_next_time(e) == UINT64_MAX);
			t = e->now + (1ULL << 44) + (r2 >> 20);
			diff_schedule(e, &ref, t, i, &full);
			assert_true(ssemu_engine_next_time(e) == t);
			assert_true(diff_pop(e, &ref, UINT64_MAX));
			fired++;
			jumps++;
		}
		assert_int_equal(ssemu_engine_pending(e), ref.nlive);
		most = SSEMU_MAX(most, ref.nlive);
	}

	/* drain: the engine's order is the reference order, sorted */
	qsort(ref.live, ref.nlive, sizeof(*ref.live), ref_cmp);
	for (j = 0; j < ref.nlive; j++) {
		assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
		assert_true(f.time == ref.live[j].time);
		assert_int_equal(f.a, ref.live[j].a);
	}
	assert_false(ssemu_engine_pop(e, UINT64_MAX, &f));
	fired += ref.nlive;
	assert_true(e->executed == fired);
	/* every slot came back, cancelled ones included */
	for (j = 0; j < cap; j++)
		assert_int_equal(ssemu_engine_schedule(e, e->now, 0, j, 0, 0,
						       NULL), 0);
	assert_int_equal(ssemu_engine_schedule(e, e->now, 0, 0, 0, 0, NULL),
			 -ENOSPC);

	/* the run exercised every path, and went round the wheel often */
	assert_true(fired > steps / 8);
	assert_true(cancelled > steps / 20);
	assert_true(jumps > 0 && moved > 0 && peeks > 0);
	print_message("cap %u: %u fired, %u cancelled, %u full, %u jumps, "
		      "%u pending at most, now %llu ps\n", cap, fired,
		      cancelled, full, jumps, most,
		      (unsigned long long)e->now);
	assert_true(e->now > 1000 * WHEEL_SPAN);
	assert_true(full > 0);
	free(ref.live);
	free(ref.dead);
	free(e);
}

static void test_engine_wheel_vs_reference(void **state)
{
	(void)state;
	diff_run(2048, 200000, 0x5eed1234ULL);
	diff_run(2048, 200000, 77);
	/* a small pool: full while events sit in every structure */
	diff_run(48, 200000, 0xfeedULL);
	diff_run(200, 200000, 3);
}

/* A bucket boundary, far-heap events coming into the window, huge jumps. */
static void test_engine_wheel_edges(void **state)
{
	static const uint32_t order[] = { 5, 1, 3 };
	const ssemu_time_t W = SSEMU_ENGINE_BUCKET_PS;
	struct ssemu_engine *e = engine_new(64);
	struct ssemu_fired f;
	ssemu_evid_t id;
	uint32_t i;

	(void)state;
	/* same instant through near, the wheel and far: FIFO throughout */
	sched_ok(e, 5 * W - 1, 0, NULL);
	sched_ok(e, 5 * W, 1, NULL);
	sched_ok(e, WHEEL_SPAN + 5 * W, 2, NULL);	/* far */
	sched_ok(e, 5 * W, 3, NULL);
	assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_int_equal(f.a, 0);
	/* the window is at bucket 4 now: 5 * W is in the wheel */
	sched_ok(e, 5 * W, 4, NULL);
	sched_ok(e, 5 * W - 1, 5, NULL);		/* near */
	for (i = 0; i < 3; i++) {
		assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
		assert_int_equal(f.a, order[i]);
	}
	/* a far event scheduled early and a wheel one scheduled later, at
	 * the same time: the far one was first */
	sched_ok(e, WHEEL_SPAN + 5 * W, 6, NULL);
	assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_int_equal(f.a, 4);
	assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_int_equal(f.a, 2);
	assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_int_equal(f.a, 6);
	assert_false(ssemu_engine_pop(e, UINT64_MAX, &f));

	/* an idle clock, then the end of time */
	sched_ok(e, UINT64_MAX, 7, NULL);
	sched_ok(e, UINT64_MAX - 1, 8, &id);
	sched_ok(e, (1ULL << 50) + 1, 9, NULL);
	assert_true(ssemu_engine_next_time(e) == (1ULL << 50) + 1);
	assert_false(ssemu_engine_pop(e, 1ULL << 50, &f));
	assert_true(ssemu_engine_pop(e, UINT64_MAX - 2, &f));
	assert_int_equal(f.a, 9);
	assert_int_equal(ssemu_engine_cancel(e, id), 0);
	sched_ok(e, UINT64_MAX, 10, NULL);
	assert_true(ssemu_engine_next_time(e) == UINT64_MAX);
	assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_int_equal(f.a, 7);
	assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_int_equal(f.a, 10);
	assert_true(e->now == UINT64_MAX);
	assert_false(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_int_equal(ssemu_engine_pending(e), 0);
	free(e);
}

static bool count_live(void *arg, const struct ssemu_fired *f)
{
	(void)f;
	(*(unsigned *)arg)++;
	return true;
}

/*
 * The high-water marks: init writes nothing of the wheel's chunks nor of
 * the id slots (each is set up when first taken); id slots come from the
 * released ones first (the most recent first), then the mark; chunks the
 * same, given back as their bucket is read; an engine of cap queued events
 * is full (-ENOSPC) however many have ids; a new init starts again from
 * the first; a mark beyond its table, or a released entry at or above it,
 * is found corrupt.
 */
static void test_engine_high_water(void **state)
{
	const uint32_t cap = 64;
	size_t bytes = ssemu_engine_bytes(cap), i, from;
	struct ssemu_engine *e = malloc(bytes);
	ssemu_evid_t id[3], x;
	struct ssemu_fired f;
	unsigned n = 0, live = 0;
	const uint8_t *b;
	uint32_t hwm;

	(void)state;
	assert_non_null(e);
	memset(e, 0xa5, bytes);
	ssemu_engine_init(e, cap);
	b = (const uint8_t *)e;
	from = e->chunks_off;
	for (i = from; i < bytes; i++)
		if (b[i] != 0xa5)
			fail_msg("init wrote chunk or id slot byte %zu", i);
	assert_int_equal(e->hwm, 0);
	assert_int_equal(e->chunk_hwm, 0);

	/* 0, 1, 2 from the mark, in order; one chunk for their bucket */
	for (i = 0; i < 3; i++) {
		sched_ok(e, 100 + i, (uint32_t)i, &id[i]);
		assert_int_equal((uint32_t)id[i], i);
	}
	assert_int_equal(e->hwm, 3);
	for (i = e->ids_off + 3 * sizeof(struct ssemu_ev); i < bytes; i++)
		if (b[i] != 0xa5)
			fail_msg("id slot byte %zu written above the mark", i);
	/* (a slot above the mark that looks live is not an event) */
	((struct ssemu_ev *)(b + e->ids_off))[10].state = SSEMU_EV_LIVE;
	ssemu_engine_foreach(e, count_live, &live);
	assert_int_equal(live, 3);
	assert_int_equal(ssemu_engine_cancel(e, 10), -ENOENT);

	/* a released slot goes first, the most recent first */
	assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_int_equal(f.a, 0);
	assert_true(ssemu_engine_pop(e, 101, &f));
	assert_int_equal(f.a, 1);
	sched_ok(e, 200, 8, &x);
	assert_int_equal((uint32_t)x, 1);
	sched_ok(e, 200, 9, &x);
	assert_int_equal((uint32_t)x, 0);
	sched_ok(e, 200, 10, &x);
	assert_int_equal((uint32_t)x, 3);
	assert_int_equal(e->hwm, 4);

	/* full: the same error as ever, whether the events have ids */
	while (ssemu_engine_schedule(e, 300 + n * SSEMU_ENGINE_BUCKET_PS, 1,
				     0, 0, 0, NULL) == 0)
		n++;
	assert_int_equal(n, cap - 4);
	assert_int_equal(ssemu_engine_schedule(e, 300, 1, 0, 0, 0, &x),
			 -ENOSPC);
	assert_int_equal(e->hwm, 4);
	assert_int_equal(e->bad, 0);
	/* every bucket read gives its chunk back, and the next bucket
	 * takes it again: the mark stays */
	hwm = e->chunk_hwm;
	assert_true(hwm > 0 && hwm <= cap);
	while (ssemu_engine_pop(e, UINT64_MAX, &f))
		if (e->now < 100000)
			assert_int_equal(
				ssemu_engine_schedule(e, e->now + 3 *
						      SSEMU_ENGINE_BUCKET_PS,
						      1, 0, 0, 0, NULL), 0);
	assert_int_equal(e->bad, 0);
	assert_true(e->chunk_hwm <= hwm + 1);

	/* a new init: every slot and chunk never used again */
	ssemu_engine_init(e, cap);
	assert_int_equal(e->hwm, 0);
	assert_int_equal(e->chunk_hwm, 0);
	assert_true(e->free_head == SSEMU_EV_NONE);
	assert_true(e->chunk_free == SSEMU_EV_NONE);
	sched_ok(e, 5, 1, &x);
	assert_int_equal((uint32_t)x, 0);
	assert_int_equal((uint32_t)(x >> 32), 1);	/* generation 1 */
	live = 0;
	ssemu_engine_foreach(e, count_live, &live);
	assert_int_equal(live, 1);

	/* a mark beyond the slots */
	e->hwm = cap + 1;
	assert_false(ssemu_engine_geometry_ok(e, cap));
	assert_int_equal(ssemu_engine_schedule(e, 10, 1, 0, 0, 0, &x), -EIO);
	assert_int_equal(e->bad, SSEMU_ENGINE_BAD_FREE);

	/* a released slot at the mark */
	ssemu_engine_init(e, cap);
	sched_ok(e, 5, 1, &x);
	sched_ok(e, 6, 1, &x);
	assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_true(e->free_head == 0);
	e->hwm = 0;
	assert_false(ssemu_engine_geometry_ok(e, cap));
	assert_int_equal(ssemu_engine_schedule(e, 10, 1, 0, 0, 0, &x), -EIO);
	assert_int_equal(e->bad, SSEMU_ENGINE_BAD_FREE);

	/* a free chunk at the mark: found when the wheel needs a chunk */
	ssemu_engine_init(e, cap);
	e->ids_out = 1;		/* (the queue stays a queue) */
	sched_ok(e, 0, 1, NULL);
	sched_ok(e, 2 * SSEMU_ENGINE_BUCKET_PS, 1, NULL);
	assert_true(ssemu_engine_pop(e, 0, &f));
	assert_true(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_true(e->chunk_free == 0 && e->chunk_hwm == 1);
	sched_ok(e, e->now, 1, NULL);	/* (near: the window stays) */
	e->chunk_hwm = 0;
	assert_false(ssemu_engine_geometry_ok(e, cap));
	assert_int_equal(ssemu_engine_schedule(e, e->now + 5 *
					       SSEMU_ENGINE_BUCKET_PS,
					       1, 0, 0, 0, NULL),
			 -EIO);
	assert_int_equal(e->bad, SSEMU_ENGINE_BAD_FREE);
	free(e);
}

/*
 * A bucket whose bit the bitmap lost (a write into a shared segment): its
 * events stay in its chunks until the wheel comes round to the bucket once
 * more, a lap later.  Then they are found corrupt, and never handed out
 * in the past.  (The queue here is short enough to be held again, which
 * would find the lost bucket at once:
 * test_engine_take_back_corrupt.  An id handed out keeps it in the queue,
 * as a loaded engine's is.)
 */
static void test_engine_lost_bucket_bit(void **state)
{
	const ssemu_time_t b = SSEMU_ENGINE_BUCKET_PS;
	const uint32_t lost = 5, nb = SSEMU_ENGINE_NBUCKETS, orphan = 0xffff0000u;
	struct ssemu_engine *e = *state;
	struct ssemu_fired f;
	uint32_t k, popped = 0;

	(void)state;
	e->ids_out = 1;
	sched_ok(e, 0, 1, NULL);		/* near: the window stays at 0 */
	sched_ok(e, lost * b, orphan, NULL);	/* the wheel's bucket 5 */
	assert_true(e->bits[0] & (1ull << lost));
	e->bits[0] &= ~(1ull << lost);
	e->summary[0] &= ~1ull;
	/* traffic one bucket at a time, an event always queued ahead (with
	 * nothing else on the wheel, the lost bucket is found at once) but
	 * none in the lost bucket itself (it would bring the orphan in with
	 * it, rightly, on time), until past a whole lap */
	for (k = 1; k < nb + 2 * lost; k++) {
		ssemu_time_t at = (ssemu_time_t)(k + 1) * b;

		if (k + 1 == lost)
			at += b;
		if (ssemu_engine_schedule(e, at, 1, k, 0, 0, NULL))
			break;
		while (ssemu_engine_pop(e, (ssemu_time_t)k * b, &f)) {
			assert_int_not_equal(f.a, orphan);
			assert_true(f.time <= (ssemu_time_t)k * b);
			popped++;
		}
		if (e->bad)
			break;
	}
	assert_int_equal(e->bad, SSEMU_ENGINE_BAD_BUCKET);
	/* it was found when the wheel came round, not before */
	assert_true(k >= nb);
	assert_true(popped >= nb - 1);
	assert_false(ssemu_engine_pop(e, UINT64_MAX, &f));
	assert_int_equal(ssemu_engine_schedule(e, e->now, 1, 0, 0, 0, NULL),
			 -EIO);
}

#define ENGINE64_TEST(f) \
	cmocka_unit_test_setup_teardown(f, setup_engine64, teardown_engine)

int main(void)
{
	const struct CMUnitTest tests[] = {
		ENGINE64_TEST(test_engine_init_empty),
		ENGINE64_TEST(test_engine_order_by_time),
		ENGINE64_TEST(test_engine_fifo_tie_break),
		cmocka_unit_test(test_engine_keyed_order),
		cmocka_unit_test(test_engine_held),
		cmocka_unit_test(test_engine_held_vs_reference),
		cmocka_unit_test(test_engine_held_run),
		cmocka_unit_test(test_engine_take_back_corrupt),
		ENGINE64_TEST(test_engine_schedule_in_past),
		cmocka_unit_test(test_engine_full),
		cmocka_unit_test(test_engine_zero_cap),
		ENGINE64_TEST(test_engine_cancel),
		cmocka_unit_test(test_engine_cancel_stale_id),
		cmocka_unit_test(test_engine_cancel_frees_its_place),
		ENGINE64_TEST(test_engine_pop_limit),
		ENGINE64_TEST(test_engine_next_time),
		cmocka_unit_test(test_engine_peek),
		cmocka_unit_test(test_engine_walk_hint_untrusted),
		cmocka_unit_test(test_engine_determinism),
		cmocka_unit_test(test_engine_position_independent),
		cmocka_unit_test(test_engine_stress_vs_reference),
		cmocka_unit_test(test_engine_bulk_vs_sort),
		cmocka_unit_test(test_engine_wheel_vs_reference),
		cmocka_unit_test(test_engine_wheel_edges),
		cmocka_unit_test(test_engine_high_water),
		ENGINE64_TEST(test_engine_lost_bucket_bit),
	};

	return cmocka_run_group_tests_name("engine", tests, NULL, NULL);
}
