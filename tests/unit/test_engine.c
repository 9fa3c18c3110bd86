/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the discrete-event engine (emu/ssemu_engine.c): (time, seq)
 * ordering, FIFO tie-break, the pool and its -ENOSPC recovery, deferred
 * cancellation and stale ids, pop limits, determinism, position independence,
 * and a randomized run checked against a naive reference model.
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
	assert_true(ssemu_engine_bytes(64) >= 64 * (sizeof(struct ssemu_ev) +
				sizeof(struct ssemu_heap_ent)));
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

static void test_engine_pool_full(void **state)
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

	/* a drained pool is fully usable again */
	for (i = 0; i < 8; i++)
		sched_ok(e, 1000, i, NULL);
	assert_int_equal(ssemu_engine_pending(e), 8);
	free(e);
}

static void test_engine_pool_zero_cap(void **state)
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

static void test_engine_cancel_frees_pool_slot(void **state)
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
	for (i = 0; i < 200; i++)
		sched_ok(e, test_rng_next(&s) % 100000, i, &id);
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
			/* cancelled events may still hold pool slots */
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

#define ENGINE64_TEST(f) \
	cmocka_unit_test_setup_teardown(f, setup_engine64, teardown_engine)

int main(void)
{
	const struct CMUnitTest tests[] = {
		ENGINE64_TEST(test_engine_init_empty),
		ENGINE64_TEST(test_engine_order_by_time),
		ENGINE64_TEST(test_engine_fifo_tie_break),
		ENGINE64_TEST(test_engine_schedule_in_past),
		cmocka_unit_test(test_engine_pool_full),
		cmocka_unit_test(test_engine_pool_zero_cap),
		ENGINE64_TEST(test_engine_cancel),
		cmocka_unit_test(test_engine_cancel_stale_id),
		cmocka_unit_test(test_engine_cancel_frees_pool_slot),
		ENGINE64_TEST(test_engine_pop_limit),
		ENGINE64_TEST(test_engine_next_time),
		cmocka_unit_test(test_engine_determinism),
		cmocka_unit_test(test_engine_position_independent),
		cmocka_unit_test(test_engine_stress_vs_reference),
		cmocka_unit_test(test_engine_bulk_vs_sort),
	};

	return cmocka_run_group_tests_name("engine", tests, NULL, NULL);
}
