/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The atomic operations a target NIC applies to remote memory: the one
 * definition of each, used by the engine and by the tests as reference.
 *
 * Which (operation, datatype) pairs exist follows libfabric's own table
 * (prov/util/src/util_atomic.c): MIN, MAX and the ordered compares
 * (CSWAP_LE/LT/GE/GT) on real types only, the bitwise operations and MSWAP
 * on integers only, everything else on every type; ATOMIC_READ only with a
 * fetch.  The 128-bit integers, which libfabric's generic table leaves out,
 * are integers here like the others.
 *
 * Elements are copied in and out with memcpy: neither the target memory nor
 * a message buffer promises the type's alignment, and at the target the
 * result array is the operand array itself (each result overwrites the
 * operand of the same element once that is read).  An element whose value
 * does not change is not written back.
 */
#include <complex.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "ssemu_priv.h"

typedef __int128 ssemu_i128;
typedef unsigned __int128 ssemu_u128;
typedef float _Complex ssemu_cf;
typedef double _Complex ssemu_cd;
typedef long double _Complex ssemu_cld;

enum dkind { K_NONE, K_INT, K_REAL, K_CPLX };

static const struct {
	uint8_t size;
	uint8_t kind;
} dtypes[SSEMU_DATATYPE_COUNT] = {
	[SSEMU_INT8] = { 1, K_INT },
	[SSEMU_UINT8] = { 1, K_INT },
	[SSEMU_INT16] = { 2, K_INT },
	[SSEMU_UINT16] = { 2, K_INT },
	[SSEMU_INT32] = { 4, K_INT },
	[SSEMU_UINT32] = { 4, K_INT },
	[SSEMU_INT64] = { 8, K_INT },
	[SSEMU_UINT64] = { 8, K_INT },
	[SSEMU_FLOAT] = { sizeof(float), K_REAL },
	[SSEMU_DOUBLE] = { sizeof(double), K_REAL },
	[SSEMU_FLOAT_COMPLEX] = { sizeof(ssemu_cf), K_CPLX },
	[SSEMU_DOUBLE_COMPLEX] = { sizeof(ssemu_cd), K_CPLX },
	[SSEMU_LONG_DOUBLE] = { sizeof(long double), K_REAL },
	[SSEMU_LONG_DOUBLE_COMPLEX] = { sizeof(ssemu_cld), K_CPLX },
	[SSEMU_INT128] = { 16, K_INT },
	[SSEMU_UINT128] = { 16, K_INT },
};

size_t ssemu_datatype_size(uint32_t dtype)
{
	return dtype < SSEMU_DATATYPE_COUNT ? dtypes[dtype].size : 0;
}

/* Kinds of datatype each operation is defined on, as a bit mask. */
#define ON_INT (1u << K_INT)
#define ON_REAL (1u << K_REAL)
#define ON_CPLX (1u << K_CPLX)
#define ON_ALL (ON_INT | ON_REAL | ON_CPLX)

static const uint8_t op_kinds[SSEMU_AOP_COUNT] = {
	[SSEMU_AOP_MIN] = ON_INT | ON_REAL,
	[SSEMU_AOP_MAX] = ON_INT | ON_REAL,
	[SSEMU_AOP_SUM] = ON_ALL,
	[SSEMU_AOP_PROD] = ON_ALL,
	[SSEMU_AOP_LOR] = ON_ALL,
	[SSEMU_AOP_LAND] = ON_ALL,
	[SSEMU_AOP_BOR] = ON_INT,
	[SSEMU_AOP_BAND] = ON_INT,
	[SSEMU_AOP_LXOR] = ON_ALL,
	[SSEMU_AOP_BXOR] = ON_INT,
	[SSEMU_AOP_READ] = ON_ALL,
	[SSEMU_AOP_WRITE] = ON_ALL,
	[SSEMU_AOP_CSWAP] = ON_ALL,
	[SSEMU_AOP_CSWAP_NE] = ON_ALL,
	[SSEMU_AOP_CSWAP_LE] = ON_INT | ON_REAL,
	[SSEMU_AOP_CSWAP_LT] = ON_INT | ON_REAL,
	[SSEMU_AOP_CSWAP_GE] = ON_INT | ON_REAL,
	[SSEMU_AOP_CSWAP_GT] = ON_INT | ON_REAL,
	[SSEMU_AOP_MSWAP] = ON_INT,
};

static bool pair_defined(uint32_t aop, uint32_t dtype)
{
	return aop < SSEMU_AOP_COUNT && dtype < SSEMU_DATATYPE_COUNT &&
	       (op_kinds[aop] & (1u << dtypes[dtype].kind));
}

static bool is_compare(uint32_t aop)
{
	return aop >= SSEMU_AOP_CSWAP && aop <= SSEMU_AOP_MSWAP;
}

bool ssemu_atomic_valid(uint32_t op, uint32_t aop, uint32_t dtype)
{
	if (!pair_defined(aop, dtype))
		return false;
	switch (op) {
	case SSEMU_RMA_ATOMIC:
		return !is_compare(aop) && aop != SSEMU_AOP_READ;
	case SSEMU_RMA_FETCH:
		return !is_compare(aop);
	case SSEMU_RMA_COMPARE:
		return is_compare(aop);
	default:
		return false;
	}
}

/*
 * One loop per datatype.  @T is the type; integers also name their
 * unsigned twin @U and a wide unsigned type @W in which sums and products
 * wrap instead of overflowing (signed overflow is undefined in C, and
 * uint16_t * uint16_t overflows int).  The operation is switched inside
 * the loop: the compiler hoists it.
 */
#define LOOP_BEGIN(T)                                                     \
	uint8_t *dp = dst, *rp = res;                                     \
	const uint8_t *sp = src, *cp = cmp;                               \
	size_t i;                                                         \
	for (i = 0; i < count; i++) {                                     \
		T d, s, c;                                                \
		bool w = true;                                            \
		memcpy(&d, dp + i * sizeof(T), sizeof(T));                \
		memset(&s, 0, sizeof(T));                                 \
		memset(&c, 0, sizeof(T));                                 \
		if (sp)                                                   \
			memcpy(&s, sp + i * sizeof(T), sizeof(T));        \
		if (cp)                                                   \
			memcpy(&c, cp + i * sizeof(T), sizeof(T));        \
		switch (aop) {

#define LOOP_END(T)                                                       \
		case SSEMU_AOP_READ:                                      \
		default:                                                  \
			w = false;                                        \
			break;                                            \
		}                                                         \
		if (rp)                                                   \
			memcpy(rp + i * sizeof(T), dp + i * sizeof(T),    \
			       sizeof(T));                                \
		if (w)                                                    \
			memcpy(dp + i * sizeof(T), &d, sizeof(T));        \
	}

/* Operations every type has (complex arithmetic is C99's). */
#define COMMON_CASES(T, SUM, PROD)                                        \
	case SSEMU_AOP_SUM:                                               \
		d = SUM;                                                  \
		break;                                                    \
	case SSEMU_AOP_PROD:                                              \
		d = PROD;                                                 \
		break;                                                    \
	case SSEMU_AOP_LOR:                                               \
		d = (T)((d != 0) || (s != 0));                            \
		break;                                                    \
	case SSEMU_AOP_LAND:                                              \
		d = (T)((d != 0) && (s != 0));                            \
		break;                                                    \
	case SSEMU_AOP_LXOR:                                              \
		d = (T)((d != 0) != (s != 0));                            \
		break;                                                    \
	case SSEMU_AOP_WRITE:                                             \
		d = s;                                                    \
		break;                                                    \
	case SSEMU_AOP_CSWAP:                                             \
		if (c == d)                                               \
			d = s;                                            \
		else                                                      \
			w = false;                                        \
		break;                                                    \
	case SSEMU_AOP_CSWAP_NE:                                          \
		if (c != d)                                               \
			d = s;                                            \
		else                                                      \
			w = false;                                        \
		break;

/* Orderings (real and integer types). */
#define ORDER_CASES(T)                                                    \
	case SSEMU_AOP_MIN:                                               \
		if (s < d)                                                \
			d = s;                                            \
		else                                                      \
			w = false;                                        \
		break;                                                    \
	case SSEMU_AOP_MAX:                                               \
		if (s > d)                                                \
			d = s;                                            \
		else                                                      \
			w = false;                                        \
		break;                                                    \
	case SSEMU_AOP_CSWAP_LE:                                          \
		if (c <= d)                                               \
			d = s;                                            \
		else                                                      \
			w = false;                                        \
		break;                                                    \
	case SSEMU_AOP_CSWAP_LT:                                          \
		if (c < d)                                                \
			d = s;                                            \
		else                                                      \
			w = false;                                        \
		break;                                                    \
	case SSEMU_AOP_CSWAP_GE:                                          \
		if (c >= d)                                               \
			d = s;                                            \
		else                                                      \
			w = false;                                        \
		break;                                                    \
	case SSEMU_AOP_CSWAP_GT:                                          \
		if (c > d)                                                \
			d = s;                                            \
		else                                                      \
			w = false;                                        \
		break;

#define DEF_INT(name, T, U, W)                                            \
	static void apply_##name(uint32_t aop, void *dst, const void *src, \
				 const void *cmp, void *res, size_t count) \
	{                                                                 \
		LOOP_BEGIN(T)                                             \
		COMMON_CASES(T, (T)(U)((W)(U)d + (W)(U)s),                \
			     (T)(U)((W)(U)d * (W)(U)s))                   \
		ORDER_CASES(T)                                            \
		case SSEMU_AOP_BOR:                                       \
			d = (T)(d | s);                                   \
			break;                                            \
		case SSEMU_AOP_BAND:                                      \
			d = (T)(d & s);                                   \
			break;                                            \
		case SSEMU_AOP_BXOR:                                      \
			d = (T)(d ^ s);                                   \
			break;                                            \
		case SSEMU_AOP_MSWAP:                                     \
			d = (T)((s & c) | (d & ~c));                      \
			break;                                            \
		LOOP_END(T)                                               \
	}

#define DEF_REAL(name, T)                                                 \
	static void apply_##name(uint32_t aop, void *dst, const void *src, \
				 const void *cmp, void *res, size_t count) \
	{                                                                 \
		LOOP_BEGIN(T)                                             \
		COMMON_CASES(T, d + s, d * s)                             \
		ORDER_CASES(T)                                            \
		LOOP_END(T)                                               \
	}

#define DEF_CPLX(name, T)                                                 \
	static void apply_##name(uint32_t aop, void *dst, const void *src, \
				 const void *cmp, void *res, size_t count) \
	{                                                                 \
		LOOP_BEGIN(T)                                             \
		COMMON_CASES(T, d + s, d * s)                             \
		LOOP_END(T)                                               \
	}

DEF_INT(i8, int8_t, uint8_t, uint64_t)
DEF_INT(u8, uint8_t, uint8_t, uint64_t)
DEF_INT(i16, int16_t, uint16_t, uint64_t)
DEF_INT(u16, uint16_t, uint16_t, uint64_t)
DEF_INT(i32, int32_t, uint32_t, uint64_t)
DEF_INT(u32, uint32_t, uint32_t, uint64_t)
DEF_INT(i64, int64_t, uint64_t, uint64_t)
DEF_INT(u64, uint64_t, uint64_t, uint64_t)
DEF_INT(i128, ssemu_i128, ssemu_u128, ssemu_u128)
DEF_INT(u128, ssemu_u128, ssemu_u128, ssemu_u128)
DEF_REAL(f, float)
DEF_REAL(d, double)
DEF_REAL(ld, long double)
DEF_CPLX(cf, ssemu_cf)
DEF_CPLX(cd, ssemu_cd)
DEF_CPLX(cld, ssemu_cld)

typedef void (*apply_fn)(uint32_t aop, void *dst, const void *src,
			 const void *cmp, void *res, size_t count);

static const apply_fn apply_fns[SSEMU_DATATYPE_COUNT] = {
	[SSEMU_INT8] = apply_i8,
	[SSEMU_UINT8] = apply_u8,
	[SSEMU_INT16] = apply_i16,
	[SSEMU_UINT16] = apply_u16,
	[SSEMU_INT32] = apply_i32,
	[SSEMU_UINT32] = apply_u32,
	[SSEMU_INT64] = apply_i64,
	[SSEMU_UINT64] = apply_u64,
	[SSEMU_FLOAT] = apply_f,
	[SSEMU_DOUBLE] = apply_d,
	[SSEMU_FLOAT_COMPLEX] = apply_cf,
	[SSEMU_DOUBLE_COMPLEX] = apply_cd,
	[SSEMU_LONG_DOUBLE] = apply_ld,
	[SSEMU_LONG_DOUBLE_COMPLEX] = apply_cld,
	[SSEMU_INT128] = apply_i128,
	[SSEMU_UINT128] = apply_u128,
};

int ssemu_atomic_apply(uint32_t aop, uint32_t dtype, void *dst,
		       const void *src, const void *cmp, void *res,
		       size_t count)
{
	if (!pair_defined(aop, dtype))
		return -EINVAL;
	if (!count)
		return 0;
	if (!dst || (!src && aop != SSEMU_AOP_READ) ||
	    (!cmp && is_compare(aop)))
		return -EINVAL;
	apply_fns[dtype](aop, dst, aop == SSEMU_AOP_READ ? NULL : src,
			 is_compare(aop) ? cmp : NULL, res, count);
	return 0;
}
