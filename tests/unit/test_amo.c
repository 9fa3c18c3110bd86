/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the atomic operations a target NIC applies
 * (emu/ssemu_amo.c): which (operation, datatype) pairs each kind of
 * call may carry, checked against the table libfabric documents (written
 * out here independently), and every defined pair applied element-wise to
 * a grid of values against a reference computed here in wider arithmetic:
 * the new target values, the fetched previous values, results written
 * over the operands (as the target NIC does), and undefined pairs refused
 * without touching the target.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <slingshot_emu/ssemu.h>

enum kind { K_INT, K_REAL, K_CPLX };

static const struct tdesc {
	uint32_t dt;
	enum kind kind;
	bool is_signed;
	size_t size;
	const char *name;
} types[] = {
	{ SSEMU_INT8, K_INT, true, 1, "int8" },
	{ SSEMU_UINT8, K_INT, false, 1, "uint8" },
	{ SSEMU_INT16, K_INT, true, 2, "int16" },
	{ SSEMU_UINT16, K_INT, false, 2, "uint16" },
	{ SSEMU_INT32, K_INT, true, 4, "int32" },
	{ SSEMU_UINT32, K_INT, false, 4, "uint32" },
	{ SSEMU_INT64, K_INT, true, 8, "int64" },
	{ SSEMU_UINT64, K_INT, false, 8, "uint64" },
	{ SSEMU_FLOAT, K_REAL, true, sizeof(float), "float" },
	{ SSEMU_DOUBLE, K_REAL, true, sizeof(double), "double" },
	{ SSEMU_FLOAT_COMPLEX, K_CPLX, true, sizeof(float _Complex),
	  "float complex" },
	{ SSEMU_DOUBLE_COMPLEX, K_CPLX, true, sizeof(double _Complex),
	  "double complex" },
	{ SSEMU_LONG_DOUBLE, K_REAL, true, sizeof(long double),
	  "long double" },
	{ SSEMU_LONG_DOUBLE_COMPLEX, K_CPLX, true,
	  sizeof(long double _Complex), "long double complex" },
	{ SSEMU_INT128, K_INT, true, 16, "int128" },
	{ SSEMU_UINT128, K_INT, false, 16, "uint128" },
};
#define NTYPES (sizeof(types) / sizeof(types[0]))

static const char *const op_names[SSEMU_AOP_COUNT] = {
	"MIN", "MAX", "SUM", "PROD", "LOR", "LAND", "BOR", "BAND", "LXOR",
	"BXOR", "READ", "WRITE", "CSWAP", "CSWAP_NE", "CSWAP_LE", "CSWAP_LT",
	"CSWAP_GE", "CSWAP_GT", "MSWAP",
};

/* A value of any type: integers in i, reals in re, complex in re + im. */
struct val {
	int64_t i;
	long double re, im;
};

/* libfabric's table (fi_atomic(3), prov/util/src/util_atomic.c):
 * orderings on real types, bit operations on integers, the rest on all. */
static bool defined_on(uint32_t aop, enum kind k)
{
	switch (aop) {
	case SSEMU_AOP_MIN:
	case SSEMU_AOP_MAX:
	case SSEMU_AOP_CSWAP_LE:
	case SSEMU_AOP_CSWAP_LT:
	case SSEMU_AOP_CSWAP_GE:
	case SSEMU_AOP_CSWAP_GT:
		return k != K_CPLX;
	case SSEMU_AOP_BOR:
	case SSEMU_AOP_BAND:
	case SSEMU_AOP_BXOR:
	case SSEMU_AOP_MSWAP:
		return k == K_INT;
	default:
		return aop < SSEMU_AOP_COUNT;
	}
}

static bool expect_valid(uint32_t op, uint32_t aop, enum kind k)
{
	bool cmp_op = aop >= SSEMU_AOP_CSWAP && aop <= SSEMU_AOP_MSWAP;

	if (!defined_on(aop, k))
		return false;
	switch (op) {
	case SSEMU_RMA_ATOMIC:	/* fi_atomic: no ATOMIC_READ, no swaps */
		return !cmp_op && aop != SSEMU_AOP_READ;
	case SSEMU_RMA_FETCH:	/* fi_fetch_atomic */
		return !cmp_op;
	case SSEMU_RMA_COMPARE:	/* fi_compare_atomic */
		return cmp_op;
	default:
		return false;
	}
}

static void store(const struct tdesc *t, struct val v, void *p)
{
	switch (t->dt) {
#define ST(DT, T)                              \
	case DT: {                             \
		T x = (T)v.i;                  \
		memcpy(p, &x, sizeof(x));      \
		break;                         \
	}
	ST(SSEMU_INT8, int8_t)
	ST(SSEMU_UINT8, uint8_t)
	ST(SSEMU_INT16, int16_t)
	ST(SSEMU_UINT16, uint16_t)
	ST(SSEMU_INT32, int32_t)
	ST(SSEMU_UINT32, uint32_t)
	ST(SSEMU_INT64, int64_t)
	ST(SSEMU_UINT64, uint64_t)
	ST(SSEMU_INT128, __int128)
	ST(SSEMU_UINT128, unsigned __int128)
#undef ST
#define STR(DT, T)                             \
	case DT: {                             \
		T x = (T)v.re;                 \
		memcpy(p, &x, sizeof(x));      \
		break;                         \
	}
	STR(SSEMU_FLOAT, float)
	STR(SSEMU_DOUBLE, double)
	STR(SSEMU_LONG_DOUBLE, long double)
#undef STR
#define STC(DT, T)                             \
	case DT: {                             \
		T parts[2] = { (T)v.re, (T)v.im }; \
		memcpy(p, parts, sizeof(parts)); \
		break;                         \
	}
	STC(SSEMU_FLOAT_COMPLEX, float)
	STC(SSEMU_DOUBLE_COMPLEX, double)
	STC(SSEMU_LONG_DOUBLE_COMPLEX, long double)
#undef STC
	default:
		fail_msg("store: type %u", t->dt);
	}
}

static struct val load(const struct tdesc *t, const void *p)
{
	struct val v = { 0, 0, 0 };

	switch (t->dt) {
#define LD(DT, T)                              \
	case DT: {                             \
		T x;                           \
		memcpy(&x, p, sizeof(x));      \
		v.i = (int64_t)x;              \
		break;                         \
	}
	LD(SSEMU_INT8, int8_t)
	LD(SSEMU_UINT8, uint8_t)
	LD(SSEMU_INT16, int16_t)
	LD(SSEMU_UINT16, uint16_t)
	LD(SSEMU_INT32, int32_t)
	LD(SSEMU_UINT32, uint32_t)
	LD(SSEMU_INT64, int64_t)
	LD(SSEMU_UINT64, uint64_t)
	LD(SSEMU_INT128, __int128)
	LD(SSEMU_UINT128, unsigned __int128)
#undef LD
#define LDR(DT, T)                             \
	case DT: {                             \
		T x;                           \
		memcpy(&x, p, sizeof(x));      \
		v.re = x;                      \
		break;                         \
	}
	LDR(SSEMU_FLOAT, float)
	LDR(SSEMU_DOUBLE, double)
	LDR(SSEMU_LONG_DOUBLE, long double)
#undef LDR
#define LDC(DT, T)                             \
	case DT: {                             \
		T parts[2];                    \
		memcpy(parts, p, sizeof(parts)); \
		v.re = parts[0];               \
		v.im = parts[1];               \
		break;                         \
	}
	LDC(SSEMU_FLOAT_COMPLEX, float)
	LDC(SSEMU_DOUBLE_COMPLEX, double)
	LDC(SSEMU_LONG_DOUBLE_COMPLEX, long double)
#undef LDC
	default:
		fail_msg("load: type %u", t->dt);
	}
	return v;
}

static bool nonzero(enum kind k, struct val v)
{
	return k == K_INT ? v.i != 0 : (v.re != 0 || v.im != 0);
}

static bool equal(enum kind k, struct val a, struct val b)
{
	return k == K_INT ? a.i == b.i : (a.re == b.re && a.im == b.im);
}

/* a < b (integers and reals only) */
static bool less(enum kind k, struct val a, struct val b)
{
	return k == K_INT ? a.i < b.i : a.re < b.re;
}

static struct val truth(bool b)
{
	struct val v = { b, b, 0 };

	return v;
}

/* The reference: what the target holds after @aop on d with s and c. */
static struct val ref(enum kind k, uint32_t aop, struct val d, struct val s,
		      struct val c)
{
	struct val r = d;

	switch (aop) {
	case SSEMU_AOP_MIN:
		return less(k, s, d) ? s : d;
	case SSEMU_AOP_MAX:
		return less(k, d, s) ? s : d;
	case SSEMU_AOP_SUM:
		r.i = d.i + s.i;
		r.re = d.re + s.re;
		r.im = d.im + s.im;
		return r;
	case SSEMU_AOP_PROD:
		r.i = d.i * s.i;
		r.re = d.re * s.re - d.im * s.im;
		r.im = d.re * s.im + d.im * s.re;
		return r;
	case SSEMU_AOP_LOR:
		return truth(nonzero(k, d) || nonzero(k, s));
	case SSEMU_AOP_LAND:
		return truth(nonzero(k, d) && nonzero(k, s));
	case SSEMU_AOP_LXOR:
		return truth(nonzero(k, d) != nonzero(k, s));
	case SSEMU_AOP_BOR:
		r.i = d.i | s.i;
		return r;
	case SSEMU_AOP_BAND:
		r.i = d.i & s.i;
		return r;
	case SSEMU_AOP_BXOR:
		r.i = d.i ^ s.i;
		return r;
	case SSEMU_AOP_READ:
		return d;
	case SSEMU_AOP_WRITE:
		return s;
	case SSEMU_AOP_CSWAP:
		return equal(k, c, d) ? s : d;
	case SSEMU_AOP_CSWAP_NE:
		return !equal(k, c, d) ? s : d;
	case SSEMU_AOP_CSWAP_LE:
		return !less(k, d, c) ? s : d;	/* c <= d */
	case SSEMU_AOP_CSWAP_LT:
		return less(k, c, d) ? s : d;
	case SSEMU_AOP_CSWAP_GE:
		return !less(k, c, d) ? s : d;	/* c >= d */
	case SSEMU_AOP_CSWAP_GT:
		return less(k, d, c) ? s : d;
	case SSEMU_AOP_MSWAP:
		r.i = (s.i & c.i) | (d.i & ~c.i);
		return r;
	}
	fail_msg("ref: op %u", aop);
	return r;
}

/* A few values for type @t, all exact in it. */
static size_t values(const struct tdesc *t, struct val *v)
{
	static const int64_t sints[] = { 0, 1, -7, 100, 85 };
	static const int64_t uints[] = { 0, 1, 6, 100, 85 };
	static const long double reals[] = { 0, 1.5L, -2.25L, 3, 1.5L };
	static const long double cplx[][2] = {
		{ 0, 0 }, { 1.5L, -1 }, { -2, 0.5L }, { 1.5L, 0 }, { 0, 2 },
	};
	size_t i, n = 5;

	for (i = 0; i < n; i++) {
		memset(&v[i], 0, sizeof(v[i]));
		switch (t->kind) {
		case K_INT:
			v[i].i = t->is_signed ? sints[i] : uints[i];
			break;
		case K_REAL:
			v[i].re = reals[i];
			break;
		case K_CPLX:
			v[i].re = cplx[i][0];
			v[i].im = cplx[i][1];
			break;
		}
	}
	return n;
}

static void test_amo_sizes(void **state)
{
	size_t k;

	for (k = 0; k < NTYPES; k++)
		assert_int_equal(ssemu_datatype_size(types[k].dt),
				 types[k].size);
	assert_int_equal(ssemu_datatype_size(SSEMU_DATATYPE_COUNT), 0);
	assert_int_equal(ssemu_datatype_size(UINT32_MAX), 0);
	/* numbered as libfabric's enums (the provider relies on it) */
	assert_int_equal(SSEMU_INT128, 14);
	assert_int_equal(SSEMU_UINT128, 15);
	assert_int_equal(SSEMU_AOP_CSWAP, 12);
	assert_int_equal(SSEMU_AOP_MSWAP, 18);
}

static void test_amo_valid_table(void **state)
{
	static const uint32_t ops[] = { SSEMU_RMA_ATOMIC, SSEMU_RMA_FETCH,
					SSEMU_RMA_COMPARE };
	size_t k, o, nvalid = 0;
	uint32_t aop;

	for (k = 0; k < NTYPES; k++) {
		for (aop = 0; aop < SSEMU_AOP_COUNT; aop++) {
			for (o = 0; o < 3; o++) {
				bool want = expect_valid(ops[o], aop,
							 types[k].kind);

				if (ssemu_atomic_valid(ops[o], aop,
						       types[k].dt) != want)
					fail_msg("valid(op %u, %s, %s) is %d, "
						 "want %d", ops[o],
						 op_names[aop], types[k].name,
						 !want, want);
				nvalid += want;
			}
			/* not atomics at all */
			assert_false(ssemu_atomic_valid(SSEMU_RMA_WRITE, aop,
							types[k].dt));
			assert_false(ssemu_atomic_valid(SSEMU_RMA_READ, aop,
							types[k].dt));
			assert_false(ssemu_atomic_valid(0, aop, types[k].dt));
		}
		assert_false(ssemu_atomic_valid(SSEMU_RMA_FETCH,
						SSEMU_AOP_COUNT, types[k].dt));
	}
	assert_false(ssemu_atomic_valid(SSEMU_RMA_FETCH, SSEMU_AOP_SUM,
					SSEMU_DATATYPE_COUNT));
	/* spot checks of the table itself */
	assert_true(ssemu_atomic_valid(SSEMU_RMA_ATOMIC, SSEMU_AOP_SUM,
				       SSEMU_DOUBLE_COMPLEX));
	assert_false(ssemu_atomic_valid(SSEMU_RMA_ATOMIC, SSEMU_AOP_MIN,
					SSEMU_FLOAT_COMPLEX));
	assert_false(ssemu_atomic_valid(SSEMU_RMA_ATOMIC, SSEMU_AOP_BOR,
					SSEMU_DOUBLE));
	assert_true(ssemu_atomic_valid(SSEMU_RMA_COMPARE, SSEMU_AOP_MSWAP,
				       SSEMU_UINT128));
	assert_false(ssemu_atomic_valid(SSEMU_RMA_COMPARE, SSEMU_AOP_MSWAP,
					SSEMU_LONG_DOUBLE));
	assert_true(ssemu_atomic_valid(SSEMU_RMA_COMPARE, SSEMU_AOP_CSWAP_NE,
				       SSEMU_LONG_DOUBLE_COMPLEX));
	assert_false(ssemu_atomic_valid(SSEMU_RMA_ATOMIC, SSEMU_AOP_READ,
					SSEMU_INT32));
	assert_true(ssemu_atomic_valid(SSEMU_RMA_FETCH, SSEMU_AOP_READ,
				       SSEMU_INT32));
	/* 8 ints + 2 int128: 19 ops, of which write 11, fetch 12, swap 7;
	 * reals (3): write 8, fetch 9, swap 6; complex (3): 6, 7, 2 */
	assert_int_equal(nvalid, 10 * (11 + 12 + 7) + 3 * (8 + 9 + 6) +
					 3 * (6 + 7 + 2));
}

/* Every defined pair on a grid of (target, operand, compare) values. */
static void test_amo_apply_all(void **state)
{
	uint8_t *dst, *src, *cmp, *res, *orig, *alias;
	struct val v[8], d, s, c, want, got;
	size_t k, n, a, b, e, i, count, sz, checked = 0;
	uint32_t aop;

	dst = malloc(1024 * 32);
	src = malloc(1024 * 32);
	cmp = malloc(1024 * 32);
	res = malloc(1024 * 32);
	orig = malloc(1024 * 32);
	alias = malloc(1024 * 32);
	assert_true(dst && src && cmp && res && orig && alias);
	for (k = 0; k < NTYPES; k++) {
		const struct tdesc *t = &types[k];

		sz = t->size;
		n = values(t, v);
		/* element i: target v[a], operand v[b], compare v[e] */
		count = 0;
		for (a = 0; a < n; a++)
			for (b = 0; b < n; b++)
				for (e = 0; e < n; e++, count++) {
					store(t, v[a], dst + count * sz);
					store(t, v[b], src + count * sz);
					store(t, v[e], cmp + count * sz);
				}
		memcpy(orig, dst, count * sz);
		for (aop = 0; aop < SSEMU_AOP_COUNT; aop++) {
			memcpy(dst, orig, count * sz);
			memset(res, 0xa5, count * sz);
			if (!defined_on(aop, t->kind)) {
				assert_int_equal(ssemu_atomic_apply(aop, t->dt,
								    dst, src,
								    cmp, res,
								    count),
						 -EINVAL);
				assert_memory_equal(dst, orig, count * sz);
				continue;
			}
			assert_int_equal(ssemu_atomic_apply(aop, t->dt, dst,
							    src, cmp, res,
							    count),
					 0);
			for (i = 0; i < count; i++) {
				d = load(t, orig + i * sz);
				s = load(t, src + i * sz);
				c = load(t, cmp + i * sz);
				/* the reference, as the type holds it */
				store(t, ref(t->kind, aop, d, s, c),
				      alias + i * sz);
				want = load(t, alias + i * sz);
				got = load(t, dst + i * sz);
				if (!equal(t->kind, want, got))
					fail_msg("%s %s element %zu: got "
						 "%lld/%Lg%+Lgi, want "
						 "%lld/%Lg%+Lgi", op_names[aop],
						 t->name, i, (long long)got.i,
						 got.re, got.im,
						 (long long)want.i, want.re,
						 want.im);
				got = load(t, res + i * sz);
				if (!equal(t->kind, d, got))
					fail_msg("%s %s element %zu: fetched "
						 "the wrong previous value",
						 op_names[aop], t->name, i);
				checked++;
			}
			/* without a result array, and with results over the
			 * operands (the target NIC's way): the same */
			memcpy(res, dst, count * sz);
			memcpy(dst, orig, count * sz);
			assert_int_equal(ssemu_atomic_apply(aop, t->dt, dst,
							    src, cmp, NULL,
							    count),
					 0);
			assert_memory_equal(dst, res, count * sz);
			memcpy(dst, orig, count * sz);
			memcpy(alias, src, count * sz);
			assert_int_equal(ssemu_atomic_apply(aop, t->dt, dst,
							    alias, cmp, alias,
							    count),
					 0);
			assert_memory_equal(dst, res, count * sz);
			for (i = 0; i < count; i++)
				assert_true(equal(t->kind,
						  load(t, alias + i * sz),
						  load(t, orig + i * sz)));
		}
	}
	/* 16 types x 125 elements x the ops each defines */
	assert_int_equal(checked, 125 * (10 * 19 + 3 * 15 + 3 * 9));
	free(dst);
	free(src);
	free(cmp);
	free(res);
	free(orig);
	free(alias);
}

/* Wrapping integer arithmetic, and bad arguments. */
static void test_amo_edges(void **state)
{
	int8_t a8 = 100, b8 = 100;
	uint16_t a16 = 65535, b16 = 65535;
	int64_t a64 = INT64_MAX, b64 = 1, r64 = 0;
	unsigned __int128 a128 = ~(unsigned __int128)0, b128 = 2;
	uint32_t x = 5, y = 7;

	assert_int_equal(ssemu_atomic_apply(SSEMU_AOP_SUM, SSEMU_INT8, &a8,
					    &b8, NULL, NULL, 1), 0);
	assert_int_equal(a8, (int8_t)(uint8_t)200);
	assert_int_equal(ssemu_atomic_apply(SSEMU_AOP_PROD, SSEMU_UINT16,
					    &a16, &b16, NULL, NULL, 1), 0);
	assert_int_equal(a16, 1);	/* (2^16 - 1)^2 mod 2^16 */
	assert_int_equal(ssemu_atomic_apply(SSEMU_AOP_SUM, SSEMU_INT64, &a64,
					    &b64, NULL, &r64, 1), 0);
	assert_true(a64 == INT64_MIN && r64 == INT64_MAX);
	assert_int_equal(ssemu_atomic_apply(SSEMU_AOP_SUM, SSEMU_UINT128,
					    &a128, &b128, NULL, NULL, 1), 0);
	assert_true(a128 == 1);
	/* a compare needs its compare values, everything but READ an
	 * operand; nothing to do is fine */
	assert_int_equal(ssemu_atomic_apply(SSEMU_AOP_CSWAP, SSEMU_UINT32, &x,
					    &y, NULL, NULL, 1), -EINVAL);
	assert_int_equal(ssemu_atomic_apply(SSEMU_AOP_SUM, SSEMU_UINT32, &x,
					    NULL, NULL, NULL, 1), -EINVAL);
	assert_int_equal(x, 5);
	assert_int_equal(ssemu_atomic_apply(SSEMU_AOP_READ, SSEMU_UINT32, &x,
					    NULL, NULL, &y, 1), 0);
	assert_int_equal(y, 5);
	assert_int_equal(ssemu_atomic_apply(SSEMU_AOP_SUM, SSEMU_UINT32, NULL,
					    NULL, NULL, NULL, 0), 0);
	assert_int_equal(ssemu_atomic_apply(SSEMU_AOP_COUNT, SSEMU_UINT32, &x,
					    &y, &y, NULL, 1), -EINVAL);
	assert_int_equal(ssemu_atomic_apply(SSEMU_AOP_SUM,
					    SSEMU_DATATYPE_COUNT, &x, &y, &y,
					    NULL, 1), -EINVAL);
	assert_int_equal(x, 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_amo_sizes),
		cmocka_unit_test(test_amo_valid_table),
		cmocka_unit_test(test_amo_apply_all),
		cmocka_unit_test(test_amo_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
