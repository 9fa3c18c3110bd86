/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The tables and the rare paths of the normal sampler (ssemu_rng.h): the
 * ziggurat of Marsaglia and Tsang ("The Ziggurat Method for Generating
 * Random Variables", J. Stat. Software 5(8), 2000), with Doornik's choice
 * of one uniform in (-1, 1) per try (2005), 128 layers.
 *
 * The density under the curve is covered by 128 layers of equal area V:
 * a base strip (a rectangle plus the tail beyond R) and 127 rectangles,
 * layer i spanning [0, x[i]] between heights f(x[i]) and f(x[i+1]).
 * A draw picks a layer and a point u * x[i] in it; when |u| < x[i+1]/x[i]
 * the point lies under the layer above too, hence under the curve, and is
 * taken at once (about 99% of draws).  Otherwise it is the wedge (a
 * density test) or the tail (Marsaglia's exponential method), and a miss
 * draws again.  Every value is a deterministic function of the stream.
 */
#include <math.h>
#include <pthread.h>

#include <slingshot_emu/ssemu_rng.h>

#define ZIG_R 3.442619855899		/* start of the tail */
#define ZIG_V 9.91256303526217e-3	/* area of each layer */

double ssemu_zig_x[SSEMU_ZIG_N + 1];
double ssemu_zig_r[SSEMU_ZIG_N];
int ssemu_zig_ready;

static pthread_once_t zig_once = PTHREAD_ONCE_INIT;

static void zig_build(void)
{
	double f = exp(-0.5 * ZIG_R * ZIG_R);
	int i;

	/* layer 0: the base strip, as wide as its area over f(R) */
	ssemu_zig_x[0] = ZIG_V / f;
	ssemu_zig_x[1] = ZIG_R;
	for (i = 2; i < SSEMU_ZIG_N; i++) {
		ssemu_zig_x[i] = sqrt(-2.0 * log(ZIG_V / ssemu_zig_x[i - 1] +
						  f));
		f = exp(-0.5 * ssemu_zig_x[i] * ssemu_zig_x[i]);
	}
	ssemu_zig_x[SSEMU_ZIG_N] = 0.0;
	for (i = 0; i < SSEMU_ZIG_N; i++)
		ssemu_zig_r[i] = ssemu_zig_x[i + 1] / ssemu_zig_x[i];
	__atomic_store_n(&ssemu_zig_ready, 1, __ATOMIC_RELEASE);
}

void ssemu_zig_init(void)
{
	pthread_once(&zig_once, zig_build);
}

/* Beyond R: Marsaglia's method (1964), exact for the normal tail. */
static double zig_tail(struct ssemu_rng *r, bool negative)
{
	double x, y;

	do {
		/* 1 - U: in (0, 1], so the logarithms are finite */
		x = log(1.0 - ssemu_rng_double(r)) / ZIG_R;
		y = log(1.0 - ssemu_rng_double(r));
	} while (-2.0 * y < x * x);
	return negative ? x - ZIG_R : ZIG_R - x;
}

double ssemu_rng_normal_slow(struct ssemu_rng *r, uint32_t i, double u)
{
	double x, f0, f1;

	for (;;) {
		if (i == 0)
			return zig_tail(r, u < 0);
		/* the wedge between the layer's rectangle and the curve */
		x = u * ssemu_zig_x[i];
		f0 = exp(-0.5 * (ssemu_zig_x[i] * ssemu_zig_x[i] - x * x));
		f1 = exp(-0.5 * (ssemu_zig_x[i + 1] * ssemu_zig_x[i + 1] -
				 x * x));
		if (f1 + ssemu_rng_double(r) * (f0 - f1) < 1.0)
			return x;
		/* a miss: a fresh try, as in the fast path */
		if (ssemu_zig_try(r, &i, &u, &x))
			return x;
	}
}
