/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One of two jobs sharing a fabric (tests/mpi/two-jobs.sh): ping-pong with
 * data checks between the ranks, then, when SSEMU_JOBS_GO names a file,
 * keep exchanging until that file exists, so that the other job's ranks
 * are surely attached while this job runs (the script creates it once
 * `slingshot-emu status` has seen every NIC of both jobs), then once more.
 *
 * usage: jobs [-n round_trips]
 */
#include "mpit.h"

#define JOBS_LEN 65536
#define JOBS_WAIT_LIMIT 120.0

/* @n round trips between rank 0 and each other rank, data checked. */
static void jobs_pingpong(unsigned char *buf, int n, int round)
{
	int i, peer, it;
	uint32_t seed;

	for (it = 0; it < n; it++) {
		for (peer = 1; peer < mpit_size; peer++) {
			seed = mpit_seed((uint32_t)round, (uint32_t)it,
					 (uint32_t)peer, 7);
			if (mpit_rank == 0) {
				mpit_fill(buf, JOBS_LEN, seed);
				MPIT_MPI(MPI_Send(buf, JOBS_LEN, MPI_BYTE,
						  peer, it, MPI_COMM_WORLD));
				MPIT_MPI(MPI_Recv(buf, JOBS_LEN, MPI_BYTE,
						  peer, it, MPI_COMM_WORLD,
						  MPI_STATUS_IGNORE));
			} else if (mpit_rank == peer) {
				MPIT_MPI(MPI_Recv(buf, JOBS_LEN, MPI_BYTE, 0,
						  it, MPI_COMM_WORLD,
						  MPI_STATUS_IGNORE));
			} else {
				continue;
			}
			for (i = 0; i < JOBS_LEN; i++)
				MPIT_CHECK(buf[i] == mpit_byte(seed, (size_t)i),
					   "round %d, trip %d, peer %d: byte "
					   "%d differs", round, it, peer, i);
			if (mpit_rank == peer)
				MPIT_MPI(MPI_Send(buf, JOBS_LEN, MPI_BYTE, 0,
						  it, MPI_COMM_WORLD));
		}
	}
}

int main(int argc, char **argv)
{
	const char *go = getenv("SSEMU_JOBS_GO");
	unsigned char *buf;
	int n = 20, opt, round = 0, seen = 0;
	double t0;

	mpit_init(&argc, &argv, "jobs");
	while ((opt = getopt(argc, argv, "n:")) != -1) {
		if (opt == 'n')
			n = mpit_parse_int(optarg);
		else
			MPIT_FAIL("usage: jobs [-n round_trips]");
	}
	buf = mpit_malloc(JOBS_LEN);
	jobs_pingpong(buf, n, round++);
	t0 = MPI_Wtime();
	while (go && !seen) {
		if (mpit_rank == 0)
			seen = access(go, F_OK) == 0;
		MPIT_MPI(MPI_Bcast(&seen, 1, MPI_INT, 0, MPI_COMM_WORLD));
		MPIT_CHECK(seen || MPI_Wtime() - t0 < JOBS_WAIT_LIMIT,
			   "%s did not appear within %.0f s", go,
			   JOBS_WAIT_LIMIT);
		if (!seen) {
			jobs_pingpong(buf, 1, round++);
			usleep(20000);
		}
	}
	jobs_pingpong(buf, n, round++);
	free(buf);
	mpit_finish("%d rounds of %d byte round trips", round, JOBS_LEN);
	return 0;
}
