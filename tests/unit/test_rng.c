/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the per-component random streams (emu/ssemu_rng.[ch]):
 * reproducibility, uniform draws, and the ziggurat normal sampler checked
 * against the normal distribution function (moments, the CDF on a grid, and
 * the tail beyond the ziggurat's base strip, where a separate algorithm
 * draws).  Bounds are 5 standard errors of the estimate, so a correct
 * sampler fails with a probability under one in a million per check, and
 * the seeds are fixed: a pass is reproducible.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include <slingshot_emu/ssemu_rng.h>

#define N_DRAWS 4000000u

static double phi(double x)
{
	return 0.5 * erfc(-x / M_SQRT2);
}

static void test_streams_reproducible(void **state)
{
	struct ssemu_rng a, b, c;
	unsigned i, same = 0;

	(void)state;
	ssemu_rng_seed(&a, 7, 3);
	ssemu_rng_seed(&b, 7, 3);
	ssemu_rng_seed(&c, 7, 4);
	for (i = 0; i < 10000; i++) {
		double x = ssemu_rng_normal(&a);

		assert_true(x == ssemu_rng_normal(&b));
		same += x == ssemu_rng_normal(&c);
	}
	/* another component id is another stream */
	assert_true(same < 10);
}

/* A keyed stream is a pure function of (seed, component, key): the same
 * draws whatever was drawn before or elsewhere, and other draws for a
 * neighbouring key, component or seed; its uniforms are uniform. */
static void test_keyed(void **state)
{
	struct ssemu_rng a, b;
	uint64_t k, x, same = 0;
	double sum = 0;
	int i;

	(void)state;
	ssemu_rng_keyed(&a, 1, 5, 42);
	x = ssemu_rng_next(&a);
	for (i = 0; i < 1000; i++)
		ssemu_rng_next(&a);
	ssemu_rng_keyed(&b, 1, 5, 42);
	assert_int_equal(ssemu_rng_next(&b), x);
	ssemu_rng_keyed(&b, 1, 5, 43);
	assert_int_not_equal(ssemu_rng_next(&b), x);
	ssemu_rng_keyed(&b, 1, 6, 42);
	assert_int_not_equal(ssemu_rng_next(&b), x);
	ssemu_rng_keyed(&b, 2, 5, 42);
	assert_int_not_equal(ssemu_rng_next(&b), x);
	/* consecutive keys (a packet's successive numbers): the first draw
	 * of each is uniform, and no two of them agree */
	for (k = 0; k < 100000; k++) {
		ssemu_rng_keyed(&a, 1, 5, k);
		ssemu_rng_keyed(&b, 1, 5, k + 1);
		same += ssemu_rng_next(&a) == ssemu_rng_next(&b);
		ssemu_rng_keyed(&a, 1, 5, k);
		sum += ssemu_rng_double(&a);
	}
	assert_int_equal(same, 0);
	assert_true(fabs(sum / 100000 - 0.5) < 0.005);
}

/* The first two draws of a keyed stream, without the stream: the same
 * values as the stream's, for any seed, component and key. */
static void test_keyed2(void **state)
{
	struct ssemu_rng a, g;
	uint64_t seed, comp, key, d0, d1;
	int i;

	(void)state;
	ssemu_rng_seed(&g, 7, 0);
	for (i = 0; i < 100000; i++) {
		seed = ssemu_rng_next(&g);
		comp = i & 1 ? ssemu_rng_next(&g) : (uint64_t)i;
		key = i & 2 ? ssemu_rng_next(&g) : (uint64_t)i << 48;
		ssemu_rng_keyed(&a, seed, comp, key);
		ssemu_rng_keyed2(seed, comp, key, &d0, &d1);
		assert_int_equal(d0, ssemu_rng_next(&a));
		assert_int_equal(d1, ssemu_rng_next(&a));
	}
}

static void test_uniform(void **state)
{
	struct ssemu_rng r;
	unsigned counts[10] = { 0 }, i;
	double n = 1000000, p = 0.1, se = sqrt(n * p * (1 - p));

	(void)state;
	ssemu_rng_seed(&r, 1, 1);
	for (i = 0; i < (unsigned)n; i++) {
		double u = ssemu_rng_double(&r);

		assert_true(u >= 0.0 && u < 1.0);
		counts[ssemu_rng_below(&r, 10)]++;
	}
	for (i = 0; i < 10; i++)
		assert_true(fabs(counts[i] - n * p) < 5 * se);
}

/* Mean, variance, skewness and kurtosis of the standard normal. */
static void test_normal_moments(void **state)
{
	struct ssemu_rng r;
	double s1 = 0, s2 = 0, s3 = 0, s4 = 0, n = N_DRAWS;
	unsigned i;

	(void)state;
	ssemu_rng_seed(&r, 42, 1);
	for (i = 0; i < N_DRAWS; i++) {
		double x = ssemu_rng_normal(&r);

		assert_true(isfinite(x));
		s1 += x;
		s2 += x * x;
		s3 += x * x * x;
		s4 += x * x * x * x;
	}
	/* standard errors: 1/sqrt(n), sqrt(2/n), sqrt(6/n), sqrt(96/n) */
	assert_true(fabs(s1 / n) < 5 / sqrt(n));
	assert_true(fabs(s2 / n - 1) < 5 * sqrt(2 / n));
	assert_true(fabs(s3 / n) < 5 * sqrt(15 / n));
	assert_true(fabs(s4 / n - 3) < 5 * sqrt(96 / n));
}

/*
 * The empirical CDF on a grid through the layers, the wedges and the tail;
 * each point within 5 binomial standard errors of the normal's.
 */
static void test_normal_cdf(void **state)
{
	enum { G = 33 };
	double grid[G], n = N_DRAWS;
	unsigned below[G] = { 0 }, i, k;
	struct ssemu_rng r;

	(void)state;
	for (k = 0; k < G; k++)
		grid[k] = -4.0 + 0.25 * k;
	ssemu_rng_seed(&r, 9, 2);
	for (i = 0; i < N_DRAWS; i++) {
		double x = ssemu_rng_normal(&r);

		for (k = 0; k < G; k++)
			below[k] += x < grid[k];
	}
	for (k = 0; k < G; k++) {
		double p = phi(grid[k]);
		double se = sqrt(p * (1 - p) / n) + 1 / n;

		if (fabs(below[k] / n - p) >= 5 * se)
			fail_msg("P(X < %.2f) = %.6f, the normal's %.6f",
				 grid[k], below[k] / n, p);
	}
}

/*
 * Beyond 3.4426 the values come from the tail algorithm, not the
 * rectangles: their number and their spread must be the normal's.
 */
static void test_normal_tail(void **state)
{
	const double R = 3.442619855899;
	double n = N_DRAWS, p_r = 2 * phi(-R), p_4 = 2 * phi(-4.0);
	unsigned i, beyond_r = 0, beyond_4 = 0, neg = 0;
	struct ssemu_rng r;

	(void)state;
	ssemu_rng_seed(&r, 5, 5);
	for (i = 0; i < N_DRAWS; i++) {
		double x = ssemu_rng_normal(&r);

		if (fabs(x) > R) {
			beyond_r++;
			neg += x < 0;
		}
		beyond_4 += fabs(x) > 4.0;
	}
	assert_true(fabs(beyond_r - n * p_r) < 5 * sqrt(n * p_r));
	assert_true(fabs(beyond_4 - n * p_4) < 5 * sqrt(n * p_4));
	/* both sides */
	assert_true(fabs(neg - beyond_r / 2.0) < 5 * sqrt(beyond_r / 4.0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_streams_reproducible),
		cmocka_unit_test(test_keyed),
		cmocka_unit_test(test_keyed2),
		cmocka_unit_test(test_uniform),
		cmocka_unit_test(test_normal_moments),
		cmocka_unit_test(test_normal_cdf),
		cmocka_unit_test(test_normal_tail),
	};

	return cmocka_run_group_tests_name("rng", tests, NULL, NULL);
}
