/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_ATOMIC: every (operation, datatype) pair libfabric defines, through
 * fi_atomic, fi_fetch_atomic and fi_compare_atomic, against a reference
 * computed here (independently of the emulator; the reference itself is
 * checked against hand-computed INT64 values); the validity table behind
 * fi_atomicvalid and fi_query_atomic; the v/msg/inject forms; refused
 * accesses; and (shm variant) 8 processes fetch-adding on one target, whose
 * final value and fetched values must account for every add exactly once.
 */
#include <complex.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fi_collective.h>

#include "sse_test.h"

#define TMO SSE_TEST_TIMEOUT_MS
#define N 4		/* elements per operation */
#define NDT 16		/* FI_INT8 .. FI_UINT128 */
#define NOP 19		/* FI_MIN .. FI_MSWAP */

static const char *store = "private";

enum kind { K_WRITE, K_FETCH, K_COMPARE };

typedef __int128 i128;
typedef unsigned __int128 u128;

static size_t dt_size(int dt)
{
	static const size_t sz[NDT] = {
		1, 1, 2, 2, 4, 4, 8, 8, sizeof(float), sizeof(double),
		sizeof(float complex), sizeof(double complex),
		sizeof(long double), sizeof(long double complex), 16, 16,
	};

	return sz[dt];
}

static bool dt_int(int dt)
{
	return dt <= FI_UINT64 || dt == FI_INT128 || dt == FI_UINT128;
}

static bool dt_complex(int dt)
{
	return dt == FI_FLOAT_COMPLEX || dt == FI_DOUBLE_COMPLEX ||
	       dt == FI_LONG_DOUBLE_COMPLEX;
}

/*
 * libfabric's table (fi_atomic(3), prov/util's handlers): ordering and
 * min/max not on complex types, bitwise operations and MSWAP on integers
 * only, ATOMIC_READ only as a fetch, the compares only through compare
 * calls and the rest never through them.
 */
static bool expect_valid(enum kind k, int op, int dt)
{
	if (k == K_COMPARE) {
		if (op < FI_CSWAP)
			return false;
		if (op == FI_MSWAP)
			return dt_int(dt);
		if (op == FI_CSWAP || op == FI_CSWAP_NE)
			return true;
		return !dt_complex(dt);
	}
	if (op >= FI_CSWAP)
		return false;
	if (op == FI_ATOMIC_READ)
		return k == K_FETCH;
	switch (op) {
	case FI_MIN:
	case FI_MAX:
		return !dt_complex(dt);
	case FI_BOR:
	case FI_BAND:
	case FI_BXOR:
		return dt_int(dt);
	default:
		return true;
	}
}

/* Operands: element i relates to the others differently for each i. */
static const int v_dst[N] = { 6, -2, 9, 0 };
static const int v_src[N] = { 4, 7, 9, 5 };
static const int v_cmp[N] = { 3, 8, 9, 0 };
static const int v_im_dst[N] = { 1, 0, 3, 0 };
static const int v_im_src[N] = { -1, 2, 3, 0 };
static const int v_im_cmp[N] = { 0, 0, 3, 0 };

/* Hand-computed INT64 results, to check the reference below. */
static const long long hand[NOP][N] = {
	[FI_MIN] = { 4, -2, 9, 0 },
	[FI_MAX] = { 6, 7, 9, 5 },
	[FI_SUM] = { 10, 5, 18, 5 },
	[FI_PROD] = { 24, -14, 81, 0 },
	[FI_LOR] = { 1, 1, 1, 1 },
	[FI_LAND] = { 1, 1, 1, 0 },
	[FI_BOR] = { 6, -1, 9, 5 },
	[FI_BAND] = { 4, 6, 9, 0 },
	[FI_LXOR] = { 0, 0, 0, 1 },
	[FI_BXOR] = { 2, -7, 0, 5 },
	[FI_ATOMIC_READ] = { 6, -2, 9, 0 },
	[FI_ATOMIC_WRITE] = { 4, 7, 9, 5 },
	[FI_CSWAP] = { 6, -2, 9, 5 },
	[FI_CSWAP_NE] = { 4, 7, 9, 0 },
	[FI_CSWAP_LE] = { 4, -2, 9, 5 },
	[FI_CSWAP_LT] = { 4, -2, 9, 0 },
	[FI_CSWAP_GE] = { 6, 7, 9, 5 },
	[FI_CSWAP_GT] = { 6, 7, 9, 0 },
	[FI_MSWAP] = { 4, -10, 9, 0 },
};

/* Fill the three operand arrays of type @dt. */
#define FILL_REAL(T)							\
	do {								\
		T *d = dst, *s = src, *c = cmp;				\
		for (i = 0; i < N; i++) {				\
			d[i] = (T)v_dst[i];				\
			s[i] = (T)v_src[i];				\
			c[i] = (T)v_cmp[i];				\
		}							\
	} while (0)
#define FILL_CPLX(T)							\
	do {								\
		T complex *d = dst, *s = src, *c = cmp;			\
		for (i = 0; i < N; i++) {				\
			d[i] = (T)v_dst[i] + (T)v_im_dst[i] * I;	\
			s[i] = (T)v_src[i] + (T)v_im_src[i] * I;	\
			c[i] = (T)v_cmp[i] + (T)v_im_cmp[i] * I;	\
		}							\
	} while (0)

static void fill(int dt, void *dst, void *src, void *cmp)
{
	int i;

	memset(dst, 0, N * dt_size(dt));
	memset(src, 0, N * dt_size(dt));
	memset(cmp, 0, N * dt_size(dt));
	switch (dt) {
	case FI_INT8: FILL_REAL(int8_t); break;
	case FI_UINT8: FILL_REAL(uint8_t); break;
	case FI_INT16: FILL_REAL(int16_t); break;
	case FI_UINT16: FILL_REAL(uint16_t); break;
	case FI_INT32: FILL_REAL(int32_t); break;
	case FI_UINT32: FILL_REAL(uint32_t); break;
	case FI_INT64: FILL_REAL(int64_t); break;
	case FI_UINT64: FILL_REAL(uint64_t); break;
	case FI_FLOAT: FILL_REAL(float); break;
	case FI_DOUBLE: FILL_REAL(double); break;
	case FI_LONG_DOUBLE: FILL_REAL(long double); break;
	case FI_INT128: FILL_REAL(i128); break;
	case FI_UINT128: FILL_REAL(u128); break;
	case FI_FLOAT_COMPLEX: FILL_CPLX(float); break;
	case FI_DOUBLE_COMPLEX: FILL_CPLX(double); break;
	case FI_LONG_DOUBLE_COMPLEX: FILL_CPLX(long double); break;
	}
}

/* The reference: d[i] = d[i] op s[i] (c[i]), as libfabric defines it. */
#define REF_COMMON(d, s, c, T)						\
	case FI_SUM: d = (T)(d + s); break;				\
	case FI_PROD: d = (T)(d * s); break;				\
	case FI_ATOMIC_READ: break;					\
	case FI_ATOMIC_WRITE: d = s; break;				\
	case FI_CSWAP: if (c == d) d = s; break;			\
	case FI_CSWAP_NE: if (c != d) d = s; break;
#define REF_ORDER(d, s, c)						\
	case FI_MIN: if (s < d) d = s; break;				\
	case FI_MAX: if (s > d) d = s; break;				\
	case FI_LOR: d = (d != 0) || (s != 0); break;			\
	case FI_LAND: d = (d != 0) && (s != 0); break;			\
	case FI_LXOR: d = (d != 0) != (s != 0); break;			\
	case FI_CSWAP_LE: if (c <= d) d = s; break;			\
	case FI_CSWAP_LT: if (c < d) d = s; break;			\
	case FI_CSWAP_GE: if (c >= d) d = s; break;			\
	case FI_CSWAP_GT: if (c > d) d = s; break;
#define REF_BITS(d, s, c)						\
	case FI_BOR: d |= s; break;					\
	case FI_BAND: d &= s; break;					\
	case FI_BXOR: d ^= s; break;					\
	case FI_MSWAP: d = (s & c) | (d & ~c); break;

#define REF_INT(T)							\
	do {								\
		T *d = dst;						\
		const T *s = src, *c = cmp;				\
		for (i = 0; i < N; i++) {				\
			switch (op) {					\
			REF_COMMON(d[i], s[i], c[i], T)			\
			REF_ORDER(d[i], s[i], c[i])			\
			REF_BITS(d[i], s[i], c[i])			\
			}						\
		}							\
	} while (0)
#define REF_FLT(T)							\
	do {								\
		T *d = dst;						\
		const T *s = src, *c = cmp;				\
		for (i = 0; i < N; i++) {				\
			switch (op) {					\
			REF_COMMON(d[i], s[i], c[i], T)			\
			REF_ORDER(d[i], s[i], c[i])			\
			}						\
		}							\
	} while (0)
/* Logical operations on complex values: true is 1 + 0i. */
#define REF_CPLX(T)							\
	do {								\
		T complex *d = dst;					\
		const T complex *s = src, *c = cmp;			\
		for (i = 0; i < N; i++) {				\
			bool a = d[i] != 0, b = s[i] != 0;		\
			switch (op) {					\
			REF_COMMON(d[i], s[i], c[i], T complex)		\
			case FI_LOR: d[i] = a || b; break;		\
			case FI_LAND: d[i] = a && b; break;		\
			case FI_LXOR: d[i] = a != b; break;		\
			}						\
		}							\
	} while (0)

static void reference(int op, int dt, void *dst, const void *src,
		      const void *cmp)
{
	int i;

	switch (dt) {
	case FI_INT8: REF_INT(int8_t); break;
	case FI_UINT8: REF_INT(uint8_t); break;
	case FI_INT16: REF_INT(int16_t); break;
	case FI_UINT16: REF_INT(uint16_t); break;
	case FI_INT32: REF_INT(int32_t); break;
	case FI_UINT32: REF_INT(uint32_t); break;
	case FI_INT64: REF_INT(int64_t); break;
	case FI_UINT64: REF_INT(uint64_t); break;
	case FI_INT128: REF_INT(i128); break;
	case FI_UINT128: REF_INT(u128); break;
	case FI_FLOAT: REF_FLT(float); break;
	case FI_DOUBLE: REF_FLT(double); break;
	case FI_LONG_DOUBLE: REF_FLT(long double); break;
	case FI_FLOAT_COMPLEX: REF_CPLX(float); break;
	case FI_DOUBLE_COMPLEX: REF_CPLX(double); break;
	case FI_LONG_DOUBLE_COMPLEX: REF_CPLX(long double); break;
	}
}

/* Equal as values: long double has padding bytes memcmp must not see. */
static bool same(int dt, const void *a, const void *b)
{
	int i;

	if (dt == FI_LONG_DOUBLE) {
		const long double *x = a, *y = b;

		for (i = 0; i < N; i++)
			if (x[i] != y[i])
				return false;
		return true;
	}
	if (dt == FI_LONG_DOUBLE_COMPLEX) {
		const long double complex *x = a, *y = b;

		for (i = 0; i < N; i++)
			if (x[i] != y[i])
				return false;
		return true;
	}
	return !memcmp(a, b, N * dt_size(dt));
}

/* The reference against the hand-computed values. */
static void test_atomic_reference(void **state)
{
	int64_t d[N], s[N], c[N];
	int op, i;

	for (op = 0; op < NOP; op++) {
		fill(FI_INT64, d, s, c);
		reference(op, FI_INT64, d, s, c);
		for (i = 0; i < N; i++)
			if (d[i] != hand[op][i])
				fail_msg("reference op %d elem %d: %lld, not %lld",
					 op, i, (long long)d[i], hand[op][i]);
	}
	/* complex product and logical results */
	{
		double complex x[N], y[N], z[N];

		fill(FI_DOUBLE_COMPLEX, x, y, z);
		reference(FI_PROD, FI_DOUBLE_COMPLEX, x, y, z);
		/* (6+i)(4-i) = 25-2i, (-2)(7+2i) = -14-4i */
		assert_true(x[0] == 25 - 2 * I);
		assert_true(x[1] == -14 - 4 * I);
		fill(FI_DOUBLE_COMPLEX, x, y, z);
		reference(FI_LXOR, FI_DOUBLE_COMPLEX, x, y, z);
		assert_true(x[3] == 1 && x[0] == 0);
	}
}

/* ------------------------------------------------------------------ */

struct at {
	struct sse_res r;
	struct fi_info *hints;
};

static void at_open(struct at *t)
{
	struct sse_res_opts o = { 0 };

	t->hints = sse_test_hints(FI_ATOMIC | FI_RMA | FI_MSG);
	t->hints->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	o.hints = t->hints;
	sse_res_open(&t->r, 2, &o);
	assert_true(t->r.info->caps & FI_ATOMIC);
}

static void at_close(struct at *t)
{
	sse_res_close(&t->r);
	fi_freeinfo(t->hints);
}

#define POST(t, call)							\
	do {								\
		ssize_t _ret;						\
		while ((_ret = (call)) == -FI_EAGAIN)			\
			sse_progress_for(&(t)->r, 1);			\
		assert_fi_ok(_ret);					\
	} while (0)

/* ep[0]'s next completion: @ctx with @flags, or an error @err. */
#define wait_comp(t, ctx, flags) \
	sse_cq_expect(&(t)->r, (t)->r.cq[0], (ctx), (flags))
#define wait_err(t, ctx, err) \
	sse_cq_expect_err(&(t)->r, (t)->r.cq[0], (ctx), (err))

/* fi_atomicvalid & co and fi_query_atomic agree with libfabric's table. */
static void test_atomic_valid(void **state)
{
	struct fi_atomic_attr attr;
	struct at t;
	int op, dt, k, nvalid = 0;

	at_open(&t);
	for (k = K_WRITE; k <= K_COMPARE; k++) {
		for (op = 0; op < NOP; op++) {
			for (dt = 0; dt < NDT; dt++) {
				uint64_t qf = k == K_FETCH ? FI_FETCH_ATOMIC :
					      k == K_COMPARE ?
					      FI_COMPARE_ATOMIC : 0;
				size_t count = 0;
				int ret, qret;

				ret = k == K_WRITE ?
				      fi_atomicvalid(t.r.ep[0], dt, op,
						     &count) :
				      k == K_FETCH ?
				      fi_fetch_atomicvalid(t.r.ep[0], dt, op,
							   &count) :
				      fi_compare_atomicvalid(t.r.ep[0], dt,
							     op, &count);
				memset(&attr, 0, sizeof(attr));
				qret = fi_query_atomic(t.r.domain, dt, op,
						       &attr, qf);
				if (!expect_valid(k, op, dt)) {
					if (ret != -FI_EOPNOTSUPP ||
					    qret != -FI_EOPNOTSUPP)
						fail_msg("kind %d op %d dt %d: valid (%d/%d), libfabric says not",
							 k, op, dt, ret, qret);
					continue;
				}
				if (ret || qret)
					fail_msg("kind %d op %d dt %d: not valid (%d/%d)",
						 k, op, dt, ret, qret);
				assert_true(count >= N);
				assert_int_equal(attr.count, count);
				assert_int_equal(attr.size, dt_size(dt));
				nvalid++;
			}
		}
	}
	/* 11 write ops, 12 fetch ops, 7 compare ops over 16 types, less
	 * the holes of the table */
	assert_int_equal(nvalid, (4 * 16 + 2 * 13 + 3 * 10 + 2 * 16) +
				 (4 * 16 + 2 * 13 + 3 * 10 + 3 * 16) +
				 (2 * 16 + 4 * 13 + 10));
	assert_int_equal(fi_atomicvalid(t.r.ep[0], FI_UINT128 + 1, FI_SUM,
					NULL), -FI_EOPNOTSUPP);
	assert_int_equal(fi_atomicvalid(t.r.ep[0], FI_INT32,
					FI_ATOMIC_OP_LAST, NULL),
			 -FI_EOPNOTSUPP);
	assert_int_equal(fi_query_atomic(t.r.domain, FI_INT32, FI_SUM, &attr,
					 FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC),
			 -FI_EINVAL);
	{
		struct fi_collective_attr ca = { 0 };

		assert_int_equal(fi_query_collective(t.r.domain, FI_BARRIER,
						     &ca, 0), -FI_ENOSYS);
	}
	at_close(&t);
}

/* Every valid (kind, op, datatype) at the target, against the reference. */
static void test_atomic_all_pairs(void **state)
{
	enum { SZ = N * 32, GUARD = 64 };
	uint8_t *tgt = malloc(SZ + GUARD);
	uint8_t exp[SZ], orig[SZ], src[SZ], cmp[SZ], res[SZ + GUARD];
	struct fid_mr *mr;
	struct at t;
	int op, dt, k, ctx, n = 0;

	at_open(&t);
	assert_fi_ok(fi_mr_reg(t.r.domain, tgt, SZ + GUARD,
			       FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr,
			       NULL));
	for (k = K_WRITE; k <= K_COMPARE; k++) {
		for (op = 0; op < NOP; op++) {
			for (dt = 0; dt < NDT; dt++) {
				uint64_t a = (uint64_t)(uintptr_t)tgt;
				size_t len = N * dt_size(dt);

				if (!expect_valid(k, op, dt))
					continue;
				memset(tgt, 0xee, SZ + GUARD);
				fill(dt, orig, src, cmp);
				memcpy(tgt, orig, len);
				memcpy(exp, orig, len);
				reference(op, dt, exp, src, cmp);
				memset(res, 0xdd, sizeof(res));
				if (k == K_WRITE) {
					POST(&t, fi_atomic(t.r.ep[0], src, N,
							   NULL, t.r.addr[1],
							   a, fi_mr_key(mr),
							   dt, op, &ctx));
					wait_comp(&t, &ctx,
						  FI_ATOMIC | FI_WRITE);
				} else if (k == K_FETCH) {
					POST(&t, fi_fetch_atomic(
						t.r.ep[0],
						op == FI_ATOMIC_READ ?
						NULL : src, N, NULL, res,
						NULL, t.r.addr[1], a,
						fi_mr_key(mr), dt, op, &ctx));
					wait_comp(&t, &ctx,
						  FI_ATOMIC | FI_READ);
				} else {
					POST(&t, fi_compare_atomic(
						t.r.ep[0], src, N, NULL, cmp,
						NULL, res, NULL, t.r.addr[1],
						a, fi_mr_key(mr), dt, op,
						&ctx));
					wait_comp(&t, &ctx,
						  FI_ATOMIC | FI_READ);
				}
				if (!same(dt, tgt, exp))
					fail_msg("kind %d op %d dt %d: target differs from the reference",
						 k, op, dt);
				if (tgt[len] != 0xee || tgt[SZ + GUARD - 1] !=
				    0xee)
					fail_msg("kind %d op %d dt %d: wrote past the operands",
						 k, op, dt);
				if (k != K_WRITE) {
					if (!same(dt, res, orig))
						fail_msg("kind %d op %d dt %d: fetched values are not the old ones",
							 k, op, dt);
					assert_int_equal(res[len], 0xdd);
				}
				n++;
			}
		}
	}
	assert_int_equal(n, 152 + 168 + 94);	/* see test_atomic_valid */
	assert_fi_ok(fi_close(&mr->fid));
	at_close(&t);
	free(tgt);
}

/* The v, msg and inject forms, FI_ATOMIC_READ without operands, CQ data. */
static void test_atomic_forms(void **state)
{
	uint64_t tgt[16], a[4], b[4], res[8], res2[8], cmpv[4];
	struct fi_ioc iov[2], rv[2], cv[2];
	struct fi_rma_ioc rma[2];
	struct fi_msg_atomic msg = { 0 };
	struct fi_cq_tagged_entry e;
	struct fid_mr *mr;
	size_t max = 0;
	struct at t;
	int ctx, i;

	at_open(&t);
	assert_fi_ok(fi_mr_reg(t.r.domain, tgt, sizeof(tgt),
			       FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr,
			       NULL));
	for (i = 0; i < 16; i++)
		tgt[i] = 100 * (uint64_t)i;
	for (i = 0; i < 4; i++) {
		a[i] = (uint64_t)i + 1;
		b[i] = 1000;
	}

	/* writev: 2 operand pieces onto tgt[0..5] */
	iov[0] = (struct fi_ioc){ a, 4 };
	iov[1] = (struct fi_ioc){ b, 2 };
	POST(&t, fi_atomicv(t.r.ep[0], iov, NULL, 2, t.r.addr[1],
			    (uint64_t)(uintptr_t)tgt, fi_mr_key(mr),
			    FI_UINT64, FI_SUM, &ctx));
	wait_comp(&t, &ctx, FI_ATOMIC | FI_WRITE);
	assert_int_equal(tgt[0], 1);
	assert_int_equal(tgt[3], 304);
	assert_int_equal(tgt[4], 1400);
	assert_int_equal(tgt[5], 1500);
	assert_int_equal(tgt[6], 600);

	/* writemsg: into two target pieces apart, with CQ data */
	rma[0] = (struct fi_rma_ioc){ (uint64_t)(uintptr_t)&tgt[10], 3,
				      fi_mr_key(mr) };
	rma[1] = (struct fi_rma_ioc){ (uint64_t)(uintptr_t)&tgt[14], 1,
				      fi_mr_key(mr) };
	iov[0] = (struct fi_ioc){ a, 4 };
	msg.msg_iov = iov;
	msg.iov_count = 1;
	msg.addr = t.r.addr[1];
	msg.rma_iov = rma;
	msg.rma_iov_count = 2;
	msg.datatype = FI_UINT64;
	msg.op = FI_ATOMIC_WRITE;
	msg.context = &ctx;
	msg.data = 0xdada;
	POST(&t, fi_atomicmsg(t.r.ep[0], &msg, FI_COMPLETION |
			      FI_REMOTE_CQ_DATA));
	wait_comp(&t, &ctx, FI_ATOMIC | FI_WRITE);
	assert_int_equal(tgt[10], 1);
	assert_int_equal(tgt[12], 3);
	assert_int_equal(tgt[13], 1300);
	assert_int_equal(tgt[14], 4);
	assert_int_equal(sse_cq_wait(&t.r, t.r.cq[1], &e, NULL, TMO), 1);
	assert_int_equal(e.flags, FI_REMOTE_CQ_DATA | FI_ATOMIC |
				  FI_REMOTE_WRITE);
	assert_int_equal(e.data, 0xdada);

	/* inject: no completion, the operand buffer is free at once */
	a[0] = 5;
	POST(&t, fi_inject_atomic(t.r.ep[0], a, 1, t.r.addr[1],
				  (uint64_t)(uintptr_t)&tgt[15],
				  fi_mr_key(mr), FI_UINT64, FI_SUM));
	a[0] = 1;
	/* fetch ATOMIC_READ with no operands (readwritev), after the
	 * inject in order (FI_ORDER_ATOMIC_RAW) */
	rv[0] = (struct fi_ioc){ res, 2 };
	rv[1] = (struct fi_ioc){ res + 2, 2 };
	POST(&t, fi_fetch_atomicv(t.r.ep[0], NULL, NULL, 0, rv, NULL, 2,
				  t.r.addr[1], (uint64_t)(uintptr_t)&tgt[12],
				  fi_mr_key(mr), FI_UINT64, FI_ATOMIC_READ,
				  &ctx));
	wait_comp(&t, &ctx, FI_ATOMIC | FI_READ);
	assert_int_equal(res[0], 3);
	assert_int_equal(res[1], 1300);
	assert_int_equal(res[2], 4);
	assert_int_equal(res[3], 1505);
	sse_assert_cq_empty(&t.r, t.r.cq[0]);

	/* readwritemsg: fetch-and-add, results in two pieces */
	iov[0] = (struct fi_ioc){ b, 4 };
	rma[0] = (struct fi_rma_ioc){ (uint64_t)(uintptr_t)&tgt[0], 4,
				      fi_mr_key(mr) };
	msg.rma_iov_count = 1;
	msg.op = FI_SUM;
	rv[0] = (struct fi_ioc){ res2, 1 };
	rv[1] = (struct fi_ioc){ res2 + 1, 3 };
	POST(&t, fi_fetch_atomicmsg(t.r.ep[0], &msg, rv, NULL, 2, 0));
	wait_comp(&t, &ctx, FI_ATOMIC | FI_READ);
	assert_int_equal(res2[0], 1);
	assert_int_equal(res2[3], 304);
	assert_int_equal(tgt[0], 1001);
	assert_int_equal(tgt[3], 1304);

	/* compwritev / compwritemsg: CSWAP on 4 elements, 2 of them equal */
	cmpv[0] = 1001;
	cmpv[1] = 0;
	cmpv[2] = 1203;
	cmpv[3] = 7;
	cv[0] = (struct fi_ioc){ cmpv, 4 };
	iov[0] = (struct fi_ioc){ a, 4 };
	rv[0] = (struct fi_ioc){ res, 4 };
	POST(&t, fi_compare_atomicv(t.r.ep[0], iov, NULL, 1, cv, NULL, 1, rv,
				    NULL, 1, t.r.addr[1],
				    (uint64_t)(uintptr_t)tgt, fi_mr_key(mr),
				    FI_UINT64, FI_CSWAP, &ctx));
	wait_comp(&t, &ctx, FI_ATOMIC | FI_READ);
	assert_int_equal(res[0], 1001);
	assert_int_equal(tgt[0], 1);	/* swapped */
	assert_int_equal(tgt[1], 1102);	/* kept */
	assert_int_equal(tgt[2], 3);	/* swapped */
	assert_int_equal(tgt[3], 1304);
	msg.op = FI_MSWAP;
	cmpv[0] = 0xff00;
	a[0] = 0x1234;
	tgt[0] = 0xabcd;
	iov[0] = (struct fi_ioc){ a, 1 };
	cv[0] = (struct fi_ioc){ cmpv, 1 };
	rv[0] = (struct fi_ioc){ res, 1 };
	rma[0].count = 1;
	POST(&t, fi_compare_atomicmsg(t.r.ep[0], &msg, cv, NULL, 1, rv, NULL,
				      1, FI_COMPLETION));
	wait_comp(&t, &ctx, FI_ATOMIC | FI_READ);
	assert_int_equal(res[0], 0xabcd);
	assert_int_equal(tgt[0], 0x12cd);

	/* one operation is at most the advertised count */
	assert_fi_ok(fi_atomicvalid(t.r.ep[0], FI_UINT8, FI_SUM, &max));
	{
		uint8_t *big = calloc(1, max + 1);

		assert_int_equal(fi_atomic(t.r.ep[0], big, max + 1, NULL,
					   t.r.addr[1], 0, fi_mr_key(mr),
					   FI_UINT8, FI_SUM, &ctx),
				 -FI_EINVAL);
		free(big);
	}
	assert_int_equal(fi_atomic(t.r.ep[0], a, 1, NULL, t.r.addr[1],
				   (uint64_t)(uintptr_t)tgt, fi_mr_key(mr),
				   FI_DOUBLE, FI_BOR, &ctx), -FI_EOPNOTSUPP);
	assert_int_equal(fi_atomic(t.r.ep[0], a, 1, NULL, t.r.addr[1],
				   (uint64_t)(uintptr_t)tgt, fi_mr_key(mr),
				   FI_UINT64, FI_CSWAP, &ctx),
			 -FI_EOPNOTSUPP);
	assert_fi_ok(fi_close(&mr->fid));
	at_close(&t);
}

/* Bad key, range or permission: FI_EACCES, target untouched. */
static void test_atomic_refused(void **state)
{
	uint64_t tgt[4] = { 1, 2, 3, 4 }, ro[2] = { 5, 6 }, one = 1, res;
	struct fid_mr *mr, *mr_ro;
	struct at t;
	int ctx;

	at_open(&t);
	assert_fi_ok(fi_mr_reg(t.r.domain, tgt, sizeof(tgt),
			       FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr,
			       NULL));
	assert_fi_ok(fi_mr_reg(t.r.domain, ro, sizeof(ro), FI_REMOTE_READ, 0,
			       0, 0, &mr_ro, NULL));
	POST(&t, fi_atomic(t.r.ep[0], &one, 1, NULL, t.r.addr[1],
			   (uint64_t)(uintptr_t)tgt, fi_mr_key(mr) + 77,
			   FI_UINT64, FI_SUM, &ctx));
	wait_err(&t, &ctx, FI_EACCES);
	POST(&t, fi_fetch_atomic(t.r.ep[0], &one, 1, NULL, &res, NULL,
				 t.r.addr[1], (uint64_t)(uintptr_t)&tgt[4],
				 fi_mr_key(mr), FI_UINT64, FI_SUM, &ctx));
	wait_err(&t, &ctx, FI_EACCES);
	POST(&t, fi_atomic(t.r.ep[0], &one, 1, NULL, t.r.addr[1],
			   (uint64_t)(uintptr_t)ro, fi_mr_key(mr_ro),
			   FI_UINT64, FI_SUM, &ctx));
	wait_err(&t, &ctx, FI_EACCES);
	POST(&t, fi_compare_atomic(t.r.ep[0], &one, 1, NULL, &ro[0], NULL,
				   &res, NULL, t.r.addr[1],
				   (uint64_t)(uintptr_t)ro, fi_mr_key(mr_ro),
				   FI_UINT64, FI_CSWAP, &ctx));
	wait_err(&t, &ctx, FI_EACCES);
	assert_int_equal(tgt[0], 1);
	assert_int_equal(tgt[3], 4);
	assert_int_equal(ro[0], 5);
	/* a read-only region still serves ATOMIC_READ */
	POST(&t, fi_fetch_atomic(t.r.ep[0], NULL, 1, NULL, &res, NULL,
				 t.r.addr[1], (uint64_t)(uintptr_t)&ro[1],
				 fi_mr_key(mr_ro), FI_UINT64, FI_ATOMIC_READ,
				 &ctx));
	wait_comp(&t, &ctx, FI_ATOMIC | FI_READ);
	assert_int_equal(res, 6);
	assert_fi_ok(fi_close(&mr->fid));
	assert_fi_ok(fi_close(&mr_ro->fid));
	at_close(&t);
}

#ifdef SSE_TEST_SHM
/*
 * 8 processes fetch-add 1 on one uint64 in a ninth, which only waits: the
 * target NIC does every add.  The total is exact and the fetched values
 * are 0 .. 8 * ADDS - 1, each exactly once.
 */
#define NPROC 8
#define ADDS 500

struct target_info {
	struct fi_sse_addr addr;
	uint64_t raddr, key;
};

static int child(int rfd, int wfd)
{
	struct sse_res_opts o = { 0 };
	struct fi_info *hints;
	struct target_info ti;
	struct fi_cq_tagged_entry e;
	struct sse_res r;
	uint64_t one = 1, got[ADDS];
	fi_addr_t peer;
	int i;

	if (read(rfd, &ti, sizeof(ti)) != (ssize_t)sizeof(ti))
		return 2;
	hints = sse_test_hints(FI_ATOMIC);
	hints->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	o.hints = hints;
	sse_res_open(&r, 1, &o);
	fi_freeinfo(hints);
	if (fi_av_insert(r.av, &ti.addr, 1, &peer, 0, NULL) != 1)
		return 3;
	for (i = 0; i < ADDS; i++) {
		ssize_t ret;

		while ((ret = fi_fetch_atomic(r.ep[0], &one, 1, NULL, &got[i],
					      NULL, peer, ti.raddr, ti.key,
					      FI_UINT64, FI_SUM, NULL)) ==
		       -FI_EAGAIN)
			(void)fi_cq_read(r.cq[0], &e, 0);
		if (ret)
			return 4;
		/* a few in flight at a time */
		if (i % 4 == 3 || i == ADDS - 1) {
			int k, want = i % 4 + 1;

			for (k = 0; k < want; k++)
				if (sse_cq_wait(NULL, r.cq[0], &e, NULL,
						TMO) != 1)
					return 5;
		}
	}
	if (write(wfd, got, sizeof(got)) != (ssize_t)sizeof(got))
		return 6;
	sse_res_close(&r);
	return 0;
}

static void test_atomic_8proc(void **state)
{
	int to[NPROC][2], from[NPROC][2], i, status;
	static uint64_t all[NPROC * ADDS];
	static uint8_t seen[NPROC * ADDS];
	volatile uint64_t *counter;
	struct sse_res_opts o = { 0 };
	struct fi_info *hints;
	struct target_info ti;
	struct fid_mr *mr;
	struct sse_res r;
	pid_t pid[NPROC];
	size_t len;

	/* children first, before this process opens anything */
	for (i = 0; i < NPROC; i++) {
		assert_int_equal(pipe(to[i]), 0);
		assert_int_equal(pipe(from[i]), 0);
		pid[i] = fork();
		assert_true(pid[i] >= 0);
		if (!pid[i]) {
			alarm(120);
			_exit(child(to[i][0], from[i][1]));
		}
	}

	counter = calloc(1, 64);
	hints = sse_test_hints(FI_ATOMIC);
	hints->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	o.hints = hints;
	sse_res_open(&r, 1, &o);
	fi_freeinfo(hints);
	assert_fi_ok(fi_mr_reg(r.domain, (void *)counter, 64,
			       FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr,
			       NULL));
	len = sizeof(ti.addr);
	assert_fi_ok(fi_getname(&r.ep[0]->fid, &ti.addr, &len));
	ti.raddr = (uint64_t)(uintptr_t)counter;
	ti.key = fi_mr_key(mr);
	for (i = 0; i < NPROC; i++)
		assert_int_equal(write(to[i][1], &ti, sizeof(ti)),
				 (ssize_t)sizeof(ti));

	/* This process makes no libfabric call while the others add. */
	for (i = 0; i < NPROC; i++) {
		size_t off = 0, want = ADDS * sizeof(uint64_t);
		char *p = (char *)&all[i * ADDS];

		while (off < want) {
			ssize_t n = read(from[i][0], p + off, want - off);

			if (n <= 0)
				break;
			off += (size_t)n;
		}
		assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			fail_msg("adder %d failed (status 0x%x)", i, status);
		assert_int_equal(off, want);
	}
	assert_int_equal(*counter, NPROC * ADDS);
	for (i = 0; i < NPROC * ADDS; i++) {
		assert_true(all[i] < NPROC * ADDS);
		assert_false(seen[all[i]]);
		seen[all[i]] = 1;
	}
	assert_fi_ok(fi_close(&mr->fid));
	sse_res_close(&r);
	free((void *)counter);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
#ifdef SSE_TEST_SHM
		/* first: it forks before this process opens anything */
		cmocka_unit_test(test_atomic_8proc),
#endif
		cmocka_unit_test(test_atomic_reference),
		cmocka_unit_test(test_atomic_valid),
		cmocka_unit_test(test_atomic_all_pairs),
		cmocka_unit_test(test_atomic_forms),
		cmocka_unit_test(test_atomic_refused),
	};

#ifdef SSE_TEST_SHM
	store = "shm";
#endif
	sse_test_init(store, "atomic");
	return cmocka_run_group_tests_name(store[0] == 's' ? "atomic_shm" :
					   "atomic", tests, NULL, NULL);
}
