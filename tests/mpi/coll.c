/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPI collective test: barrier, bcast, reduce, allreduce (several types and
 * operations), alltoall(v), gather, scatter, allgather(v), reduce_scatter,
 * scan and nonblocking collectives, on MPI_COMM_WORLD and on communicators
 * made by MPI_Comm_split and MPI_Comm_dup.  Every result is compared with a
 * value computed locally from the formula each rank used for its input.
 *
 * usage: coll [-m max_bcast_size] [-c max_count]
 */
#include "mpit.h"

#include <time.h>

static size_t coll_bcast_max = 1 << 20;
static int coll_max_count = 65536;

/* What every rank of comm contributes at element i, as an integer. */
static long long coll_val(int rank, int i)
{
	return (long long)((rank * 7 + i * 13) % 101) - 50;
}

static int coll_rank(MPI_Comm comm)
{
	int r;

	MPIT_MPI(MPI_Comm_rank(comm, &r));
	return r;
}

static int coll_size(MPI_Comm comm)
{
	int n;

	MPIT_MPI(MPI_Comm_size(comm, &n));
	return n;
}

/* CLOCK_MONOTONIC is one clock for all processes of a host (MPI_Wtime of
 * Open MPI 4.1 may read per-core cycle counters, which are not). */
static double coll_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * Barrier: one rank enters 20 ms late each round; no rank may leave before
 * the late one entered.
 */
static void coll_barrier(MPI_Comm comm, const char *cname)
{
	int n = coll_size(comm), me = coll_rank(comm), late, r;
	double t[2], *all = mpit_malloc(2 * n * sizeof(double));

	for (late = 0; late < n; late++) {
		MPIT_MPI(MPI_Barrier(comm));
		if (me == late)
			usleep(20000);
		t[0] = coll_now();
		MPIT_MPI(MPI_Barrier(comm));
		t[1] = coll_now();
		MPIT_MPI(MPI_Allgather(t, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE,
				       comm));
		for (r = 0; r < n; r++)
			MPIT_CHECK(all[2 * r + 1] >= all[2 * late],
				   "%s: rank %d left MPI_Barrier %.6f s "
				   "before rank %d entered it",
				   cname, r, all[2 * late] - all[2 * r + 1],
				   late);
	}
	free(all);
}

static void coll_bcast(MPI_Comm comm, const char *cname)
{
	static const size_t lens[] = { 0, 1, 1000, 65537, 1 << 20, 4 << 20 };
	int n = coll_size(comm), me = coll_rank(comm), root, li;
	unsigned char *buf = mpit_malloc(coll_bcast_max + MPIT_GUARD);

	for (li = 0; li < (int)MPIT_ARRAY_SIZE(lens); li++) {
		size_t len = lens[li];

		if (len > coll_bcast_max)
			continue;
		for (root = 0; root < n; root++) {
			uint32_t seed = mpit_seed(root, (uint32_t)len, 0, 1);

			mpit_poison(buf, len);
			if (me == root)
				mpit_fill(buf, len, seed);
			MPIT_MPI(MPI_Bcast(buf, (int)len, MPI_BYTE, root,
					   comm));
			mpit_verify(buf, len, seed, "%s: MPI_Bcast of %zu B "
				    "from root %d", cname, len, root);
		}
	}
	free(buf);
}

/*
 * Allreduce of one C type: fill with coll_val mapped into the type,
 * reduce, compare with the reduction computed locally over all ranks.
 */
#define COLL_DEFINE_ALLREDUCE(NAME, CTYPE, MAP)                              \
	static void coll_allreduce_##NAME(MPI_Comm comm, MPI_Datatype dt,    \
					  MPI_Op op, const char *opname,     \
					  int count, int in_place,           \
					  const char *cname)                 \
	{                                                                    \
		int n = coll_size(comm), me = coll_rank(comm), i, r;         \
		CTYPE *in = mpit_malloc(count * sizeof(CTYPE));              \
		CTYPE *out = mpit_malloc(count * sizeof(CTYPE));             \
		for (i = 0; i < count; i++)                                  \
			in[i] = MAP(me, i);                                  \
		if (in_place) {                                              \
			memcpy(out, in, count * sizeof(CTYPE));              \
			MPIT_MPI(MPI_Allreduce(MPI_IN_PLACE, out, count, dt, \
					       op, comm));                   \
		} else {                                                     \
			MPIT_MPI(MPI_Allreduce(in, out, count, dt, op,       \
					       comm));                       \
		}                                                            \
		for (i = 0; i < count; i++) {                                \
			CTYPE e = MAP(0, i);                                 \
			for (r = 1; r < n; r++)                              \
				e = coll_apply_##NAME(op, e, MAP(r, i));     \
			MPIT_CHECK(out[i] == e,                              \
				   "%s: MPI_Allreduce(%s, %s, count %d%s): " \
				   "element %d is %.17g, expected %.17g",    \
				   cname, #NAME, opname, count,              \
				   in_place ? ", IN_PLACE" : "", i,          \
				   (double)out[i], (double)e);               \
		}                                                            \
		free(in);                                                    \
		free(out);                                                   \
	}

#define COLL_APPLY_ARITH(NAME, CTYPE)                                     \
	static CTYPE coll_apply_##NAME(MPI_Op op, CTYPE a, CTYPE b)       \
	{                                                                 \
		if (op == MPI_SUM)                                        \
			return a + b;                                     \
		if (op == MPI_PROD)                                       \
			return a * b;                                     \
		if (op == MPI_MAX)                                        \
			return a > b ? a : b;                             \
		if (op == MPI_MIN)                                        \
			return a < b ? a : b;                             \
		MPIT_FAIL("no local reduction for this op");              \
	}

#define COLL_APPLY_INT(NAME, CTYPE)                                       \
	static CTYPE coll_apply_##NAME(MPI_Op op, CTYPE a, CTYPE b)       \
	{                                                                 \
		if (op == MPI_SUM)                                        \
			return a + b;                                     \
		if (op == MPI_PROD)                                       \
			return a * b;                                     \
		if (op == MPI_MAX)                                        \
			return a > b ? a : b;                             \
		if (op == MPI_MIN)                                        \
			return a < b ? a : b;                             \
		if (op == MPI_BAND)                                       \
			return a & b;                                     \
		if (op == MPI_BOR)                                        \
			return a | b;                                     \
		if (op == MPI_BXOR)                                       \
			return a ^ b;                                     \
		if (op == MPI_LAND)                                       \
			return a && b;                                    \
		if (op == MPI_LOR)                                        \
			return a || b;                                    \
		MPIT_FAIL("no local reduction for this op");              \
	}

/* PROD stays small: values 1..3 for int; doubles are exact halves. */
#define MAP_INT(r, i) ((int)coll_val(r, i))
#define MAP_INT_PROD(r, i) ((int)(1 + ((r) + (i)) % 3))
#define MAP_LL(r, i) (coll_val(r, i) * (1LL << 40) + (r))
#define MAP_UCHAR(r, i) ((unsigned char)((r) * 37 + (i) * 11))
#define MAP_DOUBLE(r, i) ((double)coll_val(r, i) * 0.5)
#define MAP_FLOAT(r, i) ((float)coll_val(r, i))

COLL_APPLY_INT(int, int)
COLL_APPLY_INT(int_prod, int)
COLL_APPLY_INT(ll, long long)
COLL_APPLY_INT(uchar, unsigned char)
COLL_APPLY_ARITH(double, double)
COLL_APPLY_ARITH(float, float)

COLL_DEFINE_ALLREDUCE(int, int, MAP_INT)
COLL_DEFINE_ALLREDUCE(int_prod, int, MAP_INT_PROD)
COLL_DEFINE_ALLREDUCE(ll, long long, MAP_LL)
COLL_DEFINE_ALLREDUCE(uchar, unsigned char, MAP_UCHAR)
COLL_DEFINE_ALLREDUCE(double, double, MAP_DOUBLE)
COLL_DEFINE_ALLREDUCE(float, float, MAP_FLOAT)

struct coll_op {
	MPI_Op op;
	const char *name;
};

static void coll_allreduce(MPI_Comm comm, const char *cname)
{
	static const int counts[] = { 1, 7, 1000, 65536 };
	struct coll_op int_ops[] = {
		{ MPI_SUM, "SUM" },   { MPI_MAX, "MAX" }, { MPI_MIN, "MIN" },
		{ MPI_BAND, "BAND" }, { MPI_BOR, "BOR" }, { MPI_BXOR, "BXOR" },
		{ MPI_LAND, "LAND" }, { MPI_LOR, "LOR" },
	};
	struct coll_op fp_ops[] = {
		{ MPI_SUM, "SUM" }, { MPI_MAX, "MAX" }, { MPI_MIN, "MIN" },
	};
	int ci, oi, c, ip;

	for (ci = 0; ci < (int)MPIT_ARRAY_SIZE(counts); ci++) {
		c = counts[ci];
		if (c > coll_max_count)
			continue;
		for (ip = 0; ip < 2; ip++) {
			for (oi = 0; oi < (int)MPIT_ARRAY_SIZE(int_ops); oi++)
				coll_allreduce_int(comm, MPI_INT,
						   int_ops[oi].op,
						   int_ops[oi].name, c, ip,
						   cname);
			coll_allreduce_int_prod(comm, MPI_INT, MPI_PROD,
						"PROD", c, ip, cname);
			coll_allreduce_ll(comm, MPI_LONG_LONG, MPI_SUM, "SUM",
					  c, ip, cname);
			coll_allreduce_uchar(comm, MPI_UNSIGNED_CHAR, MPI_BXOR,
					     "BXOR", c, ip, cname);
			coll_allreduce_uchar(comm, MPI_UNSIGNED_CHAR, MPI_MAX,
					     "MAX", c, ip, cname);
			for (oi = 0; oi < (int)MPIT_ARRAY_SIZE(fp_ops); oi++)
				coll_allreduce_double(comm, MPI_DOUBLE,
						      fp_ops[oi].op,
						      fp_ops[oi].name, c, ip,
						      cname);
			coll_allreduce_float(comm, MPI_FLOAT, MPI_SUM, "SUM", c,
					     ip, cname);
		}
	}
}

/* MAXLOC/MINLOC on MPI_DOUBLE_INT, and MPI_Reduce to every root. */
static void coll_reduce_loc(MPI_Comm comm, const char *cname)
{
	struct {
		double v;
		int loc;
	} in[3], out[3];
	int n = coll_size(comm), me = coll_rank(comm), i, root, r;
	int *rin, *rout, count = 1000;
	long long e;

	for (i = 0; i < 3; i++) {
		in[i].v = (double)((me * (i + 3)) % n);
		in[i].loc = me;
	}
	MPIT_MPI(MPI_Allreduce(in, out, 3, MPI_DOUBLE_INT, MPI_MAXLOC, comm));
	for (i = 0; i < 3; i++) {
		double best = -1;
		int loc = -1;

		for (r = 0; r < n; r++)
			if ((double)((r * (i + 3)) % n) > best) {
				best = (double)((r * (i + 3)) % n);
				loc = r;
			}
		MPIT_CHECK(out[i].v == best && out[i].loc == loc,
			   "%s: MAXLOC element %d is (%g, %d), expected (%g, "
			   "%d)",
			   cname, i, out[i].v, out[i].loc, best, loc);
	}
	MPIT_MPI(MPI_Allreduce(in, out, 3, MPI_DOUBLE_INT, MPI_MINLOC, comm));
	for (i = 0; i < 3; i++)
		MPIT_CHECK(out[i].v == 0 && out[i].loc == 0,
			   "%s: MINLOC element %d is (%g, %d), expected (0, 0)",
			   cname, i, out[i].v, out[i].loc);

	rin = mpit_malloc(count * sizeof(int));
	rout = mpit_malloc(count * sizeof(int));
	for (i = 0; i < count; i++)
		rin[i] = (int)coll_val(me, i);
	for (root = 0; root < n; root++) {
		for (i = 0; i < count; i++)
			rout[i] = -12345;
		MPIT_MPI(MPI_Reduce(rin, rout, count, MPI_INT, MPI_SUM, root,
				    comm));
		for (i = 0; me == root && i < count; i++) {
			for (e = 0, r = 0; r < n; r++)
				e += coll_val(r, i);
			MPIT_CHECK(rout[i] == e,
				   "%s: MPI_Reduce(SUM) to root %d: element %d "
				   "is %d, expected %lld",
				   cname, root, i, rout[i], e);
		}
		for (i = 0; me != root && i < count; i++)
			MPIT_CHECK(rout[i] == -12345,
				   "%s: MPI_Reduce wrote the receive buffer of "
				   "non-root rank",
				   cname);
	}
	free(rin);
	free(rout);
}

/* Element k of what rank s sends to rank d. */
static int coll_a2a(int s, int d, int k)
{
	return s * 1000000 + d * 10000 + k % 10000;
}

static void coll_alltoall(MPI_Comm comm, const char *cname)
{
	static const int counts[] = { 1, 100, 10000 };
	int n = coll_size(comm), me = coll_rank(comm), ci, c, d, k;
	int *s, *r;

	for (ci = 0; ci < (int)MPIT_ARRAY_SIZE(counts); ci++) {
		c = counts[ci];
		if (c > coll_max_count)
			continue;
		s = mpit_malloc((size_t)n * c * sizeof(int));
		r = mpit_malloc((size_t)n * c * sizeof(int));
		for (d = 0; d < n; d++)
			for (k = 0; k < c; k++) {
				s[d * c + k] = coll_a2a(me, d, k);
				r[d * c + k] = -1;
			}
		MPIT_MPI(MPI_Alltoall(s, c, MPI_INT, r, c, MPI_INT, comm));
		for (d = 0; d < n; d++)
			for (k = 0; k < c; k++)
				MPIT_CHECK(r[d * c + k] == coll_a2a(d, me, k),
					   "%s: MPI_Alltoall(count %d): "
					   "element %d from rank %d is %d, "
					   "expected %d",
					   cname, c, k, d, r[d * c + k],
					   coll_a2a(d, me, k));
		free(s);
		free(r);
	}
}

/* Counts from s to d: some zero, symmetric formula so both sides agree. */
static int coll_a2av_count(int s, int d)
{
	return ((s + 2 * d) % 4) * 333;
}

static void coll_alltoallv(MPI_Comm comm, const char *cname)
{
	int n = coll_size(comm), me = coll_rank(comm), d, k, gap = 5;
	int *sc = mpit_malloc(n * sizeof(int));
	int *sd = mpit_malloc(n * sizeof(int));
	int *rc = mpit_malloc(n * sizeof(int));
	int *rd = mpit_malloc(n * sizeof(int));
	int stot = 0, rtot = 0, *s, *r;

	/* gaps between the blocks must stay untouched */
	for (d = 0; d < n; d++) {
		sc[d] = coll_a2av_count(me, d);
		sd[d] = stot;
		stot += sc[d] + gap;
		rc[d] = coll_a2av_count(d, me);
		rd[d] = rtot;
		rtot += rc[d] + gap;
	}
	s = mpit_malloc((stot + 1) * sizeof(int));
	r = mpit_malloc((rtot + 1) * sizeof(int));
	for (k = 0; k < rtot; k++)
		r[k] = -7;
	for (d = 0; d < n; d++)
		for (k = 0; k < sc[d]; k++)
			s[sd[d] + k] = coll_a2a(me, d, k);
	MPIT_MPI(MPI_Alltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, comm));
	for (d = 0; d < n; d++) {
		for (k = 0; k < rc[d]; k++)
			MPIT_CHECK(r[rd[d] + k] == coll_a2a(d, me, k),
				   "%s: MPI_Alltoallv: element %d of %d from "
				   "rank %d is %d, expected %d",
				   cname, k, rc[d], d, r[rd[d] + k],
				   coll_a2a(d, me, k));
		for (k = 0; k < gap; k++)
			MPIT_CHECK(r[rd[d] + rc[d] + k] == -7,
				   "%s: MPI_Alltoallv wrote gap element %d "
				   "after the block from rank %d",
				   cname, k, d);
	}
	free(sc);
	free(sd);
	free(rc);
	free(rd);
	free(s);
	free(r);
}

static void coll_gather_scatter(MPI_Comm comm, const char *cname)
{
	int n = coll_size(comm), me = coll_rank(comm), c = 1000, root, r, k;
	int *mine = mpit_malloc(c * sizeof(int));
	int *all = mpit_malloc((size_t)n * c * sizeof(int));

	for (root = 0; root < n; root++) {
		for (k = 0; k < c; k++)
			mine[k] = coll_a2a(me, root, k);
		for (k = 0; k < n * c; k++)
			all[k] = -1;
		MPIT_MPI(MPI_Gather(mine, c, MPI_INT, all, c, MPI_INT, root,
				    comm));
		for (r = 0; me == root && r < n; r++)
			for (k = 0; k < c; k++)
				MPIT_CHECK(all[r * c + k] ==
						   coll_a2a(r, root, k),
					   "%s: MPI_Gather to %d: element %d "
					   "of rank %d is %d",
					   cname, root, k, r, all[r * c + k]);

		for (r = 0; me == root && r < n; r++)
			for (k = 0; k < c; k++)
				all[r * c + k] = coll_a2a(root, r, k);
		for (k = 0; k < c; k++)
			mine[k] = -1;
		MPIT_MPI(MPI_Scatter(all, c, MPI_INT, mine, c, MPI_INT, root,
				     comm));
		for (k = 0; k < c; k++)
			MPIT_CHECK(mine[k] == coll_a2a(root, me, k),
				   "%s: MPI_Scatter from %d: element %d is %d, "
				   "expected %d",
				   cname, root, k, mine[k],
				   coll_a2a(root, me, k));
	}
	free(mine);
	free(all);
}

static void coll_allgather(MPI_Comm comm, const char *cname)
{
	static const int counts[] = { 1, 5000 };
	int n = coll_size(comm), me = coll_rank(comm), ci, c, r, k, tot;
	int *mine, *all, *cnt = mpit_malloc(n * sizeof(int));
	int *disp = mpit_malloc(n * sizeof(int));

	for (ci = 0; ci < (int)MPIT_ARRAY_SIZE(counts); ci++) {
		c = counts[ci];
		mine = mpit_malloc(c * sizeof(int));
		all = mpit_malloc((size_t)n * c * sizeof(int));
		for (k = 0; k < c; k++)
			mine[k] = coll_a2a(me, 0, k);
		MPIT_MPI(MPI_Allgather(mine, c, MPI_INT, all, c, MPI_INT,
				       comm));
		for (r = 0; r < n; r++)
			for (k = 0; k < c; k++)
				MPIT_CHECK(all[r * c + k] == coll_a2a(r, 0, k),
					   "%s: MPI_Allgather(count %d): "
					   "element %d of rank %d is %d",
					   cname, c, k, r, all[r * c + k]);
		free(all);
		free(mine);
	}

	/* Allgatherv: rank r contributes r * 100 + 1 ints */
	for (tot = 0, r = 0; r < n; r++) {
		cnt[r] = r * 100 + 1;
		disp[r] = tot;
		tot += cnt[r];
	}
	mine = mpit_malloc(cnt[me] * sizeof(int));
	all = mpit_malloc(tot * sizeof(int));
	for (k = 0; k < cnt[me]; k++)
		mine[k] = coll_a2a(me, 1, k);
	MPIT_MPI(MPI_Allgatherv(mine, cnt[me], MPI_INT, all, cnt, disp,
				MPI_INT, comm));
	for (r = 0; r < n; r++)
		for (k = 0; k < cnt[r]; k++)
			MPIT_CHECK(all[disp[r] + k] == coll_a2a(r, 1, k),
				   "%s: MPI_Allgatherv: element %d of rank %d "
				   "is %d",
				   cname, k, r, all[disp[r] + k]);
	free(mine);
	free(all);
	free(cnt);
	free(disp);
}

/* Reduce_scatter (rank r gets r + 1 elements), _block, Scan, Exscan. */
static void coll_reduce_scatter(MPI_Comm comm, const char *cname)
{
	int n = coll_size(comm), me = coll_rank(comm), r, k, tot = 0, off = 0;
	int *rc = mpit_malloc(n * sizeof(int)), *in, *out, blk = 100;
	long long e;

	for (r = 0; r < n; r++) {
		rc[r] = r + 1;
		if (r < me)
			off += rc[r];
		tot += rc[r];
	}
	in = mpit_malloc((tot > n * blk ? tot : n * blk) * sizeof(int));
	out = mpit_malloc(blk * sizeof(int));
	for (k = 0; k < tot; k++)
		in[k] = (int)coll_val(me, k);
	MPIT_MPI(MPI_Reduce_scatter(in, out, rc, MPI_INT, MPI_SUM, comm));
	for (k = 0; k < rc[me]; k++) {
		for (e = 0, r = 0; r < n; r++)
			e += coll_val(r, off + k);
		MPIT_CHECK(out[k] == e,
			   "%s: MPI_Reduce_scatter: element %d is %d, "
			   "expected %lld",
			   cname, k, out[k], e);
	}

	for (k = 0; k < n * blk; k++)
		in[k] = (int)coll_val(me, k);
	MPIT_MPI(MPI_Reduce_scatter_block(in, out, blk, MPI_INT, MPI_SUM,
					  comm));
	for (k = 0; k < blk; k++) {
		for (e = 0, r = 0; r < n; r++)
			e += coll_val(r, me * blk + k);
		MPIT_CHECK(out[k] == e,
			   "%s: MPI_Reduce_scatter_block: element %d is %d, "
			   "expected %lld",
			   cname, k, out[k], e);
	}

	for (k = 0; k < blk; k++)
		in[k] = (int)coll_val(me, k);
	MPIT_MPI(MPI_Scan(in, out, blk, MPI_INT, MPI_SUM, comm));
	for (k = 0; k < blk; k++) {
		for (e = 0, r = 0; r <= me; r++)
			e += coll_val(r, k);
		MPIT_CHECK(out[k] == e,
			   "%s: MPI_Scan: element %d is %d, expected %lld",
			   cname, k, out[k], e);
	}
	MPIT_MPI(MPI_Exscan(in, out, blk, MPI_INT, MPI_SUM, comm));
	for (k = 0; me > 0 && k < blk; k++) {
		for (e = 0, r = 0; r < me; r++)
			e += coll_val(r, k);
		MPIT_CHECK(out[k] == e,
			   "%s: MPI_Exscan: element %d is %d, expected %lld",
			   cname, k, out[k], e);
	}
	free(rc);
	free(in);
	free(out);
}

/* Ibarrier, Ibcast and Iallreduce in flight together. */
static void coll_nonblocking(MPI_Comm comm, const char *cname)
{
	int n = coll_size(comm), me = coll_rank(comm), c = 10000, k, r;
	int *in = mpit_malloc(c * sizeof(int));
	int *out = mpit_malloc(c * sizeof(int));
	size_t len = 100000;
	unsigned char *b = mpit_malloc(len + MPIT_GUARD);
	uint32_t seed = mpit_seed(n - 1, 0, 0, 9);
	MPI_Request req[3];
	long long e;

	for (k = 0; k < c; k++)
		in[k] = (int)coll_val(me, k);
	mpit_poison(b, len);
	if (me == n - 1)
		mpit_fill(b, len, seed);
	MPIT_MPI(MPI_Ibarrier(comm, &req[0]));
	MPIT_MPI(MPI_Ibcast(b, (int)len, MPI_BYTE, n - 1, comm, &req[1]));
	MPIT_MPI(MPI_Iallreduce(in, out, c, MPI_INT, MPI_SUM, comm, &req[2]));
	MPIT_MPI(MPI_Waitall(3, req, MPI_STATUSES_IGNORE));
	mpit_verify(b, len, seed, "%s: MPI_Ibcast", cname);
	for (k = 0; k < c; k++) {
		for (e = 0, r = 0; r < n; r++)
			e += coll_val(r, k);
		MPIT_CHECK(out[k] == e,
			   "%s: MPI_Iallreduce: element %d is %d, expected "
			   "%lld",
			   cname, k, out[k], e);
	}
	free(in);
	free(out);
	free(b);
}

static void coll_all(MPI_Comm comm, const char *cname)
{
	coll_barrier(comm, cname);
	coll_bcast(comm, cname);
	coll_allreduce(comm, cname);
	coll_reduce_loc(comm, cname);
	coll_alltoall(comm, cname);
	coll_alltoallv(comm, cname);
	coll_gather_scatter(comm, cname);
	coll_allgather(comm, cname);
	coll_reduce_scatter(comm, cname);
	coll_nonblocking(comm, cname);
}

/*
 * Communicators: split by parity with reversed key order, a split that
 * leaves rank 0 out (MPI_UNDEFINED), and dups of MPI_COMM_WORLD.  A message
 * on a dup must not match a receive on MPI_COMM_WORLD.
 */
static void coll_comms(void)
{
	MPI_Comm split, noroot, dup[16];
	int me = mpit_rank, n = mpit_size, r, expect, i, sum, v, fl;
	MPI_Status st;

	MPIT_MPI(MPI_Comm_split(MPI_COMM_WORLD, me % 2, -me, &split));
	for (expect = 0, r = me + 2; r < n; r += 2)
		expect++;
	MPIT_CHECK(coll_rank(split) == expect && coll_size(split) ==
			   (n - me % 2 + 1) / 2,
		   "MPI_Comm_split(parity, -rank): rank %d of %d, expected "
		   "%d of %d",
		   coll_rank(split), coll_size(split), expect,
		   (n - me % 2 + 1) / 2);
	v = me;
	MPIT_MPI(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, split));
	for (expect = 0, r = me % 2; r < n; r += 2)
		expect += r;
	MPIT_CHECK(sum == expect, "allreduce on split: %d, expected %d", sum,
		   expect);
	coll_all(split, "split(parity)");
	MPIT_MPI(MPI_Comm_free(&split));

	MPIT_MPI(MPI_Comm_split(MPI_COMM_WORLD, me == 0 ? MPI_UNDEFINED : 1, me,
				&noroot));
	if (me == 0) {
		MPIT_CHECK(noroot == MPI_COMM_NULL,
			   "MPI_Comm_split with MPI_UNDEFINED did not give "
			   "MPI_COMM_NULL");
	} else {
		MPIT_CHECK(coll_size(noroot) == n - 1 &&
				   coll_rank(noroot) == me - 1,
			   "split without rank 0: rank %d of %d",
			   coll_rank(noroot), coll_size(noroot));
		coll_alltoall(noroot, "split(without 0)");
		coll_bcast(noroot, "split(without 0)");
		MPIT_MPI(MPI_Comm_free(&noroot));
	}

	for (i = 0; i < (int)MPIT_ARRAY_SIZE(dup); i++) {
		MPIT_MPI(MPI_Comm_dup(i ? dup[i - 1] : MPI_COMM_WORLD,
				      &dup[i]));
		v = i + me;
		MPIT_MPI(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_MAX, dup[i]));
		MPIT_CHECK(sum == i + n - 1, "allreduce(MAX) on dup #%d: %d", i,
			   sum);
	}
	coll_all(dup[0], "dup");

	/* same (source, tag) on two communicators: contexts keep them apart */
	if (me == 1) {
		v = 111;
		MPIT_MPI(MPI_Send(&v, 1, MPI_INT, 0, 5, dup[15]));
		v = 222;
		MPIT_MPI(MPI_Send(&v, 1, MPI_INT, 0, 5, MPI_COMM_WORLD));
	} else if (me == 0) {
		MPIT_MPI(MPI_Recv(&v, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, &st));
		MPIT_CHECK(v == 222, "receive on MPI_COMM_WORLD got %d, the "
				     "message sent on a dup",
			   v);
		MPIT_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
				    &fl, &st));
		MPIT_CHECK(!fl, "MPI_COMM_WORLD sees the message of a dup");
		MPIT_MPI(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG,
				  dup[15], &st));
		MPIT_CHECK(v == 111 && st.MPI_SOURCE == 1 && st.MPI_TAG == 5,
			   "receive on dup got %d from %d tag %d", v,
			   st.MPI_SOURCE, st.MPI_TAG);
	}
	for (i = (int)MPIT_ARRAY_SIZE(dup) - 1; i >= 0; i--)
		MPIT_MPI(MPI_Comm_free(&dup[i]));
}

int main(int argc, char **argv)
{
	int opt;

	mpit_init(&argc, &argv, "coll");
	while ((opt = getopt(argc, argv, "m:c:")) != -1) {
		switch (opt) {
		case 'm':
			coll_bcast_max = mpit_parse_size(optarg);
			break;
		case 'c':
			coll_max_count = mpit_parse_int(optarg);
			break;
		default:
			MPIT_FAIL("usage: coll [-m max_bcast_size] "
				  "[-c max_count]");
		}
	}
	MPIT_CHECK(mpit_size >= 2, "needs at least 2 ranks");
	coll_all(MPI_COMM_WORLD, "MPI_COMM_WORLD");
	coll_comms();
	mpit_finish("barrier, bcast to %zu B, allreduce (int, long long, "
		    "uchar, double, float; 9 ops; IN_PLACE), MAXLOC/MINLOC, "
		    "reduce, alltoall(v), gather, scatter, allgather(v), "
		    "reduce_scatter(_block), scan, exscan, Ibarrier/Ibcast/"
		    "Iallreduce on WORLD, Comm_split and Comm_dup",
		    coll_bcast_max);
	return 0;
}
