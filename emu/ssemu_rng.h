/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Per-component seeded random numbers: xoshiro256** seeded through
 * splitmix64 from (fabric seed, component id), so every stochastic component
 * (switch pipeline jitter, traffic generators, random placement) draws from
 * its own reproducible stream.  The state is plain data and may live in a
 * shared segment.
 */
#ifndef SSEMU_RNG_H
#define SSEMU_RNG_H

#include <math.h>
#include <stdint.h>

struct ssemu_rng {
	uint64_t s[4];
};

static inline uint64_t ssemu_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline void ssemu_rng_seed(struct ssemu_rng *r, uint64_t seed,
				  uint64_t component)
{
	uint64_t x = seed ^ (component * 0xd1b54a32d192ed03ULL);
	int i;

	for (i = 0; i < 4; i++)
		r->s[i] = ssemu_splitmix64(&x);
}

static inline uint64_t ssemu_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t ssemu_rng_next(struct ssemu_rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = ssemu_rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = ssemu_rotl(s[3], 45);
	return result;
}

/* Uniform in [0, 1). */
static inline double ssemu_rng_double(struct ssemu_rng *r)
{
	return (double)(ssemu_rng_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform in [0, n), n > 0 (Lemire's multiply-shift, negligible bias). */
static inline uint64_t ssemu_rng_below(struct ssemu_rng *r, uint64_t n)
{
	return (uint64_t)(((__uint128_t)ssemu_rng_next(r) * n) >> 64);
}

/* Standard normal (Box-Muller, one value per call). */
static inline double ssemu_rng_normal(struct ssemu_rng *r)
{
	double u1 = ssemu_rng_double(r), u2 = ssemu_rng_double(r);

	if (u1 < 1e-300)
		u1 = 1e-300;
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

#endif
