/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Passive target without the target: rank 0 exposes a window
 * (MPI_Win_create) and then sleeps for SLEEP seconds in a plain nanosleep
 * loop, making no MPI call at all, while every other rank does MPI_Put,
 * MPI_Get and MPI_Fetch_and_op on it under MPI_Win_lock/MPI_Win_unlock.
 * Those epochs must all complete before rank 0 wakes up: only the
 * emulated NIC, which reads and writes rank 0's memory itself, can serve
 * them.  Afterwards rank 0 checks what landed, and the others check what
 * they read.  Times are CLOCK_MONOTONIC, one clock for the whole host.
 *
 * usage: passive [-s sleep_seconds] [-n rounds]
 */
#include "mpit.h"

#include <time.h>

#define BLK 256			/* int64 per origin */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int64_t v_init(size_t i)
{
	return (int64_t)i * 31 + 5;
}

static int64_t v_put(int origin, int round, size_t i)
{
	return ((int64_t)origin << 32) + (int64_t)round * 100000 +
	       (int64_t)i;
}

int main(int argc, char **argv)
{
	double sleep_s = 2.0, t_wake = 0, t_done, *done;
	int rounds = 10, me, np, opt, r;
	size_t nelem, i;
	int64_t *base, *got;
	MPI_Win win;

	mpit_init(&argc, &argv, "passive");
	while ((opt = getopt(argc, argv, "s:n:")) != -1) {
		switch (opt) {
		case 's':
			sleep_s = atof(optarg);
			break;
		case 'n':
			rounds = mpit_parse_int(optarg);
			break;
		default:
			MPIT_FAIL("usage: passive [-s seconds] [-n rounds]");
		}
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &np);
	MPIT_CHECK(np >= 2, "needs at least 2 ranks");

	/* rank 0: a counter, then one block per origin */
	nelem = 1 + (size_t)np * BLK;
	base = mpit_malloc(nelem * sizeof(int64_t));
	got = mpit_malloc(BLK * sizeof(int64_t));
	for (i = 0; i < nelem; i++)
		base[i] = me == 0 ? v_init(i) : 0;
	if (me == 0)
		base[0] = 0;
	MPIT_MPI(MPI_Win_create(base, (MPI_Aint)(nelem * sizeof(int64_t)),
				sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD,
				&win));
	MPIT_MPI(MPI_Barrier(MPI_COMM_WORLD));

	if (me == 0) {
		/* Compute, never call MPI: no progress from this process. */
		double end = now() + sleep_s;
		struct timespec ts = { 0, 1000000 };

		while (now() < end)
			nanosleep(&ts, NULL);
		t_wake = now();
		t_done = 0;
	} else {
		int64_t one = 1, old, *src = mpit_malloc(BLK * 8);

		for (r = 0; r < rounds; r++) {
			for (i = 0; i < BLK; i++)
				src[i] = v_put(me, r, i);
			MPIT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
			MPIT_MPI(MPI_Put(src, BLK, MPI_INT64_T, 0,
					 (MPI_Aint)(1 + (size_t)me * BLK), BLK,
					 MPI_INT64_T, win));
			MPIT_MPI(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0,
						  0, MPI_SUM, win));
			MPIT_MPI(MPI_Win_flush(0, win));
			memset(got, 0xa5, BLK * sizeof(int64_t));
			MPIT_MPI(MPI_Get(got, BLK, MPI_INT64_T, 0,
					 (MPI_Aint)(1 + (size_t)me * BLK),
					 BLK, MPI_INT64_T, win));
			MPIT_MPI(MPI_Win_unlock(0, win));
			MPIT_CHECK(old >= 0 && old < (int64_t)(np - 1) *
				   rounds, "fetch_and_op fetched %lld",
				   (long long)old);
			for (i = 0; i < BLK; i++)
				MPIT_CHECK(got[i] == v_put(me, r, i),
					   "round %d: read back %lld at %zu, "
					   "expected %lld", r,
					   (long long)got[i], i,
					   (long long)v_put(me, r, i));
		}
		/* rank 0's untouched block is still its initial data */
		memset(got, 0xa5, BLK * sizeof(int64_t));
		MPIT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
		MPIT_MPI(MPI_Get(got, BLK, MPI_INT64_T, 0, 1, BLK,
				 MPI_INT64_T, win));
		MPIT_MPI(MPI_Win_unlock(0, win));
		for (i = 0; i < BLK; i++)
			MPIT_CHECK(got[i] == v_init(1 + i),
				   "rank 0's own block changed at %zu", i);
		t_done = now();
		free(src);
	}

	done = mpit_malloc(np * sizeof(double));
	MPIT_MPI(MPI_Gather(&t_done, 1, MPI_DOUBLE, done, 1, MPI_DOUBLE, 0,
			    MPI_COMM_WORLD));
	if (me == 0) {
		double last = 0;

		for (r = 1; r < np; r++) {
			MPIT_CHECK(done[r] > 0 && done[r] < t_wake,
				   "rank %d finished its epochs %.3f s after "
				   "the target woke up: they waited for it",
				   r, done[r] - t_wake);
			if (done[r] > last)
				last = done[r];
		}
		MPIT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
		MPIT_MPI(MPI_Win_sync(win));
		MPIT_MPI(MPI_Win_unlock(0, win));
		MPIT_CHECK(base[0] == (int64_t)(np - 1) * rounds,
			   "counter %lld, expected %d", (long long)base[0],
			   (np - 1) * rounds);
		for (r = 1; r < np; r++)
			for (i = 0; i < BLK; i++)
				MPIT_CHECK(base[1 + (size_t)r * BLK + i] ==
					   v_put(r, rounds - 1, i),
					   "block of rank %d, element %zu: "
					   "%lld", r, i,
					   (long long)base[1 + (size_t)r * BLK
							   + i]);
		printf("passive: all %d origins done %.3f s before the "
		       "target woke up\n", np - 1, t_wake - last);
	}
	MPIT_MPI(MPI_Win_free(&win));
	free(base);
	free(got);
	free(done);
	mpit_finish("%d rounds of lock/put/fetch_and_op/get/unlock on a "
		    "target sleeping %.1f s outside MPI", rounds, sleep_s);
	return 0;
}
