/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPI one-sided test: MPI_Put, MPI_Get, MPI_Accumulate (SUM, MAX,
 * REPLACE), MPI_Get_accumulate (SUM, NO_OP), MPI_Fetch_and_op and
 * MPI_Compare_and_swap, in every synchronisation mode: fence (put, get,
 * accumulate, get_accumulate), PSCW (post/start/complete/wait: put, get,
 * accumulate), lock/unlock (exclusive and shared: put, get, fetch_and_op,
 * compare_and_swap) and lock_all/flush (put, get, fetch_and_op,
 * accumulate).  The window is made by MPI_Win_create, by
 * MPI_Win_create_dynamic + MPI_Win_attach, or by MPI_Win_allocate (-w).
 * Every value read or left in a window is compared with what the formula
 * of its writer predicts; the atomics must account for every update
 * exactly once.
 *
 * usage: onesided [-w create|dynamic|allocate] [-l large_elems]
 */
#include "mpit.h"

enum flavor { W_CREATE, W_DYNAMIC, W_ALLOCATE };

/* Window layout, in int64 elements. */
#define K 512			/* put/get block */
#define NACC 64			/* accumulate slots */
#define ITER 40			/* atomics per rank */
#define MAXP 64

enum {
	OFF_PUT = 0,			/* fence put (K) */
	OFF_PSCW = OFF_PUT + K,		/* PSCW put (K) */
	OFF_EXCL = OFF_PSCW + K,	/* exclusive-lock put (K) */
	OFF_ACC = OFF_EXCL + K,		/* accumulate SUM (NACC) */
	OFF_MAX = OFF_ACC + NACC,	/* accumulate MAX (NACC) */
	OFF_REPL = OFF_MAX + NACC,	/* accumulate REPLACE (NACC) */
	OFF_GACC = OFF_REPL + NACC,	/* get_accumulate counter (1) */
	OFF_FOP = OFF_GACC + 1,		/* fetch_and_op counter (1) */
	OFF_CAS = OFF_FOP + 1,		/* compare_and_swap counter (1) */
	OFF_ALL = OFF_CAS + 1,		/* lock_all slots (MAXP) */
	OFF_LARGE = OFF_ALL + MAXP,	/* large put/get */
};

static const char *const flavor_name[] = { "create", "dynamic", "allocate" };
static enum flavor flavor = W_CREATE;
static size_t large = 1 << 17;	/* 1 MiB of int64 */
static int me, np;
static int64_t *base;		/* this rank's window memory */
static MPI_Aint *bases;		/* dynamic: every rank's address */
static MPI_Win win;

/* What rank r initially has at element i, and what it puts there. */
static int64_t v_init(int r, size_t i)
{
	return (int64_t)r * 1000003 + (int64_t)i * 7 + 11;
}

static int64_t v_put(int origin, int tag, size_t i)
{
	return ((int64_t)origin << 40) ^ ((int64_t)tag << 32) ^
	       (int64_t)(i * 2654435761u);
}

/* Displacement of element i at target t. */
static MPI_Aint disp(int t, size_t i)
{
	if (flavor == W_DYNAMIC)
		return bases[t] + (MPI_Aint)(i * sizeof(int64_t));
	return (MPI_Aint)i;
}

static size_t win_elems(void)
{
	return OFF_LARGE + large;
}

static void win_open(void)
{
	MPI_Aint size = (MPI_Aint)(win_elems() * sizeof(int64_t));
	size_t i;

	switch (flavor) {
	case W_CREATE:
		base = mpit_malloc((size_t)size);
		MPIT_MPI(MPI_Win_create(base, size, sizeof(int64_t),
					MPI_INFO_NULL, MPI_COMM_WORLD, &win));
		break;
	case W_DYNAMIC:
		base = mpit_malloc((size_t)size);
		MPIT_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD,
						&win));
		MPIT_MPI(MPI_Win_attach(win, base, size));
		bases = mpit_malloc(np * sizeof(MPI_Aint));
		MPIT_MPI(MPI_Get_address(base, &bases[me]));
		MPIT_MPI(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL,
				       bases, 1, MPI_AINT, MPI_COMM_WORLD));
		break;
	case W_ALLOCATE:
		MPIT_MPI(MPI_Win_allocate(size, sizeof(int64_t),
					  MPI_INFO_NULL, MPI_COMM_WORLD,
					  &base, &win));
		break;
	}
	/* Initial contents, then a fence opens the first epoch. */
	for (i = 0; i < win_elems(); i++)
		base[i] = v_init(me, i);
	base[OFF_GACC] = 0;
	base[OFF_FOP] = 0;
	base[OFF_CAS] = 0;
	MPIT_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

static void win_close(void)
{
	if (flavor == W_DYNAMIC)
		MPIT_MPI(MPI_Win_detach(win, base));
	MPIT_MPI(MPI_Win_free(&win));
	if (flavor != W_ALLOCATE)
		free(base);
	free(bases);
	bases = NULL;
}

/* Make the window's public copy visible to this process's loads. */
static void win_sync_local(void)
{
	MPIT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win));
	MPIT_MPI(MPI_Win_sync(win));
	MPIT_MPI(MPI_Win_unlock(me, win));
}

static void check_block(const int64_t *p, size_t n, int origin, int tag,
			const char *what)
{
	size_t i;

	for (i = 0; i < n; i++)
		MPIT_CHECK(p[i] == v_put(origin, tag, i),
			   "%s (%s window): element %zu is %lld, expected %lld "
			   "(from rank %d)", what, flavor_name[flavor], i,
			   (long long)p[i], (long long)v_put(origin, tag, i),
			   origin);
}

/* Fence: put to the right, get from two to the right, large both ways,
 * accumulates from everyone to everyone. */
static void t_fence(void)
{
	int right = (me + 1) % np, left = (me + np - 1) % np;
	int far = (me + 2) % np;
	int64_t src[K], got[K], acc[NACC], mx[NACC], rep[NACC];
	int64_t *lsrc = mpit_malloc(large * sizeof(int64_t));
	int64_t *lgot = mpit_malloc(large * sizeof(int64_t));
	size_t i;
	int t;

	for (i = 0; i < K; i++)
		src[i] = v_put(me, 1, i);
	for (i = 0; i < large; i++)
		lsrc[i] = v_put(me, 9, i);
	for (i = 0; i < NACC; i++) {
		acc[i] = me + 1;
		mx[i] = (int64_t)((me * 37 + i * 11) % 97);
		rep[i] = v_put(me, 3, i);
	}
	MPIT_MPI(MPI_Win_fence(0, win));
	MPIT_MPI(MPI_Put(src, K, MPI_INT64_T, right, disp(right, OFF_PUT), K,
			 MPI_INT64_T, win));
	MPIT_MPI(MPI_Put(lsrc, (int)large, MPI_INT64_T, right,
			 disp(right, OFF_LARGE), (int)large, MPI_INT64_T,
			 win));
	for (t = 0; t < np; t++) {
		MPIT_MPI(MPI_Accumulate(acc, NACC, MPI_INT64_T, t,
					disp(t, OFF_ACC), NACC, MPI_INT64_T,
					MPI_SUM, win));
		MPIT_MPI(MPI_Accumulate(mx, NACC, MPI_INT64_T, t,
					disp(t, OFF_MAX), NACC, MPI_INT64_T,
					MPI_MAX, win));
	}
	/* REPLACE from the left neighbour only: a defined result */
	MPIT_MPI(MPI_Accumulate(rep, NACC, MPI_INT64_T, right,
				disp(right, OFF_REPL), NACC, MPI_INT64_T,
				MPI_REPLACE, win));
	MPIT_MPI(MPI_Win_fence(0, win));

	check_block(base + OFF_PUT, K, left, 1, "fence put");
	check_block(base + OFF_LARGE, large, left, 9, "fence large put");
	check_block(base + OFF_REPL, NACC, left, 3, "accumulate REPLACE");
	for (i = 0; i < NACC; i++) {
		int64_t sum = v_init(me, OFF_ACC + i) +
			      (int64_t)np * (np + 1) / 2;
		int64_t m = v_init(me, OFF_MAX + i);

		for (t = 0; t < np; t++)
			if ((int64_t)((t * 37 + i * 11) % 97) > m)
				m = (t * 37 + i * 11) % 97;
		MPIT_CHECK(base[OFF_ACC + i] == sum,
			   "accumulate SUM slot %zu: %lld, expected %lld", i,
			   (long long)base[OFF_ACC + i], (long long)sum);
		MPIT_CHECK(base[OFF_MAX + i] == m,
			   "accumulate MAX slot %zu: %lld, expected %lld", i,
			   (long long)base[OFF_MAX + i], (long long)m);
	}

	/* gets, in a read-only epoch, into poisoned buffers */
	memset(got, 0xa5, sizeof(got));
	memset(lgot, 0xa5, large * sizeof(int64_t));
	MPIT_MPI(MPI_Get(got, K, MPI_INT64_T, far, disp(far, OFF_PUT), K,
			 MPI_INT64_T, win));
	MPIT_MPI(MPI_Get(lgot, (int)large, MPI_INT64_T, far,
			 disp(far, OFF_LARGE), (int)large, MPI_INT64_T, win));
	MPIT_MPI(MPI_Win_fence(0, win));
	check_block(got, K, (far + np - 1) % np, 1, "fence get");
	check_block(lgot, large, (far + np - 1) % np, 9, "fence large get");

	/* get_accumulate SUM 1 on rank 0 from everyone: old values are
	 * 0 .. np-1, each once; NO_OP reads without changing */
	{
		int64_t one = 1, old = -1, *all = mpit_malloc(np * 8);
		int64_t seen = 0, peek = -1;

		MPIT_MPI(MPI_Get_accumulate(&one, 1, MPI_INT64_T, &old, 1,
					    MPI_INT64_T, 0,
					    disp(0, OFF_GACC), 1,
					    MPI_INT64_T, MPI_SUM, win));
		MPIT_MPI(MPI_Win_fence(0, win));
		MPIT_MPI(MPI_Get_accumulate(NULL, 0, MPI_INT64_T, &peek, 1,
					    MPI_INT64_T, 0,
					    disp(0, OFF_GACC), 1,
					    MPI_INT64_T, MPI_NO_OP, win));
		MPIT_MPI(MPI_Win_fence(0, win));
		MPIT_CHECK(peek == np, "get_accumulate NO_OP read %lld, "
			   "expected %d", (long long)peek, np);
		MPIT_MPI(MPI_Allgather(&old, 1, MPI_INT64_T, all, 1,
				       MPI_INT64_T, MPI_COMM_WORLD));
		for (t = 0; t < np; t++) {
			MPIT_CHECK(all[t] >= 0 && all[t] < np &&
				   !(seen & (1LL << all[t])),
				   "get_accumulate: rank %d fetched %lld twice "
				   "or out of range", t, (long long)all[t]);
			seen |= 1LL << all[t];
		}
		free(all);
	}
	free(lsrc);
	free(lgot);
}

/* PSCW: expose to the left neighbour, access the right one. */
static void t_pscw(void)
{
	int right = (me + 1) % np, left = (me + np - 1) % np;
	MPI_Group world, gl, gr;
	int64_t src[K], got[K], one = 1;

	for (size_t i = 0; i < K; i++)
		src[i] = v_put(me, 2, i);
	MPIT_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
	MPIT_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
	MPIT_MPI(MPI_Group_incl(world, 1, &left, &gl));
	MPIT_MPI(MPI_Group_incl(world, 1, &right, &gr));
	MPIT_MPI(MPI_Win_post(gl, 0, win));
	MPIT_MPI(MPI_Win_start(gr, 0, win));
	MPIT_MPI(MPI_Put(src, K, MPI_INT64_T, right, disp(right, OFF_PSCW),
			 K, MPI_INT64_T, win));
	MPIT_MPI(MPI_Accumulate(&one, 1, MPI_INT64_T, right,
				disp(right, OFF_ACC), 1, MPI_INT64_T, MPI_SUM,
				win));
	/* what this rank put there in the fence epoch */
	memset(got, 0xa5, sizeof(got));
	MPIT_MPI(MPI_Get(got, K, MPI_INT64_T, right, disp(right, OFF_PUT), K,
			 MPI_INT64_T, win));
	MPIT_MPI(MPI_Win_complete(win));
	MPIT_MPI(MPI_Win_wait(win));
	check_block(base + OFF_PSCW, K, left, 2, "PSCW put");
	check_block(got, K, me, 1, "PSCW get");
	{
		int64_t want = v_init(me, OFF_ACC) +
			       (int64_t)np * (np + 1) / 2 + 1;

		MPIT_CHECK(base[OFF_ACC] == want,
			   "PSCW accumulate: %lld, expected %lld",
			   (long long)base[OFF_ACC], (long long)want);
	}
	MPIT_MPI(MPI_Group_free(&gl));
	MPIT_MPI(MPI_Group_free(&gr));
	MPIT_MPI(MPI_Group_free(&world));
}

/* Lock/unlock: exclusive puts, shared-lock atomics on rank 0. */
static void t_lock(void)
{
	int right = (me + 1) % np, left = (me + np - 1) % np;
	int64_t src[K], got[K], one = 1, old, *all;
	int64_t cmp, res, i64;
	char *seen;
	int i, cas_t;

	for (i = 0; i < K; i++)
		src[i] = v_put(me, 4, (size_t)i);
	MPIT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
	MPIT_MPI(MPI_Put(src, K, MPI_INT64_T, right, disp(right, OFF_EXCL),
			 K, MPI_INT64_T, win));
	MPIT_MPI(MPI_Win_unlock(right, win));
	/* read back what we put: unlock completed it at the target */
	memset(got, 0xa5, sizeof(got));
	MPIT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
	MPIT_MPI(MPI_Get(got, K, MPI_INT64_T, right, disp(right, OFF_EXCL),
			 K, MPI_INT64_T, win));
	MPIT_MPI(MPI_Win_unlock(right, win));
	check_block(got, K, me, 4, "get after exclusive put");

	/* fetch_and_op: ITER adds from every rank, each old value once */
	all = mpit_malloc((size_t)np * ITER * sizeof(int64_t));
	for (i = 0; i < ITER; i++) {
		MPIT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
		MPIT_MPI(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0,
					  disp(0, OFF_FOP), MPI_SUM, win));
		MPIT_MPI(MPI_Win_unlock(0, win));
		all[me * ITER + i] = old;
	}
	MPIT_MPI(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, ITER,
			       MPI_INT64_T, MPI_COMM_WORLD));
	seen = calloc(1, (size_t)np * ITER);
	for (i = 0; i < np * ITER; i++) {
		MPIT_CHECK(all[i] >= 0 && all[i] < np * ITER &&
			   !seen[all[i]], "fetch_and_op: value %lld fetched "
			   "twice or out of range", (long long)all[i]);
		seen[all[i]] = 1;
	}
	free(seen);
	free(all);

	/*
	 * compare_and_swap: increment by CAS loops, on rank 0 from every
	 * other rank and on rank 1 from rank 0.  Never on one's own window:
	 * Open MPI 4.1.4's osc rdma hands btl ofi a NULL remote handle for
	 * a compare-and-swap on the local peer, and mca_btl_ofi_acswap
	 * dereferences it (SIGSEGV whatever the provider; fetch_and_op and
	 * the rest are fine).
	 */
	cas_t = me == 0 ? 1 : 0;
	for (i = 0; i < ITER; i++) {
		MPIT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, cas_t, 0, win));
		cmp = 0;
		for (;;) {
			i64 = cmp + 1;
			MPIT_MPI(MPI_Compare_and_swap(&i64, &cmp, &res,
						      MPI_INT64_T, cas_t,
						      disp(cas_t, OFF_CAS),
						      win));
			MPIT_MPI(MPI_Win_flush(cas_t, win));
			if (res == cmp)
				break;
			cmp = res;
		}
		MPIT_MPI(MPI_Win_unlock(cas_t, win));
	}
	MPIT_MPI(MPI_Barrier(MPI_COMM_WORLD));
	if (me <= 1) {
		int64_t want = me == 0 ? (int64_t)(np - 1) * ITER : ITER;

		win_sync_local();
		MPIT_CHECK(me || base[OFF_FOP] == (int64_t)np * ITER,
			   "fetch_and_op total %lld, expected %d",
			   (long long)base[OFF_FOP], np * ITER);
		MPIT_CHECK(base[OFF_CAS] == want,
			   "compare_and_swap total %lld, expected %lld",
			   (long long)base[OFF_CAS], (long long)want);
	}
	win_sync_local();
	check_block(base + OFF_EXCL, K, left, 4, "exclusive-lock put");
}

/* lock_all + flush: a slot in every window, read back after the flush. */
static void t_lock_all(void)
{
	int64_t v = v_put(me, 5, 0), got, one = 1, old, before;
	int t;

	win_sync_local();
	before = base[OFF_GACC];
	MPIT_MPI(MPI_Barrier(MPI_COMM_WORLD));
	MPIT_MPI(MPI_Win_lock_all(0, win));
	for (t = 0; t < np; t++) {
		old = -1;
		MPIT_MPI(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, t,
					  disp(t, OFF_GACC), MPI_SUM, win));
		MPIT_MPI(MPI_Accumulate(&one, 1, MPI_INT64_T, t,
					disp(t, OFF_GACC), 1, MPI_INT64_T,
					MPI_SUM, win));
		MPIT_MPI(MPI_Win_flush(t, win));
		MPIT_CHECK(old >= 0, "lock_all fetch_and_op on rank %d: %lld",
			   t, (long long)old);
		MPIT_MPI(MPI_Put(&v, 1, MPI_INT64_T, t, disp(t, OFF_ALL + me),
				 1, MPI_INT64_T, win));
		MPIT_MPI(MPI_Win_flush(t, win));
		got = -1;
		MPIT_MPI(MPI_Get(&got, 1, MPI_INT64_T, t,
				 disp(t, OFF_ALL + me), 1, MPI_INT64_T, win));
		MPIT_MPI(MPI_Win_flush_local(t, win));
		MPIT_CHECK(got == v, "lock_all: read back %lld from rank %d "
			   "after flush, expected %lld", (long long)got, t,
			   (long long)v);
	}
	MPIT_MPI(MPI_Win_flush_all(win));
	MPIT_MPI(MPI_Win_unlock_all(win));
	MPIT_MPI(MPI_Barrier(MPI_COMM_WORLD));
	win_sync_local();
	for (t = 0; t < np; t++)
		MPIT_CHECK(base[OFF_ALL + t] == v_put(t, 5, 0),
			   "lock_all slot of rank %d: %lld", t,
			   (long long)base[OFF_ALL + t]);
	MPIT_CHECK(base[OFF_GACC] == before + 2 * np,
		   "lock_all fetch_and_op + accumulate: %lld, expected %lld",
		   (long long)base[OFF_GACC], (long long)(before + 2 * np));
}

int main(int argc, char **argv)
{
	int opt;

	mpit_init(&argc, &argv, "onesided");
	while ((opt = getopt(argc, argv, "w:l:")) != -1) {
		switch (opt) {
		case 'w':
			if (!strcmp(optarg, "create"))
				flavor = W_CREATE;
			else if (!strcmp(optarg, "dynamic"))
				flavor = W_DYNAMIC;
			else if (!strcmp(optarg, "allocate"))
				flavor = W_ALLOCATE;
			else
				MPIT_FAIL("unknown window flavor %s", optarg);
			break;
		case 'l':
			large = mpit_parse_size(optarg);
			break;
		default:
			MPIT_FAIL("usage: onesided [-w create|dynamic|allocate]"
				  " [-l large_elems]");
		}
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &np);
	MPIT_CHECK(np >= 2 && np <= MAXP, "2 to %d ranks", MAXP);

	win_open();
	MPIT_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
	t_fence();
	t_pscw();
	t_lock();
	t_lock_all();
	win_close();
	mpit_finish("%s window: put/get/accumulate/get_accumulate/"
		    "fetch_and_op/compare_and_swap under fence, PSCW, "
		    "lock/unlock, lock_all/flush", flavor_name[flavor]);
	return 0;
}
