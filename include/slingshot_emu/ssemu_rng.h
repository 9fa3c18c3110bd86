/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Per-component seeded random numbers: xoshiro256** seeded through
 * splitmix64 from (fabric seed, component id), so every stochastic component
 * (traffic generators, random placement) draws from its own reproducible
 * stream, or from (fabric seed, component, key) for draws that must not
 * depend on their order (switch pipeline latency, routing choices: one
 * short stream per packet and hop, ssemu_rng_keyed).  The state is plain
 * data and may live in a shared segment.
 */
#ifndef SSEMU_RNG_H
#define SSEMU_RNG_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

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

/* splitmix64's finaliser: a stateless mix of @x (a bijection). */
static inline uint64_t ssemu_rng_mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/*
 * Counter-based draws: a stream that is a pure function of (@seed,
 * @component, @key), e.g. (fabric seed, switch, packet and hop).  What a
 * draw gives then does not depend on which draws were made before it or
 * in which order, so a model may make its draws lazily or out of order
 * and still get the same values.
 */
static inline void ssemu_rng_keyed(struct ssemu_rng *r, uint64_t seed,
				   uint64_t component, uint64_t key)
{
	ssemu_rng_seed(r, seed ^ ssemu_rng_mix64(key + 0x9e3779b97f4a7c15ULL),
		       component);
}

static inline uint64_t ssemu_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/*
 * The first two draws of the keyed stream (@seed, @component, @key), what
 * ssemu_rng_keyed and two ssemu_rng_next give, without the rest of the
 * state: the second draw reads only three of the four words, and a model
 * whose draw usually takes two (a rare case, then a value) builds the
 * stream only when it needs a third.
 */
static inline void ssemu_rng_keyed2(uint64_t seed, uint64_t component,
				    uint64_t key, uint64_t *d0, uint64_t *d1)
{
	uint64_t x = seed ^ ssemu_rng_mix64(key + 0x9e3779b97f4a7c15ULL) ^
		     (component * 0xd1b54a32d192ed03ULL);
	uint64_t s0 = ssemu_splitmix64(&x), s1 = ssemu_splitmix64(&x);
	uint64_t s2 = ssemu_splitmix64(&x);

	*d0 = ssemu_rotl(s1 * 5, 7) * 9;
	*d1 = ssemu_rotl((s1 ^ s2 ^ s0) * 5, 7) * 9;
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

/*
 * Standard normal: a ziggurat (ssemu_rng.c says how), one draw per value
 * about 99% of the time, where Box-Muller pays a logarithm, a square root
 * and a cosine per value (a tenth of the model's cost per packet-hop).
 */
#define SSEMU_ZIG_N 128
extern double ssemu_zig_x[SSEMU_ZIG_N + 1];
extern double ssemu_zig_r[SSEMU_ZIG_N];
extern int ssemu_zig_ready;
void ssemu_zig_init(void);
double ssemu_rng_normal_slow(struct ssemu_rng *r, uint32_t i, double u);

static inline void ssemu_zig_ensure(void)
{
	if (__builtin_expect(!__atomic_load_n(&ssemu_zig_ready,
					      __ATOMIC_ACQUIRE), 0))
		ssemu_zig_init();
}

/* One try with draw @v (tables set up): layer *i, position *u in
 * (-1, 1); true with the value in *x if it lies inside the layer above
 * (under the curve for sure). */
static inline bool ssemu_zig_try_draw(uint64_t v, uint32_t *i, double *u,
				      double *x)
{
	*i = (uint32_t)(v & (SSEMU_ZIG_N - 1));
	/* the top 53 bits, independent of the layer's low 7 */
	*u = (double)(v >> 11) * 0x1.0p-52 - 1.0;
	if (fabs(*u) < ssemu_zig_r[*i]) {
		*x = *u * ssemu_zig_x[*i];
		return true;
	}
	return false;
}

static inline bool ssemu_zig_try(struct ssemu_rng *r, uint32_t *i,
				 double *u, double *x)
{
	return ssemu_zig_try_draw(ssemu_rng_next(r), i, u, x);
}

static inline double ssemu_rng_normal(struct ssemu_rng *r)
{
	uint32_t i;
	double u, x;

	ssemu_zig_ensure();
	if (ssemu_zig_try(r, &i, &u, &x))
		return x;
	return ssemu_rng_normal_slow(r, i, u);
}

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* SSEMU_RNG_H */
