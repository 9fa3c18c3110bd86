/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The NIC pair table (emu/ssemu_pair.c): an entry made on first use,
 * found again, given back once its state is a fresh pair's, kept while it
 * is not; colliding entries found after deletions; a full table refused
 * by name (and a send that needs a pair then fails with -ENOSPC); a pair
 * looked up and then made where the lookup stopped; the resets at attach
 * and of the whole model.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ssemu_priv.h"
#include "tf.h"

static struct tf *open_pairs(uint32_t max_pairs, unsigned nics)
{
	struct ssemu_config c;
	struct tf *t;
	unsigned i;

	tf_config(&c, "switch");
	c.max_pairs = max_pairs;
	t = tf_open(&c);
	for (i = 0; i < nics; i++)
		tf_add(t, i);
	return t;
}

static void test_pair_insert_find_free(void **state)
{
	struct tf *t = open_pairs(0, 0);
	struct ssemu_region *r = t->fab->r;
	struct ssemu_pair *pr;

	(void)state;
	assert_null(ssemu_pair_find(r, 1, 2));
	pr = ssemu_pair_get(r, 1, 2, 0);
	assert_non_null(pr);
	assert_int_equal(pr->cwnd, r->config.nic_window << 8);
	assert_int_equal(pr->window, 0);
	assert_ptr_equal(ssemu_pair_find(r, 1, 2), pr);
	assert_null(ssemu_pair_find(r, 2, 1));
	assert_int_equal(r->pairs_used, 1);
	assert_int_equal(ssemu_r_pairn(r, 1)->from, 1);
	assert_int_equal(ssemu_r_pairn(r, 2)->to, 1);
	/* in flight: kept */
	pr->window = 3;
	ssemu_pair_put(r, pr, 0);
	pr = ssemu_pair_find(r, 1, 2);
	assert_non_null(pr);
	assert_int_equal(pr->window, 3);
	/* paced until 100: kept until then */
	pr->window = 0;
	pr->slow = 100;
	ssemu_pair_put(r, pr, 50);
	assert_non_null(pr = ssemu_pair_find(r, 1, 2));
	ssemu_pair_put(r, pr, 100);
	assert_null(ssemu_pair_find(r, 1, 2));
	assert_int_equal(r->pairs_used, 0);
	assert_int_equal(ssemu_r_pairn(r, 1)->from, 0);
	assert_int_equal(ssemu_r_pairn(r, 2)->to, 0);
	/* a cut window, or acknowledgements counted since a cut: kept */
	pr = ssemu_pair_get(r, 1, 2, 0);
	pr->cwnd /= 2;
	ssemu_pair_put(r, pr, 0);
	assert_non_null(pr = ssemu_pair_find(r, 1, 2));
	pr->cwnd = r->config.nic_window << 8;
	pr->cc_acked = 1;
	ssemu_pair_put(r, pr, 0);
	assert_non_null(pr = ssemu_pair_find(r, 1, 2));
	pr->cc_acked = r->config.nic_window;
	pr->egq = 1;
	ssemu_pair_put(r, pr, 0);
	assert_non_null(pr = ssemu_pair_find(r, 1, 2));
	pr->egq = 0;
	ssemu_pair_put(r, pr, 0);
	assert_null(ssemu_pair_find(r, 1, 2));
	tf_close(t);
}

/* Many pairs of a few NICs (their stretches overflow into each other),
 * deleted in a scrambled order: every one left is found, with its own
 * state, every one deleted is not.  In a fabric of @nics NICs with a
 * table for @max_pairs pairs (0: the default). */
static void collisions_round(uint32_t nics, uint32_t max_pairs)
{
	struct ssemu_config c;
	struct tf *t;
	struct ssemu_region *r;
	uint32_t N, n = 0, k, i;
	static uint8_t gone[4][256];
	uint64_t seed = 7;

	tf_config(&c, "switch");
	c.max_nics = nics;
	c.max_pairs = max_pairs;
	t = tf_open(&c);
	r = t->fab->r;
	N = r->config.max_nics < 256 ? r->config.max_nics : 256;
	memset(gone, 0, sizeof(gone));
	for (k = 0; k < 4 && k < N; k++)
		for (i = 0; i < N; i++) {
			struct ssemu_pair *pr = ssemu_pair_get(r, k, i, 0);

			assert_non_null(pr);
			pr->window = (uint16_t)(k * 1000 + i + 1);
			n++;
		}
	assert_int_equal(r->pairs_used, n);
	for (i = 0; i < n; i++) {
		uint32_t a = (uint32_t)(tf_rng_next(&seed) % 4);
		uint32_t b = (uint32_t)(tf_rng_next(&seed) % N);
		struct ssemu_pair *pr = ssemu_pair_find(r, a, b);

		if (gone[a][b]) {
			assert_null(pr);
			continue;
		}
		assert_non_null(pr);
		assert_int_equal(pr->window, a * 1000 + b + 1);
		pr->window = 0;
		ssemu_pair_put(r, pr, 0);
		gone[a][b] = 1;
		n--;
		for (k = 0; k < 4; k++)
			for (uint32_t j = 0; j < N; j++) {
				pr = ssemu_pair_find(r, k, j);
				if (gone[k][j])
					assert_null(pr);
				else
					assert_true(pr && pr->window ==
							      k * 1000 + j + 1);
			}
	}
	assert_int_equal(r->pairs_used, n);
	tf_close(t);
}

static void test_pair_collisions(void **state)
{
	(void)state;
	collisions_round(16, 0);
}

/*
 * The first 64 entries of every NIC's stretch lie together, then the next
 * 64 of each, and so on (ssemu_pair_slot): every entry has a place of its
 * own inside the table, and a NIC with more pairs than 64 uses more than
 * the first part, found and given back (the entry from its place) as any
 * other.
 */
static void test_pair_hot_and_cold(void **state)
{
	struct ssemu_config c;
	struct ssemu_region *r;
	struct tf *t;
	uint8_t *seen;
	uint64_t i, mask, cold = 0;

	(void)state;
	tf_config(&c, "switch");
	c.max_nics = 64;
	c.max_pairs = 4096;
	t = tf_open(&c);
	r = t->fab->r;
	mask = ssemu_pair_mask(r);
	assert_true(r->pair_shift > SSEMU_PAIR_HOT_BITS);
	seen = calloc(mask + 1, 1);
	assert_non_null(seen);
	for (i = 0; i <= mask; i++) {
		uint64_t slot = ssemu_pair_slot(r, i);

		assert_true(slot <= mask);
		/* a probe steps from the place before (ssemu_pair_slot_next) */
		if (i)
			assert_int_equal(ssemu_pair_slot_next(r, i,
						ssemu_pair_slot(r, i - 1)),
					 slot);
		assert_int_equal(seen[slot], 0);
		seen[slot] = 1;
		/* the first chunk of each stretch is the hot part */
		if ((i & ((1ULL << r->pair_shift) - 1)) <
		    1ULL << SSEMU_PAIR_HOT_BITS)
			assert_true(slot < (mask + 1) >> r->pair_shift
						   << SSEMU_PAIR_HOT_BITS);
		else
			cold++;
	}
	assert_true(cold > 0);
	free(seen);
	tf_close(t);
	/* 256 pairs a NIC: past the hot part of its stretch */
	collisions_round(256, 16384);
}

static void test_pair_full(void **state)
{
	struct tf *t = open_pairs(3, 0);
	struct ssemu_region *r = t->fab->r;
	struct ssemu_pair *pr;
	uint32_t i;

	(void)state;
	assert_int_equal(r->max_pairs, 3);
	for (i = 0; i < 3; i++) {
		pr = ssemu_pair_get(r, 0, i, 0);
		assert_non_null(pr);
		pr->window = 1;
	}
	assert_null(ssemu_pair_get(r, 0, 3, 0));
	assert_int_equal(r->pairs_full, 1);
	/* one paced until 10: at 10 the sweep frees it for the new pair */
	pr = ssemu_pair_find(r, 0, 1);
	pr->window = 0;
	pr->pause = 10;
	ssemu_pair_put(r, pr, 0);
	assert_null(ssemu_pair_get(r, 0, 3, 5));
	assert_non_null(ssemu_pair_get(r, 0, 3, 10));
	assert_null(ssemu_pair_find(r, 0, 1));
	/* an existing pair is found whatever the count */
	assert_non_null(ssemu_pair_get(r, 0, 0, 10));
	tf_close(t);
}

/*
 * A pair looked up without an entry is made where the lookup's probe
 * stopped (ssemu_pair_make): the entry ssemu_pair_get would have made,
 * found again by both; with the table full, the same sweep, at the same
 * model time, decides.
 */
static void test_pair_lookup_make(void **state)
{
	struct tf *t = open_pairs(3, 0);
	struct ssemu_region *r = t->fab->r;
	struct ssemu_pair *pr, *mk;
	uint64_t at;
	uint32_t i;

	(void)state;
	/* colliding homes (one source NIC): each made after the one before */
	for (i = 0; i < 3; i++) {
		assert_null(ssemu_pair_lookup(r, 0, i, &at));
		assert_true(at != SSEMU_NONE);
		mk = ssemu_pair_make(r, 0, i, at, 0);
		assert_non_null(mk);
		assert_ptr_equal(mk, ssemu_r_pair_ent(r, at));
		assert_ptr_equal(ssemu_pair_find(r, 0, i), mk);
		assert_ptr_equal(ssemu_pair_get(r, 0, i, 0), mk);
		assert_int_equal(mk->cwnd, r->config.nic_window << 8);
		mk->window = 1;
	}
	assert_int_equal(r->pairs_used, 3);
	assert_int_equal(ssemu_r_pairn(r, 0)->from, 3);
	assert_int_equal(ssemu_r_pairn(r, 2)->to, 1);
	/* found: the lookup hands back the entry */
	pr = ssemu_pair_lookup(r, 0, 1, &at);
	assert_ptr_equal(pr, ssemu_pair_find(r, 0, 1));
	/* full: refused as get refuses, then made once a sweep frees one */
	assert_null(ssemu_pair_lookup(r, 0, 3, &at));
	assert_null(ssemu_pair_make(r, 0, 3, at, 0));
	assert_int_equal(r->pairs_full, 1);
	pr->window = 0;
	assert_null(ssemu_pair_lookup(r, 0, 3, &at));
	mk = ssemu_pair_make(r, 0, 3, at, 1);
	assert_non_null(mk);
	assert_null(ssemu_pair_find(r, 0, 1));
	assert_ptr_equal(ssemu_pair_find(r, 0, 3), mk);
	assert_int_equal(r->pairs_used, 3);
	tf_close(t);
}

static void test_pair_resets(void **state)
{
	struct tf *t = open_pairs(0, 0);
	struct ssemu_region *r = t->fab->r;
	struct ssemu_pair *pr;

	(void)state;
	pr = ssemu_pair_get(r, 1, 5, 0);	/* toward 5 */
	pr->window = 4;
	pr->cwnd = 256;
	pr = ssemu_pair_get(r, 5, 2, 0);	/* from 5, in flight */
	pr->window = 2;
	pr->cwnd = 512;
	pr = ssemu_pair_get(r, 5, 3, 0);	/* from 5, queued at an edge */
	pr->egq = 1;
	pr->slow = 1000;
	pr = ssemu_pair_get(r, 2, 3, 0);	/* neither */
	pr->window = 1;
	ssemu_pair_reset_nic(r, 5, 0);
	assert_null(ssemu_pair_find(r, 1, 5));
	pr = ssemu_pair_find(r, 5, 2);
	assert_true(pr && pr->window == 2 &&
		    pr->cwnd == r->config.nic_window << 8);
	pr = ssemu_pair_find(r, 5, 3);
	assert_true(pr && pr->egq == 1 && pr->slow == 0);
	assert_non_null(ssemu_pair_find(r, 2, 3));
	ssemu_pair_nic_idle(r, 5, 0);
	assert_null(ssemu_pair_find(r, 5, 2));
	assert_non_null(ssemu_pair_find(r, 5, 3));
	ssemu_pair_clear(r);
	assert_int_equal(r->pairs_used, 0);
	assert_null(ssemu_pair_find(r, 5, 3));
	assert_null(ssemu_pair_find(r, 2, 3));
	assert_int_equal(ssemu_r_pairn(r, 5)->from, 0);
	tf_close(t);
}

/* A table of one pair: the first send holds it while in flight, a send to
 * another NIC meanwhile fails with -ENOSPC, a later one goes. */
static void test_pair_full_send_fails(void **state)
{
	struct tf *t = open_pairs(1, 3);
	static uint8_t big[16384];
	size_t i, ok = 0, nospc = 0;

	(void)state;
	tf_send(t, 0, 1, big, sizeof(big), 0, 1, 0);
	tf_send(t, 0, 2, big, 64, 0, 2, 0);
	tf_run_idle(t, 1000);
	for (i = 0; i < t->nlog; i++) {
		if (t->log[i].ev.type != SSEMU_EV_SEND_DONE)
			continue;
		if (t->log[i].ev.cookie == 1)
			assert_int_equal(t->log[i].ev.status, 0);
		if (t->log[i].ev.status == -ENOSPC)
			nospc++;
		else if (!t->log[i].ev.status)
			ok++;
	}
	assert_int_equal(ok, 1);
	assert_int_equal(nospc, 1);
	assert_int_equal(t->fab->r->pairs_used, 0);
	tf_send(t, 0, 2, big, 64, 0, 3, 0);
	tf_run_idle(t, 1000);
	assert_int_equal(tf_count(t, 2, SSEMU_EV_RECV), 1);
	tf_close(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pair_insert_find_free),
		cmocka_unit_test(test_pair_collisions),
		cmocka_unit_test(test_pair_hot_and_cold),
		cmocka_unit_test(test_pair_full),
		cmocka_unit_test(test_pair_lookup_make),
		cmocka_unit_test(test_pair_resets),
		cmocka_unit_test(test_pair_full_send_fails),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
